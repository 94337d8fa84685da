/**
 * Detached tracking (`src/worker/tracker.ts`): `trackStatus` returns for async completion and
 * its loop goes on in the worker's tracker, checking a faked provider over a real in-memory store
 * and answering through a faked async-completion client. What a user relies on: the outcome
 * completes the activity; heartbeats reach the server throttled (none for a short job); a cancel
 * the server reports, a pause or a reset, a newer polling activity of the same job and a stopping
 * worker each end the loop with the right answer; a loop whose heartbeats the server has not taken
 * for a whole heartbeat timeout stops polling; a check cut short is not recorded as a failed check;
 * a full worker hands the job to another, its heap measured against `--max-old-space-size`; an
 * answer the server cannot take now is sent again.
 */
import { CompleteAsyncError } from '@temporalio/activity';
import { execFileSync } from 'node:child_process';
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  ActivityPausedError,
  ActivityResetError,
} from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { createActivities, DetachedTracker, type TrackStatusInput } from '../../src/activities/index.js';
import type { DetachedTrackerOptions, TrackerClient } from '../../src/worker/tracker.js';
import { parseConfig } from '../../src/config.js';
import type { ProviderAdapter, StatusObservation } from '../../src/providers/adapter.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { openStore, Store } from '../../src/store/index.js';
import { fakeEvidence } from '../helpers/fakeProvider.js';
import { waitFor } from '../helpers/stack.js';

/** A provider whose status answers come from `statusImpl`. */
class StatusOnly implements ProviderAdapter {
  readonly name = 'fake';
  readonly kind = 'fake';
  readonly capabilities = { idempotency: false, list: false, cancel: false, webhooks: false };
  readonly evidence = fakeEvidence(this.capabilities);
  checks = 0;
  /** Tasks whose status request is in flight now. */
  readonly asking = new Set<string>();
  statusImpl: (taskId: string, signal?: AbortSignal) => Promise<StatusObservation> = async () => ({
    state: 'running',
    providerStatus: 'running',
  });
  async submit(): Promise<never> {
    throw new Error('not used');
  }
  async status(taskId: string, ctx: { signal?: AbortSignal }) {
    this.checks++;
    this.asking.add(taskId);
    try {
      return await this.statusImpl(taskId, ctx.signal);
    } finally {
      this.asking.delete(taskId);
    }
  }
  async result(): Promise<never> {
    throw new Error('not used');
  }
  async cancel(): Promise<never> {
    throw new Error('not used');
  }
  async findSubmitted() {
    return [];
  }
}

/** The async-completion client the tracker answers through: every call recorded, heartbeats answered by `onHeartbeat`. */
class Completions implements TrackerClient {
  completed: { token: string; outcome: unknown }[] = [];
  failed: { token: string; error: unknown }[] = [];
  cancelled: string[] = [];
  heartbeats: { token: string; at: number; details: unknown }[] = [];
  onHeartbeat: () => Promise<void> = async () => undefined;
  completeFailures: unknown[] = [];
  async complete(token: Uint8Array, outcome: unknown) {
    const e = this.completeFailures.shift();
    if (e) throw e;
    this.completed.push({ token: Buffer.from(token).toString(), outcome });
  }
  async fail(token: Uint8Array, error: unknown) {
    this.failed.push({ token: Buffer.from(token).toString(), error });
  }
  async reportCancellation(token: Uint8Array) {
    this.cancelled.push(Buffer.from(token).toString());
  }
  async heartbeat(token: Uint8Array, details: unknown) {
    this.heartbeats.push({ token: Buffer.from(token).toString(), at: Date.now(), details });
    await this.onHeartbeat();
  }
  answered(token: string): boolean {
    return [...this.completed, ...this.failed].some((a) => a.token === token) || this.cancelled.includes(token);
  }
}

const config = parseConfig(
  {
    providers: {
      fake: { kind: 'reference', baseUrl: 'http://127.0.0.1:9', credentials: { default: { apiKey: 'sk-unit-0000' } } },
    },
  },
  {},
);
const request = { url: 'https://example.com/', format: 'markdown' as const, options: {} };
/** A schedule whose second check is an hour away. */
const SLOW = { initialDelayMs: 3_600_000, maxDelayMs: 3_600_000, multiplier: 1, jitter: 0, slowdown: 1 };
let store: Store;
let fake: StatusOnly;
let client: Completions;

/** A tracker and the activities over it (`opts`: the tracker's options). */
function build(opts: Omit<Partial<DetachedTrackerOptions>, 'client'> = {}) {
  const tracker = new DetachedTracker({ client, heartbeatThrottleMs: opts.heartbeatThrottleMs ?? 480_000, ...opts });
  const providers = new ProviderRegistry(config, {}, { fake });
  return { tracker, acts: createActivities({ store, providers, resultRetentionMs: null, tracker }) };
}

/** A status request that hangs until its call is aborted, then fails as the HTTP layer reports a cancelled call. */
const hangsUntilAborted = (_taskId: string, signal?: AbortSignal) =>
  new Promise<never>((_, reject) =>
    signal?.addEventListener('abort', () => reject(new ProviderError('transient', 'GET /status was cancelled', {})), {
      once: true,
    }),
  );

/** The activities with no tracker: the polling loop runs inside its activity. */
const activitiesWithoutTracker = () =>
  createActivities({ store, providers: new ProviderRegistry(config, {}, { fake }), resultRetentionMs: null });

/** A job row with its task recorded, and the input of its tracking activity. */
async function trackedJob(name: string, over: Partial<TrackStatusInput> = {}): Promise<TrackStatusInput> {
  const jobId = `scrape:acme:${name}`;
  const job = { jobId, account: 'acme', key: name, provider: 'fake', requestHash: 'h', request, workflowId: jobId };
  await store.jobs.insert(Store.jobRow(job));
  await store.jobs.recordTaskId(jobId, `task-${name}`, 'queued', 'test');
  return {
    jobId,
    provider: 'fake',
    account: 'acme',
    taskId: `task-${name}`,
    url: request.url,
    request,
    generation: 1,
    schedule: { initialDelayMs: 20, maxDelayMs: 20, multiplier: 1, jitter: 0, slowdown: 1 },
    firstDelayMs: 0,
    deadlineAt: new Date(Date.now() + 3_600_000).toISOString(),
    notFoundLimit: 3,
    failedReads: { initialDelayMs: 1_000, maxDelayMs: 30_000, jitter: 0, limit: 10, budgetMs: 900_000 },
    mode: 'track',
    recordsOutcome: true,
    ...over,
  };
}

/** Runs `trackStatus` as attempt `token` with heartbeat timeout `heartbeatTimeoutMs`; expects it to return for async completion. */
async function adopt(
  acts: ReturnType<typeof build>['acts'],
  input: TrackStatusInput,
  token: string,
  heartbeatTimeoutMs = 600_000,
) {
  const env = new MockActivityEnvironment({
    taskToken: Buffer.from(token),
    heartbeatTimeoutMs,
    startToCloseTimeoutMs: 3_600_000,
    scheduleToCloseTimeoutMs: 0,
  });
  await expect(env.run(acts.trackStatus, input)).rejects.toBeInstanceOf(CompleteAsyncError);
}

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  fake = new StatusOnly();
  client = new Completions();
});

describe('trackStatus with a tracker (async completion)', () => {
  it('returns at once; the detached loop checks on schedule, and its outcome completes the activity by its task token', async () => {
    const { tracker, acts } = build();
    let answers = 0;
    fake.statusImpl = async () =>
      ++answers < 3
        ? { state: 'running', providerStatus: 'running' }
        : { state: 'failed', providerStatus: 'failed', error: { code: 'BLOCKED', message: 'blocked' } };
    await adopt(acts, await trackedJob('a'), 'token-a');
    expect(tracker.size).toBe(1);
    await waitFor(() => client.answered('token-a'), 10_000, 'the activity to be completed');
    expect(client.completed).toEqual([{ token: 'token-a', outcome: expect.objectContaining({ kind: 'failed' }) }]);
    expect(fake.checks).toBe(3);
    expect(tracker.size).toBe(0);
    expect(client.heartbeats).toEqual([]); // a job that ends within half its heartbeat timeout sends none
    // The workflow records the outcome it is given; the loop leaves the row as it was.
    expect((await store.jobs.get('scrape:acme:a'))?.state).toBe('pending');
  });

  it('heartbeats reach the server throttled: the first after half the heartbeat timeout, then at most one per interval, with the latest checks', async () => {
    const { acts } = build({ heartbeatThrottleMs: 1_000 });
    await adopt(acts, await trackedJob('b'), 'token-b', 2_000);
    const started = Date.now();
    await waitFor(() => client.heartbeats.length >= 3, 20_000, 'three heartbeats');
    const [first, second, third] = client.heartbeats;
    expect(first!.at - started).toBeGreaterThanOrEqual(900); // quiet for half the 2-s timeout
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
    expect(third!.at - second!.at).toBeGreaterThanOrEqual(1_000);
    expect((third!.details as { checks: number }).checks).toBeGreaterThan(
      (first!.details as { checks: number }).checks,
    );
    client.onHeartbeat = async () => {
      throw new ActivityCancelledError('cancelled');
    };
    await waitFor(() => client.cancelled.includes('token-b'), 20_000, 'the cancellation to be reported');
  });

  it('a cancel the heartbeat answer reports stops the loop: cancellation reported, no check after it', async () => {
    const { tracker, acts } = build({ heartbeatThrottleMs: 1_000 });
    client.onHeartbeat = async () => {
      throw new ActivityCancelledError('cancelled');
    };
    await adopt(acts, await trackedJob('c'), 'token-c', 2_000);
    // The cancellation is reported once the loop has returned: nothing of it runs any more.
    await waitFor(() => client.cancelled.includes('token-c'), 20_000, 'the cancellation to be reported');
    expect(tracker.size).toBe(0);
    expect(client.completed).toEqual([]);
    expect(fake.asking.size).toBe(0);
  });

  it('a newer polling activity of the same job stops the older loop at once: one loop per job', async () => {
    const { tracker, acts } = build();
    const input = await trackedJob('d');
    await adopt(acts, input, 'token-d1');
    await adopt(acts, { ...input, generation: 2 }, 'token-d2');
    await waitFor(() => client.cancelled.includes('token-d1'), 10_000, 'the older attempt to be cancelled');
    expect(tracker.size).toBe(1);
    fake.statusImpl = async () => ({ state: 'failed', providerStatus: 'failed', error: { message: 'x' } });
    await waitFor(() => client.completed.some((c) => c.token === 'token-d2'), 10_000, 'the newer one to complete');
    expect(client.completed.map((c) => c.token)).toEqual(['token-d2']);
  });

  it('a stopping worker hands every loop over: a waiting one at once, a hanging check at the end of the grace time; new attempts are refused', async () => {
    const { tracker, acts } = build({ graceMs: 300 });
    // Job e waits between quick checks; job f's check hangs until it is aborted.
    fake.statusImpl = async (taskId, signal) =>
      taskId === 'task-f'
        ? new Promise((_, reject) =>
            signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
          )
        : { state: 'running', providerStatus: 'running' };
    await adopt(acts, await trackedJob('e', { schedule: { ...SLOW } }), 'token-e');
    await adopt(acts, await trackedJob('f'), 'token-f');
    await waitFor(() => fake.asking.has('task-f') && fake.checks >= 2, 10_000, 'the hanging check');
    const t0 = Date.now();
    await tracker.handOff();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(client.failed.map((f) => f.token).sort()).toEqual(['token-e', 'token-f']);
    for (const f of client.failed) {
      expect(f.error).toBeInstanceOf(ApplicationFailure);
      expect((f.error as ApplicationFailure).type).toBe('Poll.handOff');
      expect((f.error as ApplicationFailure).nextRetryDelay).toBe(1);
    }
    const late = new MockActivityEnvironment({ taskToken: Buffer.from('token-g') });
    const refused = await late.run(acts.trackStatus, await trackedJob('g')).catch((e: unknown) => e);
    expect((refused as ApplicationFailure).type).toBe('Poll.handOff');
  });

  it('a worker tracking its maximum, or with its heap nearly full, hands a further job to another worker (a BENIGN retry in 10 s)', async () => {
    const { acts } = build({ maxLoops: 1 });
    await adopt(acts, await trackedJob('h'), 'token-h');
    const env = new MockActivityEnvironment({ taskToken: Buffer.from('token-i') });
    const e = (await env.run(acts.trackStatus, await trackedJob('i')).catch((x: unknown) => x)) as ApplicationFailure;
    expect(e.type).toBe('Poll.workerFull');
    expect(e.nextRetryDelay).toBe(10_000);

    let used = 900;
    const heapy = build({ heap: () => ({ used: used * 2 ** 20, limit: 1_000 * 2 ** 20 }) });
    const full = new MockActivityEnvironment({ taskToken: Buffer.from('token-j') });
    const refused = (await full
      .run(heapy.acts.trackStatus, await trackedJob('j'))
      .catch((x: unknown) => x)) as ApplicationFailure;
    expect(refused.type).toBe('Poll.workerFull');
    expect(refused.message).toContain('uses 900 MiB of its 1000 MiB heap');
    used = 500;
    await adopt(heapy.acts, await trackedJob('k'), 'token-k');
    expect(heapy.tracker.size).toBe(1);
  });

  it('an answer the server cannot take now is sent again; one it refuses because the attempt is over is dropped', async () => {
    const { tracker, acts } = build();
    fake.statusImpl = async () => ({ state: 'failed', providerStatus: 'failed', error: { message: 'x' } });
    client.completeFailures = [new Error('14 UNAVAILABLE: connection reset')];
    await adopt(acts, await trackedJob('j'), 'token-j');
    await waitFor(() => client.completed.length === 1, 10_000, 'the second try');
    client.completeFailures = [new ActivityNotFoundError('gone')];
    await adopt(acts, await trackedJob('k'), 'token-k');
    await waitFor(() => tracker.size === 0 && fake.checks >= 2, 10_000, 'the loop to end');
    expect(client.completed.map((c) => c.token)).toEqual(['token-j']);
  });

  it('an outcome the server cannot take for a while is sent again until it is taken, within the heartbeat timeout: the workflow records it, and a dropped one would leave the job active until the attempt times out', async () => {
    const { tracker, acts } = build();
    fake.statusImpl = async () => ({ state: 'failed', providerStatus: 'failed', error: { message: 'x' } });
    client.completeFailures = Array.from({ length: 4 }, () => new Error('14 UNAVAILABLE: connection reset'));
    await adopt(acts, await trackedJob('u'), 'token-u');
    await waitFor(() => tracker.size === 0, 30_000, 'the loop to report');
    expect(client.completeFailures).toEqual([]);
    expect(client.completed).toEqual([{ token: 'token-u', outcome: expect.objectContaining({ kind: 'failed' }) }]);
  });

  it('a pause or a reset the heartbeat answer reports fails the attempt as the SDK does (the server refuses a cancellation it did not ask for)', async () => {
    const { tracker, acts } = build({ heartbeatThrottleMs: 1_000 });
    client.onHeartbeat = async () => {
      throw new ActivityPausedError('paused');
    };
    await adopt(acts, await trackedJob('p'), 'token-p', 2_000);
    await waitFor(() => client.answered('token-p'), 20_000, 'the paused attempt to be answered');
    client.onHeartbeat = async () => {
      throw new ActivityResetError('reset');
    };
    await adopt(acts, await trackedJob('q'), 'token-q', 2_000);
    await waitFor(() => client.answered('token-q'), 20_000, 'the reset attempt to be answered');
    expect(client.cancelled).toEqual([]);
    expect(client.failed.map((f) => [f.token, (f.error as ApplicationFailure).type])).toEqual([
      ['token-p', 'ActivityPause'],
      ['token-q', 'ActivityReset'],
    ]);
    expect(tracker.size).toBe(0);
  });

  it('a loop none of whose heartbeats the server took for a whole heartbeat timeout stops polling and answers nothing (the server has retried its attempt elsewhere)', async () => {
    const { tracker, acts } = build({ heartbeatThrottleMs: 1_000 });
    client.onHeartbeat = async () => {
      throw new Error('14 UNAVAILABLE: connection refused');
    };
    await adopt(acts, await trackedJob('r'), 'token-r', 2_000);
    // The tracker drops a loop once it has ended: nothing of it checks any more.
    await waitFor(() => tracker.size === 0, 20_000, 'the loop to stop');
    expect(client.heartbeats.length).toBeGreaterThan(0);
    expect(fake.asking.size).toBe(0);
    expect(client.answered('token-r')).toBe(false);
  });

  it('a check cut short because a newer polling activity took the job is not recorded as a failed check', async () => {
    const { tracker, acts } = build();
    fake.statusImpl = hangsUntilAborted;
    const input = await trackedJob('s');
    await adopt(acts, input, 'token-s1');
    await waitFor(() => fake.asking.has('task-s'), 10_000, 'the hanging check');
    fake.statusImpl = async () => ({ state: 'running', providerStatus: 'running' });
    await adopt(acts, { ...input, generation: 2, schedule: { ...SLOW } }, 'token-s2');
    await waitFor(() => client.cancelled.includes('token-s1'), 10_000, 'the older attempt to be cancelled');
    const row = await store.jobs.get('scrape:acme:s');
    expect(Number(row?.status_errors ?? 0)).toBe(0);
    expect(row?.last_error ?? null).toBeNull();
    expect(tracker.size).toBe(1);
    await tracker.handOff();
  });

  it("a worker's heap is measured against --max-old-space-size, not V8's limit with the young generation's reserve", () => {
    const script =
      "import('./src/worker/heap.ts').then((m) => process.stdout.write(String(m.oldGenerationHeap().limit / 2 ** 20)))";
    const mib = (flags: string[]) =>
      Number(execFileSync(process.execPath, [...flags, '--import', 'tsx', '-e', script], { encoding: 'utf8' }));
    expect(mib(['--max-old-space-size=256'])).toBe(256);
    expect(mib(['--max-old-space-size=512', '--max-semi-space-size=32'])).toBe(512);
  });
});

describe('trackStatus without a tracker (the loop inside its activity)', () => {
  it('a cancel during a hanging check ends the attempt as cancelled, and no failed check is recorded', async () => {
    const acts = activitiesWithoutTracker();
    fake.statusImpl = hangsUntilAborted;
    const env = new MockActivityEnvironment({ taskToken: Buffer.from('token-t'), heartbeatTimeoutMs: 600_000 });
    const running = env.run(acts.trackStatus, await trackedJob('t')).catch((e: unknown) => e);
    await waitFor(() => fake.asking.has('task-t'), 10_000, 'the hanging check');
    env.cancel();
    expect(await running).toBeInstanceOf(CancelledFailure);
    const row = await store.jobs.get('scrape:acme:t');
    expect(row?.last_error ?? null).toBeNull();
    expect(Number(row?.status_errors ?? 0)).toBe(0);
  });
});

describe('the polling loop after a wake', () => {
  it('checks that still say "not final" come at the follow-up delays, within seconds, before the slowed safety net resumes', async () => {
    const waits: number[] = [];
    const acts = createActivities({
      store,
      providers: new ProviderRegistry(config, {}, { fake }),
      resultRetentionMs: null,
      sleep: async (ms) => void waits.push(ms),
    });
    let answers = 0;
    fake.statusImpl = async () =>
      ++answers <= 5
        ? { state: 'running', providerStatus: 'scraping' }
        : { state: 'failed', providerStatus: 'failed', error: { code: 'X', message: 'stop' } };
    // A webhook job's safety net: its next check an hour away; the wake's follow-ups come first, under the 5-s minimum gap.
    const safetyNet = {
      initialDelayMs: 5,
      maxDelayMs: 3_600_000,
      multiplier: 1,
      jitter: 0,
      slowdown: 1,
      safetyNet: true,
    };
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 600_000, startToCloseTimeoutMs: 3_600_000 });
    const out = await env.run(
      acts.trackStatus,
      await trackedJob('woken', { schedule: safetyNet, followUpMs: [10, 20, 40] }),
    );
    expect(out).toMatchObject({ kind: 'failed' });
    expect(waits.slice(0, 4)).toEqual([0, 10, 20, 40]);
    expect(waits[4]).toBeGreaterThan(3_000_000); // the safety net again (an hour, bounded by the deadline)
  });
});
