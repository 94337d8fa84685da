/**
 * Produces workflow histories of the main paths of the scrape workflow (`scrapeWorkflowV6`) on the
 * real stack and replays each one through the current workflow code (`Worker.runReplayHistories`):
 * any non-determinism fails here. With `RECORD_HISTORIES=1` the histories not yet recorded are
 * written to `test/replay/histories/v6-<path>.json` (`all`: every one), with this machine's paths
 * taken out of their stack traces, where `test/unit/replay.test.ts` replays them on every run, so
 * that a later change of workflow code that breaks running workflows is caught (such a change goes
 * behind `patched()`, or into a new workflow type once the old one is drained).
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { ensureTemporalCli } from '../../tools/devserver/temporalCli.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { workflowBundle } from '../../src/worker.js';
import { SCRAPE_WORKFLOW_TYPE } from '../../src/workflows/scrape/messages.js';
import { withoutMachinePaths } from '../helpers/histories.js';
import { FAST_POLICY, KEYS, REPO, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

let pages: PageServer;
let stack: Stack;
let bare: Stack;
let listOnly: Stack;
const ids: Record<string, string> = {};
const handOver = (() => {
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const hit = new Promise<void>((r) => (reached = r));
  return { held: true, gate, hit, release, reached };
})();
/** Runs recorded instead of the workflow's latest run (the run that continued as new). */
const runIds: Record<string, string> = {};

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({
    profile: { concurrency: 8 },
    hooks: {
      // The hand-over path: the store write of `tracking_interrupted` is held until a cancel signal is on its way.
      beforeRecordState: async (jobId, state) => {
        if (jobId !== ids.handedOver || state !== 'tracking_interrupted' || !handOver.held) return;
        handOver.held = false;
        handOver.reached();
        await handOver.gate;
      },
    },
  });
  bare = await startStack({ profile: { concurrency: 8, idempotency: false, list: false } });
  listOnly = await startStack({ profile: { concurrency: 8, idempotency: false, list: true } });
});
afterAll(async () => {
  await stack?.stop();
  await bare?.stop();
  await listOnly?.stop();
  await pages?.close();
});

describe('workflow histories replay deterministically', () => {
  it('records the main paths and replays them with the current code', async () => {
    const p = FAST_POLICY;
    // completed
    ids.completed = (
      await stack.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('ars-1'),
        key: 'replay-completed',
        policy: p,
      })
    ).jobId;
    // a provider-reported failure
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: 'replay-failed', action: 'fail_job' });
    ids.failed = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('cnet')}?replay-failed`,
        key: 'replay-failed',
        policy: p,
      })
    ).jobId;
    // tracking_interrupted
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'replay-interrupted',
      action: 'never_finish',
    });
    ids.interrupted = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('cnn')}?replay-interrupted`,
        key: 'replay-interrupted',
        policy: { ...p, deadlineMs: 2_000 },
      })
    ).jobId;
    // cancelled by Update, and natively
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: 'replay-cancel', action: 'never_finish' });
    ids.cancelledUpdate = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('herald-sun-1')}?replay-cancel-u`,
        key: 'replay-cancel-update',
        policy: p,
      })
    ).jobId;
    ids.cancelledNative = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('qq')}?replay-cancel-n`,
        key: 'replay-cancel-native',
        policy: p,
      })
    ).jobId;
    // a lost 202 reconciled by idempotent replay
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'replay-dropped',
      action: 'drop_after_commit',
      times: 1,
    });
    ids.reconciled = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('yahoo-4')}?replay-dropped`,
        key: 'replay-reconciled',
        policy: p,
      })
    ).jobId;
    // unknown → resolved by an operator
    bare.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'replay-unknown',
      action: 'drop_after_commit',
      times: 1,
    });
    ids.resolved = (
      await bare.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('tumblr')}?replay-unknown`,
        key: 'replay-resolved',
        policy: p,
      })
    ).jobId;
    // unknown, woken by a webhook hint (reconciled again, still undecided), then resolved (patch `reconcile-on-wake-in-unknown`)
    bare.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'replay-woken-unknown',
      action: 'drop_after_commit',
      times: 1,
    });
    ids.resolvedAfterWake = (
      await bare.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('tumblr')}?replay-woken-unknown`,
        key: 'replay-resolved-after-wake',
        policy: p,
      })
    ).jobId;
    // cancelled by Update; the provider's "cancelled" answer is followed by one status read (patch `cancel-outcome-as-observed`)
    ids.cancelledUpdateObserved = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('herald-sun-1')}?replay-cancel-o`,
        key: 'replay-cancel-update-observed',
        policy: p,
      })
    ).jobId;

    // submits that are always lost, each proved absent by the list: bounded, then failed (patch `bounded-resubmits`)
    listOnly.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'replay-lost',
      action: 'drop_before_commit',
    });
    ids.unacknowledged = (
      await listOnly.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('001')}?replay-lost`,
        key: 'replay-unacknowledged',
        policy: { ...p, submitRounds: 2 },
      })
    ).jobId;

    // cancelled by signal while its status check hangs; woken by a webhook hint, then cancelled
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'status',
      urlContains: 'replay-hang',
      action: 'delay',
      delayMs: 60_000,
    });
    ids.cancelledSignal = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('heise')}?replay-cancel-s-replay-hang`,
        key: 'replay-cancel-signal',
        policy: p,
      })
    ).jobId;
    ids.woken = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('002')}?replay-cancel-w`,
        key: 'replay-woken',
        policy: p,
      })
    ).jobId;
    // someone cancels the task at the provider, outside this workflow → cancelled, closed Canceled
    ids.cancelledElsewhere = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('002')}?replay-cancel-e`,
        key: 'replay-cancelled-elsewhere',
        policy: p,
      })
    ).jobId;
    // the provider forgets the task: 404 on every check → expired
    stack.sim.faults.add({ account: 'acme', endpoint: 'status', urlContains: 'replay-expired', action: 'not_found' });
    ids.expired = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('aclu')}?replay-expired`,
        key: 'replay-expired',
        policy: p,
      })
    ).jobId;
    // the deadline policy cancels
    ids.deadlineCancel = (
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('wikipedia')}?replay-cancel-d`,
        key: 'replay-deadline-cancel',
        policy: { ...p, deadlineMs: 2_000, onDeadline: 'cancel' },
      })
    ).jobId;

    for (const k of ['cancelledUpdate', 'cancelledNative', 'woken', 'cancelledUpdateObserved', 'cancelledElsewhere'])
      await waitFor(async () => (await stack.store.jobs.get(ids[k]!))?.status_checks, 20_000, k);
    const elsewhere = (await stack.store.jobs.get(ids.cancelledElsewhere!))!.task_id!;
    const stopped = await fetch(`${stack.sim.url}/api/jobs/${encodeURIComponent(elsewhere)}/cancel`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEYS.acme}` },
    });
    expect(stopped.status).toBeLessThan(300);
    await waitFor(
      async () =>
        (await stack.store.jobs.get(ids.cancelledSignal!))?.last_checked_at === null &&
        (await stack.store.jobs.get(ids.cancelledSignal!))?.state === 'pending',
      20_000,
      'hanging check',
    );
    await stack.client.cancelScrape('acme', ids.cancelledUpdate!, { reason: 'replay test' });
    await stack.client.cancelScrape('acme', ids.cancelledUpdateObserved!, { reason: 'replay test' });
    await stack.temporal.workflow.getHandle(ids.cancelledNative!).cancel();
    await stack.client.cancelScrape('acme', ids.cancelledSignal!, { reason: 'replay test', wait: false });
    await stack.client.wake(ids.woken!, { providerStatus: 'running', eventId: 'replay-1' });
    await waitFor(
      async () => Number((await stack.store.jobs.get(ids.woken!))?.status_checks) >= 2,
      20_000,
      'woken check',
    );
    await stack.client.cancelScrape('acme', ids.woken!, { reason: 'replay test' });
    await waitFor(
      async () => (await bare.client.getLiveView('acme', ids.resolved!)).note?.includes('waiting for an operator'),
      20_000,
      'unknown',
    );
    const task = bare.sim.jobsFor('acme').find((j) => j.url.includes('replay-unknown'))!;
    await bare.client.resolve('acme', ids.resolved!, { taskId: task.job_id, by: 'replay-test' });
    await waitFor(
      async () =>
        (await bare.client.getLiveView('acme', ids.resolvedAfterWake!)).note?.includes('waiting for an operator'),
      20_000,
      'unknown (wake)',
    );
    const undecided = async () =>
      (await bare.store.findings.timeline(ids.resolvedAfterWake!)).filter((e) => e.type === 'reconcile_undecided')
        .length;
    const before = await undecided();
    await bare.client.wake(ids.resolvedAfterWake!, { providerStatus: 'running', eventId: 'replay-unknown-1' });
    await waitFor(async () => (await undecided()) > before, 20_000, 'reconciled again after the wake');
    const wokenTask = bare.sim.jobsFor('acme').find((j) => j.url.includes('replay-woken-unknown'))!;
    await bare.client.resolve('acme', ids.resolvedAfterWake!, { taskId: wokenTask.job_id, by: 'replay-test' });

    // A cancel signal that arrives as tracking stops: the run hands it over (continues as new).
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'replay-handover',
      action: 'never_finish',
    });
    const handedOver = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnn')}?replay-handover`,
      key: 'replay-handover',
      policy: { ...p, deadlineMs: 2_000 },
    });
    ids.handedOver = handedOver.jobId;
    runIds.handedOver = (await stack.temporal.workflow.getHandle(handedOver.jobId).describe()).runId;
    await handOver.hit;
    await stack.client.cancelScrape('acme', handedOver.jobId, { reason: 'replay test', wait: false });
    handOver.release();
    await waitFor(
      async () => (await stack.store.jobs.get(handedOver.jobId))?.state === 'cancelled',
      60_000,
      'handed over and cancelled',
    );

    // Histories as proto JSON, fetched with the Temporal CLI (`temporal workflow show -o json`).
    const cli = await ensureTemporalCli({ logger: () => undefined });
    const { address, namespace } = inject('temporal');
    const histories: { name: string; workflowId: string; json: string; history: unknown }[] = [];
    for (const [name, id] of Object.entries(ids)) {
      const s =
        name === 'resolved' || name === 'resolvedAfterWake' ? bare : name === 'unacknowledged' ? listOnly : stack;
      await waitForState(
        s.store,
        id,
        ['completed', 'failed', 'cancelled', 'tracking_interrupted', 'cancel_unconfirmed', 'expired'],
        60_000,
      );
      const handle = s.temporal.workflow.getHandle(id);
      await handle.result().catch(() => undefined); // the native cancel ends CANCELED
      const json = execFileSync(
        cli.path,
        [
          'workflow',
          'show',
          '-w',
          id,
          ...(runIds[name] ? ['-r', runIds[name]] : []),
          '--address',
          address,
          '--namespace',
          namespace,
          '-o',
          'json',
        ],
        {
          encoding: 'utf8',
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      histories.push({ name, workflowId: id, json, history: JSON.parse(json) }); // proto JSON: the worker parses it
    }
    // No patch marker and no `TemporalChangeVersion` upsert (each a billable Action and a history
    // event per job).
    for (const h of histories) {
      const events = (h.history as { events: Record<string, Record<string, unknown> | undefined>[] }).events;
      const started = events[0]!.workflowExecutionStartedEventAttributes as { workflowType: { name: string } };
      expect(started.workflowType.name, h.name).toBe(SCRAPE_WORKFLOW_TYPE);
      const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
      expect(markers, h.name).toEqual([]);
      const changeVersion = events.filter((e) =>
        JSON.stringify(e.upsertWorkflowSearchAttributesEventAttributes ?? {}).includes('TemporalChangeVersion'),
      );
      expect(changeVersion, h.name).toEqual([]);
    }
    const bundle = await workflowBundle();
    const results = [];
    for await (const r of Worker.runReplayHistories(
      { workflowBundle: bundle },
      histories.map((h) => ({ workflowId: h.workflowId, history: h.history as never })),
    ))
      results.push(r);
    expect(results.map((r) => r.error?.message ?? null)).toEqual(histories.map(() => null));

    // RECORD_HISTORIES=1 adds the histories not recorded yet (older ones stay: replaying histories
    // of older code is the point); RECORD_HISTORIES=all rewrites every one.
    // `RECORD_AS=<suffix>` records every path under `v6-<path>-<suffix>.json` (the histories of code
    // behind a new patch, beside the ones recorded before it). Stack traces name files relative to
    // the repository: a recorded history carries no path of the machine that recorded it.
    if (process.env.RECORD_HISTORIES === '1' || process.env.RECORD_HISTORIES === 'all') {
      const dir = path.join(REPO, 'test/replay/histories');
      fs.mkdirSync(dir, { recursive: true });
      const suffix = process.env.RECORD_AS ? `-${process.env.RECORD_AS.replace(/[^A-Za-z0-9]/g, '')}` : '';
      for (const h of histories) {
        const file = path.join(dir, `v6-${h.name}${suffix}.json`);
        if (process.env.RECORD_HISTORIES === 'all' || !fs.existsSync(file))
          fs.writeFileSync(file, withoutMachinePaths(h.json));
      }
    }
  }, 180_000);
});
