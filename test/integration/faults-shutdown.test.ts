/**
 * A worker sent SIGTERM (as a process manager stops it) while a provider call is in flight: the
 * product's worker (`src/worker.ts`, run as a child process) stops polling, lets the call finish
 * within its shutdown grace time and reports the attempt to the server before it exits, so a
 * second worker carries on at once — never after an activity timeout — and nothing is submitted
 * twice. Mid-submit with the answer inside the grace time, mid-submit with the answer after it
 * (the attempt is reported as ambiguous at the end of the grace time, the stopping worker still
 * records the answer, the second worker adopts it), and mid-status-check. The provider has no
 * idempotency key and no list, so a second submit would be a second provider job and a lost answer
 * could only be settled by an operator. The evidence is the server's: how each attempt ended
 * (history, pending activity), which worker ran it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import type { SimRequestEvent, SimResponseEvent } from '../../tools/sim/index.js';
import { writeWorkflowBundle } from '../../src/worker.js';
import {
  activityRecords,
  deleteMaintenanceSchedules,
  spawnProductWorker,
  type ProductWorker,
} from '../helpers/productWorker.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

/** The worker's shutdown grace time (`createScrapeWorker`'s default), ms. */
const GRACE_MS = 10_000;
/**
 * Attempt timeouts far above every wait here: an attempt left to time out would stall the job for
 * a minute (the submit's start-to-close timeout, the status check's heartbeat timeout).
 */
// The tracking activity's heartbeat timeout stays long (a minute): a handed-over attempt must not
// wait it out. `fastPathMs: 0`: the submit attempt only submits, so each case stops the worker in
// the activity it names (the fast path's own hand-over has its case below).
const POLICY: Partial<PollPolicy> = {
  ...FAST_POLICY,
  activityTimeoutMs: 60_000,
  pollHeartbeatTimeoutMs: 60_000,
  deadlineMs: 300_000,
  fastPathMs: 0,
};

let pages: PageServer;
let stack: Stack;
let env: Record<string, string>;
const workers: ProductWorker[] = [];

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({
    worker: false,
    profile: { concurrency: 8, idempotency: false, list: false },
    providerTimeoutMs: 20_000,
  });
  // One bundle for every child worker (each would otherwise bundle the workflows itself).
  const bundle = path.join(stack.dir, 'workflow-bundle.js');
  await writeWorkflowBundle(bundle);
  env = { SCRAPE_WORKFLOW_BUNDLE: bundle };
});

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  if (stack) await deleteMaintenanceSchedules(stack);
  await stack?.stop();
  await pages?.close();
});

async function worker(): Promise<ProductWorker> {
  const w = await spawnProductWorker(stack, env);
  workers.push(w);
  return w;
}

/** The next sim request matching `pred` (from now on). */
function nextRequest(pred: (e: SimRequestEvent) => boolean): Promise<SimRequestEvent> {
  return new Promise((resolve) => {
    const on = (e: SimRequestEvent) => {
      if (!pred(e)) return;
      stack.sim.events.off('request', on);
      resolve(e);
    };
    stack.sim.events.on('request', on);
  });
}

/** The next sim response matching `pred` (from now on). */
function nextResponse(pred: (e: SimResponseEvent) => boolean): Promise<SimResponseEvent> {
  return new Promise((resolve) => {
    const on = (e: SimResponseEvent) => {
      if (!pred(e)) return;
      stack.sim.events.off('response', on);
      resolve(e);
    };
    stack.sim.events.on('response', on);
  });
}

const jobsTagged = (tag: string) => stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));

/**
 * Starts a worker and a job whose provider task stays `running`, and waits until the job is
 * polling (task recorded, one check made); returns the worker, the job and its task ID.
 */
async function pollingJob(tag: string, page: string) {
  const a = await worker();
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
  const ref = await stack.client.startScrape({
    account: 'acme',
    url: `${pages.pageUrl(page)}?${tag}`,
    key: tag,
    policy: POLICY,
  });
  const polling = await waitFor(
    async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r?.task_id && r.status_checks >= 1 ? r : undefined;
    },
    30_000,
    'polling to start',
  );
  return { a, ref, taskId: polling.task_id! };
}

describe('SIGTERM to a worker with a provider call in flight', () => {
  it('mid-submit, the answer inside the grace time: the attempt completes on the stopping worker, a second worker carries on; one provider job, one submit', async () => {
    const tag = 'sigterm-submit';
    const a = await worker();
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'delay',
      delayMs: 4_000,
      commit: true,
      times: 1,
    });
    const submitsBefore = stack.sim.stats().requests.byEndpoint.submit;
    const inFlight = nextRequest((e) => e.endpoint === 'submit');
    const answered = nextResponse((e) => e.endpoint === 'submit');
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('ars-1')}?${tag}`,
      key: tag,
      policy: POLICY,
    });
    await inFlight;
    a.child.kill('SIGTERM');
    const b = await worker();

    expect((await answered).status).toBe(202); // the call was not cut short
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const row = await waitForState(
      stack.store,
      ref.jobId,
      ['completed', 'failed', 'unknown', 'tracking_interrupted'],
      60_000,
    );
    expect(row.state).toBe('completed');
    expect(jobsTagged(tag)).toHaveLength(1);
    expect(row.task_id).toBe(jobsTagged(tag)[0]!.job_id);
    expect(stack.sim.stats().requests.byEndpoint.submit - submitsBefore).toBe(1);

    const acts = await activityRecords(stack.temporal.workflow.getHandle(ref.jobId));
    const submit = acts.find((r) => r.activityType === 'submitJob')!;
    expect(submit).toMatchObject({ end: 'completed', attempt: 1, identity: a.identity }); // reported by the stopping worker, first attempt
    expect(acts.filter((r) => r.activityType === 'trackStatus').every((r) => r.identity === b.identity)).toBe(true);
    expect(acts.filter((r) => r.end === 'timed_out' || r.lastFailureWasTimeout)).toEqual([]);
    const events = (await stack.store.findings.timeline(ref.jobId)).map((e) => e.type);
    expect(events).not.toContain('submit_ambiguous');
    await stopAll();
  });

  it('mid-submit, the answer after the grace time: the attempt is reported ambiguous at once, the stopping worker records the answer before it exits and the second worker adopts it; one provider job, one submit', async () => {
    const tag = 'sigterm-submit-late';
    const a = await worker();
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'delay',
      delayMs: GRACE_MS + 5_000,
      commit: true,
      times: 1,
    });
    const submitsBefore = stack.sim.stats().requests.byEndpoint.submit;
    const inFlight = nextRequest((e) => e.endpoint === 'submit');
    const answered = nextResponse((e) => e.endpoint === 'submit');
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnn')}?${tag}`,
      key: tag,
      policy: POLICY,
    });
    await inFlight;
    a.child.kill('SIGTERM');
    const b = await worker();

    // The server has the attempt's outcome at the end of the grace time, long before its timeout.
    const handle = stack.temporal.workflow.getHandle(ref.jobId);
    await waitFor(
      async () => (await activityRecords(handle)).find((r) => r.activityType === 'submitJob')?.end === 'completed',
      40_000,
      'the submit attempt to be reported',
    );
    expect((await answered).status).toBe(202);
    const exit = await a.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(jobsTagged(tag)).toHaveLength(1);
    expect(row.task_id).toBe(jobsTagged(tag)[0]!.job_id);
    expect(stack.sim.stats().requests.byEndpoint.submit - submitsBefore).toBe(1);

    const timeline = await stack.store.findings.timeline(ref.jobId);
    const ambiguous = timeline.find((e) => e.type === 'submit_ambiguous');
    expect(JSON.parse(ambiguous!.detail!)).toMatchObject({ code: 'ANSWER_PENDING' });
    const recorded = timeline.filter((e) => e.type === 'task_recorded');
    expect(recorded.map((e) => JSON.parse(e.detail!))).toEqual([
      expect.objectContaining({ taskId: row.task_id, source: 'submit' }),
    ]); // the answer itself, not an operator
    expect(timeline.some((e) => e.type === 'reconcile_undecided')).toBe(false);

    const acts = await activityRecords(handle);
    expect(acts.find((r) => r.activityType === 'submitJob')).toMatchObject({
      end: 'completed',
      attempt: 1,
      identity: a.identity,
    });
    expect(acts.find((r) => r.activityType === 'reconcileJob')).toMatchObject({
      end: 'completed',
      identity: b.identity,
    });
    expect(acts.filter((r) => r.end === 'timed_out' || r.lastFailureWasTimeout)).toEqual([]);
    await stopAll();
  });

  it('mid-check: the check finishes and is recorded, the attempt is reported as a retry (not a timeout), and the second worker makes the next check at once', async () => {
    const tag = 'sigterm-check';
    const { a, ref, taskId } = await pollingJob(tag, 'cnet');
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'status',
      urlContains: tag,
      action: 'delay',
      delayMs: 4_000,
      times: 1,
    });
    const inFlight = nextRequest((e) => e.endpoint === 'status' && e.jobId === taskId);
    const answered = nextResponse((e) => e.endpoint === 'status' && e.jobId === taskId);
    await inFlight;
    const checksBefore = (await stack.store.jobs.get(ref.jobId))!.status_checks;
    a.child.kill('SIGTERM');
    const b = await worker();

    expect((await answered).status).toBe(200); // not aborted by the shutdown
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect((await stack.store.jobs.get(ref.jobId))!.status_checks).toBeGreaterThan(checksBefore); // recorded by the stopping worker
    // The server's record of that attempt: a failure the worker reported (the hand-over after the
    // check in flight), not a heartbeat or start-to-close timeout; the next attempt goes to the second worker.
    const handle = stack.temporal.workflow.getHandle(ref.jobId);
    const taken = await waitFor(
      async () => {
        const p = (await handle.describe()).raw.pendingActivities?.find((x) => x.activityType?.name === 'trackStatus');
        return p?.lastWorkerIdentity === b.identity ? p : undefined;
      },
      30_000,
      'the second worker to run the next check',
    ); // well inside the 60 s heartbeat timeout
    const checksByB = await waitFor(
      async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r && r.status_checks > checksBefore + 1 ? r.status_checks : undefined;
      },
      30_000,
      'a check by the second worker',
    );
    expect(checksByB).toBeGreaterThan(checksBefore + 1);
    expect(taken.lastFailure?.timeoutFailureInfo ?? null).toBeNull();

    stack.sim.release(taskId);
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(jobsTagged(tag)).toHaveLength(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    const acts = await activityRecords(handle);
    expect(acts.filter((r) => r.end === 'timed_out' || r.lastFailureWasTimeout)).toEqual([]);
    await stopAll();
  });
});

describe('SIGTERM to a worker with a status check hanging past the grace time', () => {
  it('the check is cut short at the end of the grace time and the attempt reported as failed, not left to time out; the second worker checks again at once', async () => {
    const tag = 'sigterm-hung-check';
    const { a, ref, taskId } = await pollingJob(tag, 'ars-1');
    // Longer than the grace time, shorter than the entry's read timeout: only the shutdown ends it.
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'status',
      urlContains: tag,
      action: 'delay',
      delayMs: GRACE_MS + 8_000,
      times: 1,
    });
    const inFlight = nextRequest((e) => e.endpoint === 'status' && e.jobId === taskId);
    await inFlight;
    a.child.kill('SIGTERM');
    const b = await worker();
    expect(await a.exited).toEqual({ code: 0, signal: null });

    const handle = stack.temporal.workflow.getHandle(ref.jobId);
    const taken = await waitFor(
      async () => {
        const p = (await handle.describe()).raw.pendingActivities?.find((x) => x.activityType?.name === 'trackStatus');
        return p?.lastWorkerIdentity === b.identity ? p : undefined;
      },
      30_000,
      'the second worker to run the next check',
    ); // well inside the 60 s heartbeat timeout
    expect(taken.lastFailure?.timeoutFailureInfo ?? null).toBeNull();
    const before = (await stack.store.jobs.get(ref.jobId))!.status_checks;
    await waitFor(
      async () => ((await stack.store.jobs.get(ref.jobId))!.status_checks > before ? true : undefined),
      30_000,
      'a check by the second worker',
    );

    stack.sim.release(taskId);
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(jobsTagged(tag)).toHaveLength(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    expect((await activityRecords(handle)).filter((r) => r.end === 'timed_out' || r.lastFailureWasTimeout)).toEqual([]);
    await stopAll();
  });
});

describe('SIGTERM to a worker while a submit attempt has gone on into its first checks', () => {
  it('the attempt hands the job over at once: the second worker adopts the recorded task (no second submit) and tracks it; one provider job', async () => {
    const tag = 'sigterm-fast-path';
    const a = await worker();
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('aclu')}?${tag}`,
      key: tag,
      policy: { ...POLICY, fastPathMs: 30_000 },
    });
    const checked = await waitFor(
      async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r?.task_id && r.status_checks >= 1 ? r : undefined;
      },
      30_000,
      'the first check inside the submit attempt',
    );
    const submitsBefore = stack.sim.stats().requests.byEndpoint.submit;
    a.child.kill('SIGTERM');
    const b = await worker();
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const handle = stack.temporal.workflow.getHandle(ref.jobId);
    await waitFor(
      async () =>
        (await handle.describe()).raw.pendingActivities?.find(
          (x) => x.activityType?.name === 'trackStatus' && x.lastWorkerIdentity === b.identity,
        ),
      30_000,
      'the second worker tracking it',
    );
    stack.sim.release(checked.task_id!);
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(row.task_id).toBe(checked.task_id);
    expect(jobsTagged(tag)).toHaveLength(1);
    expect(stack.sim.stats().requests.byEndpoint.submit - submitsBefore).toBe(0);
    expect((await activityRecords(handle)).filter((r) => r.end === 'timed_out' || r.lastFailureWasTimeout)).toEqual([]);
    await stopAll();
  });
});

/** Stops every running child worker with SIGTERM and waits for each to exit. */
async function stopAll(): Promise<void> {
  await Promise.all(
    workers.map(async (w) => {
      if (w.child.exitCode !== null || w.child.signalCode !== null) return;
      w.child.kill('SIGTERM');
      await w.exited;
    }),
  );
}
