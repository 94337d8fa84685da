/**
 * Scenarios of the `firecrawl` kind on the provider harness: the adapter through the real workflow
 * on the shared Temporal dev server against the Firecrawl fixture (`test/fixtures/providers/firecrawl/`,
 * the v2 contract with its awkward answers). Acceptance of a one-URL batch scrape, every status
 * word (and words we do not know), a crawl's documents over `next` pages plus `/errors` written
 * once, expiry, cancel (and `409` on a finished crawl), the rate limit whose wait is only in the
 * message, lost submits reconciled by the key's `409` and the active list, by the activity list,
 * proved absent, and refused when two jobs match; signed webhooks (verification, dedupe on
 * `webhookId`, `crawl.cancelled`) and unsigned ones on the per-job token URL; no secret anywhere.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import { FirecrawlAdapter } from '../../../src/providers/firecrawl/index.js';
import type { FirecrawlEntry } from '../../../src/providers/firecrawl/config.js';
import {
  FIXTURE_KEYS,
  SCENARIO_POLICY,
  startProviderScenario,
  waitFor,
  type Scenario,
} from '../../fixtures/providers/harness.js';
import {
  startFirecrawlFixture,
  type FirecrawlFixture,
  type FirecrawlFixtureOptions,
} from '../../fixtures/providers/firecrawl/server.js';
import { listQuarantine } from '../../helpers/storeQueries.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const sign = (body: string, secret: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

function firecrawl(fixture: FirecrawlFixtureOptions, entry: Record<string, unknown> = {}, webhooks = false) {
  return startProviderScenario<FirecrawlFixture>({
    kind: 'firecrawl',
    fixture: () => startFirecrawlFixture(fixture),
    entry: (fx) => ({
      baseUrl: fx.url,
      readTimeoutMs: 3_000,
      submitTimeoutMs: 3_000,
      reconcile: { settleMs: 500 },
      ...entry,
    }),
    webhooks,
  });
}

/** The running job of `jobId` once its task is known and checked at least `checks` times. */
async function running(s: Scenario<FirecrawlFixture>, jobId: string, checks = 1) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= checks ? r : undefined;
    },
    30_000,
    `job ${jobId} checked ${checks} times`,
  );
}

describe('firecrawl: batch scrape entry (one URL per job)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    // No 404 grace: the fixture shows a job at once, and "Job not found" is counted from the first read.
    s = await firecrawl({}, { operation: 'batch', scrapeOptions: { onlyMainContent: true }, notFoundGraceMs: 0 });
  });
  afterAll(async () => s?.stop());

  it('acceptance: POST /v2/batch/scrape with the URL (Bearer key, no idempotency header: batch ignores it), 200 + id recorded, the page fills the result row and its one document, no secret leaked', async () => {
    const url = 'https://example.com/article?accept';
    const ref = await s.start({ url, key: 'accept' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    const jobs = s.fixture.jobs('acme').filter((j) => j.url === url);
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.id);
    const [post] = s.fixture.server.requestsTo('POST', '/v2/batch/scrape');
    expect(post!.headers.authorization).toBe(`Bearer ${FIXTURE_KEYS.acme}`);
    expect(post!.headers['x-idempotency-key']).toBeUndefined();
    expect(post!.body).toEqual({
      formats: ['markdown', 'links'],
      onlyMainContent: true,
      ignoreInvalidURLs: false,
      urls: [url],
    });
    const result = await s.client.getResult('acme', ref.jobId);
    expect(result).toMatchObject({
      url,
      finalUrl: url,
      httpStatus: 200,
      title: 'Page 0',
      lang: 'en',
      excerpt: 'About page 0',
    });
    expect(result.markdown).toContain(`Content of ${url}`);
    expect(await s.outcome(ref.jobId)).toMatchObject({
      state: 'completed',
      providerStatus: 'completed',
      results: 1,
      documents: { total: 1, rows: 1 },
    });
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('every status word: scraping keeps polling, completed writes the result, failed keeps Firecrawl’s message, cancelled at Firecrawl ends cancelled', async () => {
    s.fixture.hold('word=');
    const start = (word: string) => s.start({ url: `https://example.com/?word=${word}`, key: `word-${word}` });
    const [scraping, failed, cancelled] = await Promise.all(['scraping', 'failed', 'cancelled'].map(start));

    const sc = await running(s, scraping!.jobId, 2);
    expect(sc.provider_status).toBe('scraping');
    expect(sc.state).toBe('pending');
    s.fixture.release(sc.task_id!);
    expect((await s.waitFor(scraping!.jobId, ['completed', 'failed'])).state).toBe('completed');

    const f = await running(s, failed!.jobId);
    s.fixture.fail(f.task_id!, 'All URLs failed to scrape');
    expect((await s.waitFor(failed!.jobId, ['failed', 'completed'])).state).toBe('failed');
    const fo = await s.outcome(failed!.jobId);
    expect(fo.lastError).toMatchObject({ kind: 'provider_failed', message: 'All URLs failed to scrape' });
    expect(fo.incidents).toHaveLength(1);
    expect(fo.results).toBe(0);

    const c = await running(s, cancelled!.jobId);
    const r = await fetch(`${s.fixture.url}/v2/batch/scrape/${c.task_id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${FIXTURE_KEYS.acme}` },
    });
    expect(r.status).toBe(200);
    expect((await s.waitFor(cancelled!.jobId, ['cancelled', 'failed', 'completed'])).state).toBe('cancelled');
  });

  it('an unknown word and another case are "unrecognised": recorded, polled on the schedule, never ending the job', async () => {
    s.fixture.hold('odd-words');
    const ref = await s.start({ url: 'https://example.com/?odd-words', key: 'odd-words' });
    const row = await running(s, ref.jobId);
    s.fixture.setWord(row.task_id!, 'paused');
    await waitFor(
      async () => (await s.store.jobs.get(ref.jobId))?.provider_status === 'paused',
      30_000,
      'the word "paused" recorded',
    );
    s.fixture.setWord(row.task_id!, 'Completed');
    await waitFor(
      async () => (await s.store.jobs.get(ref.jobId))?.provider_status === 'Completed',
      30_000,
      'the word "Completed" recorded',
    );
    expect(await s.store.jobs.get(ref.jobId)).toMatchObject({
      state: 'pending',
      provider_status: 'Completed',
      provider_state: 'unrecognised',
    });
    expect(
      (await s.store.findings.timeline(ref.jobId)).filter((e) => e.type === 'unrecognised_status').length,
    ).toBeGreaterThanOrEqual(2);
    const reads = s.fixture.job(row.task_id!)!.statusReads;
    for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).toBeGreaterThanOrEqual(170);
    s.fixture.setWord(row.task_id!, null);
    s.fixture.release(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
  });

  it('a URL Firecrawl could not scrape (batch completed, no document, one /errors entry) ends failed with Firecrawl’s code', async () => {
    s.fixture.failUrl('unscrapable', 'SCRAPE_ALL_ENGINES_FAILED', 'All scraping engines failed');
    const ref = await s.start({ url: 'https://example.com/unscrapable', key: 'unscrapable' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({
      code: 'SCRAPE_ALL_ENGINES_FAILED',
      message: 'Firecrawl could not scrape https://example.com/unscrapable: All scraping engines failed',
    });
  });

  it('expiry: 404 "Job expired" on a known task ends expired at once, never failed, never resubmitted', async () => {
    s.fixture.hold('expire-me');
    const ref = await s.start({ url: 'https://example.com/expire-me', key: 'expire' });
    const row = await running(s, ref.jobId);
    s.fixture.expire(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'tracking_interrupted'])).state).toBe('expired');
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({
      kind: 'expired',
      code: 'JOB_EXPIRED',
      httpStatus: 404,
    });
    expect(s.fixture.jobs('acme').filter((j) => j.url.includes('expire-me'))).toHaveLength(1);
  });

  it('"Job not found" (gone, or another team’s job) is counted, then expired once the task is past its propagation window', async () => {
    s.fixture.hold('gone');
    const ref = await s.start({
      url: 'https://example.com/gone',
      key: 'gone',
      policy: { ...SCENARIO_POLICY, notFoundLimit: 2 },
    });
    const row = await running(s, ref.jobId);
    s.fixture.expire(row.task_id!, 'gone');
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'tracking_interrupted'])).state).toBe('expired');
    const notFound = (await s.store.findings.timeline(ref.jobId))
      .filter((e) => e.type === 'status_not_found')
      .map((e) => JSON.parse(e.detail!) as { streak: number; ageMs: number; graceMs: number });
    expect(notFound.length).toBeGreaterThanOrEqual(2);
    const last = notFound.at(-1)!;
    expect(last.streak).toBeGreaterThanOrEqual(2);
    expect(last.ageMs).toBeGreaterThanOrEqual(last.graceMs);
  });

  it('cancel: DELETE /v2/batch/scrape/{id} once, the job ends cancelled, no result', async () => {
    s.fixture.hold('cancel-me');
    const ref = await s.start({ url: 'https://example.com/cancel-me', key: 'cancel' });
    const row = await running(s, ref.jobId);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    expect(s.fixture.server.requestsTo('DELETE', `/v2/batch/scrape/${row.task_id}`)).toHaveLength(1);
    expect(s.fixture.job(row.task_id!)!.status).toBe('cancelled');
    expect((await s.outcome(ref.jobId)).results).toBe(0);
  });

  /** Holds a batch, answers its next status read `429` as `limit` says, and checks the read after it waits at least `waitS` seconds. */
  async function limitedReadWaits(
    key: string,
    waitS: number,
    limit: { seconds: number; retryAfter?: boolean; message?: string },
  ) {
    s.fixture.hold(key);
    const ref = await s.start({ url: `https://example.com/${key}`, key });
    const row = await running(s, ref.jobId);
    s.fixture.rateLimit({ method: 'GET', path: new RegExp(`/v2/batch/scrape/${row.task_id}$`), times: 1, ...limit });
    const since = s.fixture.server.requests.length;
    await waitFor(() => s.fixture.server.requests.slice(since).length > 0, 10_000, 'the limited read');
    s.fixture.release(row.task_id!);
    await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000);
    const reads = s.fixture.server.requests
      .slice(since)
      .filter((r) => r.method === 'GET' && r.path === `/v2/batch/scrape/${row.task_id}`);
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(reads[1]!.at - reads[0]!.at).toBeGreaterThanOrEqual(waitS * 1_000 - 50);
    expect((await s.outcome(ref.jobId)).state).toBe('completed');
  }

  it('429 with a Retry-After: 8 header and no wait in the message on a status read (longer than the default cool-down of 5 s): the next read comes ≥ 8 s later; the job completes', () =>
    limitedReadWaits('retry-header', 8, { seconds: 8, retryAfter: true, message: 'Rate limit exceeded.' }));

  it('429 with the wait only in the message ("retry after 3s", no Retry-After) on a status read: the next read comes ≥ 3 s later; the job completes', () =>
    limitedReadWaits('limited', 3, { seconds: 3 }));

  it('a lost batch submit (answer dropped after commit): the batch in /v2/team/activity matches only by URL and time, so it is never adopted and never resubmitted; the job waits in unknown naming it, and the operator hands it over: one batch, completed once', async () => {
    s.fixture.dropAfterCommit('lost-batch');
    const url = 'https://example.com/lost-batch';
    const ref = await s.start({ url, key: 'lost-batch' });
    const view = await s.waitForOperator(ref.jobId);
    const jobs = s.fixture.jobs('acme').filter((j) => j.url === url);
    expect(jobs).toHaveLength(1);
    expect(view.note).toContain(`match only by URL and time (${jobs[0]!.id})`);
    // A batch entry never replays (a second batch would be a duplicate paid job).
    expect(
      s.fixture.server
        .requestsTo('POST', '/v2/batch/scrape')
        .filter((r) => (r.body as { urls: string[] }).urls[0] === url),
    ).toHaveLength(1);
    expect(s.fixture.server.requestsTo('GET', '/v2/team/activity').length).toBeGreaterThan(0);
    // A task ID that is not a Firecrawl job ID (`400 Invalid job ID format`) is refused and audited; nothing is bound.
    await expect(s.client.resolve('acme', ref.jobId, { taskId: 'not-a-uuid', by: 'vitest' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/cannot read task not-a-uuid/),
    });
    expect((await s.store.jobs.get(ref.jobId))!).toMatchObject({ state: 'unknown', task_id: null });
    const refusal = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'operator_resolve')!;
    expect(JSON.parse(refusal.detail!)).toMatchObject({
      taskId: 'not-a-uuid',
      outcome: 'refused',
      evidence: { statusRead: { httpStatus: 400 } },
    });
    await s.client.resolve('acme', ref.jobId, { taskId: jobs[0]!.id, by: 'vitest' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(row.task_id).toBe(jobs[0]!.id);
    const out = await s.outcome(ref.jobId);
    expect(out.events).toEqual(expect.arrayContaining(['submit_ambiguous', 'reconcile_undecided', 'operator_resolve']));
    expect(out.results).toBe(1);
    expect(s.fixture.jobs('acme').filter((j) => j.url === url)).toHaveLength(1);
  });

  it('a lost batch submit on a deployment without /v2/team/activity (404): nothing can prove it absent, so it is never resubmitted: one batch, the job in unknown', async () => {
    s.fixture.dropAfterCommit('no-activity');
    s.fixture.conformance.setLookup({ kind: 'unavailable' });
    try {
      const url = 'https://example.com/no-activity';
      const ref = await s.start({ url, key: 'no-activity' });
      const view = await s.waitForOperator(ref.jobId);
      expect(view.note).toMatch(/absence cannot be proven.*not offered here: GET \/v2\/team\/activity/);
      expect(s.fixture.jobs('acme').filter((j) => j.url === url)).toHaveLength(1);
      expect(
        s.fixture.server
          .requestsTo('POST', '/v2/batch/scrape')
          .filter((r) => (r.body as { urls: string[] }).urls[0] === url),
      ).toHaveLength(1);
    } finally {
      s.fixture.conformance.setLookup({ kind: 'immediate' });
    }
  });

  it('a submit lost before it reached Firecrawl is proved absent by an activity read after its lag (the first read waits it out) and submitted again: exactly one job', async () => {
    s.fixture.dropBeforeCommit('never-arrived');
    const url = 'https://example.com/never-arrived';
    const ref = await s.start({ url, key: 'never-arrived' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
      'completed',
    );
    expect(s.fixture.jobs('acme').filter((j) => j.url === url)).toHaveLength(1);
    const events = (await s.outcome(ref.jobId)).events;
    expect(events.indexOf('reconcile_settling')).toBeGreaterThan(-1);
    expect(events.indexOf('reconcile_settling')).toBeLessThan(events.indexOf('reconcile_absent'));
  });

  it('two Firecrawl jobs match a lost submit (another client of the key scraped the same URL): no guess, the job waits in unknown naming both', async () => {
    const url = 'https://example.com/twice';
    s.fixture.create('acme', 'batch', url);
    s.fixture.dropAfterCommit('twice');
    const ref = await s.start({ url, key: 'twice' });
    await s.waitFor(ref.jobId, ['unknown']);
    const ids = s.fixture
      .jobs('acme')
      .filter((j) => j.url === url)
      .map((j) => j.id);
    expect(ids).toHaveLength(2);
    const view = await s.waitForOperator(ref.jobId);
    for (const id of ids) expect(view.note).toContain(id);
    await s.client.resolve('acme', ref.jobId, { taskId: ids[1]!, by: 'scenario' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
  });
});

describe('firecrawl: crawl entry', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ pageSize: 2, crawl: { pages: 5, errors: 1, robotsBlocked: 1 } }, { operation: 'crawl' });
  });
  afterAll(async () => s?.stop());

  it('a crawl of 5 pages over 3 `next` pages plus 1 failure and 1 robots.txt refusal is written once with all 7 documents; x-idempotency-key is a UUID; the limit and scrapeOptions pass through', async () => {
    const url = 'https://docs.example.com/';
    const ref = await s.start({
      url,
      key: 'crawl-1',
      options: { limit: 50, includePaths: ['docs/.*'], scrapeOptions: { onlyMainContent: false } },
    });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    const [post] = s.fixture.server.requestsTo('POST', '/v2/crawl');
    expect(post!.headers['x-idempotency-key']).toMatch(UUID);
    expect(post!.body).toEqual({
      limit: 50,
      includePaths: ['docs/.*'],
      url,
      scrapeOptions: { formats: ['markdown', 'links'], onlyMainContent: false },
    });
    const reads = s.fixture.server
      .requestsTo('GET', `/v2/crawl/${row.task_id}`)
      .filter((r) => r.path === `/v2/crawl/${row.task_id}`);
    expect(reads.map((r) => r.query.skip ?? '0').slice(-3)).toEqual(['0', '2', '4']);
    expect(s.fixture.server.requestsTo('GET', `/v2/crawl/${row.task_id}/errors`)).toHaveLength(1);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ results: 1, documents: { total: 7, rows: 7 } });
    const docs = await s.client.getResultDocuments('acme', ref.jobId, { offset: 0, limit: 100 });
    expect(docs.documents.map((d) => d.url)).toEqual([
      'https://docs.example.com/',
      'https://docs.example.com/page-1',
      'https://docs.example.com/page-2',
      'https://docs.example.com/page-3',
      'https://docs.example.com/page-4',
      'https://docs.example.com/broken-0',
      'https://docs.example.com/private-0',
    ]);
    expect(docs.documents[5]).toMatchObject({ error: { code: 'SCRAPE_TIMEOUT', message: 'Scrape timed out' } });
    expect(docs.documents[6]).toMatchObject({ error: { code: 'ROBOTS_BLOCKED' } });
    expect(docs.documents[0]).toMatchObject({ title: 'Page 0', httpStatus: 200 });
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('a lost crawl submit: the active list shows the crawl by URL only (weak): no replay, no second POST, no adoption; the operator hands it over: one crawl', async () => {
    s.fixture.hold('lost-crawl');
    s.fixture.dropAfterCommit('lost-crawl');
    const url = 'https://lost-crawl.example.com/';
    const ref = await s.start({ url, key: 'lost-crawl', options: { limit: 20 } });
    const view = await s.waitForOperator(ref.jobId);
    const crawls = s.fixture.jobs('acme').filter((j) => j.url === url);
    expect(crawls).toHaveLength(1);
    expect(view.note).toContain(crawls[0]!.id);
    // One POST: the key is never probed by a replay (Firecrawl may miss it shortly after the
    // first submit and start a second paid crawl); the active list shows the crawl by URL only.
    const posts = s.fixture.server
      .requestsTo('POST', '/v2/crawl')
      .filter((r) => (r.body as { url: string }).url === url);
    expect(posts).toHaveLength(1);
    await s.client.resolve('acme', ref.jobId, { taskId: crawls[0]!.id, by: 'vitest' });
    await running(s, ref.jobId);
    s.fixture.release(crawls[0]!.id);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect(s.fixture.jobs('acme').filter((j) => j.url === url)).toHaveLength(1);
  });

  it('cancel of a finished crawl answers 409: reported already final (through the adapter against the fixture)', async () => {
    const job = s.fixture.create('acme', 'crawl', 'https://done.example.com/');
    s.fixture.release(job.id);
    const adapter = new FirecrawlAdapter('firecrawl', s.entry as FirecrawlEntry);
    const ctx = { apiKey: FIXTURE_KEYS.acme, secrets: [FIXTURE_KEYS.acme] };
    expect(await adapter.cancel(job.id, ctx)).toEqual({ accepted: false, alreadyFinal: true });
    const other = s.fixture.create('globex', 'crawl', 'https://other-team.example.com/');
    // Another team's job: 404 on status (counted, then expired) and on cancel (the OpenAPI's only
    // documented refusal), 403 on /errors.
    await expect(adapter.status(other.id, ctx)).rejects.toMatchObject({
      kind: 'not_found',
      details: { httpStatus: 404 },
    });
    await expect(adapter.cancel(other.id, ctx)).rejects.toMatchObject({
      kind: 'not_found',
      details: { httpStatus: 404 },
    });
    const errors = await fetch(`${s.fixture.url}/v2/crawl/${other.id}/errors`, {
      headers: { authorization: `Bearer ${FIXTURE_KEYS.acme}` },
    });
    expect([errors.status, await errors.json()]).toEqual([403, { success: false, error: 'Forbidden' }]);
  });
});

describe('firecrawl: crawl entry on the server version whose /v2/crawl/active also lists batch scrapes', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ activeListsBatches: true }, { operation: 'crawl' });
  });
  afterAll(async () => s?.stop());

  it('a crawl submit lost before it reached Firecrawl while another client’s batch scrape of the same URL runs: the listed batch is a look-alike, never adopted, and it leaves absence unproved, so nothing is resubmitted; the job waits in unknown naming it, and the operator’s resubmit starts exactly one crawl', async () => {
    const url = 'https://batch-lookalike.example.com/';
    s.fixture.hold('batch-lookalike');
    const batch = s.fixture.create('acme', 'batch', url, { urls: [url] });
    s.fixture.dropBeforeCommit('batch-lookalike');
    const ref = await s.start({ url, key: 'batch-lookalike', options: { limit: 20 } });
    const view = await s.waitForOperator(ref.jobId);
    expect(view.note).toContain(batch.id);
    expect((await s.store.jobs.get(ref.jobId))!).toMatchObject({ state: 'unknown', task_id: null });
    expect(
      s.fixture
        .jobs('acme')
        .filter((j) => j.url === url)
        .map((j) => j.id),
    ).toEqual([batch.id]);
    expect(s.fixture.server.requestsTo('POST', '/v2/crawl')).toHaveLength(1);
    // The operator, who knows the batch is another client’s, resubmits: one crawl, the batch untouched.
    s.fixture.release(batch.id);
    await s.client.resolve('acme', ref.jobId, { resubmit: true, by: 'vitest' });
    const row = await s.waitFor(ref.jobId, ['pending', 'completed', 'failed']);
    expect(row.task_id).not.toBe(batch.id);
    s.fixture.release(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    const crawls = s.fixture.jobs('acme').filter((j) => j.url === url && j.op === 'crawl');
    expect(crawls.map((j) => j.id)).toEqual([row.task_id]);
    expect(s.fixture.job(batch.id)!.status).toBe('completed');
  });
});

describe('firecrawl: crawl entry with a small result limit', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl(
      { pageSize: 2, crawl: { pages: 5, errors: 1, robotsBlocked: 1 } },
      { operation: 'crawl', results: { maxDocuments: 4 } },
    );
  });
  afterAll(async () => s?.stop());

  it('more documents than results.maxDocuments: tracking_interrupted with RESULT_TOO_LARGE naming the key to raise; nothing written', async () => {
    const ref = await s.start({ url: 'https://big.example.com/', key: 'too-big' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe(
      'tracking_interrupted',
    );
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ code: 'RESULT_TOO_LARGE' });
    expect(String(out.lastError!.message)).toContain('providers.firecrawl.results.maxDocuments');
    expect(out.results).toBe(0);
  });
});

/** First status check 30 s × webhookSlowdown 5 = 150 s after submit: only a webhook can finish the job sooner. */
const SLOW: Partial<PollPolicy> = {
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0,
  deadlineMs: 600_000,
  activityTimeoutMs: 5_000,
  cancelConfirmDeadlineMs: 10_000,
};

describe('firecrawl: signed webhooks (the account has a secret)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ runMs: 1_000 }, { operation: 'crawl' }, true);
    s.fixture.setSecret('acme', s.api!.secret);
  });
  afterAll(async () => s?.stop());

  it('the request carries our receiver, our client reference in metadata and the events asked; the signed crawl.completed wakes the job long before its first poll; the duplicate delivery (same webhookId) has no effect; the secret is in no record', async () => {
    s.fixture.duplicateWebhooks(true);
    const url = 'https://hooks.example.com/';
    const t0 = Date.now();
    const ref = await s.start({ url, key: 'signed', policy: SLOW });
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(50_000);
    const [post] = s.fixture.server.requestsTo('POST', '/v2/crawl');
    expect((post!.body as { webhook: unknown }).webhook).toEqual({
      url: s.api!.webhookUrl,
      metadata: { clientRef: post!.headers['x-idempotency-key'] },
      events: ['completed', 'failed'],
    });
    const taskId = (await s.store.jobs.get(ref.jobId))!.task_id!;
    const sent = s.fixture.deliveries.filter((d) => d.jobId === taskId);
    expect(sent.map((d) => d.type)).toEqual(['crawl.completed', 'crawl.completed']);
    expect(new Set(sent.map((d) => d.webhookId)).size).toBe(1);
    expect(sent.every((d) => d.signed && d.status === 200)).toBe(true);
    const outcomes = (await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome);
    expect(outcomes).toEqual(['woken']);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    expect(s.api!.logs()).not.toContain(s.api!.secret);
    s.fixture.duplicateWebhooks(false);
  });

  it('a bad or missing X-Firecrawl-Signature is 401 and quarantined by hash only; the undocumented crawl.cancelled, signed, is accepted and matched', async () => {
    s.fixture.hold('cancel-event');
    const ref = await s.start({ url: 'https://cancel-event.example.com/', key: 'cancel-event', policy: SLOW });
    const row = await s.waitFor(ref.jobId, ['pending']);
    const event = {
      success: true,
      type: 'crawl.cancelled',
      id: row.task_id,
      webhookId: 'wh-cancelled-1',
      data: [],
      metadata: {},
    };
    const body = JSON.stringify(event);
    for (const signature of [sign(body, 'not-the-secret'), undefined]) {
      const bad = await s.api!.call(null, 'POST', '/v1/webhooks/firecrawl', {
        body,
        headers: { 'content-type': 'application/json', ...(signature ? { 'x-firecrawl-signature': signature } : {}) },
      });
      expect(bad.status).toBe(401);
    }
    expect(
      (await listQuarantine(s.store)).filter((q) => q.event_id === 'wh-cancelled-1').map((q) => [q.reason, q.body]),
    ).toEqual([
      ['invalid_signature', ''],
      ['invalid_signature', ''],
    ]);
    const ok = await s.api!.call(null, 'POST', '/v1/webhooks/firecrawl', {
      body,
      headers: { 'content-type': 'application/json', 'x-firecrawl-signature': sign(body, s.api!.secret) },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ received: true, event_id: 'wh-cancelled-1', outcome: 'woken' });
    const again = await s.api!.call(null, 'POST', '/v1/webhooks/firecrawl', {
      body,
      headers: { 'content-type': 'application/json', 'x-firecrawl-signature': sign(body, s.api!.secret) },
    });
    expect(await again.json()).toMatchObject({ outcome: 'duplicate' });
    s.fixture.release(row.task_id!);
  });
});

describe('firecrawl: unsigned webhooks (the account has no secret)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ runMs: 1_000 }, { operation: 'batch', webhookSignature: false }, true);
  });
  afterAll(async () => s?.stop());

  it('each job’s webhook URL carries its own token; Firecrawl’s unsigned delivery on it wakes the job; the token is in no record', async () => {
    const url = 'https://token.example.com/page';
    const t0 = Date.now();
    const ref = await s.start({ url, key: 'token', policy: SLOW });
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(50_000);
    const [post] = s.fixture.server.requestsTo('POST', '/v2/batch/scrape');
    const token = s.callbackToken(ref.jobId);
    expect((post!.body as { webhook: { url: string } }).webhook.url).toBe(`${s.api!.webhookUrl}/${token}`);
    const taskId = (await s.store.jobs.get(ref.jobId))!.task_id!;
    expect(s.fixture.deliveries.filter((d) => d.jobId === taskId).every((d) => !d.signed)).toBe(true);
    expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId }))[0]).toMatchObject({ outcome: 'woken' });
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    expect(s.api!.logs()).not.toContain(token);
  });
});

/** The self-hosted entries of a server run without Supabase (no key table, no team activity, unsigned webhooks). */
const SELF_HOSTED = { selfHosted: { idempotencyHeader: false } };

describe('firecrawl: crawl entry on a self-hosted server (Firecrawl’s own, without Supabase)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl(
      {
        selfHosted: true,
        crawl: { pages: 12, errors: 0, robotsBlocked: 0 },
        // About 400 bytes a document: a page of results holds 4 of the 12.
        pageBytes: 2_000,
        inFlightAtCancel: { pages: 2, afterMs: 1_500 },
      },
      { operation: 'crawl', ...SELF_HOSTED },
    );
  });
  afterAll(async () => s?.stop());

  it('a crawl submit carries no x-idempotency-key (the server answers one 500); a result past the page size repeats Firecrawl’s first documents: the read stops at the repeat and the job completes partial, saying so with both counts and why, in the row, the summary, the timeline and the outbox', async () => {
    const url = 'https://self.example.com/';
    const ref = await s.start({ url, key: 'self-partial', options: { limit: 50 } });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted', 'unknown']);
    expect(row.state).toBe('completed');
    const [post] = s.fixture.server.requestsTo('POST', '/v2/crawl');
    expect(post!.headers['x-idempotency-key']).toBeUndefined();
    // Two pages read: the first, then one that repeats it (skip ignored), and no third.
    const reads = s.fixture.server
      .requestsTo('GET', `/v2/crawl/${row.task_id}`)
      .filter((r) => r.path === `/v2/crawl/${row.task_id}`);
    expect(reads.map((r) => r.query.skip ?? '0').slice(-2)).toEqual(['0', '4']);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'completed', results: 1, documents: { total: 4 } });
    const note =
      "partial: kept 4 of the 12 documents Firecrawl's `completed` counts (its `next` pages served only documents already read — past 10 MiB of results Firecrawl ignores `skip` and serves the first documents again — so no further page was followed)";
    const result = await s.client.getResult('acme', ref.jobId);
    expect(result).toMatchObject({ contentNote: note, partial: true, expectedDocuments: 12 });
    expect(await s.client.getScrape('acme', ref.jobId)).toMatchObject({
      state: 'completed',
      contentNote: note,
      partial: true,
      expectedDocuments: 12,
    });
    // A list shows it too, without reading each result.
    expect((await s.client.list('acme', {})).find((j) => j.jobId === ref.jobId)).toMatchObject({
      contentNote: note,
      partial: true,
      expectedDocuments: 12,
    });
    const events = await s.store.findings.timeline(ref.jobId);
    expect(events.filter((e) => e.type === 'result_partial').map((e) => JSON.parse(e.detail!))).toEqual([
      expect.objectContaining({ kept: 4, expected: 12, counter: "Firecrawl's `completed`", documents: 4, note }),
    ]);
    expect(s.fixture.server.requestsTo('GET', '/v2/team/activity')).toHaveLength(0);
  });

  it('a lost crawl submit: only the active list is read (never /v2/team/activity, which the server lacks); the crawl already finished, so its absence cannot be proven: the job waits in unknown, never resubmitted', async () => {
    const url = 'https://self-lost.example.com/';
    s.fixture.dropAfterCommit('self-lost');
    const ref = await s.start({ url, key: 'self-lost' });
    const view = await s.waitForOperator(ref.jobId);
    expect(view.state).toBe('unknown');
    expect(s.fixture.server.requestsTo('GET', '/v2/crawl/active').length).toBeGreaterThan(0);
    expect(s.fixture.server.requestsTo('GET', '/v2/team/activity')).toHaveLength(0);
    const posts = s.fixture.server
      .requestsTo('POST', '/v2/crawl')
      .filter((r) => (r.body as { url: string }).url === url);
    expect(posts).toHaveLength(1);
    expect(s.fixture.jobs('acme').filter((j) => j.url === url)).toHaveLength(1);
  });

  it('a cancel while the crawl runs: the pages in flight at the DELETE finish afterwards, and the cancel’s remaining effects count them once Firecrawl’s count settles', async () => {
    s.fixture.hold('self-cancel');
    const ref = await s.start({ url: 'https://self-cancel.example.com/', key: 'self-cancel' });
    const row = await running(s, ref.jobId);
    s.fixture.progress(row.task_id!, 3);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    // 3 done at the DELETE, 2 in flight that finish 1.5 s later: Firecrawl settles on 5.
    expect(s.fixture.job(row.task_id!)).toMatchObject({ status: 'cancelled', done: 5, inFlight: 0 });
    expect(res.kind === 'observed' ? res.report.remainingEffects : undefined).toMatchObject({ documents: 5 });
  });
});

describe('firecrawl: crawl entry whose documents come in completion order', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ selfHosted: true, completionOrder: true }, { operation: 'crawl', ...SELF_HOSTED });
  });
  afterAll(async () => s?.stop());

  it('the result row describes the crawl’s start page, though Firecrawl serves it last (completion order)', async () => {
    const url = 'https://start-page.example.com/';
    const ref = await s.start({ url, key: 'self-start', options: { limit: 50 } });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const docs = await s.client.getResultDocuments('acme', ref.jobId, { offset: 0, limit: 100 });
    expect(docs.documents[0]!.url).not.toBe(url);
    const result = await s.client.getResult('acme', ref.jobId);
    expect(result).toMatchObject({ url, finalUrl: url, title: 'Page 0', httpStatus: 200 });
  });
});

describe('firecrawl: batch entry on a self-hosted server', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ selfHosted: true, errorsLagMs: 1_200 }, { operation: 'batch', ...SELF_HOSTED });
  });
  afterAll(async () => s?.stop());

  it('a one-URL batch whose URL fails reads completed with 0 of 0; its reason is only on /v2/crawl/{id}/errors (the batch route answers 404 there), a moment after the count: the job fails with Firecrawl’s code and its URL in the message', async () => {
    const url = 'https://self-unscrapable.example.com/page';
    s.fixture.failUrl('self-unscrapable', 'SCRAPE_ALL_ENGINES_FAILED', 'All scraping engines failed');
    const ref = await s.start({ url, key: 'self-unscrapable' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({
      code: 'SCRAPE_ALL_ENGINES_FAILED',
      message: `Firecrawl could not scrape ${url}: All scraping engines failed`,
    });
    const taskId = out.taskId!;
    expect(s.fixture.server.requestsTo('GET', `/v2/batch/scrape/${taskId}/errors`).length).toBeGreaterThan(0);
    expect(s.fixture.server.requestsTo('GET', `/v2/crawl/${taskId}/errors`).length).toBeGreaterThan(0);
  });
});

describe('firecrawl: a counted document served a moment later', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ selfHosted: true, storedLagMs: 2_500 }, { operation: 'batch', ...SELF_HOSTED });
  });
  afterAll(async () => s?.stop());

  it('a one-URL batch read completed 1 of 1 before its document is served: read again until it is, and completed with that page (never failed for want of a reason)', async () => {
    const url = 'https://stored-late.example.com/page';
    const ref = await s.start({ url, key: 'stored-late' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    expect(await s.client.getResult('acme', ref.jobId)).toMatchObject({
      url,
      title: 'Page 0',
      partial: false,
      expectedDocuments: null,
    });
    // At least one read found the page counted but not served, and the pages were read again.
    const reads = s.fixture.server.requestsTo('GET', `/v2/batch/scrape/${row.task_id}`);
    expect(reads.length).toBeGreaterThan(2);
  });
});

describe('firecrawl: self-hosted webhooks (unsigned, no webhookId)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ selfHosted: true, runMs: 1_000 }, { operation: 'crawl', ...SELF_HOSTED }, true);
  });
  afterAll(async () => s?.stop());

  it('a selfHosted entry asks for deliveries on each job’s token URL without being told webhookSignature: false; the unsigned crawl.completed wakes the job; the API shows the job complete, not partial, with Firecrawl’s count', async () => {
    const ref = await s.start({ url: 'https://self-hook.example.com/', key: 'self-hook', policy: SLOW });
    const t0 = Date.now();
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(50_000);
    const [post] = s.fixture.server.requestsTo('POST', '/v2/crawl');
    expect((post!.body as { webhook: { url: string } }).webhook.url).toBe(
      `${s.api!.webhookUrl}/${s.callbackToken(ref.jobId)}`,
    );
    const taskId = (await s.store.jobs.get(ref.jobId))!.task_id!;
    expect(s.fixture.deliveries.filter((d) => d.jobId === taskId).every((d) => !d.signed)).toBe(true);
    expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId }))[0]).toMatchObject({ outcome: 'woken' });
    expect(await listQuarantine(s.store)).toEqual([]);
    const scrape = await s.api!.call('acme', 'GET', `/v1/scrapes/${encodeURIComponent(ref.jobId)}`);
    expect(await scrape.json()).toMatchObject({
      state: 'completed',
      partial: false,
      expected_documents: 5,
      content_note: null,
    });
    const result = await s.api!.call('acme', 'GET', `/v1/scrapes/${encodeURIComponent(ref.jobId)}/result`);
    expect(await result.json()).toMatchObject({ partial: false, expected_documents: 5, content_note: null });
  });
});
