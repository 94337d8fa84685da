/**
 * Scenarios of the `scraperapi` kind (ScraperAPI Async API) on the provider harness: each drives
 * jobs through the real workflow on the shared Temporal dev server against the kind's fixture
 * (`test/fixtures/providers/scraperapi/server.ts`) and asserts provider jobs created, states, result
 * rows, errors and that the key — sent in the JSON body — reached no record. Acceptance with the
 * inline result, every status word (and `202 building`, unknown words), a finished job whose target
 * answered 404, expiry, cancel, 429 + Retry-After, a lost submit waiting in `unknown` for an
 * operator, and callbacks on the per-job token URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import {
  FIXTURE_KEYS,
  SCENARIO_POLICY,
  startProviderScenario,
  waitFor,
  type Scenario,
} from '../../fixtures/providers/harness.js';
import {
  startScraperApiFixture,
  type ScraperApiFixture,
  type ScraperApiFixtureOptions,
} from '../../fixtures/providers/scraperapi/server.js';
import { listQuarantine } from '../../helpers/storeQueries.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function scraperapi(
  fx: ScraperApiFixtureOptions = {},
  opts: { entry?: Record<string, unknown>; webhooks?: boolean } = {},
) {
  return startProviderScenario<ScraperApiFixture>({
    kind: 'scraperapi',
    fixture: () => startScraperApiFixture(fx),
    entry: (f) => ({
      baseUrl: f.url,
      readTimeoutMs: 3_000,
      submitTimeoutMs: 3_000,
      apiParams: { country_code: 'us' },
      ...opts.entry,
    }),
    webhooks: opts.webhooks,
  });
}

/** Waits until the job has a task and at least `checks` status checks; returns the row. */
async function checked(s: Scenario<ScraperApiFixture>, jobId: string, checks = 1) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= checks ? r : undefined;
    },
    30_000,
    `${checks} status checks of ${jobId}`,
  );
}

describe('scraperapi: polling', () => {
  let s: Scenario<ScraperApiFixture>;
  beforeAll(async () => {
    s = await scraperapi();
  });
  afterAll(async () => s?.stop());

  it('acceptance: the key travels in the JSON body only, the finished answer carries the page (one read), one result row, nothing leaked', async () => {
    const url = pages.pageUrl('wikipedia');
    const ref = await s.start({
      url,
      key: 'accept-1',
      policy: { ...SCENARIO_POLICY, initialDelayMs: 1_500, maxDelayMs: 2_000 },
    });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    const jobs = s.fixture.jobsWith(url);
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.id);
    const submit = s.fixture.requestsTo('POST', '/jobs').find((r) => (r.body as { url?: string }).url === url)!;
    expect(submit.body).toMatchObject({
      apiKey: FIXTURE_KEYS.acme,
      url,
      apiParams: { country_code: 'us' },
      meta: { scrapeOrchestratorRef: expect.any(String) },
    });
    expect(submit.query).toEqual({});
    for (const r of s.fixture.requestsTo('GET', `/jobs/${row.task_id}`)) {
      expect(r.query).toEqual({});
      expect(r.headers.authorization).toBeUndefined();
    }
    expect(s.fixture.statusReads(row.task_id!)).toHaveLength(1);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'completed', results: 1, documents: { total: 0 } });
    expect((await s.store.findings.timeline(ref.jobId)).some((e) => e.type === 'task_recorded')).toBe(true);
    const result = await s.client.getResult('acme', ref.jobId);
    expect(result).toMatchObject({ finalUrl: url, httpStatus: 200 });
    expect(result.title).toBeTruthy();
    expect((result.markdown ?? '').length).toBeGreaterThan(200);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('every status word: running keeps polling, failed keeps failReason, cancelled at the provider ends cancelled; a target 404 is a completed job with HTTP 404', async () => {
    s.fixture.rule('word=running', { kind: 'hold' });
    s.fixture.rule('word=failed', { kind: 'fail', failReason: 'failed_due_to_timeout' });
    s.fixture.rule('word=cancelled', { kind: 'hold' });
    const start = (word: string, page = '002') =>
      s.start({ url: `${pages.pageUrl(page)}?word=${word}`, key: `word-${word}` });
    const [running, failed, cancelled] = await Promise.all(['running', 'failed', 'cancelled'].map((w) => start(w)));
    const missing = await s.start({ url: `${pages.url}/no-such-page?word=404`, key: 'word-404' });

    const r = await checked(s, running!.jobId, 2);
    expect(r).toMatchObject({ state: 'pending', provider_status: 'running' });
    await s.fixture.finish(r.task_id!);
    expect((await s.waitFor(running!.jobId, ['completed', 'failed'])).state).toBe('completed');

    expect((await s.waitFor(failed!.jobId, ['failed', 'completed'])).state).toBe('failed');
    const fo = await s.outcome(failed!.jobId);
    expect(fo.lastError).toMatchObject({ kind: 'provider_failed', code: 'failed_due_to_timeout' });
    expect(fo.incidents).toHaveLength(1);
    expect(fo.results).toBe(0);

    const c = await checked(s, cancelled!.jobId);
    s.fixture.setWord(c.task_id!, 'cancelled');
    expect((await s.waitFor(cancelled!.jobId, ['cancelled', 'failed', 'completed'])).state).toBe('cancelled');

    expect((await s.waitFor(missing.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect(await s.client.getResult('acme', missing.jobId)).toMatchObject({ httpStatus: 404 });
    expect(s.fixture.jobsWith('word=')).toHaveLength(4);
  });

  it('a 202 "building", an unknown word and another case are not ready: polled on the schedule, shown as unrecognised, never ending the job', async () => {
    s.fixture.rule('odd-words', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('003-metadata-preferred')}?odd-words`, key: 'odd-words' });
    const first = await checked(s, ref.jobId);
    const taskId = first.task_id!;
    const before = s.fixture.statusReads(taskId).length;
    s.fixture.script(
      taskId,
      { status: 202, json: { status: 'building' } },
      { status: 200, json: { id: taskId, status: 'stalled' } },
      { status: 200, json: { id: taskId, status: 'stalled' } },
      { status: 200, json: { id: taskId, status: 'Finished' } },
      { status: 200, json: { id: taskId, status: 'Finished' } },
      { status: 200, json: { id: taskId, status: 'Finished' } },
    );
    await waitFor(
      async () => (await s.store.jobs.get(ref.jobId))?.provider_status === 'Finished',
      30_000,
      'the word "Finished" recorded',
    );
    expect(await s.store.jobs.get(ref.jobId)).toMatchObject({
      state: 'pending',
      provider_status: 'Finished',
      provider_state: 'unrecognised',
    });
    const reads = s.fixture.statusReads(taskId).slice(before, before + 4);
    expect(reads).toHaveLength(4);
    for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).toBeGreaterThanOrEqual(170);
    expect((await s.store.findings.timeline(ref.jobId)).some((e) => e.type === 'unrecognised_status')).toBe(true);
    await s.fixture.finish(taskId);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    expect(s.fixture.jobsWith('odd-words')).toHaveLength(1);
  });

  it('expiry: a known job whose status URL answers 404 ends expired after notFoundLimit reads, never failed, never resubmitted', async () => {
    s.fixture.rule('expire-me', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('cnet')}?expire-me`, key: 'expire-1' });
    const row = await checked(s, ref.jobId);
    s.fixture.expire(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'completed'])).state).toBe('expired');
    const out = await s.outcome(ref.jobId);
    expect(out.events.filter((e) => e === 'status_not_found').length).toBeGreaterThanOrEqual(3);
    expect(s.fixture.jobsWith('expire-me')).toHaveLength(1);
    expect(out.results).toBe(0);
  });

  it('cancel: DELETE /jobs/{id} once, with the key in its body (never the URL); the job reads cancelled and ends cancelled', async () => {
    s.fixture.rule('cancel-me', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-me`, key: 'cancel-1' });
    const row = await checked(s, ref.jobId);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    const deletes = s.fixture.requestsTo('DELETE', `/jobs/${row.task_id}`);
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.body).toEqual({ apiKey: FIXTURE_KEYS.acme });
    expect(deletes[0]!.query).toEqual({});
    expect(s.fixture.jobs.get(row.task_id!)!.status).toBe('cancelled');
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('429 with Retry-After: 2 on submit: the next submit comes no sooner than 2 s later, one job is created and completes', async () => {
    s.fixture.rule('limited', { kind: 'rate_limit', retryAfterSeconds: 2 }, 1);
    const url = `${pages.pageUrl('heise')}?limited`;
    const ref = await s.start({ url, key: 'limited-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    const submits = s.fixture.requestsTo('POST', '/jobs').filter((r) => (r.body as { url?: string }).url === url);
    expect(submits).toHaveLength(2);
    expect(submits[1]!.at - submits[0]!.at).toBeGreaterThanOrEqual(2_000 - 50);
    expect(s.fixture.jobsWith('limited')).toHaveLength(1);
  });

  it('a lost submit cannot be reconciled (no list, no idempotency): the job waits in unknown with one provider job until an operator hands over the task ID', async () => {
    s.fixture.rule('orphan', { kind: 'hold' });
    s.fixture.rule('orphan', { kind: 'drop_after_commit' }, 1);
    const ref = await s.start({ url: `${pages.pageUrl('cnn')}?orphan`, key: 'orphan-1' });
    await s.waitFor(ref.jobId, ['unknown']);
    await sleep(1_500);
    expect((await s.store.jobs.get(ref.jobId))!.state).toBe('unknown');
    const created = s.fixture.jobsWith('orphan');
    expect(created).toHaveLength(1);
    expect(
      s.fixture.requestsTo('POST', '/jobs').filter((r) => String((r.body as { url?: string }).url).includes('orphan')),
    ).toHaveLength(1);
    await s.waitForOperator(ref.jobId);
    expect((await s.store.findings.timeline(ref.jobId)).some((e) => e.type === 'reconcile_undecided')).toBe(true);
    // Another client's task on the same host (ScraperAPI's status URL needs no key): its record
    // carries another reference, so the operator's task ID is refused and nothing changes.
    const stranger = s.fixture.conformance.createLookalike(`${pages.pageUrl('cnn')}?orphan`);
    await expect(s.client.resolve('acme', ref.jobId, { taskId: stranger.id, by: 'scenario' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/client reference/),
    });
    expect((await s.store.jobs.get(ref.jobId))!).toMatchObject({ state: 'unknown', task_id: null });
    const refusal = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'operator_resolve')!;
    expect(JSON.parse(refusal.detail!)).toMatchObject({ by: 'scenario', taskId: stranger.id, outcome: 'refused' });
    await s.client.resolve('acme', ref.jobId, { taskId: created[0]!.id, by: 'scenario' });
    await s.fixture.finish(created[0]!.id);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect((await s.store.jobs.get(ref.jobId))!.task_id).toBe(created[0]!.id);
    expect(
      s.fixture.requestsTo('POST', '/jobs').filter((r) => String((r.body as { url?: string }).url).includes('orphan')),
    ).toHaveLength(1);
  });
});

/** First status check 30 s × webhookSlowdown 5 after submit: only a callback can finish the job sooner. */
const SLOW: Partial<PollPolicy> = {
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0,
  deadlineMs: 600_000,
  activityTimeoutMs: 5_000,
  cancelConfirmDeadlineMs: 10_000,
};

describe('scraperapi: callbacks on the per-job token URL', () => {
  let s: Scenario<ScraperApiFixture>;
  beforeAll(async () => {
    s = await scraperapi({ runMs: 1_000 }, { webhooks: true });
  });
  afterAll(async () => s?.stop());

  it('the submit registers the token URL with both failure-report flags; the callback wakes the job long before its first poll; a redelivery is a duplicate; nothing leaked', async () => {
    const url = `${pages.pageUrl('001')}?callback`;
    const t0 = Date.now();
    const ref = await s.start({ url, key: 'cb-1', policy: SLOW });
    const submit = await waitFor(
      () => s.fixture.requestsTo('POST', '/jobs').find((r) => (r.body as { url?: string }).url === url),
      10_000,
      'the submit',
    );
    expect(submit.body).toMatchObject({
      callback: { type: 'webhook', url: `${s.api!.webhookUrl}/${s.callbackToken(ref.jobId)}` },
      expectUnsuccessReport: true,
      expectsUnsuccessReport: true,
    });
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(25_000);
    const job = s.fixture.jobsWith(url)[0]!;
    const sent = s.fixture.deliveries.filter((d) => (d.body as { id?: string }).id === job.id);
    expect(sent.map((d) => d.status)).toEqual([200]);
    const again = await s.api!.call(null, 'POST', `/v1/webhooks/scraperapi/${s.callbackToken(ref.jobId)}`, {
      json: sent[0]!.body,
    });
    expect(await again.json()).toMatchObject({ outcome: 'duplicate' });
    expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome)).toEqual(['woken']);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    expect(s.api!.logs()).not.toContain(s.callbackToken(ref.jobId));
  });

  it('a wrong or missing token is 401 and quarantined by reason only; a failed job’s report (requested by the flag) wakes the job into failed', async () => {
    s.fixture.rule('cb-fail', { kind: 'fail', failReason: 'failed_due_to_timeout' });
    s.fixture.rule('cb-other', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('002')}?cb-fail`, key: 'cb-fail', policy: SLOW });
    const other = await s.start({ url: `${pages.pageUrl('002')}?cb-other`, key: 'cb-other', policy: SLOW });
    const row = await s.waitFor(ref.jobId, ['pending', 'failed']);
    await s.waitFor(other.jobId, ['pending']);
    const event = { id: row.task_id, status: 'running', url: 'x' };
    for (const token of ['0'.repeat(64), s.callbackToken(other.jobId)]) {
      const bad = await s.api!.call(null, 'POST', `/v1/webhooks/scraperapi/${token}`, { json: event });
      expect(bad.status).toBe(401);
    }
    const kept = (await listQuarantine(s.store)).filter((q) => q.event_id === `${row.task_id}:running`);
    expect(kept.map((q) => [q.reason, q.body])).toEqual([
      ['invalid_token', ''],
      ['invalid_token', ''],
    ]);
    expect((await s.waitFor(ref.jobId, ['failed', 'completed'], 40_000)).state).toBe('failed');
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ code: 'failed_due_to_timeout' });
    expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome)).toEqual(['woken']);
    await s.fixture.finish((await s.store.jobs.get(other.jobId))!.task_id!);
  });

  it('a lost submit waits in unknown (no lookup, no key) until the job’s own callback arrives: the delivery, verified by the per-job token and naming the job, is a strong match and the job completes with no operator and one provider job', async () => {
    s.fixture.rule('cb-lost', { kind: 'hold' });
    s.fixture.rule('cb-lost', { kind: 'drop_after_commit' }, 1);
    const url = `${pages.pageUrl('001')}?cb-lost`;
    const ref = await s.start({ url, key: 'cb-lost', policy: SLOW });
    await s.waitForOperator(ref.jobId);
    await s.fixture.finish(s.fixture.jobsWith('cb-lost')[0]!.id); // the provider finishes and calls back
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    const created = s.fixture.jobsWith('cb-lost');
    expect(created).toHaveLength(1);
    expect((await s.store.jobs.get(ref.jobId))!.task_id).toBe(created[0]!.id);
    const found = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'reconcile_found')!;
    expect(JSON.parse(found.detail!)).toMatchObject({ lookup: 'webhook deliveries of this job' });
    expect(
      s.fixture.requestsTo('POST', '/jobs').filter((r) => String((r.body as { url?: string }).url).includes('cb-lost')),
    ).toHaveLength(1);
  });
});
