/**
 * The scrape activities with a faked provider adapter (MockActivityEnvironment) and a real
 * in-memory SQLite store: one status check's outcomes and next delays (schedule delays,
 * unrecognised status words, not-ready answers, inline and paged results, terminal read errors,
 * expiry, failing checks kept visible), the adaptive active-jobs limit, the settle window of a
 * lagging list, and a cancel that comes too late to be sent.
 */
import { fakeEvidence, fakeReading } from '../helpers/fakeProvider.js';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createActivities,
  type SubmitJobInput,
  type SubmitOutcome,
  type TrackStatusInput,
} from '../../src/activities/index.js';
import { activityKit } from '../../src/activities/context.js';
import { mapProviderErrors } from '../../src/activities/failures.js';
import { checkOnce as checkOnceOf } from '../../src/activities/tracking/poll.js';
import type { CheckResult } from '../../src/activities/tracking/pollTypes.js';
import { onSlotReleased, slotWaitPlan } from '../../src/activities/slots.js';
import { parseConfig } from '../../src/config.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { HELD_LOCALLY } from '../../src/model/schedule.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type {
  Accepted,
  ProviderAdapter,
  ResultContext,
  StatusContext,
  StatusObservation,
} from '../../src/providers/adapter.js';
import type { LookupReading } from '../../src/model/evidence.js';
import type { ProviderResult } from '../../src/model/results.js';
import { openStore, Store } from '../../src/store/index.js';
import { providerLimit } from '../helpers/storeQueries.js';

const PAGE: ProviderResult = {
  url: 'https://example.com/',
  finalUrl: 'https://example.com/',
  httpStatus: 200,
  title: 'T',
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

class FakeAdapter implements ProviderAdapter {
  readonly name = 'fake';
  readonly kind = 'fake';
  capabilities = { idempotency: false, list: true, cancel: true, webhooks: false };
  lagMs = 0;
  get evidence() {
    return fakeEvidence(this.capabilities, this.lagMs);
  }
  calls: string[] = [];
  submitImpl: () => Promise<Accepted> = async () => ({ taskId: 'task-1', providerStatus: 'queued', replayed: false });
  statusImpl: (ctx: StatusContext) => Promise<StatusObservation> = async () => ({
    state: 'running',
    providerStatus: 'running',
  });
  resultImpl: (ctx: ResultContext) => Promise<ProviderResult> = async () => PAGE;
  listImpl: () => Promise<Accepted | null> = async () => null;
  /** Replaces the list's reading (an unavailable lookup, say) while set. */
  readingsImpl?: () => LookupReading[];
  async submit() {
    this.calls.push('submit');
    return this.submitImpl();
  }
  async status(_t: string, ctx: StatusContext) {
    this.calls.push('status');
    return this.statusImpl(ctx);
  }
  async result(_t: string, ctx: ResultContext) {
    this.calls.push('result');
    return this.resultImpl(ctx);
  }
  async cancel() {
    this.calls.push('cancel');
    return { accepted: true };
  }
  async findSubmitted() {
    this.calls.push('list');
    return this.readingsImpl ? this.readingsImpl() : fakeReading(await this.listImpl());
  }
}

const config = parseConfig(
  {
    providers: {
      fake: {
        kind: 'reference',
        baseUrl: 'http://127.0.0.1:9',
        submitTimeoutMs: 1,
        credentials: { default: { apiKey: 'sk-unit-0000' } },
        limits: { activeJobs: { initial: 4 } },
      },
      // Another key, whose calls leave at least 3 s apart.
      spaced: {
        kind: 'reference',
        baseUrl: 'http://127.0.0.1:9',
        credentials: { default: { apiKey: 'sk-unit-spaced' } },
        limits: { activeJobs: { initial: 4 }, minIntervalMs: 3_000 },
      },
    },
  },
  {},
);
let store: Store;
let fake: FakeAdapter;
let acts: ReturnType<typeof createActivities>;
/** One status check (`checkOnce`), as the polling loop makes it. */
let check: (input: TrackStatusInput, checkPastDeadline: boolean) => Promise<CheckResult>;
/** The fake's provider key (kind, host, credential fingerprint): limits and cool-downs are kept per key. */
let providerKey: string;
const jobId = 'scrape:acme:k';
const request = { url: 'https://example.com/', format: 'markdown' as const, options: {} };
const job = { jobId, account: 'acme', key: 'k', provider: 'fake', requestHash: 'h', request, workflowId: jobId };
const submitInput: SubmitJobInput = { job, trackingDeadlineMs: 60_000 };
const schedule = { initialDelayMs: 2_000, maxDelayMs: 60_000, multiplier: 1.5, jitter: 0, slowdown: 1 };
let generation = 1;
const poll = (over: Partial<TrackStatusInput> = {}): TrackStatusInput => ({
  jobId,
  provider: 'fake',
  account: 'acme',
  taskId: 'task-1',
  url: request.url,
  request,
  generation,
  schedule,
  firstDelayMs: 0,
  deadlineAt: new Date(Date.now() + 3_600_000).toISOString(),
  notFoundLimit: 3,
  failedReads: { initialDelayMs: 1_000, maxDelayMs: 30_000, jitter: 0, limit: 10, budgetMs: 900_000 },
  mode: 'track',
  recordsOutcome: true,
  ...over,
});
// No schedule-to-close (the mock's default is one that ended long ago).
const env = (attempt = 2) =>
  new MockActivityEnvironment({ attempt, scheduleToCloseTimeoutMs: 0 }, { interceptors: [mapProviderErrors] });
/** One check of `input` in an activity context. */
const checkOnce = (input: TrackStatusInput) => env().run(check, input, false) as Promise<CheckResult>;
/** The check said to check again: when (ms) and why. */
async function again(p: Promise<CheckResult>): Promise<{ delayMs: number; message: string }> {
  const r = await p;
  if (!('again' in r)) throw new Error(`expected a next check, got ${JSON.stringify(r)}`);
  return r.again;
}
/** The check ended tracking: its outcome. */
async function outcome(p: Promise<CheckResult>) {
  const r = await p;
  if (!('outcome' in r)) throw new Error(`expected an outcome, got ${JSON.stringify(r)}`);
  return r.outcome;
}

async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (e) {
    return e as ApplicationFailure;
  }
  throw new Error('expected the activity to throw');
}

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  fake = new FakeAdapter();
  const providers = new ProviderRegistry(config, {}, { fake, spaced: fake });
  providerKey = providers.resolve('fake', 'acme').providerKey;
  acts = createActivities({ store, providers, resultRetentionMs: 60_000 });
  check = checkOnceOf.bind(null, activityKit({ store, providers, resultRetentionMs: 60_000 }));
  await store.jobs.insert(Store.jobRow(job));
  await store.jobs.recordTaskId(jobId, 'task-1', 'queued', 'test');
  generation++;
});

describe('checkOnce (one status check of the polling loop)', () => {
  it('a running task: one check recorded, the next after the schedule delay', async () => {
    expect((await again(checkOnce(poll()))).delayMs).toBe(3_000); // check 1 done: delay 1 = 2 s × 1.5
    const row = await store.jobs.get(jobId);
    expect(row).toMatchObject({
      status_checks: 1,
      provider_status: 'running',
      provider_state: 'running',
      status_errors: 0,
    });
  });

  it('the store keeps the tracking deadline the workflow enforces (a workflow that learned its task ID late counts from then)', async () => {
    await store.jobs.recordTaskId(jobId, 'task-1', 'queued', 'test', 60_000); // the submit's deadline: 1 min from its write
    const later = new Date(Date.now() + 600_000).toISOString();
    await checkOnce(poll({ deadlineAt: later }));
    expect((await store.jobs.get(jobId))?.deadline_at).toBe(later);
    // The cancel path's confirmation checks carry the cancel deadline, not the tracking one: left alone.
    generation++;
    await checkOnce(poll({ mode: 'confirm_cancel', deadlineAt: new Date(Date.now() + 5_000).toISOString() }));
    expect((await store.jobs.get(jobId))?.deadline_at).toBe(later);
  });

  it('an unrecognised status word is recorded and polled on the normal schedule, never final', async () => {
    fake.statusImpl = async () => ({ state: 'unrecognised', providerStatus: 'Stalled' });
    const next = await again(checkOnce(poll()));
    expect(next.message).toMatch(/unrecognised status "Stalled"/);
    expect(next.delayMs).toBe(3_000);
    expect((await store.jobs.get(jobId))?.state).toBe('pending');
    expect((await store.findings.timeline(jobId)).some((ev) => ev.type === 'unrecognised_status')).toBe(true);
  });

  it('a completed answer that carries the result is written once, with no separate read', async () => {
    fake.statusImpl = async () => ({ state: 'completed', providerStatus: 'completed', result: PAGE });
    const out = await outcome(checkOnce(poll()));
    expect(out).toMatchObject({ kind: 'completed', checks: 1, result: { inserted: true, title: 'T' } });
    expect(fake.calls).toEqual(['status']);
    expect((await store.jobs.get(jobId))?.state).toBe('completed');
    expect(await store.results.count({ jobId })).toBe(1);
  });

  it('without an inline result the result is read with the configured limits and a heartbeat per page', async () => {
    fake.statusImpl = async () => ({ state: 'completed', providerStatus: 'done' });
    let seen: ResultContext | undefined;
    fake.resultImpl = async (ctx) => {
      seen = ctx;
      ctx.heartbeat?.({ documents: 100, pages: 1 });
      return {
        ...PAGE,
        documents: [
          { url: 'https://example.com/a', title: 'A' },
          { url: 'https://example.com/b', title: 'B' },
        ],
      };
    };
    const m = env();
    const beats: unknown[] = [];
    m.on('heartbeat', (d: unknown) => beats.push(d));
    const out = await outcome(m.run(check, poll(), false) as Promise<CheckResult>);
    expect(out).toMatchObject({ kind: 'completed', result: { documents: 2 } });
    expect(seen?.limits).toMatchObject({ maxDocuments: expect.any(Number), maxBytes: expect.any(Number) });
    expect(beats).toEqual([{ documents: 100, pages: 1 }]);
  });

  it("a status read carries the entry's result limits: a kind that answers with its result inline reads that answer under the result's byte cap", async () => {
    let seen: StatusContext | undefined;
    fake.statusImpl = async (ctx) => {
      seen = ctx;
      return { state: 'running', providerStatus: 'running' };
    };
    await again(checkOnce(poll()));
    expect(seen?.limits).toMatchObject({ maxBytes: expect.any(Number) });
    expect(seen!.limits!.maxBytes).toBeGreaterThan(32 * 1024 * 1024);
  });

  it('a refused result read (401) ends tracking_interrupted with the reason and an incident; the row is left for the workflow to record', async () => {
    fake.statusImpl = async () => ({ state: 'completed', providerStatus: 'completed' });
    fake.resultImpl = async () => {
      throw new ProviderError('permanent', 'GET /results answered 401 UNAUTHORIZED', {
        httpStatus: 401,
        code: 'UNAUTHORIZED',
      });
    };
    const out = await outcome(checkOnce(poll()));
    expect(out).toMatchObject({ kind: 'interrupted', error: { kind: 'permanent', httpStatus: 401 } });
    expect((await store.jobs.get(jobId))?.state).toBe('pending');
    expect(await store.findings.incidents(jobId)).toHaveLength(1);
  });

  it('a failed answer seen again by an attempt retried after its worker died records one incident; a different answer, or the same after a resume, records its own', async () => {
    let exchange = 0;
    let message = 'blocked by the target';
    // Each answer is a new exchange: its own time and request ID, the same body while the task says the same.
    fake.statusImpl = async () => ({
      state: 'failed',
      providerStatus: 'failed',
      error: { code: 'BLOCKED', message },
      evidence: {
        endpoint: 'GET https://provider.test/tasks/task-1',
        at: new Date(Date.now() + ++exchange).toISOString(),
        httpStatus: 200,
        body: { status: 'failed', error: message },
        headers: { 'x-request-id': `r-${exchange}` },
      },
    });
    const incidents = async () => (await store.findings.incidents(jobId)).map((i) => [i.kind, i.message]);
    // The first attempt recorded its incident and died before the workflow heard of it; the retry asks again.
    expect(await outcome(checkOnce(poll()))).toMatchObject({ kind: 'failed', error: { code: 'BLOCKED' } });
    expect(await outcome(checkOnce(poll()))).toMatchObject({ kind: 'failed', error: { code: 'BLOCKED' } });
    expect(fake.calls).toEqual(['status', 'status']);
    expect(await incidents()).toEqual([['provider_failed', 'blocked by the target']]);

    // A different answer in the same generation is a new incident.
    message = 'the target answered 403';
    await outcome(checkOnce(poll()));
    expect(await incidents()).toHaveLength(2);
    // The same answer after a resume (a new polling generation) is recorded again.
    generation++;
    await outcome(checkOnce(poll()));
    expect(await incidents()).toEqual([
      ['provider_failed', 'blocked by the target'],
      ['provider_failed', 'the target answered 403'],
      ['provider_failed', 'the target answered 403'],
    ]);
  });

  it('a refused status read seen again by a retried attempt records one incident', async () => {
    let exchange = 0;
    fake.statusImpl = async () => {
      throw new ProviderError('permanent', 'GET /tasks/task-1 answered 401 UNAUTHORIZED', {
        httpStatus: 401,
        code: 'UNAUTHORIZED',
        evidence: {
          endpoint: 'GET https://provider.test/tasks/task-1',
          at: new Date(Date.now() + ++exchange).toISOString(),
          httpStatus: 401,
          body: { error: 'UNAUTHORIZED' },
          headers: { 'x-request-id': `r-${exchange}` },
        },
      });
    };
    expect(await outcome(checkOnce(poll()))).toMatchObject({ kind: 'interrupted', error: { httpStatus: 401 } });
    expect(await outcome(checkOnce(poll()))).toMatchObject({ kind: 'interrupted', error: { httpStatus: 401 } });
    const recorded = await store.findings.incidents(jobId);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ phase: 'status', kind: 'permanent', code: 'UNAUTHORIZED', http_status: 401 });
  });

  it('a read that says nothing will ever come (400 SNAPSHOT_EMPTY) ends failed with that code, not interrupted', async () => {
    fake.statusImpl = async () => ({ state: 'completed', providerStatus: 'ready' });
    fake.resultImpl = async () => {
      throw new ProviderError('task_failed', 'snapshot is empty', { httpStatus: 400, code: 'SNAPSHOT_EMPTY' });
    };
    const out = await outcome(checkOnce(poll()));
    expect(out).toMatchObject({
      kind: 'failed',
      error: { code: 'SNAPSHOT_EMPTY' },
      note: expect.stringMatching(/nothing will come.*SNAPSHOT_EMPTY/),
    });
    // The activity observes; the workflow records what it returns (recordState).
    expect((await store.jobs.get(jobId))?.state).toBe('pending');
  });

  it('a run of the retired scrapeWorkflowV4 (no recordsOutcome in its input: it only moves its view) gets the final state written by the activity, as V4 did, and its slot freed', async () => {
    fake.statusImpl = async () => ({
      state: 'failed',
      providerStatus: 'failed',
      error: { code: 'BLOCKED', message: 'blocked by the target' },
    });
    const v4 = poll();
    delete v4.recordsOutcome;
    const released: string[] = [];
    const stop = onSlotReleased((label) => released.push(label));
    try {
      expect(await outcome(checkOnce(v4))).toMatchObject({ kind: 'failed', error: { code: 'BLOCKED' } });
    } finally {
      stop();
    }
    expect(released).toEqual([providerKey]);
    const row = await store.jobs.get(jobId);
    expect(row?.state).toBe('failed');
    expect(JSON.parse(row!.last_error!)).toMatchObject({ code: 'BLOCKED' });
    // A cancel's confirmation checks never write a final state, whoever asks.
    generation++;
    await store.jobs.insert(Store.jobRow({ ...job, jobId: 'scrape:acme:c', key: 'c' }));
    await store.jobs.recordTaskId('scrape:acme:c', 'task-2', 'queued', 'test');
    const confirm = poll({ jobId: 'scrape:acme:c', taskId: 'task-2', mode: 'confirm_cancel' });
    delete confirm.recordsOutcome;
    expect(await outcome(checkOnce(confirm))).toMatchObject({ kind: 'failed' });
    expect((await store.jobs.get('scrape:acme:c'))?.state).toBe('pending');
  });

  it('404s end a known task expired at the notFoundLimit-th in a row past its kind’s propagation window; those before it are not visible yet and never counted', async () => {
    fake.statusImpl = async () => {
      throw new ProviderError('not_found', 'answered 404', { httpStatus: 404 });
    };
    const young = [];
    for (let i = 0; i < 4; i++) young.push(await again(checkOnce(poll())));
    // Read again after half the task's age (at least the first failed-read delay), never counted.
    expect(young.map((d) => d.delayMs)).toEqual([1_000, 1_000, 1_000, 1_000]);
    expect(young[3]!.message).toMatch(/not visible yet, not counted/);
    expect((await store.jobs.get(jobId))?.not_found_streak).toBe(0);
    // A task 40 s old waits 20 s; one 55 s old waits for the window's end (1 min), not 27.5 s.
    const aged = async (ageMs: number) => {
      await store.db
        .updateTable('jobs')
        .set({ submitted_at: new Date(Date.now() - ageMs).toISOString() })
        .execute();
      return again(checkOnce(poll()));
    };
    expect((await aged(40_000)).delayMs).toBeCloseTo(20_000, -3);
    expect((await aged(55_000)).delayMs).toBeLessThanOrEqual(5_000);
    // Past the window (1 min): each 404 counts, and the third in a row (notFoundLimit) ends it.
    expect((await aged(61_000)).message).toMatch(/1 of 3 before the task counts as expired/);
    await again(checkOnce(poll()));
    expect(await outcome(checkOnce(poll()))).toMatchObject({
      kind: 'expired',
      note: expect.stringMatching(/404.*3 times in a row.*expired or lost/),
    });
    expect((await store.jobs.get(jobId))?.state).toBe('pending');
  });

  it("a read the worker held back itself (the key's shared cool-down: nothing sent) is no failed read: the job says it waits for the cool-down", async () => {
    fake.statusImpl = async () => {
      throw new ProviderError('cooldown', 'provider key fake is cooling down (429); this call leaves in 30000 ms', {
        code: HELD_LOCALLY,
        retryAfterMs: 30_000,
      });
    };
    const held = await again(checkOnce(poll()));
    expect(held.delayMs).toBe(30_000);
    expect(held.message).toMatch(/held back \(nothing sent\)/);
    const row = (await store.jobs.get(jobId))!;
    // Before: a failed read (status_errors 1, a read_failed event) and no wait shown.
    expect(Number(row.status_errors)).toBe(0);
    expect(JSON.parse(row.waiting!)).toMatchObject({ reason: 'cooldown', until: expect.any(String) });
    expect((await store.findings.timeline(jobId)).map((e) => e.type)).not.toContain('read_failed');
  });

  it('the cool-down wait a held read recorded is gone once a read was sent again and failed, or answered 404', async () => {
    const held = async () => {
      fake.statusImpl = async () => {
        throw new ProviderError('cooldown', 'provider key fake is cooling down (429); this call leaves in 1000 ms', {
          code: HELD_LOCALLY,
          retryAfterMs: 1_000,
        });
      };
      await again(checkOnce(poll()));
      expect(JSON.parse((await store.jobs.get(jobId))!.waiting!)).toMatchObject({ reason: 'cooldown' });
    };
    /** Checks until a read is sent (the limiter lets it out once the cool-down it learned has passed). */
    const sentCheck = () =>
      vi.waitFor(
        async () => {
          const a = await again(checkOnce(poll()));
          if (/held back/.test(a.message)) throw new Error('still held');
          return a;
        },
        { timeout: 20_000, interval: 200 },
      );
    await held();
    fake.statusImpl = async () => {
      throw new ProviderError('transient', 'answered 503', { httpStatus: 503 });
    };
    await sentCheck();
    expect((await store.jobs.get(jobId))!.waiting).toBeNull();
    await held();
    fake.statusImpl = async () => {
      throw new ProviderError('not_found', 'answered 404', { httpStatus: 404 });
    };
    expect((await sentCheck()).message).toMatch(/not visible yet/);
    expect((await store.jobs.get(jobId))!.waiting).toBeNull();
  });

  it("a submit queued behind the key's spacing records its intent when it leaves, not when it queued (a reconcile counts the provider's lags from then)", async () => {
    const spaced = { ...job, jobId: 'scrape:acme:k2', key: 'k2', workflowId: 'scrape:acme:k2', provider: 'spaced' };
    await store.jobs.insert(Store.jobRow(spaced));
    // A status read through the key takes its spacing slot: the submit after it leaves about 3 s
    // after its intent was recorded, sending nothing meanwhile.
    await checkOnce(poll({ provider: 'spaced' }));
    let gapMs: number | undefined;
    fake.submitImpl = async () => {
      gapMs = Date.now() - Date.parse((await store.jobs.get(spaced.jobId))!.submit_intent_at!);
      return { taskId: 'task-2', providerStatus: 'queued', replayed: false };
    };
    const out = await new MockActivityEnvironment(
      { attempt: 1, startToCloseTimeoutMs: 30_000, scheduleToCloseTimeoutMs: 0 },
      { interceptors: [mapProviderErrors] },
    ).run(acts.submitJob, { job: spaced, trackingDeadlineMs: 60_000 });
    expect(out).toMatchObject({ kind: 'accepted' });
    // Before: about 3,000 ms.
    expect(gapMs!).toBeLessThan(1_000);
  }, 20_000);

  it('failed reads back off with the failures in a row (never with successful checks), never shorter than Retry-After, kept on the row for the next loop', async () => {
    let retryAfterMs: number | undefined;
    fake.statusImpl = async () => {
      throw new ProviderError('transient', 'answered 520', { httpStatus: 520, retryAfterMs });
    };
    const delays = [];
    for (let i = 0; i < 7; i++) delays.push((await again(checkOnce(poll()))).delayMs);
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]); // capped at failedReadMaxDelayMs
    await store.db.updateTable('jobs').set({ status_errors: 0, failing_since: null }).execute();
    retryAfterMs = 5_000;
    const next = await again(checkOnce(poll()));
    expect(next.delayMs).toBe(5_000);
    expect(next.message).toMatch(/Retry-After 5\.0 s/);
    // The earliest next read is on the row: a loop that takes over after a hand-over waits for it.
    const row = await store.jobs.get(jobId);
    expect(Date.parse(row!.check_not_before!) - Date.now()).toBeGreaterThan(4_000);
  });

  it('a streak of failed reads that spent its budget (count and time) ends tracking_interrupted with the last error, never failed', async () => {
    fake.statusImpl = async () => {
      throw new ProviderError('transient', 'answered 503 UPSTREAM_UNAVAILABLE', { httpStatus: 503 });
    };
    for (let i = 0; i < 9; i++) await again(checkOnce(poll())); // 9 of 10, within the 15 min
    await store.db
      .updateTable('jobs')
      .set({ failing_since: new Date(Date.now() - 16 * 60_000).toISOString() })
      .execute();
    const out = await outcome(checkOnce(poll()));
    expect(out).toMatchObject({ kind: 'interrupted', error: { httpStatus: 503 } });
    expect(out.kind === 'interrupted' && out.note).toMatch(/10 status reads failed in a row over 16 min.*resume/);
    expect((await store.jobs.get(jobId))?.state).toBe('pending');
    expect(fake.calls.filter((c) => c === 'status')).toHaveLength(10);
  });

  it('a result read that fails is retried as a result read: the status is not asked again and nothing resets its streak', async () => {
    fake.statusImpl = async () => ({ state: 'completed', providerStatus: 'done' });
    fake.resultImpl = async () => {
      throw new ProviderError('transient', 'result body could not be parsed', { code: 'BAD_RESPONSE' });
    };
    const delays = [];
    for (let i = 0; i < 4; i++) delays.push((await again(checkOnce(poll()))).delayMs);
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(fake.calls).toEqual(['status', 'result', 'result', 'result', 'result']);
    expect((await store.jobs.get(jobId))?.status_errors).toBe(4);
    fake.resultImpl = async () => PAGE;
    expect(await outcome(checkOnce(poll()))).toMatchObject({ kind: 'completed', result: { inserted: true } });
    expect(fake.calls.filter((c) => c === 'status')).toHaveLength(1);
  });

  it('a failing check is not a failed task: retried with backoff, its error and count visible on the row', async () => {
    fake.statusImpl = async () => {
      throw new ProviderError('transient', 'GET /jobs/task-1 timed out after 10000 ms', { code: 'TIMEOUT' });
    };
    const first = await again(checkOnce(poll()));
    const second = await again(checkOnce(poll()));
    expect([first.delayMs, second.delayMs]).toEqual([1_000, 2_000]);
    const row = await store.jobs.get(jobId);
    expect(row?.state).toBe('pending');
    expect(row?.status_errors).toBe(2);
    expect(JSON.parse(row!.last_error!)).toMatchObject({ code: 'TIMEOUT' });
  });

  it('a check of a superseded generation, or past the deadline, asks nothing', async () => {
    await checkOnce(poll()); // generation g claims the job
    expect(await outcome(checkOnce(poll({ generation: generation - 1 })))).toMatchObject({ kind: 'stale' });
    expect(await outcome(checkOnce(poll({ deadlineAt: new Date(Date.now() - 1).toISOString() })))).toMatchObject({
      kind: 'deadline',
    });
    expect(fake.calls).toEqual(['status']);
  });
});

describe('submitJob (adaptive active-jobs limit)', () => {
  it('a concurrency refusal that states the limit lowers the key limit to it; a full key waits without calling the provider', async () => {
    await store.db.deleteFrom('jobs').execute();
    const second = {
      ...submitInput,
      job: { ...job, jobId: 'scrape:acme:k2', key: 'k2', workflowId: 'scrape:acme:k2' },
    };
    // The client records each job's row before its workflow starts.
    for (const j of [job, second.job]) await store.jobs.insert(Store.jobRow(j));
    expect(await env(1).run(acts.submitJob, submitInput)).toMatchObject({ kind: 'accepted' });
    fake.submitImpl = async () => {
      throw new ProviderError('cooldown', 'answered 429 CONCURRENCY_LIMIT', {
        httpStatus: 429,
        code: 'CONCURRENCY_LIMIT',
        retryAfterMs: 2_000,
        statedLimit: 1,
      });
    };
    const refused = await env(1).run(acts.submitJob, second);
    expect(refused).toMatchObject({ kind: 'waiting', wait: { reason: 'cooldown' }, retryInMs: 2_000 });
    expect(await providerLimit(store, providerKey)).toMatchObject({ limit: 1, ceiling: 1, refusals: 1 });
    fake.calls = [];
    const waiting = await new MockActivityEnvironment({
      attempt: 2,
      startToCloseTimeoutMs: 3_000,
      scheduleToCloseTimeoutMs: 0,
    }).run(acts.submitJob, second);
    // Not a failed attempt: the workflow waits on its timer, and says why.
    expect(waiting).toMatchObject({
      kind: 'waiting',
      wait: {
        reason: 'slot',
        message: expect.stringMatching(/its limit, learned from the provider, is 1\); 0 more wait/),
      },
    });
    expect(fake.calls).toEqual([]);
  }, 15_000);

  it('a crowded key does not hold worker slots: its submits return at once and retry after a delay that grows with the queue', async () => {
    // Few waiters: wait inside the attempt (a freed slot is taken within ms), retry in 1.5–4.5 s.
    expect(slotWaitPlan({ limit: 20, waiting: 5 }, 0.5)).toEqual({ inAttemptMs: 5_000, retryMs: 3_000 });
    // 7,000 waiting on a limit of 20: no in-attempt wait; the delay reaches its 5-min cap, so the
    // key sees about 7,000 / 300 s ≈ 23 attempts/s instead of 7,000 every 3–7 s.
    expect(slotWaitPlan({ limit: 20, waiting: 7_000 }, 0.5)).toEqual({ inAttemptMs: 0, retryMs: 300_000 });
    expect(slotWaitPlan({ limit: 20, waiting: 400 }, 0)).toEqual({ inAttemptMs: 0, retryMs: 20_000 });
    expect(slotWaitPlan({ limit: 20, waiting: 400 }, 0.999).retryMs).toBeLessThanOrEqual(60_000);
    // A crowded key's attempt ends without the 5-s wait.
    await store.db.deleteFrom('jobs').execute();
    const crowd = Array.from({ length: 3 }, (_, i) => ({
      ...submitInput,
      job: { ...job, jobId: `scrape:acme:c${i}`, key: `c${i}`, workflowId: `scrape:acme:c${i}` },
    }));
    fake.submitImpl = async () => ({ taskId: 'task-c0', providerStatus: 'queued' }) as Accepted;
    await store.jobs.insert(Store.jobRow({ ...crowd[0]!.job, taskId: null }, []));
    expect(await env(1).run(acts.submitJob, crowd[0]!)).toMatchObject({ kind: 'accepted' });
    await store.db.updateTable('provider_limits').set({ active_limit: 1 }).where('label', '=', providerKey).execute();
    // Jobs waiting for a slot: registered, and their submit attempts named the key.
    for (const c of crowd.slice(1)) await store.jobs.insert(Store.jobRow({ ...c.job, taskId: null }, []));
    for (let i = 3; i < 6; i++)
      await store.jobs.insert(
        Store.jobRow(
          { ...crowd[1]!.job, jobId: `scrape:acme:w${i}`, key: `w${i}`, workflowId: `scrape:acme:w${i}` },
          [],
        ),
      );
    await store.db.updateTable('jobs').set({ provider_key: providerKey }).execute();
    const t0 = Date.now();
    const crowded = (await env(1).run(acts.submitJob, crowd[1]!)) as SubmitOutcome;
    if (crowded.kind !== 'waiting') throw new Error(`expected a wait, got ${crowded.kind}`);
    expect(crowded.wait.message).toMatch(/; 4 more wait, 0 of them registered before this one/);
    // No 5-s wait inside the attempt (the bound leaves room for a busy machine).
    expect(Date.now() - t0).toBeLessThan(4_500);
    expect(crowded.retryInMs).toBeGreaterThanOrEqual(3_000);
  }, 15_000);
});

describe('reconcileJob (a list that lags)', () => {
  it("absence is proven only by a read after the lookup's declared lag: the first empty read waits it out (a BENIGN retry), the next one proves it", async () => {
    fake.lagMs = 10_000;
    await store.db
      .updateTable('jobs')
      .set({ task_id: null, state: 'unknown', submit_intent_at: new Date().toISOString() })
      .where('id', '=', jobId)
      .execute();
    const first = await failure(env(1).run(acts.reconcileJob, submitInput));
    expect(first.type).toBe('Reconcile.settling');
    expect(first.nextRetryDelay).toBeGreaterThan(9_000);
    expect(first.nextRetryDelay).toBeLessThanOrEqual(10_001);
    // A read before that wait has ended still proves nothing (another reconcile of the job, the
    // cancel path's, may read meanwhile).
    expect((await failure(env(2).run(acts.reconcileJob, submitInput))).type).toBe('Reconcile.settling');
    // The server's retry delay passes: the next attempt's read is after the lag.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + Number(first.nextRetryDelay) + 1);
      expect(await env(3).run(acts.reconcileJob, submitInput)).toMatchObject({ kind: 'absent' });
    } finally {
      vi.useRealTimers();
    }
    expect(fake.calls).toEqual(['list', 'list', 'list']);
    const events = (await store.findings.timeline(jobId)).map((e) => e.type);
    expect(events).toEqual(expect.arrayContaining(['reconcile_settling', 'reconcile_absent']));
  });

  it("a server whose clock runs ahead of the worker's does not end a settling wait early: a reconcile scheduled meanwhile (the cancel path's) does not read the lagging list as after its lag", async () => {
    fake.lagMs = 10_000;
    await store.db
      .updateTable('jobs')
      .set({ task_id: null, state: 'unknown', submit_intent_at: new Date().toISOString() })
      .where('id', '=', jobId)
      .execute();
    const first = await failure(env(1).run(acts.reconcileJob, submitInput));
    expect(first.type).toBe('Reconcile.settling');
    // Another reconcile of the job, scheduled by a server whose clock is 15 s ahead of this worker's,
    // a moment after that wait began: by the worker's clock (and in fact) the lag has not passed.
    const ahead = new MockActivityEnvironment(
      { attempt: 1, scheduleToCloseTimeoutMs: 0, currentAttemptScheduledTimestampMs: Date.now() + 15_000 },
      { interceptors: [mapProviderErrors] },
    );
    const out = await ahead.run(acts.reconcileJob, submitInput).then(
      (r: unknown) => r,
      (e: unknown) => e,
    );
    expect(out).not.toMatchObject({ kind: 'absent' });
    expect((out as ApplicationFailure).type).toBe('Reconcile.settling');
  });

  it('a wait that ended before the lag had passed (it only waited out the submit timeout) proves nothing: a read after it is not taken as after the lag', async () => {
    fake.lagMs = 10_000;
    // The fake entry's submit timeout, 5 s for this test: the submit sent now may create the job until then.
    const entry = config.providers.fake as { submitTimeoutMs: number };
    const timeoutBefore = entry.submitTimeoutMs;
    entry.submitTimeoutMs = 5_000;
    const intent = Date.now();
    await store.db
      .updateTable('jobs')
      .set({ task_id: null, state: 'unknown', submit_intent_at: new Date(intent).toISOString() })
      .where('id', '=', jobId)
      .execute();
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      // First read, before the submit's timeout: the lookup answers that it is not offered (undecided).
      fake.readingsImpl = () => [
        { lookup: 'GET /fake/list', available: false, complete: false, candidates: [], at: new Date().toISOString() },
      ];
      const first = await failure(env(1).run(acts.reconcileJob, submitInput));
      expect(first.type).toBe('Reconcile.settling');
      expect(Number(first.nextRetryDelay)).toBeLessThanOrEqual(5_000);
      // That wait ends (the submit's timeout has passed, the lag has not); the lookup now answers, empty.
      fake.readingsImpl = () => fakeReading(null);
      vi.setSystemTime(intent + 6_000);
      const out = await env(2)
        .run(acts.reconcileJob, submitInput)
        .then(
          (r: unknown) => r,
          (e: unknown) => e,
        );
      // Never `absent` from a read 1 s after the job may have been created by a list that lags 10 s.
      expect(out).not.toMatchObject({ kind: 'absent' });
      expect((out as ApplicationFailure).type).toBe('Reconcile.settling');
    } finally {
      vi.useRealTimers();
      fake.readingsImpl = undefined;
      entry.submitTimeoutMs = timeoutBefore;
    }
    expect(fake.calls).not.toContain('submit');
  });

  it("a lookup the worker held back itself (the key's shared cool-down: nothing sent) is read again when it may leave, without counting as a failed read", async () => {
    await store.db
      .updateTable('jobs')
      .set({ task_id: null, state: 'unknown', submit_intent_at: new Date(Date.now() - 60_000).toISOString() })
      .where('id', '=', jobId)
      .execute();
    fake.listImpl = async () => {
      throw new ProviderError('cooldown', 'provider key fake is cooling down (429); this call leaves in 20000 ms', {
        code: HELD_LOCALLY,
        retryAfterMs: 20_000,
      });
    };
    const held = await failure(env(1).run(acts.reconcileJob, submitInput));
    expect(held).toMatchObject({ type: 'Reconcile.lookupHeld', nextRetryDelay: 20_000 });
    const row = (await store.jobs.get(jobId))!;
    expect(Number(row.status_errors)).toBe(0);
    expect(JSON.parse(row.waiting!)).toMatchObject({ reason: 'cooldown' });
  });

  it('a job the lagging list shows on the second read is adopted', async () => {
    fake.lagMs = 10_000;
    await store.db
      .updateTable('jobs')
      .set({ task_id: null, state: 'unknown', submit_intent_at: new Date().toISOString() })
      .where('id', '=', jobId)
      .execute();
    await failure(env(1).run(acts.reconcileJob, submitInput));
    fake.listImpl = async () => ({ taskId: 'task-late', providerStatus: 'running', replayed: true });
    expect(await env(2).run(acts.reconcileJob, submitInput)).toMatchObject({
      kind: 'found',
      taskId: 'task-late',
      via: 'list',
    });
  });

  it('a task the list shows that is bound to another job of the same provider account is not adopted, and the collision is in the timeline', async () => {
    await store.jobs.insert(
      Store.jobRow({ ...job, jobId: 'scrape:acme:other', key: 'other', workflowId: 'scrape:acme:other' }),
    );
    await store.jobs.recordTaskId('scrape:acme:other', 'task-taken', 'running', 'test', 60_000, providerKey);
    await store.db
      .updateTable('jobs')
      .set({ task_id: null, state: 'unknown', submit_intent_at: new Date(Date.now() - 60_000).toISOString() })
      .where('id', '=', jobId)
      .execute();
    fake.listImpl = async () => ({ taskId: 'task-taken', providerStatus: 'running', replayed: true });
    expect(await env(1).run(acts.reconcileJob, submitInput)).toMatchObject({ kind: 'absent' });
    const collision = (await store.findings.timeline(jobId)).find((e) => e.type === 'task_collision');
    expect(JSON.parse(collision!.detail!)).toMatchObject({
      collisions: [{ taskId: 'task-taken', boundTo: 'scrape:acme:other' }],
    });
    expect((await store.jobs.get(jobId))?.task_id).toBeNull();
  });
});

describe('cancelAtProvider', () => {
  /** A cancel of the job's task, by signal, with no cancel call made yet (`reopen`: from a resumed run). */
  const cancelNow = (reopen?: boolean) =>
    env().run(acts.cancelAtProvider, {
      jobId,
      provider: 'fake',
      account: 'acme',
      taskId: 'task-1',
      ...(reopen ? { reopen } : {}),
      report: {
        requestedBy: 't',
        reason: 'r',
        via: 'signal' as const,
        requestedAt: new Date().toISOString(),
        providerCancelCalls: 0,
      },
    });

  it('sends nothing when the provider already reported the task completed (the cancel comes too late)', async () => {
    fake.statusImpl = async () => ({ state: 'completed', providerStatus: 'completed' });
    fake.resultImpl = () => new Promise(() => undefined); // the result write is still under way
    void checkOnce(poll());
    await vi.waitFor(() => expect(fake.calls).toContain('result'));
    const out = await cancelNow();
    expect(out).toMatchObject({ kind: 'skipped', lastStatus: 'completed' });
    expect(fake.calls).not.toContain('cancel');
  });

  it('sends nothing when a check already saw the task failed and the workflow has not recorded it yet (the cancel came while the outcome was on its way)', async () => {
    fake.statusImpl = async () => ({
      state: 'failed',
      providerStatus: 'failed',
      error: { code: 'BLOCKED', message: 'blocked by the target' },
    });
    expect(await outcome(checkOnce(poll()))).toMatchObject({ kind: 'failed' });
    expect((await store.jobs.get(jobId))?.state).toBe('pending'); // the workflow's to record
    const out = await cancelNow();
    expect(out).toMatchObject({ kind: 'skipped', lastStatus: 'failed' });
    expect(fake.calls).not.toContain('cancel');
  });

  it('reopens a cancel_unconfirmed job only for a resumed run: a late attempt of the run that made it final sends nothing', async () => {
    await store.jobs.transition(jobId, 'cancelling', {});
    await store.jobs.transition(jobId, 'cancel_unconfirmed', {});
    expect(await cancelNow()).toMatchObject({ kind: 'skipped' });
    expect((await store.jobs.get(jobId))?.state).toBe('cancel_unconfirmed');
    expect(fake.calls).not.toContain('cancel');
    expect(await cancelNow(true)).toMatchObject({ kind: 'answered' });
    expect((await store.jobs.get(jobId))?.state).toBe('cancelling');
    expect(fake.calls).toContain('cancel');
  });
});
