/**
 * The submit, reconcile and check activities with faked provider adapters
 * (MockActivityEnvironment) and a real in-memory SQLite store: intent/answer recording, ambiguity,
 * classification into retryable and non-retryable failures, the shared cool-down, reconciliation
 * paths and write-once.
 */
import { fakeEvidence, fakeReading } from '../helpers/fakeProvider.js';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  createActivities,
  mapProviderErrors,
  type SubmitJobInput,
  type TrackStatusInput,
} from '../../src/activities/index.js';
import { activityKit } from '../../src/activities/context.js';
import { checkOnce as checkOnceOf } from '../../src/activities/tracking/poll.js';
import type { CheckResult } from '../../src/activities/tracking/pollTypes.js';
import { parseConfig } from '../../src/config.js';
import { ProviderError, quotaExhausted } from '../../src/providers/shared/errors.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Accepted, ProviderAdapter } from '../../src/providers/adapter.js';
import { openStore, Store } from '../../src/store/index.js';

class FakeAdapter implements ProviderAdapter {
  readonly name = 'fake';
  readonly kind = 'fake';
  capabilities = { idempotency: true, list: true, cancel: true, webhooks: false };
  get evidence() {
    return fakeEvidence(this.capabilities);
  }
  calls: string[] = [];
  submitImpl: () => Promise<Accepted> = async () => ({ taskId: 'task-1', providerStatus: 'queued', replayed: false });
  listImpl: () => Promise<Accepted | null> = async () => null;
  async submit() {
    this.calls.push('submit');
    return this.submitImpl();
  }
  async status() {
    this.calls.push('status');
    return { state: 'running' as const, providerStatus: 'running' };
  }
  async result(_t: string, { url }: { url: string }) {
    this.calls.push('result');
    return {
      url,
      finalUrl: url,
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
  }
  async cancel() {
    this.calls.push('cancel');
    return { accepted: true };
  }
  async findSubmitted() {
    this.calls.push('list');
    return fakeReading(await this.listImpl());
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
      },
    },
  },
  {},
);
let store: Store;
let fake: FakeAdapter;
let acts: ReturnType<typeof createActivities>;
let check: (input: TrackStatusInput, checkPastDeadline: boolean) => Promise<CheckResult>;
const jobId = 'scrape:acme:k';
const request = { url: 'https://example.com/', format: 'markdown' as const, options: {} };
const job = { jobId, account: 'acme', key: 'k', provider: 'fake', requestHash: 'h', request, workflowId: jobId };
const input: SubmitJobInput = { job, trackingDeadlineMs: 60_000 };
let generation = 1;
const poll = (over: Partial<TrackStatusInput> = {}): TrackStatusInput => ({
  jobId,
  provider: 'fake',
  account: 'acme',
  taskId: 'task-1',
  url: request.url,
  request,
  generation,
  schedule: { initialDelayMs: 2_000, maxDelayMs: 60_000, multiplier: 1.5, jitter: 0, slowdown: 1 },
  firstDelayMs: 0,
  deadlineAt: new Date(Date.now() + 3_600_000).toISOString(),
  notFoundLimit: 3,
  failedReads: { initialDelayMs: 1_000, maxDelayMs: 30_000, jitter: 0, limit: 10, budgetMs: 900_000 },
  mode: 'track',
  recordsOutcome: true,
  ...over,
});

async function register() {
  await store.jobs.insert(Store.jobRow(job));
}

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  fake = new FakeAdapter();
  const deps = {
    store,
    providers: new ProviderRegistry(config, {}, { fake }),
    resultRetentionMs: 60_000,
    defaultCoolDownMs: 1_000,
  };
  acts = createActivities(deps);
  check = checkOnceOf.bind(null, activityKit(deps));
  generation++;
  await register();
});

const env = (attempt = 1) =>
  new MockActivityEnvironment({ attempt, scheduleToCloseTimeoutMs: 0 }, { interceptors: [mapProviderErrors] });

/** Runs an activity expected to throw and returns its ApplicationFailure. */
async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (e) {
    return e as ApplicationFailure;
  }
  throw new Error('expected the activity to throw');
}

describe('submitJob', () => {
  it('records the answer; a retried attempt adopts it without calling the provider again', async () => {
    expect(await env().run(acts.submitJob, input)).toMatchObject({ kind: 'accepted', taskId: 'task-1' });
    expect((await store.jobs.get(jobId))?.task_id).toBe('task-1');
    expect(await env(2).run(acts.submitJob, input)).toMatchObject({
      kind: 'accepted',
      taskId: 'task-1',
      adopted: true,
    });
    expect(fake.calls.filter((c) => c === 'submit')).toHaveLength(1);
  });

  it('an earlier intent without an answer makes the attempt ambiguous and calls nothing', async () => {
    // A crashed attempt, a minute before this round was scheduled.
    await store.db
      .updateTable('jobs')
      .set({ submit_intent_at: new Date(Date.now() - 60_000).toISOString() })
      .execute();
    expect(await env(2).run(acts.submitJob, input)).toMatchObject({
      kind: 'ambiguous',
      error: { code: 'UNANSWERED_INTENT' },
    });
    expect(fake.calls).toEqual([]);
    // After reconciliation proved the task absent, the same intent no longer blocks.
    // (The new round is scheduled once the reconcile decided: after every intent recorded so far.)
    const round = new MockActivityEnvironment({
      attempt: 1,
      scheduleToCloseTimeoutMs: 0,
      scheduledTimestampMs: Date.now() + 5_000,
    });
    expect(await round.run(acts.submitJob, { ...input, afterReconcile: true })).toMatchObject({ kind: 'accepted' });
  });

  it('a reset after sending is returned as ambiguous and keeps the intent', async () => {
    fake.submitImpl = async () => {
      throw new ProviderError('ambiguous', 'POST /api/scrape failed: other side closed', { code: 'UND_ERR_SOCKET' });
    };
    expect(await env().run(acts.submitJob, input)).toMatchObject({ kind: 'ambiguous' });
    expect((await store.jobs.get(jobId))?.submit_intent_at).toBeTruthy();
  });

  it("a rate-limit 429: the job waits the provider's wait (no failed attempt), nothing was created, and the key cools down for every caller", async () => {
    fake.submitImpl = async () => {
      throw new ProviderError('cooldown', 'answered 429 RATE_LIMITED', {
        httpStatus: 429,
        code: 'RATE_LIMITED',
        retryAfterMs: 7_000,
      });
    };
    const out = await env().run(acts.submitJob, input);
    expect(out).toMatchObject({
      kind: 'waiting',
      retryInMs: 7_000,
      wait: { reason: 'cooldown', message: expect.stringMatching(/RATE_LIMITED/) },
    });
    const row = await store.jobs.get(jobId);
    expect(row?.submit_intent_at).toBeNull();
    expect(JSON.parse(row!.waiting!)).toMatchObject({ reason: 'cooldown' });
    // The next call with the same provider key is held back locally: the provider sees nothing,
    // and a read never sent is no failed read.
    await store.jobs.recordTaskId(jobId, 'task-1', 'queued', 'test');
    const second = (await env().run(check, poll(), false)) as CheckResult;
    expect(second).toMatchObject({
      again: { message: expect.stringMatching(/status read held back \(nothing sent\)/) },
    });
    expect(Number((await store.jobs.get(jobId))?.status_errors)).toBe(0);
    if (!('again' in second)) throw new Error('expected a next check');
    expect(second.again.delayMs).toBeGreaterThan(6_000);
    expect(fake.calls).toEqual(['submit']);
  });

  it('a 401 is non-retryable and keeps the reason without the key', async () => {
    fake.submitImpl = async () => {
      throw new ProviderError('permanent', 'POST http://p/api/scrape answered 401 UNAUTHORIZED', {
        httpStatus: 401,
        code: 'UNAUTHORIZED',
      });
    };
    const err = await failure(env().run(acts.submitJob, input));
    expect(err.type).toBe('Provider.permanent');
    expect(err.nonRetryable).toBe(true);
    expect(err.details?.[0]).toMatchObject({ kind: 'permanent', httpStatus: 401, code: 'UNAUTHORIZED' });
  });

  it('a quota exhaustion holds the key’s next submit: refused locally (LOCAL_COOLDOWN), the provider sees one submit', async () => {
    fake.submitImpl = async () => {
      throw quotaExhausted(
        'permanent',
        new ProviderError('permanent', 'answered 402 Insufficient credits', { httpStatus: 402 }),
      );
    };
    const spent = await failure(env().run(acts.submitJob, input));
    expect(spent.details?.[0]).toMatchObject({ code: 'QUOTA_EXHAUSTED' });
    fake.submitImpl = async () => ({ taskId: 'task-2', providerStatus: 'queued', replayed: false });
    const held = await env().run(acts.submitJob, { ...input, afterReconcile: true });
    expect(held).toMatchObject({
      kind: 'waiting',
      wait: { reason: 'cooldown', message: expect.stringContaining('are held (quota exhausted') },
    });
    expect(fake.calls.filter((c) => c === 'submit')).toHaveLength(1);
  });
});

describe('reconcileJob', () => {
  it('replays under the same key where the provider honours idempotency and no lookup decides', async () => {
    fake.capabilities = { ...fake.capabilities, list: false };
    fake.submitImpl = async () => ({ taskId: 'task-9', providerStatus: 'running', replayed: true });
    expect(await env().run(acts.reconcileJob, input)).toEqual({
      kind: 'found',
      taskId: 'task-9',
      via: 'idempotent-replay',
    });
  });
  it('looks the job up by client reference where it can list, and reports absence', async () => {
    fake.capabilities = { ...fake.capabilities, idempotency: false };
    fake.listImpl = async () => ({ taskId: 'task-7', providerStatus: 'queued', replayed: true });
    expect(await env().run(acts.reconcileJob, input)).toEqual({
      kind: 'found',
      taskId: 'task-7',
      via: 'list',
      lookup: 'GET /fake/list',
    });
    await store.db.updateTable('jobs').set({ task_id: null }).execute();
    fake.listImpl = async () => null;
    expect(await env().run(acts.reconcileJob, input)).toEqual({ kind: 'absent', via: 'list' });
    expect(fake.calls).not.toContain('submit');
  });
  it('is unresolvable without idempotency and list, and never submits', async () => {
    fake.capabilities = { ...fake.capabilities, idempotency: false, list: false };
    expect(await env().run(acts.reconcileJob, input)).toMatchObject({ kind: 'unresolvable' });
    expect(fake.calls).toEqual([]);
  });
});

describe('the result write (a completed check)', () => {
  it('writes once: a repeat (retry, second worker) inserts nothing', async () => {
    await store.jobs.recordTaskId(jobId, 'task-1', 'queued', 'test');
    fake.status = async () => ({ state: 'completed', providerStatus: 'completed' }) as never;
    const [a, b] = (await Promise.all([
      env().run(check, poll(), false),
      env().run(check, poll(), false),
    ])) as CheckResult[];
    const results = [a, b].map((r) =>
      'outcome' in r! && r.outcome.kind === 'completed' ? r.outcome.result : undefined,
    );
    expect(results.map((r) => r?.inserted).sort()).toEqual([false, true]);
    expect(results[0]!.resultId).toBe(results[1]!.resultId);
    expect(await store.results.count({ provider: 'fake', taskId: 'task-1' })).toBe(1);
    expect((await store.jobs.get(jobId))?.state).toBe('completed');
  });

  it('a result read that 404s counts toward the not-found streak and writes nothing', async () => {
    await store.jobs.recordTaskId(jobId, 'task-1', 'queued', 'test');
    fake.status = async () => ({ state: 'completed', providerStatus: 'completed' }) as never;
    fake.result = async () => {
      fake.calls.push('result');
      throw new ProviderError('not_found', 'GET /api/jobs/task-1 answered 404', { httpStatus: 404 });
    };
    const first = (await env().run(check, poll(), false)) as CheckResult;
    expect(first).toMatchObject({ again: { message: expect.stringMatching(/result read answered 404/) } });
    expect(await store.results.count({ provider: 'fake', taskId: 'task-1' })).toBe(0);
  });
});
