/**
 * Cancelling a batch of 24 jobs (20 running, 4 already completed)
 * through `ScrapeClient.cancelBatch` reports every job's outcome; and the CLI's `cancel` prints
 * the observed outcome, says "nothing to cancel" for a finished job, and with `--no-wait` returns
 * without waiting for the cancel path (proved causally: no worker is running when it returns).
 * `cancel-batch` tells its caller, by its exit code, when a job of the batch was not cancelled: a
 * job whose workflow no longer runs (an orphan, `not_running`) makes it exit 1, as `cancel` of that
 * job does, while the other jobs of the batch are still cancelled and reported.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor } from '../../src/client/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import {
  CANCEL_REQ,
  cancelEventsIn,
  historyOf,
  providerCancelCalls,
  providerJobs,
  settle,
  waitRow,
} from '../helpers/cancel.js';
import { FAST_POLICY, REPO, startStack, waitFor, type Stack } from '../helpers/stack.js';
import { recordCli } from '../helpers/evidence.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, cancelConfirmDeadlineMs: 8_000 };
const RUN = randomUUID().slice(0, 6);
const run = promisify(execFile);

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 100 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

/** Runs the real CLI (`npx tsx src/cli.ts …`) against the stack's configuration. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run('npx', ['tsx', 'src/cli.ts', ...args, '--config', stack.configFile], {
      cwd: REPO,
      env: { ...process.env, SCRAPE_CONFIG: '' },
      timeout: 90_000,
    });
    return recordCli(args, { code: 0, stdout: r.stdout, stderr: r.stderr });
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return recordCli(args, {
      code: typeof err.code === 'number' ? err.code : -1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    });
  }
}

describe('batch cancel', () => {
  it('cancelBatch on 24 jobs (20 running, 4 completed): every outcome reported — 20 cancelled with 1 provider cancel each, 4 already completed with their result rows', async () => {
    const batchId = `cb-${RUN}`;
    const hold = `cb-hold-${RUN}`;
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: hold, action: 'never_finish' });
    const running: string[] = [];
    const done: string[] = [];
    for (let i = 0; i < 24; i++) {
      const key = `${batchId}-${String(i).padStart(2, '0')}`;
      const url = i < 20 ? `${pages.pageUrl('001')}?${hold}&i=${i}` : `${pages.pageUrl('002')}?cb-done-${RUN}&i=${i}`;
      const ref = await stack.client.startScrape({ account: 'acme', url, key, batchId, policy: POLICY });
      (i < 20 ? running : done).push(ref.jobId);
    }
    await Promise.all(done.map((id) => waitRow(stack, id, (r) => r.state === 'completed', 'completed', 60_000)));
    await Promise.all(
      running.map((id) =>
        waitRow(stack, id, (r) => r.state === 'pending' && r.provider_status === 'running', 'running', 60_000),
      ),
    );

    const outcomes = await stack.client.cancelBatch('acme', batchId, { ...CANCEL_REQ });
    expect(outcomes.map((o) => o.jobId).sort()).toEqual([...running, ...done].sort());
    for (const o of outcomes) {
      if (running.includes(o.jobId)) {
        expect.soft(o.result.kind, `${o.jobId} kind`).toBe('observed');
        if (o.result.kind === 'observed') {
          expect.soft(o.result.report.outcome, `${o.jobId} outcome`).toBe('cancelled');
          expect.soft(o.result.report.via, `${o.jobId} via`).toBe('update');
          expect.soft(o.result.report.providerCancelCalls, `${o.jobId} report calls`).toBe(1);
          expect.soft(o.result.state, `${o.jobId} state reported by the batch`).toBe('cancelled');
        }
      } else if (o.result.kind === 'observed') {
        // The store said completed while the workflow was still closing: the Update was accepted and
        // reports the truth — completed before the cancel could act, nothing sent to the provider.
        expect
          .soft(o.result, `${o.jobId}`)
          .toMatchObject({ state: 'completed', report: { outcome: 'completed', providerCancelCalls: 0 } });
      } else {
        expect.soft(o.result, `${o.jobId}`).toMatchObject({ kind: 'already_final', state: 'completed' });
      }
    }
    // Provider and store agree with the reported outcomes.
    const jobs = providerJobs(stack, hold);
    expect(jobs).toHaveLength(20); // no duplicate provider job
    expect(jobs.map((j) => j.cancel_request_times.length)).toEqual(Array(20).fill(1));
    expect(jobs.every((j) => j.status === 'cancelled')).toBe(true);
    for (const id of running) {
      const s = await settle(stack, id);
      expect.soft(s.row.state, id).toBe('cancelled');
      expect.soft(s.status, id).toBe('CANCELLED'); // every cancelled job closes Canceled, whichever door
      expect.soft(s.results, id).toBe(0);
      expect.soft(s.scrapeState, id).toBe('cancelled');
    }
    for (const id of done) expect(await stack.store.results.count({ jobId: id })).toBe(1);
    expect(providerCancelCalls(stack, `cb-done-${RUN}`)).toBe(0);
    const listed = await stack.client.list('acme', { batchId, limit: 100 });
    expect(listed.filter((j) => j.state === 'cancelled')).toHaveLength(20);
    expect(listed.filter((j) => j.state === 'completed')).toHaveLength(4);

    // Repeating the batch cancel changes nothing and reports the earlier outcomes.
    const again = await stack.client.cancelBatch('acme', batchId, { ...CANCEL_REQ });
    expect(again).toHaveLength(24);
    for (const o of again) {
      expect.soft(o.result.kind, o.jobId).toBe('already_final');
      if (running.includes(o.jobId) && o.result.kind === 'already_final')
        expect.soft(o.result.report?.outcome, `${o.jobId} earlier outcome`).toBe('cancelled');
    }
    expect(providerCancelCalls(stack, hold)).toBe(20);
  });
});

describe('the CLI', () => {
  it('`cancel <job>` prints the outcome observed at the provider (cancelled, 1 provider cancel call)', async () => {
    const tag = `cli-wait-${RUN}`;
    const jobId = jobIdFor('acme', tag);
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('aclu')}?${tag}`,
      key: tag,
      policy: POLICY,
    });
    await waitRow(stack, jobId, (r) => r.provider_status === 'running', 'running');
    const r = await cli('cancel', jobId, '--reason', 'cli test');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^outcome: cancelled — the provider confirmed the task stopped/m);
    expect(r.stdout).toMatch(/provider cancel calls: 1/);
    const s = await settle(stack, jobId);
    expect(s.row.state).toBe('cancelled');
    expect(s.report?.reason).toBe('cli test');
    expect(s.report?.requestedBy).toMatch(/^cli:/);
    expect(providerCancelCalls(stack, tag)).toBe(1);
    expect(s.results).toBe(0);
    // And again: nothing to cancel, with the earlier outcome.
    const again = await cli('cancel', tag);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing to cancel: the job is already cancelled \(earlier cancel outcome: cancelled/);
    expect(providerCancelCalls(stack, tag)).toBe(1);
  });

  it('`cancel <job>` on a completed job: "nothing to cancel", 0 provider cancels, the result row kept', async () => {
    const tag = `cli-done-${RUN}`;
    const jobId = jobIdFor('acme', tag);
    await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('aclu')}?${tag}`,
      key: tag,
      policy: POLICY,
    });
    await settle(stack, jobId);
    const r = await cli('cancel', jobId);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/nothing to cancel: the job is already completed/);
    expect(providerCancelCalls(stack, tag)).toBe(0);
    expect(await stack.store.results.count({ jobId })).toBe(1);
    expect((await stack.store.jobs.get(jobId))?.state).toBe('completed');
  });

  it('`cancel-batch` exits 1 when a job of the batch could not be cancelled (an orphan), and 0 when every job was', async () => {
    const batchId = `cbx-${RUN}`;
    const hold = `cbx-hold-${RUN}`;
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: hold, action: 'never_finish' });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const url = `${pages.pageUrl('001')}?${hold}&i=${i}`;
      const ref = await stack.client.startScrape({
        account: 'acme',
        url,
        key: `${batchId}-${i}`,
        batchId,
        policy: FAST_POLICY,
      });
      ids.push(ref.jobId);
    }
    await Promise.all(
      ids.map((id) =>
        waitRow(stack, id, (r) => r.state === 'pending' && r.provider_status === 'running', 'running', 60_000),
      ),
    );
    // The first job's workflow is ended from outside: its row stays non-final (an orphan).
    await stack.temporal.workflow.getHandle(ids[0]!).terminate('test: make an orphan');
    const r = await cli('cancel-batch', batchId, '--json');
    const outcomes = JSON.parse(r.stdout) as { jobId: string; result: { kind: string } }[];
    expect(outcomes.map((o) => [o.jobId, o.result.kind])).toEqual([
      [ids[0], 'not_running'],
      [ids[1], 'observed'],
    ]);
    expect(r.code).toBe(1);
    expect((await cli('cancel', ids[0]!)).code).toBe(1);

    const other = `cby-${RUN}`;
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${hold}&i=other`,
      key: `${other}-0`,
      batchId: other,
      policy: FAST_POLICY,
    });
    await waitRow(
      stack,
      ref.jobId,
      (row) => row.state === 'pending' && row.provider_status === 'running',
      'running',
      60_000,
    );
    expect((await cli('cancel-batch', other)).code).toBe(0);
  });

  it('`cancel --no-wait` returns at once: it answers while no worker runs (nothing observed yet); the cancel then runs when a worker is back', async () => {
    const tag = `cli-nowait-${RUN}`;
    const jobId = jobIdFor('acme', tag);
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('aclu')}?${tag}`,
      key: tag,
      policy: POLICY,
    });
    const row = await waitRow(stack, jobId, (r) => r.provider_status === 'running', 'running');
    await stack.stopWorker();
    try {
      const r = await cli('cancel', jobId, '--no-wait');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/cancel requested \(signal sent\)/);
      // Causality: the CLI returned although nothing could run the cancel path.
      expect((await stack.store.jobs.get(jobId))?.state, 'store state right after --no-wait').toBe('pending');
      expect(providerCancelCalls(stack, tag), 'provider cancels right after --no-wait').toBe(0);
    } finally {
      await stack.startWorker();
    }
    const s = await settle(stack, jobId);
    expect(s.row.state, 'final store state').toBe('cancelled');
    expect(s.report?.via).toBe('signal');
    // (The signal event may be written only once a workflow task in flight at shutdown ends: checked after.)
    expect(cancelEventsIn(await historyOf(stack, jobId), 'signal'), 'the signal in history').toBe(1);
    expect(providerCancelCalls(stack, tag), 'provider cancels in the end').toBe(1);
    expect(stack.sim.getJob(row.task_id!)?.status).toBe('cancelled');
    expect(s.results).toBe(0);
    await waitFor(
      async () => (await stack.temporal.workflow.getHandle(jobId).describe()).status.name === 'CANCELLED',
      10_000,
      'closed as Canceled',
    );
  });
});
