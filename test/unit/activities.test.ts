/**
 * Activities with faked provider adapters (MockActivityEnvironment) and a real in-memory SQLite
 * store: intent/answer recording, ambiguity, classification into retryable and non-retryable
 * failures, the shared cool-down, reconciliation paths and write-once.
 */
import { fakeEvidence, fakeReading } from '../helpers/fakeProvider.js';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import type { SubmitInput } from '../../src/legacy/activities.js';
import { LegacyJobsRepository } from '../../src/legacy/store.js';
import { parseConfig } from '../../src/config.js';
import { ProviderError, quotaExhausted } from '../../src/providers/shared/errors.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Accepted, ProviderAdapter } from '../../src/providers/adapter.js';
import { openStore, type Store } from '../../src/store/index.js';

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
const input: SubmitInput = {
  jobId: 'scrape:acme:k',
  provider: 'fake',
  account: 'acme',
  key: 'k',
  request: { url: 'https://example.com/', format: 'markdown', options: {} },
};

async function register() {
  await store.jobs.register({
    id: input.jobId,
    account: 'acme',
    idem_key: 'k',
    provider: 'fake',
    request_hash: 'h',
    url: input.request.url,
    input: '{}',
    options: '{}',
    batch_id: null,
    workflow_id: input.jobId,
    task_id: null,
    deadline_at: null,
  });
}

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  fake = new FakeAdapter();
  acts = createActivities({
    store,
    providers: new ProviderRegistry(config, {}, { fake }),
    resultRetentionMs: 60_000,
    defaultCoolDownMs: 1_000,
  });
  await register();
});

const env = (attempt = 1) => new MockActivityEnvironment({ attempt });

/** Runs an activity expected to throw and returns its ApplicationFailure. */
async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (e) {
    return e as ApplicationFailure;
  }
  throw new Error('expected the activity to throw');
}

describe('submitScrape', () => {
  it('records the answer; a retried attempt adopts it without calling the provider again', async () => {
    expect(await env().run(acts.submitScrape, input)).toMatchObject({ kind: 'accepted', taskId: 'task-1' });
    expect((await store.jobs.get(input.jobId))?.task_id).toBe('task-1');
    expect(await env(2).run(acts.submitScrape, input)).toMatchObject({
      kind: 'accepted',
      taskId: 'task-1',
      adopted: true,
    });
    expect(fake.calls.filter((c) => c === 'submit')).toHaveLength(1);
  });

  it('an earlier intent without an answer makes the attempt ambiguous and calls nothing', async () => {
    await new LegacyJobsRepository(store).recordSubmitIntent(input.jobId); // a crashed attempt
    expect(await env(2).run(acts.submitScrape, input)).toMatchObject({
      kind: 'ambiguous',
      error: { code: 'UNANSWERED_INTENT' },
    });
    expect(fake.calls).toEqual([]);
    // After reconciliation proved the task absent, the same intent no longer blocks.
    expect(await env(3).run(acts.submitScrape, { ...input, afterReconcile: true })).toMatchObject({ kind: 'accepted' });
  });

  it('a reset after sending is returned as ambiguous and keeps the intent', async () => {
    fake.submitImpl = async () => {
      throw new ProviderError('ambiguous', 'POST /api/scrape failed: other side closed', { code: 'UND_ERR_SOCKET' });
    };
    expect(await env().run(acts.submitScrape, input)).toMatchObject({ kind: 'ambiguous' });
    expect((await store.jobs.get(input.jobId))?.submit_intent_at).toBeTruthy();
  });

  it('a rate-limit 429 throws a retryable failure with the provider wait and cools the key down for every caller', async () => {
    fake.submitImpl = async () => {
      throw new ProviderError('cooldown', 'answered 429 RATE_LIMITED', {
        httpStatus: 429,
        code: 'RATE_LIMITED',
        retryAfterMs: 7_000,
      });
    };
    const err = await failure(env().run(acts.submitScrape, input));
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err.type).toBe('Provider.cooldown');
    expect(err.nonRetryable).toBe(false);
    expect(err.nextRetryDelay).toBe(7_000);
    expect((await store.jobs.get(input.jobId))?.submit_intent_at).toBeNull();
    // The next call with the same provider key is held back locally: the provider sees nothing.
    const second = await failure(
      env().run(acts.checkStatus, { jobId: input.jobId, provider: 'fake', account: 'acme', taskId: 't' }),
    );
    expect(second.type).toBe('Provider.cooldown');
    expect(second.nextRetryDelay).toBeGreaterThan(6_000);
    expect(fake.calls).toEqual(['submit']);
  });

  it('a 401 is non-retryable and keeps the reason without the key', async () => {
    fake.submitImpl = async () => {
      throw new ProviderError('permanent', 'POST http://p/api/scrape answered 401 UNAUTHORIZED', {
        httpStatus: 401,
        code: 'UNAUTHORIZED',
      });
    };
    const err = await failure(env().run(acts.submitScrape, input));
    expect(err.type).toBe('Provider.permanent');
    expect(err.nonRetryable).toBe(true);
    expect(err.details?.[0]).toMatchObject({ kind: 'permanent', httpStatus: 401, code: 'UNAUTHORIZED' });
  });

  it('a quota exhaustion holds the key’s next v1 submit: refused locally (LOCAL_COOLDOWN), the provider sees one submit', async () => {
    fake.submitImpl = async () => {
      throw quotaExhausted(
        'permanent',
        new ProviderError('permanent', 'answered 402 Insufficient credits', { httpStatus: 402 }),
      );
    };
    const spent = await failure(env().run(acts.submitScrape, input));
    expect(spent.details?.[0]).toMatchObject({ code: 'QUOTA_EXHAUSTED' });
    fake.submitImpl = async () => ({ taskId: 'task-2', providerStatus: 'queued', replayed: false });
    const held = await failure(env().run(acts.submitScrape, { ...input, afterReconcile: true }));
    expect(held.type).toBe('Provider.cooldown');
    expect(held.message).toContain('are held (quota exhausted');
    expect(fake.calls.filter((c) => c === 'submit')).toHaveLength(1);
  });
});

describe('reconcileSubmit', () => {
  it('replays under the same key where the provider honours idempotency and no lookup decides', async () => {
    fake.capabilities = { ...fake.capabilities, list: false };
    fake.submitImpl = async () => ({ taskId: 'task-9', providerStatus: 'running', replayed: true });
    expect(await env().run(acts.reconcileSubmit, input)).toEqual({
      kind: 'found',
      taskId: 'task-9',
      via: 'idempotent-replay',
    });
  });
  it('looks the job up by client reference where it can list, and reports absence', async () => {
    fake.capabilities = { ...fake.capabilities, idempotency: false };
    fake.listImpl = async () => ({ taskId: 'task-7', providerStatus: 'queued', replayed: true });
    expect(await env().run(acts.reconcileSubmit, input)).toEqual({
      kind: 'found',
      taskId: 'task-7',
      via: 'list',
      lookup: 'GET /fake/list',
    });
    await store.db.updateTable('jobs').set({ task_id: null }).execute();
    fake.listImpl = async () => null;
    expect(await env().run(acts.reconcileSubmit, input)).toEqual({ kind: 'absent', via: 'list' });
    expect(fake.calls).not.toContain('submit');
  });
  it('is unresolvable without idempotency and list, and never submits', async () => {
    fake.capabilities = { ...fake.capabilities, idempotency: false, list: false };
    expect(await env().run(acts.reconcileSubmit, input)).toMatchObject({ kind: 'unresolvable' });
    expect(fake.calls).toEqual([]);
  });
});

describe('saveResult', () => {
  it('writes once: a repeat (retry, second worker) inserts nothing', async () => {
    await store.jobs.recordTaskId(input.jobId, 'task-1', 'queued', 'test');
    const ref = { jobId: input.jobId, provider: 'fake', account: 'acme', taskId: 'task-1', url: input.request.url };
    const [a, b] = (await Promise.all([env().run(acts.saveResult, ref), env().run(acts.saveResult, ref)])) as Awaited<
      ReturnType<typeof acts.saveResult>
    >[];
    expect([a!.inserted, b!.inserted].sort()).toEqual([false, true]);
    expect(a!.resultId).toBe(b!.resultId);
    expect(await store.results.count({ provider: 'fake', taskId: 'task-1' })).toBe(1);
    expect((await store.jobs.get(input.jobId))?.state).toBe('completed');
  });

  it('a result that 404s is retried, and stops being retried at the notFoundLimit-th attempt', async () => {
    await store.jobs.recordTaskId(input.jobId, 'task-1', 'queued', 'test');
    fake.result = async () => {
      fake.calls.push('result');
      throw new ProviderError('not_found', 'GET /api/jobs/task-1 answered 404', { httpStatus: 404 });
    };
    const ref = {
      jobId: input.jobId,
      provider: 'fake',
      account: 'acme',
      taskId: 'task-1',
      url: input.request.url,
      notFoundLimit: 3,
    };
    const early = await failure(env(2).run(acts.saveResult, ref));
    expect([early.type, early.nonRetryable]).toEqual(['Provider.not_found', false]);
    const last = await failure(env(3).run(acts.saveResult, ref));
    expect([last.type, last.nonRetryable]).toEqual(['Provider.not_found', true]);
    expect(await store.results.count({ provider: 'fake', taskId: 'task-1' })).toBe(0);
  });
});
