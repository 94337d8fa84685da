/**
 * Killing workers: a worker SIGKILLed while a job is polling, or at the exact moment after the
 * provider answered a submit, or after the result was written. The job completes on a new worker
 * with exactly one provider job and one result row.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';
import { outboxFor } from '../helpers/storeQueries.js';

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ worker: false, profile: { concurrency: 4 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

describe('worker restarts', () => {
  it('a worker killed in the middle of polling: a new worker completes the job, one result row, one provider job', async () => {
    const hold = stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'restart-poll',
      action: 'hold',
      holdIn: 'running',
    });
    const child = await stack.spawnWorker();
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('wikipedia')}?restart-poll`,
      key: 'restart-poll',
      policy: FAST_POLICY,
    });
    const row = await waitFor(
      async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r?.state === 'pending' && r.status_checks >= 2 ? r : undefined;
      },
      30_000,
      'polling to start',
    );
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    stack.sim.release(row.task_id!);
    stack.sim.faults.remove(hold);
    await stack.spawnWorker();
    const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 60_000);
    expect(done.state).toBe('completed');
    expect(done.task_id).toBe(row.task_id);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes('restart-poll'))).toHaveLength(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    expect(await outboxFor(stack.store, ref.jobId)).toHaveLength(1);
  });

  it('two workers on the task queue and one killed: every job completes once', async () => {
    await stack.killWorkers();
    const a = await stack.spawnWorker();
    await stack.spawnWorker();
    const refs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        stack.client.startScrape({
          account: 'acme',
          url: `${pages.pageUrl('cnn')}?two-workers-${i}`,
          key: `two-workers-${i}`,
          // A job waits for a slot while the killed worker's jobs hold theirs (until their attempts
          // time out): a loaded machine must not spend its submit time (the deadline) meanwhile.
          policy: { ...FAST_POLICY, deadlineMs: 180_000 },
        }),
      ),
    );
    await new Promise((r) => setTimeout(r, 500));
    a.kill('SIGKILL');
    for (const r of refs) {
      const done = await waitForState(stack.store, r.jobId, ['completed', 'failed'], 180_000);
      expect(done.state, done.last_error ?? '').toBe('completed');
      expect(await stack.store.results.count({ jobId: r.jobId })).toBe(1);
      expect(await outboxFor(stack.store, r.jobId)).toHaveLength(1);
    }
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes('two-workers-'))).toHaveLength(10);
  });

  it('a worker killed after the activity returned a provider failure and before the workflow recorded it: the row says pending and the run runs meanwhile; a new worker records failed once', async () => {
    await stack.killWorkers();
    const marker = path.join(stack.dir, 'crash-beforeRecordState');
    const tag = 'crash-before-record';
    const env = { TEST_CRASH_AT: 'beforeRecordState', TEST_CRASH_STATE: 'failed', TEST_CRASH_MARKER: marker };
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'fail_job',
      code: 'TARGET_BLOCKED',
      message: 'target refused the crawler',
    });
    const first = await stack.spawnWorker(env);
    const exited = new Promise<number | null>((r) => first.once('exit', (code, signal) => r(signal ? -1 : code)));
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    expect(await exited).toBe(-1); // SIGKILLed as the workflow was about to record `failed`
    // Meanwhile: the store has not moved to `failed`, and says its workflow still runs (no orphan).
    // (`pending`, or `unknown` where a loaded machine's submit attempt outlasted its budget first.)
    const meanwhile = await stack.client.getScrape('acme', ref.jobId);
    expect(meanwhile).toMatchObject({ state: expect.stringMatching(/^(pending|unknown)$/), execution: 'RUNNING' });
    await stack.spawnWorker(env); // the marker exists: this one does not crash
    const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 90_000);
    expect(done.state).toBe('failed');
    expect(JSON.parse(done.last_error!)).toMatchObject({ code: 'TARGET_BLOCKED' });
    const moves = (await stack.store.findings.timeline(ref.jobId)).filter(
      (e) => e.type === 'state' && e.state === 'failed',
    );
    expect(moves).toHaveLength(1);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
    await waitFor(
      async () => (await stack.client.getScrape('acme', ref.jobId)).execution === 'FAILED',
      30_000,
      'the run to close Failed',
    );
  });

  for (const crashAt of ['afterSubmitAnswered', 'afterTaskRecorded', 'afterResultWritten'] as const) {
    it(`a worker killed ${crashAt.replace(/([A-Z])/g, ' $1').toLowerCase()}: one provider job, one result row`, async () => {
      await stack.killWorkers();
      const marker = path.join(stack.dir, `crash-${crashAt}`);
      const tag = `crash-${crashAt}`;
      const env = { TEST_CRASH_AT: crashAt, TEST_CRASH_MARKER: marker };
      const first = await stack.spawnWorker(env);
      const exited = new Promise<number | null>((r) => first.once('exit', (code, signal) => r(signal ? -1 : code)));
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('cnet')}?${tag}`,
        key: tag,
        policy: FAST_POLICY,
      });
      expect(await exited).toBe(-1); // SIGKILLed at the hook
      await stack.spawnWorker(env); // the marker exists: this one does not crash
      const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 90_000);
      expect(done.state).toBe('completed');
      expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
      expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
      expect(await outboxFor(stack.store, ref.jobId)).toHaveLength(1); // one downstream effect
    });
  }
});
