/**
 * Scrape workflow v2 in skipped time: the Temporal time-skipping test server (obtained by
 * `test/helpers/testServer.ts`) runs the real workflow and the real activities over an in-memory
 * SQLite store, with only the provider adapter faked (an activity's dependency). Hours of polling
 * schedule, deadlines, 404 streaks, lost-submit rounds with their settle windows, wake floods and a
 * cancel behind a hanging check each take milliseconds to a few seconds of wall-clock time.
 *
 * Times are taken from the test server's clock (`env.currentTimeMs()`), so they are the times the
 * workflow and the server saw.
 */
import { fakeEvidence, fakeReading } from '../helpers/fakeProvider.js';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, DetachedTracker, mapProviderErrors } from '../../src/activities/index.js';
import { ScrapeClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config.js';
import type { JobView, PollPolicy } from '../../src/model/types.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { HELD_LOCALLY } from '../../src/model/schedule.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Accepted, CancelAnswer, ProviderAdapter, StatusObservation } from '../../src/providers/adapter.js';
import type { ProviderResult } from '../../src/model/results.js';
import { openStore, type Store } from '../../src/store/index.js';
import {
  cancelUpdate,
  resolveUpdate,
  stateQuery,
  submitNowSignal,
  wakeSignal,
} from '../../src/workflows/scrape/messages.js';
import { HEARTBEAT_THROTTLE_MS, workflowBundle } from '../../src/worker.js';
import { ensureTestServer } from '../helpers/testServer.js';
import { INDEXED_VALUE_TYPE } from '../../src/namespace.js';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';

const PAGE: ProviderResult = {
  url: 'https://example.com/',
  finalUrl: 'https://example.com/',
  httpStatus: 200,
  title: 'Example',
  byline: null,
  excerpt: null,
  lang: 'en',
  siteName: null,
  publishedTime: null,
  text: 'x',
  markdown: 'x',
  links: [],
  contentLength: 1,
};

/** A provider whose every answer a test scripts; it notes the server time of each call. */
class ScriptedProvider implements ProviderAdapter {
  readonly name = 'fake';
  readonly kind = 'reference';
  capabilities = { idempotency: false, list: true, cancel: true, webhooks: false };
  get evidence() {
    return fakeEvidence(this.capabilities);
  }
  calls: { op: string; at: number; taskId?: string }[] = [];
  submitImpl: (n: number) => Promise<Accepted> = async (n) => ({
    taskId: `task-${n}`,
    providerStatus: 'queued',
    replayed: false,
  });
  statusImpl: (taskId: string, n: number, signal?: AbortSignal) => Promise<StatusObservation> = async () => ({
    state: 'running',
    providerStatus: 'running',
  });
  listImpl: () => Promise<Accepted | null> = async () => null;
  cancelImpl: (n: number) => Promise<CancelAnswer> = async () => ({
    accepted: true,
    state: 'running',
    providerStatus: 'cancelling',
  });
  constructor(private readonly now: () => Promise<number>) {}
  private async note(op: string, taskId?: string): Promise<number> {
    this.calls.push({ op, at: await this.now(), taskId });
    return this.calls.filter((c) => c.op === op).length;
  }
  times(op: string): number[] {
    return this.calls.filter((c) => c.op === op).map((c) => c.at);
  }
  async submit() {
    return this.submitImpl(await this.note('submit'));
  }
  async status(taskId: string, ctx: { signal?: AbortSignal }) {
    return this.statusImpl(taskId, await this.note('status', taskId), ctx.signal);
  }
  async result() {
    await this.note('result');
    return PAGE;
  }
  async cancel(): Promise<CancelAnswer> {
    return this.cancelImpl(await this.note('cancel'));
  }
  async findSubmitted() {
    await this.note('list');
    return fakeReading(await this.listImpl());
  }
}

let env: TestWorkflowEnvironment;
let store: Store;
let provider: ScriptedProvider;
/** The provider of entry `narrow` (a key that admits one active job) and of entry `held` (its submits refused for a cool-down). */
let narrow: ScriptedProvider;
let held: ScriptedProvider;
/** The provider of entry `cooled`: its submits refused `429` with `Retry-After: 0`. */
let cooled: ScriptedProvider;
let client: ScrapeClient;
let worker: Worker;
let running: Promise<void>;
let tracker: DetachedTracker;
const taskQueue = `timeskip-${randomUUID()}`;
/** Poll policy without jitter, so that the schedule is exact. */
const POLICY: Partial<PollPolicy> = {
  initialDelayMs: 2_000,
  multiplier: 1.5,
  maxDelayMs: 60_000,
  jitter: 0,
  deadlineMs: 30 * 60_000,
  activityTimeoutMs: 30_000,
  cancelConfirmDeadlineMs: 60_000,
};

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: await ensureTestServer() } },
  });
  // The test server implements `AddSearchAttributes` (not `ListSearchAttributes`): register ours directly.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(Object.entries(SEARCH_ATTRIBUTES).map(([n, t]) => [n, INDEXED_VALUE_TYPE[t]])),
  });
  store = await openStore('sqlite::memory:');
  provider = new ScriptedProvider(() => env.currentTimeMs());
  narrow = new ScriptedProvider(() => env.currentTimeMs());
  held = new ScriptedProvider(() => env.currentTimeMs());
  cooled = new ScriptedProvider(() => env.currentTimeMs());
  // No propagation window for a new task's 404s: the window is counted in wall-clock time, which
  // stands still while the test server skips time (activities.poll.test covers the window).
  const entry = (apiKey: string, activeJobs = 100) => ({
    kind: 'reference',
    baseUrl: 'http://127.0.0.1:9',
    credentials: { default: { apiKey } },
    limits: { activeJobs: { initial: activeJobs, max: activeJobs } },
    notFoundGraceMs: 0,
  });
  const config = parseConfig(
    {
      providers: {
        fake: entry('sk-unit-0000'),
        narrow: entry('sk-unit-narrow', 1),
        held: entry('sk-unit-held'),
        cooled: entry('sk-unit-cooled'),
        // Only account "other" has a credential, in a variable this worker lacks.
        nokey: {
          kind: 'reference',
          baseUrl: 'http://127.0.0.1:9',
          credentials: { accounts: { other: { apiKeyEnv: 'SCRAPE_TEST_UNSET_KEY' } } },
        },
      },
    },
    {},
  );
  const providers = new ProviderRegistry(config, {}, { fake: provider, narrow, held, cooled });
  // Tracking runs detached and completes asynchronously, as in the product's worker.
  tracker = new DetachedTracker({ client: env.client.activity, heartbeatThrottleMs: HEARTBEAT_THROTTLE_MS });
  const activities = createActivities({
    store,
    providers,
    resultRetentionMs: null,
    temporal: env.client,
    tracker,
    inlineSettleMs: 0,
    sleep: (ms) => env.sleep(ms),
    serverTime: () => env.currentTimeMs(),
  });
  worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities,
    interceptors: { activity: [mapProviderErrors] },
  });
  running = worker.run();
  client = new ScrapeClient({
    temporal: env.client,
    store,
    taskQueue,
    defaultProvider: 'fake',
    providers: ['fake', 'narrow', 'held', 'cooled', 'nokey'],
  });
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await tracker?.handOff();
  await store?.close();
  await env?.teardown();
});

function reset(): void {
  provider.calls = [];
  provider.capabilities = { idempotency: false, list: true, cancel: true, webhooks: false };
  provider.submitImpl = async (n) => ({
    taskId: `task-${randomUUID()}-${n}`,
    providerStatus: 'queued',
    replayed: false,
  });
  provider.statusImpl = async () => ({ state: 'running', providerStatus: 'running' });
  provider.listImpl = async () => null;
  provider.cancelImpl = async () => ({ accepted: true, state: 'running', providerStatus: 'cancelling' });
}

/** Starts a job with key `<prefix>-<uuid>` on provider `on` (default the fake) under `policy`; returns its reference and workflow handle. */
async function startJob(prefix: string, policy: Partial<PollPolicy> = POLICY, on = 'fake') {
  const key = `${prefix}-${randomUUID()}`;
  const ref = await client.startScrape({
    account: 'acme',
    url: `https://example.com/${key}`,
    key,
    provider: on,
    policy,
  });
  return { ref, handle: env.client.workflow.getHandle(ref.jobId) };
}

async function run(key: string, policy: Partial<PollPolicy> = POLICY) {
  const ref = await client.startScrape({
    account: 'acme',
    url: `https://example.com/${key}`,
    key,
    provider: 'fake',
    policy,
  });
  const handle = env.client.workflow.getHandle(ref.jobId);
  // A job that ends failed, expired or tracking_interrupted closes its run Failed, the view in the failure's details.
  const view = await handle.result().catch((e: unknown) => {
    const cause = e instanceof WorkflowFailedError ? e.cause : undefined;
    return cause instanceof ApplicationFailure && cause.type?.startsWith('ScrapeJob.')
      ? (cause.details?.[0] as JobView)
      : undefined;
  });
  return { ref, view, row: await store.jobs.get(ref.jobId), handle };
}

/**
 * Starts a job whose submit the provider refuses (400 `VALIDATION_ERROR`) once the test calls
 * `release`; resolves when the submit attempt is in flight, so that a cancel can race the refusal.
 */
async function startRefusedSubmit(prefix: string) {
  reset();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let submitting = false;
  provider.submitImpl = async () => {
    submitting = true;
    await gate;
    throw new ProviderError('permanent', 'invalid scrape request', { code: 'VALIDATION_ERROR', httpStatus: 400 });
  };
  const { ref, handle } = await startJob(prefix);
  while (!submitting) await new Promise((r) => setTimeout(r, 20));
  return { ref, handle, release };
}

/** Prints what a job that should have ended is doing: provider calls, pending activities, the `state` query, the store row, the last history events. */
async function explainStuck(handle: ReturnType<typeof env.client.workflow.getHandle>, jobId: string): Promise<void> {
  try {
    const d = await handle.describe();
    const pending = (d.raw.pendingActivities ?? []).map((a) => ({
      type: a.activityType?.name,
      state: a.state,
      attempt: a.attempt,
      lastFailure: a.lastFailure?.message,
      next: a.nextAttemptScheduleTime,
    }));
    const events = ((await handle.fetchHistory()).events ?? []).slice(-25).map((e) => `${e.eventId} ${e.eventType}`);
    console.log(`still waiting for ${jobId} at server time ${await env.currentTimeMs()}`, {
      calls: provider.calls.slice(-12),
      pending,
      state: await handle.query('state'),
      row: await store.jobs.get(jobId),
      events,
    });
  } catch (e) {
    console.log(`still waiting for ${jobId}; describing it failed`, e);
  }
}

/** The schedule's delays (no jitter): delay n = min(max, initial × multiplier^n), ms. */
function delay(n: number): number {
  return Math.min(POLICY.maxDelayMs!, POLICY.initialDelayMs! * Math.pow(POLICY.multiplier!, n));
}

describe('scrape workflow in skipped time', () => {
  it('backoff: checks follow the schedule (2 s, 3 s, 4.5 s, …) and the final answer carries the result: one write, no separate read', async () => {
    reset();
    provider.statusImpl = async (_t, n) =>
      n < 6
        ? { state: 'running', providerStatus: 'running' }
        : { state: 'completed', providerStatus: 'completed', result: PAGE };
    const { view, row, ref } = await run(`backoff-${randomUUID()}`);
    expect(view?.state).toBe('completed');
    expect(row?.state).toBe('completed');
    expect(await store.results.count({ jobId: ref.jobId })).toBe(1);
    const [submitAt] = provider.times('submit');
    const checks = provider.times('status');
    expect(checks).toHaveLength(6);
    const gaps = checks.map((t, i) => t - (i === 0 ? submitAt! : checks[i - 1]!));
    gaps.forEach((g, i) =>
      expect(Math.abs(g - delay(i)), `gap ${i}: ${g} ms, schedule ${delay(i)} ms`).toBeLessThan(1_000),
    );
    expect(provider.times('result')).toHaveLength(0);
    expect(Number(row?.status_checks)).toBe(6);
    expect(view?.statusChecks).toBe(6);
  }, 60_000);

  it('deadline: a task that never finishes ends tracking_interrupted at the deadline, with the task ID kept and no check after it', async () => {
    reset();
    const policy = { ...POLICY, deadlineMs: 10 * 60_000 };
    const { view, row } = await run(`deadline-${randomUUID()}`, policy);
    expect(view?.state).toBe('tracking_interrupted');
    expect(row?.state).toBe('tracking_interrupted');
    expect(row?.task_id).toBeTruthy();
    const [submitAt] = provider.times('submit');
    const checks = provider.times('status');
    // The schedule's checks that fit in 10 min: 2, 5, 9.5, … s, then every 60 s.
    let t = 0;
    let expected = 0;
    for (let n = 0; t + delay(n) < policy.deadlineMs; n++) {
      t += delay(n);
      expected++;
    }
    expect(Math.abs(checks.length - expected)).toBeLessThanOrEqual(1);
    expect(checks.at(-1)! - submitAt!).toBeLessThanOrEqual(policy.deadlineMs + 1_000);
    expect(view?.note).toMatch(/deadline .* passed/);
  }, 60_000);

  it('notFoundLimit: three 404s in a row for a known task end it expired, never failed, never resubmitted', async () => {
    reset();
    provider.statusImpl = async () => {
      throw new ProviderError('not_found', 'GET /jobs/x answered 404', { httpStatus: 404 });
    };
    const { view, row } = await run(`gone-${randomUUID()}`, { ...POLICY, notFoundLimit: 3 });
    expect(view?.state).toBe('expired');
    expect(row?.state).toBe('expired');
    expect(provider.times('status')).toHaveLength(3);
    expect(provider.times('submit')).toHaveLength(1);
  }, 60_000);

  it('submit rounds: submits whose answers are always lost, each proved absent by two list reads a settle window apart, end failed after submitRounds', async () => {
    reset();
    provider.submitImpl = async () => {
      throw new ProviderError('ambiguous', 'POST /jobs: connection reset after sending', { code: 'ECONNRESET' });
    };
    const { view, row } = await run(`lost-${randomUUID()}`, { ...POLICY, submitRounds: 3 });
    expect(view?.state).toBe('failed');
    expect(row?.state).toBe('failed');
    expect(JSON.parse(row!.last_error!)).toMatchObject({ kind: 'submit_unacknowledged' });
    const submits = provider.times('submit');
    const lists = provider.times('list');
    expect(submits).toHaveLength(3);
    // The list reads of each round (after its submit, before the next): at least two, the last a
    // settle window after an earlier one; a read made before the round's submit could have been
    // created and listed decides nothing, so a round may read more than twice (its first waits only
    // end once the submit's timeout and the list's lag have both passed).
    const rounds = submits.map((at, i) => lists.filter((l) => l >= at && l < (submits[i + 1] ?? Infinity)));
    expect(rounds.flat()).toEqual(lists);
    for (const [i, reads] of rounds.entries()) {
      expect(reads.length, `reads of round ${i + 1}`).toBeGreaterThanOrEqual(2);
      expect(reads.at(-1)! - reads.at(-2)!, `settle window of round ${i + 1}`).toBeGreaterThanOrEqual(10_000);
    }
    expect(submits[1]! - rounds[0]!.at(-1)!).toBeGreaterThanOrEqual(1_600); // resubmit backed off 2 s ± 20 %
    expect(submits[2]! - rounds[1]!.at(-1)!).toBeGreaterThanOrEqual(3_200); // then 4 s ± 20 %
  }, 60_000);

  it('wake gap: a flood of webhook wakes makes checks at least initialDelayMs apart, and the job completes when the provider says so', async () => {
    reset();
    let done = false;
    provider.statusImpl = async () =>
      done
        ? { state: 'completed', providerStatus: 'completed', result: PAGE }
        : { state: 'running', providerStatus: 'running' };
    const { ref, handle } = await startJob('wake', { ...POLICY, initialDelayMs: 5_000 });
    await env.sleep(6_000); // the first check
    for (let i = 0; i < 30; i++) await handle.signal(wakeSignal, { eventId: `e${i}` });
    await env.sleep(20_000);
    done = true;
    // One wake, not a burst. After a wake the replacement check waits out the store's minimum gap,
    // counted in wall-clock time, which stands still while the test server skips time: so it falls
    // due at the very instant the quiet window of that wake ends. Further wakes in the window arm a
    // timer for that instant, and when the timer fires while the check is returning `completed`,
    // the workflow task that cancels the check's activity is refused by the time-skipping server
    // (`ACTIVITY_UNKNOWN for scheduledEventId=…`; a real server accepts it) and is never retried,
    // so the job hung until the test's timeout, about once in eight loaded runs. The flood above
    // already covers merged wakes; there every check it races answers `running`, which completes nothing.
    await handle.signal(wakeSignal, { eventId: 'done' });
    // If the wait lasts 30 s, print what the job is doing (it should take well under a second).
    const stuck = setTimeout(() => void explainStuck(handle, ref.jobId), 30_000);
    const view = await handle.result().finally(() => clearTimeout(stuck));
    expect(view.state).toBe('completed');
    const checks = provider.times('status');
    for (let i = 1; i < checks.length; i++)
      expect(checks[i]! - checks[i - 1]!, `gap before check ${i}`).toBeGreaterThanOrEqual(5_000 - 50);
    expect(checks.length).toBeLessThanOrEqual(8);
  }, 60_000);

  it('cancel during a hanging check: the provider cancel is called at once (no wait for the check), the job ends cancelled and closes Canceled', async () => {
    reset();
    let hangs = 0;
    let confirmed = false;
    provider.statusImpl = (_t, n, signal) => {
      if (n === 1) {
        hangs++;
        return new Promise<StatusObservation>((_resolve, reject) =>
          signal?.addEventListener('abort', () => reject(new ProviderError('transient', 'aborted'))),
        );
      }
      return Promise.resolve(
        confirmed
          ? { state: 'cancelled', providerStatus: 'cancelled' }
          : { state: 'running', providerStatus: 'cancelling' },
      );
    };
    const { ref, handle } = await startJob('hang');
    while (hangs === 0) await new Promise((r) => setTimeout(r, 20));
    const askedAt = await env.currentTimeMs();
    await handle.signal('cancel', { reason: 'test', requestedBy: 'timeskip' });
    while (provider.times('cancel').length === 0) await new Promise((r) => setTimeout(r, 20));
    confirmed = true;
    const cancelAt = provider.times('cancel')[0]!;
    expect(cancelAt - askedAt).toBeLessThan(2_000);
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const row = await store.jobs.get(ref.jobId);
    expect(row?.state).toBe('cancelled');
    expect(provider.times('cancel')).toHaveLength(1);
  }, 60_000);
  it('a cancel request that arrives while the submit is being refused: the store row ends failed, as the workflow does (never left submitting)', async () => {
    const { ref, handle, release } = await startRefusedSubmit('refused');
    // The Update is accepted while the submit attempt is in flight; then the provider refuses it.
    const update = await handle.startUpdate(cancelUpdate, {
      args: [{ reason: 'test', requestedBy: 'timeskip' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    release();
    const report = await update.result();
    // The cancel does not wait for the submit attempt: it ends `failed` (the refusal came first) or
    // `cancelled` (reconciled: nothing exists at the provider) — final in the store either way.
    expect(['failed', 'cancelled']).toContain(report.outcome);
    await handle.result().catch(() => undefined);
    const row = await store.jobs.get(ref.jobId);
    expect(row?.state).toBe(report.outcome);
    expect(row?.finished_at).toBeTruthy();
    expect(
      (await store.findings.timeline(ref.jobId)).some(
        (e) => e.type === 'submit_rejected' && JSON.parse(e.detail!).error.code === 'VALIDATION_ERROR',
      ),
    ).toBe(true);
    expect(provider.times('submit')).toHaveLength(1);
    expect(provider.times('cancel')).toHaveLength(0);
  }, 60_000);
  it('a cancel call whose answers are all lost (502): the status checks that follow observe the stop, and the job ends cancelled, not cancel_unconfirmed', async () => {
    reset();
    let cancelled = false;
    let checks = 0;
    provider.statusImpl = async () => {
      checks++;
      return cancelled
        ? { state: 'cancelled', providerStatus: 'cancelled' }
        : { state: 'running', providerStatus: 'running' };
    };
    // The provider stops the task on the first cancel call; a proxy in front answers 502 to every one.
    provider.cancelImpl = async () => {
      cancelled = true;
      throw new ProviderError('transient', 'DELETE /api/jobs/… answered 502 Bad Gateway', { httpStatus: 502 });
    };
    const { ref, handle } = await startJob('lost-cancel');
    while (checks === 0) await new Promise((r) => setTimeout(r, 20));
    const update = await handle.startUpdate(cancelUpdate, {
      args: [{ reason: 'test', requestedBy: 'timeskip' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    await expect(handle.result()).rejects.toThrow(); // skips the retry waits of the cancel call
    const report = await update.result();
    expect(report).toMatchObject({
      outcome: 'cancelled',
      detail: expect.stringMatching(/provider confirmed the task stopped/),
    });
    expect(report.providerCancelCalls).toBeGreaterThanOrEqual(1);
    expect(provider.times('cancel').length).toBeGreaterThan(1); // retried within the cancel-confirmation deadline
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const row = await store.jobs.get(ref.jobId);
    expect(row?.state).toBe('cancelled');
    expect(await store.results.count({ jobId: ref.jobId })).toBe(0);
  }, 60_000);
  it('a native cancel (the Web UI button) that arrives while the submit is being refused closes the run Canceled with the outcome reported, as the signal and Update doors do', async () => {
    const { ref, handle, release } = await startRefusedSubmit('native-refused');
    await handle.cancel();
    // The workflow has seen the request (its state shows it) before the provider answers.
    while (!((await handle.query('state')) as { cancel?: unknown }).cancel) await new Promise((r) => setTimeout(r, 20));
    release();
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const row = await store.jobs.get(ref.jobId);
    // As for the Update: `failed` (the refusal came first) or `cancelled` (reconciled: nothing exists), the same in the store and the report.
    expect(['failed', 'cancelled']).toContain(row?.state);
    // The report is kept with the final state (a cancel that acted) or beside it (one that came too late).
    const outcomes = (await store.findings.timeline(ref.jobId))
      .filter((e) => e.detail && (e.type === 'cancel_outcome' || e.type === 'state'))
      .map((e) => (JSON.parse(e.detail!) as { cancel?: { outcome?: string; via: string } }).cancel)
      .filter((c) => c?.outcome);
    expect(outcomes).toEqual([expect.objectContaining({ outcome: row?.state, via: 'native' })]);
    expect(provider.times('submit')).toHaveLength(1);
    expect(provider.times('cancel')).toHaveLength(0);
  }, 60_000);
  it('an operator’s resolve that arrives while a woken reconcile is in flight, which then adopts a task a late answer recorded, is reported as not applied (never as applied): no resubmit', async () => {
    reset();
    provider.submitImpl = async () => {
      throw new ProviderError('ambiguous', 'the submit’s answer was lost', {});
    };
    const twoOfOurs = (): ReturnType<ScriptedProvider['findSubmitted']> =>
      Promise.resolve([
        {
          ...fakeReading({ taskId: 'seen-a', providerStatus: 'queued', replayed: false })[0]!,
          candidates: ['seen-a', 'seen-b'].map((taskId) => ({
            taskId,
            providerStatus: 'queued',
            match: 'strong' as const,
            why: 'carries our reference',
          })),
        },
      ]);
    const original = provider.findSubmitted.bind(provider);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let listing = false;
    let woken = false;
    provider.findSubmitted = async () => {
      if (!woken) return twoOfOurs();
      listing = true;
      await gate;
      return fakeReading(null);
    };
    try {
      const { ref, handle } = await startJob('resolve-race');
      const note = async () => ((await handle.query('state')) as { note?: string }).note ?? '';
      while (!(await note()).includes('waiting for an operator')) await new Promise((r) => setTimeout(r, 20));
      woken = true;
      await client.wake(ref.jobId, { providerStatus: 'running', eventId: 'race-1' });
      while (!listing) await new Promise((r) => setTimeout(r, 20));
      // The Update is accepted (the workflow holds the offer) before the late answer lands.
      const update = await handle.startUpdate(resolveUpdate, {
        args: [{ resubmit: true, by: 'vitest' }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      const resolving = update.result().then(
        () => 'applied',
        (e: Error) => `${e.message} ${(e.cause as Error | undefined)?.message ?? ''}`,
      );
      const row = (await store.jobs.get(ref.jobId))!;
      await store.jobs.bindTask({
        jobId: ref.jobId,
        taskId: 'late-task',
        providerStatus: 'queued',
        source: 'submit (late answer)',
        providerAccount: row.provider_account!,
      });
      release();
      expect(await resolving).toMatch(/before this resolution was applied; it was not applied/);
      expect(provider.times('submit')).toHaveLength(1);
      provider.statusImpl = async () => ({ state: 'completed', providerStatus: 'completed' });
      await handle.result();
      expect((await store.jobs.get(ref.jobId))!).toMatchObject({ state: 'completed', task_id: 'late-task' });
      expect(provider.times('submit')).toHaveLength(1);
    } finally {
      provider.findSubmitted = original;
    }
  }, 60_000);
});

describe("waits that say why, on the workflow's timer (no failed activity attempt)", () => {
  /** The types of the history's events, for checking what a wait recorded. */
  async function eventTypes(handle: ReturnType<typeof env.client.workflow.getHandle>): Promise<string[]> {
    const h = await handle.fetchHistory();
    return (h.events ?? []).map((e) => String(e.eventType));
  }

  it("a submit with no free slot under the key's limit waits for one, saying so in the view and the row, then submits", async () => {
    narrow.calls = [];
    let finishFirst = false;
    narrow.statusImpl = async () =>
      finishFirst
        ? { state: 'completed', providerStatus: 'done', result: PAGE }
        : { state: 'running', providerStatus: 'running' };
    const first = await startJob('slot-a', POLICY, 'narrow');
    while (narrow.times('submit').length < 1) await env.sleep(500);
    const second = await startJob('slot-b', POLICY, 'narrow');
    let view: JobView | undefined;
    for (let i = 0; i < 60 && view?.waiting === undefined; i++) {
      await env.sleep(1_000);
      view = await second.handle.query(stateQuery);
    }
    expect(view?.waiting).toMatchObject({
      reason: 'slot',
      message: expect.stringMatching(/1 provider jobs of key .* are active/),
    });
    const row = await store.jobs.get(second.ref.jobId);
    expect(JSON.parse(row!.waiting!)).toMatchObject({ reason: 'slot', detail: { limit: 1, active: 1 } });
    expect(narrow.times('submit')).toHaveLength(1);
    finishFirst = true;
    await first.handle.result();
    const done = await second.handle.result();
    expect(done.state).toBe('completed');
    expect(done.waiting).toBeUndefined();
    expect(narrow.times('submit')).toHaveLength(2);
    expect(await eventTypes(second.handle)).not.toContain('EVENT_TYPE_ACTIVITY_TASK_FAILED');
    expect((await store.jobs.get(second.ref.jobId))?.waiting).toBeNull();
  }, 120_000);

  it('a slot granted while the submit attempt that found the key full still runs is taken at once: no timer is started for that wait', async () => {
    narrow.calls = [];
    narrow.submitImpl = async (n) => ({
      taskId: `task-${randomUUID()}-${n}`,
      providerStatus: 'queued',
      replayed: false,
    });
    let finishFirst = false;
    narrow.statusImpl = async () =>
      finishFirst
        ? { state: 'completed', providerStatus: 'done', result: PAGE }
        : { state: 'running', providerStatus: 'running' };
    const first = await startJob('granted-a', POLICY, 'narrow');
    while (narrow.times('submit').length < 1) await env.sleep(500);
    const second = await startJob('granted-b', POLICY, 'narrow');
    // The second job's first attempt finds the key full and waits inside the attempt (a few
    // seconds of real time: one job waits, under the key's limit); the grant comes meanwhile.
    // The attempt has begun once it records the job's provider key, just before it asks for a slot.
    for (let i = 0; i < 500 && !(await store.jobs.get(second.ref.jobId))?.provider_key; i++)
      await new Promise((r) => setTimeout(r, 20));
    await second.handle.signal(submitNowSignal, { why: 'slot' });
    /** The history's events from the grant to the second `submitJob` attempt's scheduling, once it is scheduled. */
    const since = async () => {
      const events = (await second.handle.fetchHistory()).events ?? [];
      const grant = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'submitNow');
      const attempts = events.flatMap((e, i) =>
        e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitJob' ? [i] : [],
      );
      return grant >= 0 && attempts.length >= 2
        ? { events, grant, first: attempts[0]!, next: attempts[1]! }
        : undefined;
    };
    let h: Awaited<ReturnType<typeof since>>;
    for (let i = 0; i < 200 && !h; i++) {
      await new Promise((r) => setTimeout(r, 50));
      h = await since();
    }
    expect(h).toBeDefined();
    const done = h!.events.findIndex((e, i) => i > h!.first && e.activityTaskCompletedEventAttributes);
    // The grant came while the first attempt ran, and the second followed its answer without a timer.
    expect(h!.grant).toBeGreaterThan(h!.first);
    expect(h!.grant).toBeLessThan(done);
    expect(h!.events.slice(done, h!.next).some((e) => e.timerStartedEventAttributes)).toBe(false);
    finishFirst = true;
    await first.handle.result();
    expect((await second.handle.result()).state).toBe('completed');
    expect(narrow.times('submit')).toHaveLength(2);
  }, 120_000);

  it("submits held back by the key's cool-down wait as asked, then end failed SUBMIT_NOT_SENT at the job's submit time: nothing was created", async () => {
    held.calls = [];
    held.submitImpl = async () => {
      throw new ProviderError('cooldown', 'POST /api/scrape answered 429 RATE_LIMITED', {
        httpStatus: 429,
        code: 'RATE_LIMITED',
        retryAfterMs: 60_000,
      });
    };
    const { ref, handle } = await startJob('held', { ...POLICY, deadlineMs: 5 * 60_000 }, 'held');
    const r = await handle.result().catch((e: unknown) => e);
    const failure = r instanceof WorkflowFailedError ? r.cause : undefined;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe('ScrapeJob.failed');
    const view = (failure as ApplicationFailure).details?.[0] as JobView;
    expect(view.lastError).toMatchObject({ code: 'SUBMIT_NOT_SENT' });
    expect(view.lastError?.message).toMatch(/no submit could be sent.*RATE_LIMITED.*created nothing/);
    // Never sooner than the provider asked: each wait a durable timer of about the minute it asked
    // for (the limiter's own hold counts in real time, which stands still here, so the later tries
    // are held locally and the provider sees the first submit only).
    expect(held.times('submit').length).toBeGreaterThanOrEqual(1);
    const timers = ((await handle.fetchHistory()).events ?? []).flatMap((e) =>
      e.timerStartedEventAttributes ? [Number(e.timerStartedEventAttributes.startToFireTimeout?.seconds ?? 0)] : [],
    );
    expect(timers.length).toBeGreaterThanOrEqual(2);
    expect(timers.length).toBeLessThanOrEqual(5);
    for (const s of timers) expect(s).toBeGreaterThanOrEqual(50);
    expect(await eventTypes(handle)).not.toContain('EVENT_TYPE_ACTIVITY_TASK_FAILED');
    expect((await store.jobs.get(ref.jobId))?.state).toBe('failed');
  }, 120_000);

  it('submits refused 429 with Retry-After: 0 back off, and the growing wait never ends the job before its submit time: the last try comes at it', async () => {
    cooled.calls = [];
    cooled.submitImpl = async () => {
      throw new ProviderError('cooldown', 'POST /api/scrape answered 429 RATE_LIMITED', {
        httpStatus: 429,
        code: 'RATE_LIMITED',
        retryAfterMs: 0,
      });
    };
    // Submit time: max(deadline, 10 × activity timeout) = 500 s. The waits 1, 2, 4, … 128 s end at
    // about 255 s; the next, 256 s, would pass 500 s: the provider asked for no such wait.
    const { handle } = await startJob('cooled', { ...POLICY, deadlineMs: 500_000 }, 'cooled');
    const r = await handle.result().catch((e: unknown) => e);
    const view = ((r as WorkflowFailedError).cause as ApplicationFailure).details?.[0] as JobView;
    expect(view.lastError).toMatchObject({ code: 'SUBMIT_NOT_SENT' });
    const submits = cooled.times('submit');
    const gaps = submits.slice(1).map((t, i) => t - submits[i]!);
    expect(gaps.at(-2)!).toBeGreaterThanOrEqual(1.5 * gaps[0]!);
    // Before: the job failed at about 255 s, its last submit then, half of its submit time unused.
    expect(submits.at(-1)! - Date.parse(view.startedAt)).toBeGreaterThanOrEqual(490_000);
    expect(submits.length).toBeLessThanOrEqual(12);
  }, 120_000);

  it("submits the worker holds back itself (the key's shared cool-down: nothing sent) wait their release slot each time; only the provider's refusals grow the wait", async () => {
    cooled.calls = [];
    cooled.submitImpl = async (n) => {
      if (n <= 6)
        throw new ProviderError('cooldown', 'submits of provider key cooled are held (cool-down)', {
          code: HELD_LOCALLY,
          retryAfterMs: 1_000,
        });
      return { taskId: `task-held-${n}`, providerStatus: 'queued', replayed: false };
    };
    const { handle } = await startJob('held-locally', POLICY, 'cooled');
    while ((await handle.query(stateQuery)).taskId === undefined) await env.sleep(1_000);
    await handle.terminate('test over');
    const timers = ((await handle.fetchHistory()).events ?? []).flatMap((e) =>
      e.timerStartedEventAttributes ? [Number(e.timerStartedEventAttributes.startToFireTimeout?.seconds ?? 0)] : [],
    );
    // Six holds, each waited for its slot (about 1 s); counted as refusals they waited 1, 2, 4 … 32 s.
    expect(timers.length).toBeGreaterThanOrEqual(1);
    for (const sec of timers) expect(sec).toBeLessThanOrEqual(2);
  }, 120_000);

  it('a job whose account has no credential on the worker waits, naming it, then ends failed NO_CREDENTIALS', async () => {
    const { ref, handle } = await startJob('nokey', POLICY, 'nokey');
    let view: JobView | undefined;
    for (let i = 0; i < 30 && view?.waiting === undefined; i++) {
      await env.sleep(1_000);
      view = await handle.query(stateQuery);
    }
    expect(view?.waiting).toMatchObject({
      reason: 'credential',
      message: expect.stringMatching(/no credentials for provider "nokey" and account "acme"/),
    });
    const r = await handle.result().catch((e: unknown) => e);
    const failure = (r instanceof WorkflowFailedError ? r.cause : undefined) as ApplicationFailure | undefined;
    expect(failure?.type).toBe('ScrapeJob.failed');
    expect((failure?.details?.[0] as JobView).lastError).toMatchObject({ code: 'NO_CREDENTIALS' });
    expect((await store.jobs.get(ref.jobId))?.state).toBe('failed');
    expect(await eventTypes(handle)).not.toContain('EVENT_TYPE_ACTIVITY_TASK_FAILED');
  }, 120_000);
});
