/**
 * Failure paths found by an adversarial review, each pinned by a test on the real stack:
 *
 * - a provider that keeps losing our submits (no idempotency, list proves each absent) gets a
 *   bounded number of backed-off submissions, then `failed` with the evidence, never a hot loop;
 * - secrets in an input row never reach workflow history (the row is redacted like the store's copy),
 *   and secrets nested in options are refused before anything starts;
 * - an unknown provider is refused before anything starts;
 * - a cancel while no worker runs answers `requested` after its timeout (recorded as a signal) and
 *   acts once a worker is back;
 * - a result read or a reconciliation refused permanently (a revoked key) ends in a recorded state,
 *   never a failed workflow with a non-final row (these two use activities that throw, on the real
 *   dev server: the reference provider has no way to revoke a key mid-job).
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, mapProviderErrors } from '../../src/activities/index.js';
import { ScrapeClient } from '../../src/client/index.js';
import { resultOf } from '../helpers/cancel.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { workflowBundle } from '../../src/worker.js';
import { SCRAPE_WORKFLOW_TYPE } from '../../src/workflows/scrape/messages.js';
import { recordSecrets } from '../helpers/evidence.js';
import { historyText } from '../helpers/leaks.js';
import { FAST_POLICY, KEYS, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

describe('on the reference provider', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8, idempotency: false, list: true } });
  });
  afterAll(async () => stack?.stop());

  it('submits that are always lost are retried a bounded number of times with backoff, then fail with the evidence', async () => {
    const tag = 'always-lost';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'drop_before_commit' });
    const submitsBefore = stack.sim.stats().requests.byEndpoint.submit;
    const started = Date.now();
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, submitRounds: 3 },
    });
    const row = await waitForState(stack.store, ref.jobId, ['failed', 'completed'], 60_000);
    expect(row.state).toBe('failed');
    expect(JSON.parse(row.last_error!)).toMatchObject({
      kind: 'submit_unacknowledged',
      message: expect.stringMatching(/^3 submissions went unanswered/),
    });
    expect(stack.sim.stats().requests.byEndpoint.submit - submitsBefore).toBe(3);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(0);
    // Backed off: 2 s then 4 s (±10 % jitter) between the three rounds.
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_000);
    const history = await stack.temporal.workflow.getHandle(ref.jobId).fetchHistory();
    expect(history.events!.length).toBeLessThan(120);
  });

  it('keeps secrets of the input row out of workflow history and the store; refuses nested secrets in options', async () => {
    const rowSecret = 'sk-live-ROWSECRET-0123456789';
    const bearer = 'tok-BEARERSECRET-0123456789';
    recordSecrets('failure-paths row', [rowSecret, bearer, 'hunter2-hunter2']); // the run's secrets scan looks for them everywhere too
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('002'),
      key: 'row-secrets',
      row: { url: pages.pageUrl('002'), api_key: rowSecret, password: 'hunter2-hunter2', note: `Bearer ${bearer}` },
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed']);
    const text = await historyText(stack.temporal, ref.jobId);
    expect(text).toContain(pages.pageUrl('002')); // the payloads are decoded: the row's URL is there
    for (const secret of [rowSecret, bearer, 'hunter2-hunter2', KEYS.acme]) expect(text).not.toContain(secret);
    const stored = JSON.stringify(await stack.store.jobs.get(ref.jobId));
    for (const secret of [rowSecret, bearer, 'hunter2-hunter2']) expect(stored).not.toContain(secret);

    const jobsBefore = stack.sim.stats().jobsCreated.total;
    await expect(
      stack.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('cnet'),
        key: 'nested-secret',
        options: { headers: { Authorization: 'Bearer NESTED0123456789' } },
      }),
    ).rejects.toMatchObject({
      code: 'invalid',
      message: expect.stringMatching(/options\.headers\.Authorization looks like a credential/),
    });
    await expect(stack.store.jobs.get('scrape:acme:nested-secret')).resolves.toBeUndefined();
    expect(stack.sim.stats().jobsCreated.total).toBe(jobsBefore);
  });

  it('a flood of wake signals is merged: checks keep at least initialDelayMs apart', async () => {
    const tag = 'wake-flood';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const policy = { ...FAST_POLICY, initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2 };
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('ars-1')}?${tag}`,
      key: tag,
      policy,
    });
    await waitFor(
      async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1,
      30_000,
      'the first check',
    );
    const checksBefore = (await stack.store.jobs.get(ref.jobId))!.status_checks;
    const started = Date.now();
    for (let i = 0; i < 150; i++) {
      await stack.client.wake(ref.jobId, { eventId: `flood-${i}` });
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 1_500));
    const elapsedS = (Date.now() - started) / 1000;
    const checks = (await stack.store.jobs.get(ref.jobId))!.status_checks - checksBefore;
    // Unmerged, every wake would be a check (150); merged, at most one per second plus the one in flight.
    expect(checks).toBeGreaterThanOrEqual(1);
    expect(checks).toBeLessThanOrEqual(Math.ceil(elapsedS) + 1);
    await stack.client.cancelScrape('acme', ref.jobId, { reason: 'test done' });
  });

  it('a stale resume of a job that already finished changes nothing and calls no provider', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('tumblr'),
      key: 'stale-resume',
      policy: FAST_POLICY,
    });
    const done = await waitForState(stack.store, ref.jobId, ['completed']);
    await stack.temporal.workflow.getHandle(ref.jobId).result();
    const statusBefore = stack.sim.stats().requests.byEndpoint.status;
    const options = JSON.parse(done.options) as { format: 'markdown' | 'text'; options: Record<string, unknown> };
    // What a resume that lost the race to another one would start (the client's own checks bypassed).
    const handle = await stack.temporal.workflow.start(SCRAPE_WORKFLOW_TYPE, {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: ref.jobId,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      args: [
        {
          jobId: ref.jobId,
          account: 'acme',
          key: done.idem_key,
          provider: done.provider,
          requestHash: done.request_hash,
          request: { url: done.url, format: options.format, options: options.options },
          policy: FAST_POLICY,
          resume: { taskId: done.task_id! },
        },
      ],
    });
    const view = (await handle.result()) as { state: string };
    expect(view.state).toBe('completed');
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('completed');
    expect(stack.sim.stats().requests.byEndpoint.status).toBe(statusBefore);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
  });

  it('resuming a job whose run stopped mid-cancel finishes the cancel instead of forgetting it', async () => {
    const tag = 'cancel-orphan';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    // The provider accepts the first cancel but keeps running for a minute; the second confirms at once.
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'cancel',
      urlContains: tag,
      action: 'cancel_pending',
      delayMs: 60_000,
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('herald-sun-1')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, cancelConfirmDeadlineMs: 60_000 },
    });
    await waitForState(stack.store, ref.jobId, ['pending']);
    const cancelsBefore = stack.sim.stats().requests.byEndpoint.cancel;
    expect(
      await stack.client.cancelScrape('acme', ref.jobId, { reason: 'operator says stop', wait: false }),
    ).toMatchObject({ kind: 'requested' });
    await waitFor(
      async () => stack.sim.stats().requests.byEndpoint.cancel > cancelsBefore,
      20_000,
      'the first provider cancel call',
    );
    await stack.temporal.workflow.getHandle(ref.jobId).terminate('simulated loss of the run');
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('cancelling');
    expect(await stack.client.cancelScrape('acme', ref.jobId)).toMatchObject({
      kind: 'not_running',
      state: 'cancelling',
    });

    await stack.client.resume('acme', ref.jobId);
    const row = await waitForState(stack.store, ref.jobId, ['cancelled', 'cancel_unconfirmed', 'completed'], 60_000);
    expect(row.state).toBe('cancelled');
    expect(stack.sim.stats().requests.byEndpoint.cancel - cancelsBefore).toBe(2);
    const outcome = (await stack.store.findings.timeline(ref.jobId))
      .map((e) =>
        e.detail ? (JSON.parse(e.detail) as { cancel?: { outcome?: string; reason?: string } }).cancel : undefined,
      )
      .filter((c) => c?.outcome);
    expect(outcome.at(-1)).toMatchObject({ outcome: 'cancelled', reason: 'operator says stop' });
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(0);
  });

  it('a completion wake just before the deadline still gets its check (past the deadline if the gap needs it)', async () => {
    const tag = 'wake-at-deadline';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    // First check 5 s after the task is known, the next one 50 s later: past the 9-s deadline. The
    // wake comes within the 4 s between; its merged check is due at 10 s, past the deadline.
    const policy = {
      ...FAST_POLICY,
      initialDelayMs: 5_000,
      maxDelayMs: 60_000,
      multiplier: 10,
      jitter: 0,
      deadlineMs: 9_000,
    };
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('tumblr')}?${tag}`,
      key: tag,
      policy,
    });
    await waitFor(
      async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1,
      30_000,
      'the first check',
    );
    const row = (await stack.store.jobs.get(ref.jobId))!;
    stack.sim.release(row.task_id!);
    await stack.sim.waitForJob(row.task_id!, { status: 'completed' });
    await stack.client.wake(ref.jobId, { eventId: 'done-1', providerStatus: 'completed' });
    const end = await waitForState(stack.store, ref.jobId, ['completed', 'tracking_interrupted'], 30_000);
    expect(end.state).toBe('completed');
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
  });

  it('a start Temporal refuses leaves no job row behind, and says why; an oversized row is refused up front', async () => {
    const elsewhere = new ScrapeClient({
      temporal: new Client({ connection: stack.temporal.connection, namespace: 'no-such-namespace' }),
      store: stack.store,
      taskQueue: stack.config.temporal.taskQueue,
      defaultProvider: 'reference',
    });
    await expect(
      elsewhere.startScrape({ account: 'acme', url: pages.pageUrl('001'), key: 'refused-start' }),
    ).rejects.toThrow(
      /could not start job scrape:acme:refused-start \(nothing was kept; repeat the request\): .*no-such-namespace/i,
    );
    await expect(stack.store.jobs.get('scrape:acme:refused-start')).resolves.toBeUndefined();
    // The same key through the right namespace then works as a new job.
    const ok = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('001'),
      key: 'refused-start',
      policy: FAST_POLICY,
    });
    expect(ok.created).toBe(true);
    await waitForState(stack.store, ok.jobId, ['completed']);

    await expect(
      stack.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('001'),
        key: 'huge-row',
        row: { note: 'x'.repeat(3_000_000) },
      }),
    ).rejects.toMatchObject({
      code: 'invalid',
      message: expect.stringMatching(/at most 65536 are kept/),
    });
    await expect(stack.store.jobs.get('scrape:acme:huge-row')).resolves.toBeUndefined();
  });

  it('refuses an unknown provider before anything starts', async () => {
    await expect(
      stack.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('001'),
        key: 'no-such-provider',
        provider: 'nope',
      }),
    ).rejects.toMatchObject({
      code: 'invalid',
      message: expect.stringMatching(/unknown provider "nope"; configured: reference/),
    });
    await expect(stack.store.jobs.get('scrape:acme:no-such-provider')).resolves.toBeUndefined();
  });

  it('a cancel while no worker runs answers `requested` after its timeout and acts when a worker is back', async () => {
    const tag = 'cancel-no-worker';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnn')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['pending']);
    await stack.stopWorker();
    const cancelsBefore = stack.sim.stats().requests.byEndpoint.cancel;
    const r = await stack.client.cancelScrape('acme', ref.jobId, { reason: 'test', timeoutMs: 2_000 });
    expect(r).toMatchObject({
      kind: 'requested',
      state: 'pending',
      note: expect.stringMatching(/no observed outcome within 2 s.*no worker polls task queue/),
    });
    expect(stack.sim.stats().requests.byEndpoint.cancel).toBe(cancelsBefore);
    await stack.startWorker();
    const row = await waitForState(stack.store, ref.jobId, ['cancelled', 'cancel_unconfirmed', 'completed'], 60_000);
    expect(row.state).toBe('cancelled');
    expect(stack.sim.stats().requests.byEndpoint.cancel - cancelsBefore).toBe(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(0);
  });
});

describe('with activities that are refused permanently (a revoked key)', () => {
  let stack: Stack;
  let worker: Worker;
  let running: Promise<void>;
  let native: NativeConnection;
  const counts = { saveResult: 0, reconcileSubmit: 0, cancelTask: 0 };
  const refused = (message: string) =>
    ApplicationFailure.create({
      message,
      type: 'Provider.permanent',
      nonRetryable: true,
      details: [{ kind: 'permanent', message, httpStatus: 401, at: new Date().toISOString() }],
    });

  beforeAll(async () => {
    stack = await startStack({ worker: false });
    const real = createActivities({
      store: stack.store,
      providers: {
        resolve: () => {
          throw new Error('not used');
        },
        allSecrets: () => [],
      } as never,
      resultRetentionMs: null,
    });
    // The provider says completed and the result read is refused: what the polling activity
    // records and returns then (the activity itself is covered in test/unit/activities.test.ts).
    const refusedRead = async (i: { jobId: string }) => {
      counts.saveResult++;
      const error = {
        kind: 'permanent',
        message: '401 UNAUTHORIZED on the result read: API key revoked',
        httpStatus: 401,
        at: new Date().toISOString(),
      };
      await stack.store.jobs.transition(i.jobId, 'tracking_interrupted', { error });
      return {
        kind: 'interrupted',
        checks: 1,
        providerStatus: 'completed',
        error,
        note: 'result reads refused; fix the cause and resume',
      };
    };
    const activities = {
      ...real,
      async submitJob(i: { job: { jobId: string } }) {
        const jobId = i.job.jobId;
        if (jobId.includes('unknown'))
          return {
            kind: 'ambiguous',
            error: {
              kind: 'ambiguous',
              message: 'connection reset after the request was sent',
              at: new Date().toISOString(),
            },
          };
        const taskId = await stack.store.jobs.recordTaskId(jobId, `task-${jobId}`, 'queued', 'test');
        return { kind: 'accepted', taskId, providerStatus: 'queued', adopted: false };
      },
      async reconcileJob(i: { job: { jobId: string } }) {
        counts.reconcileSubmit++;
        // As an earlier attempt that waited out the lookups' lag would have left it.
        await stack.store.polling.recordWait(i.job.jobId, {
          reason: 'evidence',
          message: 'nothing found yet: the lookups are read again',
          until: new Date().toISOString(),
        });
        throw refused('401 UNAUTHORIZED: API key revoked');
      },
      async awaitStatus(i: { jobId: string }) {
        return refusedRead(i);
      },
      async trackStatus(i: { jobId: string }) {
        return refusedRead(i);
      },
      async cancelAtProvider() {
        counts.cancelTask++;
        return { kind: 'answered', accepted: true };
      },
    };
    native = await NativeConnection.connect({ address: stack.config.temporal.address });
    worker = await Worker.create({
      connection: native,
      namespace: stack.config.temporal.namespace,
      taskQueue: stack.config.temporal.taskQueue,
      workflowBundle: await workflowBundle(),
      activities: activities as never,
      interceptors: { activity: [mapProviderErrors] },
    });
    running = worker.run();
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await native?.close();
    await stack?.stop();
  });

  /** Starts a job whose submit goes unanswered and whose reconciliation is refused; waits until it waits for an operator. */
  async function startUnknown(url: string, key: string) {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url,
      key: `${key}-${randomUUID().slice(0, 6)}`,
      policy: FAST_POLICY,
    });
    await waitFor(
      async () => (await stack.client.getLiveView('acme', ref.jobId)).note?.includes('waiting for an operator'),
      30_000,
      'the job to wait in unknown',
    );
    return ref;
  }

  it('a refused result read ends in tracking_interrupted with the reason (resumable), the run closes Failed naming it', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: 'https://example.com/result-refused',
      key: `result-refused-${randomUUID().slice(0, 6)}`,
      policy: FAST_POLICY,
    });
    const row = await waitForState(stack.store, ref.jobId, ['tracking_interrupted', 'failed', 'completed'], 60_000);
    expect(row.state).toBe('tracking_interrupted');
    expect(JSON.parse(row.last_error!)).toMatchObject({
      kind: 'permanent',
      message: expect.stringMatching(/result read/),
    });
    const handle = stack.temporal.workflow.getHandle(ref.jobId);
    await waitFor(async () => (await handle.describe()).status.name !== 'RUNNING', 30_000, 'the workflow to close');
    // Closed Failed, so that the Web UI tells it from a completed job; the failure is typed by the
    // state, names the reason and is not retried (one read, one run).
    expect((await handle.describe()).status.name).toBe('FAILED');
    const closed = await resultOf(stack, ref.jobId);
    expect(closed.failedAs).toBe('ScrapeJob.tracking_interrupted');
    expect((closed.error as Error).cause).toMatchObject({
      message: expect.stringMatching(/^job tracking_interrupted: 401 UNAUTHORIZED on the result read/),
      nonRetryable: true,
    });
    expect(counts.saveResult).toBe(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(0);
  });

  it('a job whose reconciliation is refused says in its row (status, the API) that it waits for an operator, not for the lookups', async () => {
    const ref = await startUnknown('https://example.com/unknown-refused-wait', 'unknown-wait');
    // Before: the row still said `evidence` (next try in the past) while the workflow waited for an operator.
    expect((await stack.client.getScrape('acme', ref.jobId)).waiting).toMatchObject({
      reason: 'operator',
      message: expect.stringMatching(/reconciliation was refused \(401 UNAUTHORIZED/),
    });
    await stack.client.cancelScrape('acme', ref.jobId, { reason: 'test' });
  });

  it('a cancel of a job in unknown whose reconciliation is refused ends cancel_unconfirmed, and a second cancel says so', async () => {
    const ref = await startUnknown('https://example.com/unknown-refused', 'unknown');
    const cancelsBefore = counts.cancelTask;
    const r = await stack.client.cancelScrape('acme', ref.jobId, { reason: 'test' });
    expect(r).toMatchObject({
      kind: 'observed',
      state: 'cancel_unconfirmed',
      report: { outcome: 'cancel_unconfirmed', detail: expect.stringMatching(/reconciliation was refused/) },
    });
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('cancel_unconfirmed');
    expect(counts.cancelTask).toBe(cancelsBefore);
    const handle = stack.temporal.workflow.getHandle(ref.jobId);
    await waitFor(async () => (await handle.describe()).status.name !== 'RUNNING', 30_000, 'the workflow to close');
    const again = await stack.client.cancelScrape('acme', ref.jobId, { reason: 'again' });
    expect(again).toMatchObject({
      kind: 'already_final',
      state: 'cancel_unconfirmed',
      report: { outcome: 'cancel_unconfirmed' },
    });
  });
});
