/**
 * Integration tests of the reference provider (`tools/sim`): a real sim on loopback, a real page
 * server serving the repository's pages (test/fixtures/pages), real HTTP requests with `fetch`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ErrorBodySchema,
  JobStatusResponseSchema,
  SubmitResponseSchema,
  startSim,
  type Sim,
  type SimOptions,
  type SimRequestEvent,
} from '../../tools/sim/index.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';

const ACME = 'acme-key-1';
const ACME2 = 'acme-key-2';
const BETA = 'beta-key';

let pages: PageServer;
const sims: Sim[] = [];

beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => {
  await pages.close();
});
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

function expectedTitle(name: string): string | null {
  const file = path.join(pages.pagesDir, name, 'expected-metadata.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { title: string | null }).title;
}

async function sim(
  overrides: Partial<SimOptions> & { acme?: Record<string, unknown>; beta?: Record<string, unknown> } = {},
): Promise<Sim> {
  const { acme, beta, ...rest } = overrides;
  const s = await startSim({
    adminToken: 'admin-secret',
    ...rest,
    accounts: rest.accounts ?? [
      { name: 'acme', apiKeys: [ACME, ACME2], profile: acme ?? {} },
      { name: 'beta', apiKeys: [BETA], profile: beta ?? {} },
    ],
  });
  sims.push(s);
  return s;
}

interface ApiResult {
  status: number;
  headers: Headers;
  body: any;
}

async function call(
  s: Sim,
  method: string,
  urlPath: string,
  opts: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResult> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? ACME : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${s.url}${urlPath}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const submit = (s: Sim, body: unknown, opts: { key?: string | null; headers?: Record<string, string> } = {}) =>
  call(s, 'POST', '/api/scrape', { ...opts, body });
const status = (s: Sim, id: string, key: string | null = ACME) => call(s, 'GET', `/api/jobs/${id}`, { key });
const cancel = (s: Sim, id: string, key: string | null = ACME) => call(s, 'DELETE', `/api/jobs/${id}/cancel`, { key });
const admin = (s: Sim, method: string, urlPath: string, body?: unknown, token = 'admin-secret') =>
  call(s, method, urlPath, { key: null, body, headers: { 'x-sim-admin': token } });

async function pollUntilFinal(s: Sim, id: string, key = ACME, timeoutMs = 15_000): Promise<ApiResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await status(s, id, key);
    if (r.status === 200 && ['completed', 'failed', 'cancelled'].includes(r.body.status)) return r;
    if (Date.now() > deadline) throw new Error(`job ${id} not final: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

function expectError(r: ApiResult, httpStatus: number, code: string): void {
  expect(r.status).toBe(httpStatus);
  expect(ErrorBodySchema.parse(r.body).error.code).toBe(code);
}

// -------------------------------------------------------------------------------------------

describe('scrape lifecycle and extraction', () => {
  it('accepts a job with 202, runs it, and extracts the page exactly like Readability', async () => {
    const s = await sim();
    const url = pages.pageUrl('wikipedia');
    const hitsBefore = pages.hits.get(new URL(url).pathname) ?? 0;
    const r = await submit(s, { url, client_ref: 'row-1' });
    expect(r.status).toBe(202);
    const accepted = SubmitResponseSchema.parse(r.body);
    expect(accepted.job_id).toMatch(/^job_[0-9a-f-]{36}$/);
    expect(new Date(accepted.created_at).toISOString()).toBe(accepted.created_at);

    const done = await pollUntilFinal(s, accepted.job_id);
    const job = JobStatusResponseSchema.parse(done.body);
    expect(job.status).toBe('completed');
    expect(job.client_ref).toBe('row-1');
    expect(job.format).toBe('markdown');
    expect(job.progress.pages_fetched).toBe(1);
    expect(job.credits_used).toBe(1);
    expect(job.started_at).not.toBeNull();
    expect(Date.parse(job.finished_at!)).toBeGreaterThanOrEqual(Date.parse(job.started_at!));
    expect(job.error).toBeUndefined();
    const result = job.result!;
    expect(result.title).toBe(expectedTitle('wikipedia'));
    expect(result.url).toBe(url);
    expect(result.final_url).toBe(url);
    expect(result.http_status).toBe(200);
    expect(result.lang).toBe('en');
    expect(result.text.length).toBeGreaterThan(1000);
    expect(result.text).not.toMatch(/\s{2,}/);
    expect(result.markdown).toMatch(/^#{1,6} |\n#{1,6} /m);
    expect(result.content_length).toBe(readFileSync(path.join(pages.pagesDir, 'wikipedia', 'source.html')).length);
    expect(result.links.length).toBeGreaterThan(10);
    for (const link of result.links) expect(link).toMatch(/^https?:\/\//);
    expect(new Set(result.links).size).toBe(result.links.length);

    const logs = await call(s, 'GET', `/api/jobs/${accepted.job_id}/logs`);
    expect(logs.status).toBe(200);
    expect(logs.body.job_id).toBe(accepted.job_id);
    const messages = (logs.body.logs as Array<{ message: string; level: string; at: string }>).map((l) => l.message);
    expect(messages.some((m) => /created/.test(m))).toBe(true);
    expect(messages.some((m) => /started/.test(m))).toBe(true);
    expect(messages.some((m) => /completed/.test(m))).toBe(true);
    expect(pages.hits.get(new URL(url).pathname)).toBe(hitsBefore + 1);
  });

  it.each([
    ['yahoo-4', 'shift_jis'],
    ['qq', 'gbk'],
    ['liberation-1', 'windows-1252'],
  ])(
    'decodes %s served in %s without a charset header (meta sniffing)',
    async (name, encoding) => {
      const s = await sim();
      const r = await submit(s, { url: pages.encodedPageUrl(name, encoding) });
      const done = await s.waitForJob(r.body.job_id);
      expect(done.status).toBe('completed');
      expect(done.result?.title).toBe(expectedTitle(name));
    },
    20_000,
  );

  it('serves the UTF-8 corpus page 001 with its exact title', async () => {
    const s = await sim();
    const r = await submit(s, { url: pages.pageUrl('001'), format: 'text' });
    const job = await s.waitForJob(r.body.job_id);
    expect(job.result?.title).toBe(expectedTitle('001'));
    expect(job.format).toBe('text');
  });

  it('follows redirects and reports the final URL', async () => {
    const s = await sim();
    const target = pages.pageUrl('001');
    const r = await submit(s, { url: `${pages.url}/redirect?to=${encodeURIComponent('/pages/001/')}` });
    const job = await s.waitForJob(r.body.job_id);
    expect(job.status).toBe('completed');
    expect(job.result?.final_url).toBe(target);
    expect(job.result?.url).toContain('/redirect');
  });

  it('completes with the HTTP status when the target answers 4xx/5xx', async () => {
    const s = await sim({ acme: { concurrency: 2 } });
    const a = await submit(s, { url: `${pages.url}/status/404` });
    const b = await submit(s, { url: `${pages.url}/status/503` });
    const ja = await s.waitForJob(a.body.job_id);
    const jb = await s.waitForJob(b.body.job_id);
    expect([ja.status, ja.result?.http_status]).toEqual(['completed', 404]);
    expect([jb.status, jb.result?.http_status]).toEqual(['completed', 503]);
    const logs = await call(s, 'GET', `/api/jobs/${a.body.job_id}/logs`);
    expect(logs.body.logs.some((l: { level: string }) => l.level === 'warn')).toBe(true);
  });

  it('fails with FETCH_FAILED on a network error (after two retries) and on a timeout (no retry)', async () => {
    const s = await sim({ acme: { concurrency: 2 } });
    const resetsBefore = pages.hits.get('/reset') ?? 0;
    const reset = await submit(s, { url: `${pages.url}/reset` });
    const hang = await submit(s, { url: `${pages.url}/hang`, timeout_ms: 1000 });
    const jr = await pollUntilFinal(s, reset.body.job_id);
    expect(jr.body.status).toBe('failed');
    expect(jr.body.error.code).toBe('FETCH_FAILED');
    expect(jr.body.result).toBeUndefined();
    expect((pages.hits.get('/reset') ?? 0) - resetsBefore).toBe(3);
    const t0 = Date.now();
    const jh = await pollUntilFinal(s, hang.body.job_id);
    expect(jh.body.error).toEqual({ code: 'FETCH_FAILED', message: expect.stringMatching(/timed out after 1000 ms/) });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(jh.body.credits_used).toBe(1);
  });

  it('keeps a job running at least minRunMs and queued for queueDelayMs', async () => {
    const s = await sim({ acme: { queueDelayMs: 150, minRunMs: 300 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    expect((await status(s, r.body.job_id)).body.status).toBe('queued');
    await s.waitForJob(r.body.job_id, { status: 'running' });
    expect((await status(s, r.body.job_id)).body.status).toBe('running');
    const done = await s.waitForJob(r.body.job_id);
    const ran = Date.parse(done.finished_at!) - Date.parse(done.started_at!);
    const queued = Date.parse(done.started_at!) - Date.parse(done.created_at);
    expect(ran).toBeGreaterThanOrEqual(295);
    expect(queued).toBeGreaterThanOrEqual(145);
  });
});

describe('authentication and authorisation', () => {
  it('answers 401 UNAUTHORIZED without a key or with an unknown key, on every endpoint', async () => {
    const s = await sim();
    for (const key of [null, 'nope']) {
      expectError(await submit(s, { url: pages.pageUrl('001') }, { key }), 401, 'UNAUTHORIZED');
      expectError(await status(s, 'job_x', key), 401, 'UNAUTHORIZED');
      expectError(await call(s, 'GET', '/api/jobs/job_x/logs', { key }), 401, 'UNAUTHORIZED');
      expectError(await cancel(s, 'job_x', key), 401, 'UNAUTHORIZED');
      expectError(await call(s, 'GET', '/api/jobs', { key }), 401, 'UNAUTHORIZED');
    }
    expectError(
      await call(s, 'GET', '/api/jobs', { key: null, headers: { authorization: `Basic ${ACME}` } }),
      401,
      'UNAUTHORIZED',
    );
    expect(s.stats().jobsCreated.total).toBe(0);
  });

  it("makes another account's job indistinguishable from a missing one", async () => {
    const s = await sim({ acme: { queueDelayMs: 60_000 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    const id = r.body.job_id as string;
    // Both keys of the owner work.
    expect((await status(s, id, ACME)).status).toBe(200);
    expect((await status(s, id, ACME2)).status).toBe(200);
    const foreign = await status(s, id, BETA);
    const missing = await status(s, 'job_00000000-0000-0000-0000-000000000000', BETA);
    expectError(foreign, 404, 'NOT_FOUND');
    expect(foreign.body).toEqual(missing.body);
    expectError(await call(s, 'GET', `/api/jobs/${id}/logs`, { key: BETA }), 404, 'NOT_FOUND');
    expectError(await cancel(s, id, BETA), 404, 'NOT_FOUND');
    expect((await status(s, id)).body.status).toBe('queued');
    const list = await call(s, 'GET', '/api/jobs', { key: BETA });
    expect(list.body.jobs).toEqual([]);
  });
});

describe('submit validation', () => {
  it('rejects invalid bodies with 400 VALIDATION_ERROR and issues', async () => {
    const s = await sim();
    const bad: unknown[] = [
      {},
      { url: 'not a url' },
      { url: 'ftp://example.com/x' },
      { url: '/relative' },
      { url: pages.pageUrl('001'), extra: 1 },
      { url: pages.pageUrl('001'), format: 'html' },
      { url: pages.pageUrl('001'), timeout_ms: 999 },
      { url: pages.pageUrl('001'), timeout_ms: 120_001 },
      { url: pages.pageUrl('001'), timeout_ms: 1500.5 },
      { url: pages.pageUrl('001'), client_ref: 'x'.repeat(201) },
    ];
    for (const body of bad) {
      const r = await submit(s, body);
      expectError(r, 400, 'VALIDATION_ERROR');
      expect(Array.isArray(r.body.error.issues)).toBe(true);
      expect(r.body.error.issues.length).toBeGreaterThan(0);
    }
    const notJson = await call(s, 'POST', '/api/scrape', {
      rawBody: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expectError(notJson, 400, 'VALIDATION_ERROR');
    const empty = await call(s, 'POST', '/api/scrape', {
      rawBody: '',
      headers: { 'content-type': 'application/json' },
    });
    expectError(empty, 400, 'VALIDATION_ERROR');
    const badKey = await submit(s, { url: pages.pageUrl('001') }, { headers: { 'idempotency-key': 'k'.repeat(256) } });
    expectError(badKey, 400, 'VALIDATION_ERROR');
    expect(s.stats().jobsCreated.total).toBe(0);
  });

  it('refuses a blocked target host with 403 TARGET_DISALLOWED (subdomains included)', async () => {
    const s = await sim({ acme: { blockedHosts: ['blocked.example'] } });
    expectError(await submit(s, { url: 'http://blocked.example/a' }), 403, 'TARGET_DISALLOWED');
    expectError(await submit(s, { url: 'https://WWW.Blocked.Example/b' }), 403, 'TARGET_DISALLOWED');
    // Other accounts are not affected by acme's blocklist.
    const other = await submit(s, { url: 'http://blocked.example/a' }, { key: BETA });
    expect(other.status).toBe(202);
    expect(s.stats().jobsCreated.byAccount).toEqual({ acme: 0, beta: 1 });
  });
});

describe('idempotency', () => {
  it('replays the same job for the same key and body, without a concurrency check', async () => {
    const s = await sim({ acme: { queueDelayMs: 60_000 } });
    const body = { url: pages.pageUrl('001'), client_ref: 'r1' };
    const first = await submit(s, body, { headers: { 'idempotency-key': 'key-1' } });
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same canonical body (defaults spelled out, keys reordered) → replay, although 1 job is active.
    const again = await submit(
      s,
      { timeout_ms: 30_000, client_ref: 'r1', format: 'markdown', url: body.url },
      { headers: { 'idempotency-key': 'key-1' } },
    );
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    // Another key of the same account shares the scope.
    const viaOtherKey = await submit(s, body, { key: ACME2, headers: { 'idempotency-key': 'key-1' } });
    expect(viaOtherKey.body.job_id).toBe(first.body.job_id);
    expect(s.stats().jobsCreated.total).toBe(1);
    expect(s.stats().jobs[0]?.idempotency_key).toBe('key-1');
  });

  it('answers 409 IDEMPOTENCY_CONFLICT for the same key with a different body', async () => {
    const s = await sim({ acme: { concurrency: 5 } });
    await submit(s, { url: pages.pageUrl('001') }, { headers: { 'idempotency-key': 'k' } });
    const conflict = await submit(s, { url: pages.pageUrl('002') }, { headers: { 'idempotency-key': 'k' } });
    expectError(conflict, 409, 'IDEMPOTENCY_CONFLICT');
    const conflict2 = await submit(
      s,
      { url: pages.pageUrl('001'), format: 'text' },
      { headers: { 'idempotency-key': 'k' } },
    );
    expectError(conflict2, 409, 'IDEMPOTENCY_CONFLICT');
    expect(s.stats().jobsCreated.total).toBe(1);
  });

  it('scopes keys to the account', async () => {
    const s = await sim();
    const body = { url: pages.pageUrl('001') };
    const a = await submit(s, body, { headers: { 'idempotency-key': 'shared' } });
    const b = await submit(s, body, { key: BETA, headers: { 'idempotency-key': 'shared' } });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.job_id).not.toBe(a.body.job_id);
    expect(s.stats().jobsCreated.byAccount).toEqual({ acme: 1, beta: 1 });
  });

  it('forgets keys after idempotencyTtlMs', async () => {
    const s = await sim({ acme: { idempotencyTtlMs: 200, concurrency: 5 } });
    const body = { url: pages.pageUrl('001') };
    const a = await submit(s, body, { headers: { 'idempotency-key': 'ttl' } });
    await new Promise((r) => setTimeout(r, 250));
    const b = await submit(s, body, { headers: { 'idempotency-key': 'ttl' } });
    expect(b.status).toBe(202);
    expect(b.body.job_id).not.toBe(a.body.job_id);
  });

  it('ignores the header when the profile has idempotency off', async () => {
    const s = await sim({ acme: { idempotency: false, concurrency: 3 } });
    const body = { url: pages.pageUrl('001') };
    const a = await submit(s, body, { headers: { 'idempotency-key': 'same' } });
    const b = await submit(s, body, { headers: { 'idempotency-key': 'same' } });
    const c = await submit(s, { url: pages.pageUrl('002') }, { headers: { 'idempotency-key': 'same' } });
    expect([a.status, b.status, c.status]).toEqual([202, 202, 202]);
    expect(new Set([a.body.job_id, b.body.job_id, c.body.job_id]).size).toBe(3);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(s.stats().jobsCreated.total).toBe(3);
  });
});

describe('concurrency limit', () => {
  const parked = { queueDelayMs: 60_000 };

  it('answers 429 CONCURRENCY_LIMIT with a Retry-After header by default', async () => {
    const s = await sim({ acme: { ...parked, retryAfterSeconds: 3 } });
    expect((await submit(s, { url: pages.pageUrl('001') })).status).toBe(202);
    const r = await submit(s, { url: pages.pageUrl('002') });
    expectError(r, 429, 'CONCURRENCY_LIMIT');
    expect(r.headers.get('retry-after')).toBe('3');
    expect(r.body.error.message).toBeTypeOf('string');
    // Another account has its own limit.
    expect((await submit(s, { url: pages.pageUrl('001') }, { key: BETA })).status).toBe(202);
    expect(s.stats().jobsCreated.total).toBe(2);
  });

  it('writes the wait only in the message with retryAfterStyle "message"', async () => {
    const s = await sim({ acme: { ...parked, retryAfterStyle: 'message', retryAfterSeconds: 7 } });
    await submit(s, { url: pages.pageUrl('001') });
    const r = await submit(s, { url: pages.pageUrl('002') });
    expectError(r, 429, 'CONCURRENCY_LIMIT');
    expect(r.headers.get('retry-after')).toBeNull();
    expect(r.body.error.message).toBe('Rate limit exceeded. Please retry after 7 seconds.');
  });

  it('gives no wait at all with retryAfterStyle "none"', async () => {
    const s = await sim({ acme: { ...parked, retryAfterStyle: 'none' } });
    await submit(s, { url: pages.pageUrl('001') });
    const r = await submit(s, { url: pages.pageUrl('002') });
    expectError(r, 429, 'CONCURRENCY_LIMIT');
    expect(r.headers.get('retry-after')).toBeNull();
    expect(r.body.error.message).not.toMatch(/\d+ seconds/);
  });

  it('answers like Apify (400 concurrent-runs-limit-exceeded) with concurrencyErrorStyle "400"', async () => {
    const s = await sim({ acme: { ...parked, concurrencyErrorStyle: '400' } });
    await submit(s, { url: pages.pageUrl('001') });
    const r = await submit(s, { url: pages.pageUrl('002') });
    expectError(r, 400, 'concurrent-runs-limit-exceeded');
    expect(r.headers.get('retry-after')).toBe('2');
  });

  it('frees the slot when the active job ends', async () => {
    const s = await sim({ acme: { concurrency: 2, ...parked } });
    const a = await submit(s, { url: pages.pageUrl('001') });
    await submit(s, { url: pages.pageUrl('002') });
    expect((await submit(s, { url: pages.pageUrl('003-metadata-preferred') })).status).toBe(429);
    await cancel(s, a.body.job_id);
    expect((await submit(s, { url: pages.pageUrl('003-metadata-preferred') })).status).toBe(202);
  });
});

describe('cancel', () => {
  it('cancels a queued job, then answers 409 JOB_FINISHED', async () => {
    const s = await sim({ acme: { queueDelayMs: 60_000 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    const c = await cancel(s, r.body.job_id);
    expect(c.status).toBe(200);
    expect(c.body).toEqual({
      job_id: r.body.job_id,
      status: 'cancelled',
      progress: { pages_fetched: 0 },
      credits_used: 0,
    }); // the effects so far
    const st = await status(s, r.body.job_id);
    expect(st.body.status).toBe('cancelled');
    expect(st.body.credits_used).toBe(0);
    expect(st.body.finished_at).not.toBeNull();
    const again = await cancel(s, r.body.job_id);
    expectError(again, 409, 'JOB_FINISHED');
    expect(again.body.error.status).toBe('cancelled');
    expect(s.stats().cancelCalls).toBe(2);
    expect(s.getJob(r.body.job_id)?.cancel_request_times).toHaveLength(2);
  });

  it('cancels a running job and stops it', async () => {
    const s = await sim();
    const r = await submit(s, { url: `${pages.url}/hang`, timeout_ms: 60_000 });
    await s.waitForJob(r.body.job_id, { status: 'running' });
    expect((await cancel(s, r.body.job_id)).status).toBe(200);
    const st = await status(s, r.body.job_id);
    expect(st.body.status).toBe('cancelled');
    expect(st.body.credits_used).toBe(1);
    await new Promise((res) => setTimeout(res, 100));
    expect((await status(s, r.body.job_id)).body.status).toBe('cancelled');
  });

  it('answers 409 for a completed job and 404 NOT_FOUND for a missing one', async () => {
    const s = await sim();
    const r = await submit(s, { url: pages.pageUrl('001') });
    await s.waitForJob(r.body.job_id);
    const c = await cancel(s, r.body.job_id);
    expectError(c, 409, 'JOB_FINISHED');
    expect(c.body.error.status).toBe('completed');
    expectError(await cancel(s, 'job_missing'), 404, 'NOT_FOUND');
  });

  it('has no cancel endpoint when the profile has cancel: false', async () => {
    const s = await sim({ acme: { cancel: false, queueDelayMs: 60_000 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    expectError(await cancel(s, r.body.job_id), 404, 'NOT_SUPPORTED');
    expect((await status(s, r.body.job_id)).body.status).toBe('queued');
  });
});

describe('list', () => {
  it('lists own jobs newest first, filtered by client_ref and status, without results', async () => {
    const s = await sim({ acme: { concurrency: 10 } });
    const ids: string[] = [];
    for (const ref of ['a', 'b', 'a']) {
      const r = await submit(s, { url: pages.pageUrl('001'), client_ref: ref });
      ids.push(r.body.job_id);
      await s.waitForJob(r.body.job_id);
    }
    await submit(s, { url: pages.pageUrl('001'), client_ref: 'a' }, { key: BETA });
    const all = await call(s, 'GET', '/api/jobs');
    expect(all.status).toBe(200);
    expect(all.body.jobs.map((j: { job_id: string }) => j.job_id)).toEqual([...ids].reverse());
    for (const j of all.body.jobs) {
      expect(j.result).toBeUndefined();
      JobStatusResponseSchema.parse(j);
    }
    const onlyA = await call(s, 'GET', '/api/jobs?client_ref=a');
    expect(onlyA.body.jobs.map((j: { job_id: string }) => j.job_id)).toEqual([ids[2], ids[0]]);
    const limited = await call(s, 'GET', '/api/jobs?limit=1');
    expect(limited.body.jobs).toHaveLength(1);
    expect(limited.body.jobs[0].job_id).toBe(ids[2]);
    const completed = await call(s, 'GET', '/api/jobs?status=completed');
    expect(completed.body.jobs).toHaveLength(3);
    const queued = await call(s, 'GET', '/api/jobs?status=queued');
    expect(queued.body.jobs).toHaveLength(0);
    expectError(await call(s, 'GET', '/api/jobs?limit=101'), 400, 'VALIDATION_ERROR');
    expectError(await call(s, 'GET', '/api/jobs?status=done'), 400, 'VALIDATION_ERROR');
  });

  it('answers 404 NOT_SUPPORTED when the profile has list: false', async () => {
    const s = await sim({ acme: { list: false } });
    expectError(await call(s, 'GET', '/api/jobs'), 404, 'NOT_SUPPORTED');
    expect((await call(s, 'GET', '/api/jobs', { key: BETA })).status).toBe(200);
  });
});

describe('retention', () => {
  it('deletes final jobs resultTtlMs after finished_at (404 as if they never existed)', async () => {
    const s = await sim({ acme: { resultTtlMs: 300 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    const done = await s.waitForJob(r.body.job_id);
    expect((await status(s, r.body.job_id)).status).toBe(200);
    const wait = Date.parse(done.finished_at!) + 350 - Date.now();
    await new Promise((res) => setTimeout(res, Math.max(0, wait)));
    const gone = await status(s, r.body.job_id);
    const never = await status(s, 'job_never');
    expectError(gone, 404, 'NOT_FOUND');
    expect(gone.body).toEqual(never.body);
    expectError(await call(s, 'GET', `/api/jobs/${r.body.job_id}/logs`), 404, 'NOT_FOUND');
    expect((await call(s, 'GET', '/api/jobs')).body.jobs).toEqual([]);
    // The sim still remembers that the job ran.
    const rec = s.getJob(r.body.job_id);
    expect(rec?.status).toBe('completed');
    expect(rec?.deleted_at).not.toBeNull();
    expect(rec?.result).toBeUndefined();
    expect(s.stats().jobsCreated.total).toBe(1);
  });

  it('keeps active jobs regardless of the TTL', async () => {
    const s = await sim({ acme: { resultTtlMs: 0, queueDelayMs: 60_000 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    await new Promise((res) => setTimeout(res, 50));
    expect((await status(s, r.body.job_id)).body.status).toBe('queued');
  });
});

describe('faults', () => {
  it('drop_after_commit: the job exists but the 202 is lost; a retry with the key recovers it', async () => {
    const s = await sim();
    s.faults.add({ endpoint: 'submit', action: 'drop_after_commit', times: 1 });
    const body = { url: pages.pageUrl('001') };
    await expect(submit(s, body, { headers: { 'idempotency-key': 'lost' } })).rejects.toThrow();
    expect(s.stats().jobsCreated.total).toBe(1);
    const retry = await submit(s, body, { headers: { 'idempotency-key': 'lost' } });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.job_id).toBe(s.stats().jobs[0]?.job_id);
    const st = s.stats();
    expect(st.jobsCreated.total).toBe(1);
    expect(st.requests.byEndpoint.submit).toBe(2);
    expect(st.requests.byStatus).toMatchObject({ dropped: 1, '202': 1 });
  });

  it('drop_before_commit: nothing is created', async () => {
    const s = await sim();
    s.faults.add({ account: 'acme', endpoint: 'submit', action: 'drop_before_commit', times: 1 });
    await expect(submit(s, { url: pages.pageUrl('001') }, { headers: { 'idempotency-key': 'x' } })).rejects.toThrow();
    expect(s.stats().jobsCreated.total).toBe(0);
    const retry = await submit(s, { url: pages.pageUrl('001') }, { headers: { 'idempotency-key': 'x' } });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(s.stats().requests.total).toBe(2);
  });

  it('delay: holds one request without blocking others', async () => {
    const s = await sim({ acme: { queueDelayMs: 60_000 } });
    const r = await submit(s, { url: pages.pageUrl('001') });
    s.faults.add({ endpoint: 'status', action: 'delay', delayMs: 600, times: 1 });
    // The second request is sent once the first has reached the server (and taken the fault).
    const firstArrived = new Promise<void>((res) =>
      s.events.on('request', (e) => {
        if (e.endpoint === 'status') res();
      }),
    );
    const t0 = Date.now();
    let slowDone = false;
    const slow = status(s, r.body.job_id).finally(() => (slowDone = true));
    await firstArrived;
    const fast = await status(s, r.body.job_id);
    expect(fast.status).toBe(200);
    expect(slowDone).toBe(false); // the delayed request did not hold up the other one
    const slowRes = await slow;
    expect(slowRes.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(595);
    expect(s.getJob(r.body.job_id)?.status_request_times).toHaveLength(2);
  });

  it('delay on submit: the job is created after the delay even if the client gave up', async () => {
    const s = await sim();
    s.faults.add({ endpoint: 'submit', action: 'delay', delayMs: 400, times: 1 });
    const ctl = new AbortController();
    const pending = fetch(`${s.url}/api/scrape`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACME}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: pages.pageUrl('001') }),
      signal: ctl.signal,
    });
    setTimeout(() => ctl.abort(), 100);
    await expect(pending).rejects.toThrow();
    expect(s.stats().jobsCreated.total).toBe(0);
    await new Promise((res) => setTimeout(res, 450));
    expect(s.stats().jobsCreated.total).toBe(1);
  });

  it('error_5xx: 503 UPSTREAM_UNAVAILABLE, no job; with commit: the job exists anyway', async () => {
    const s = await sim({ acme: { concurrency: 5 } });
    s.faults.add({ endpoint: 'submit', action: 'error_5xx', times: 1 });
    expectError(await submit(s, { url: pages.pageUrl('001') }), 503, 'UPSTREAM_UNAVAILABLE');
    expect(s.stats().jobsCreated.total).toBe(0);
    s.faults.add({ endpoint: 'submit', action: 'error_5xx', status: 502, code: 'BAD_GATEWAY', commit: true, times: 1 });
    expectError(await submit(s, { url: pages.pageUrl('001') }), 502, 'BAD_GATEWAY');
    expect(s.stats().jobsCreated.total).toBe(1);
    expect((await submit(s, { url: pages.pageUrl('001') })).status).toBe(202);
  });

  it('rate_limit: a burst of 429 RATE_LIMITED with Retry-After, then normal service', async () => {
    const s = await sim();
    s.faults.add({ endpoint: 'status', action: 'rate_limit', times: 2, retryAfterSeconds: 5 });
    const r = await submit(s, { url: pages.pageUrl('001') });
    const a = await status(s, r.body.job_id);
    const b = await status(s, r.body.job_id);
    const c = await status(s, r.body.job_id);
    expectError(a, 429, 'RATE_LIMITED');
    expect(a.headers.get('retry-after')).toBe('5');
    expectError(b, 429, 'RATE_LIMITED');
    expect(c.status).toBe(200);
    expect(s.stats().requests.byStatus['429']).toBe(2);
  });

  it('rate_limit follows the account retryAfterStyle', async () => {
    const s = await sim({ acme: { retryAfterStyle: 'message', retryAfterSeconds: 4 } });
    s.faults.add({ action: 'rate_limit', endpoint: 'list' });
    const r = await call(s, 'GET', '/api/jobs');
    expectError(r, 429, 'RATE_LIMITED');
    expect(r.headers.get('retry-after')).toBeNull();
    expect(r.body.error.message).toBe('Rate limit exceeded. Please retry after 4 seconds.');
  });

  it('not_found: the provider forgets a job that exists', async () => {
    const s = await sim();
    const r = await submit(s, { url: pages.pageUrl('001') });
    s.faults.add({ endpoint: 'status', action: 'not_found', times: 1 });
    expectError(await status(s, r.body.job_id), 404, 'NOT_FOUND');
    expect((await status(s, r.body.job_id)).status).toBe(200);
  });

  it('fail_job: the job fails after the fetch with the given code', async () => {
    const s = await sim({ acme: { concurrency: 2 } });
    s.faults.add({ action: 'fail_job', urlContains: '/pages/002/' });
    s.faults.add({ action: 'fail_job', urlContains: '/pages/001/', code: 'CAPTCHA', message: 'captcha wall' });
    const a = await submit(s, { url: pages.pageUrl('002') });
    const b = await submit(s, { url: pages.pageUrl('001') });
    const ja = await pollUntilFinal(s, a.body.job_id);
    const jb = await pollUntilFinal(s, b.body.job_id);
    expect(ja.body.status).toBe('failed');
    expect(ja.body.error.code).toBe('TARGET_BLOCKED');
    expect(ja.body.progress.pages_fetched).toBe(1);
    expect(jb.body.error).toEqual({ code: 'CAPTCHA', message: 'captcha wall' });
  });

  it('never_finish: stays running until cancelled', async () => {
    const s = await sim();
    s.faults.add({ action: 'never_finish' });
    const hitsBefore = pages.hits.get('/pages/001/') ?? 0;
    const r = await submit(s, { url: pages.pageUrl('001') });
    await s.waitForJob(r.body.job_id, { status: 'running' });
    await new Promise((res) => setTimeout(res, 200));
    expect((await status(s, r.body.job_id)).body.status).toBe('running');
    expect((await cancel(s, r.body.job_id)).body.status).toBe('cancelled');
    expect(pages.hits.get('/pages/001/') ?? 0).toBe(hitsBefore); // a stuck job never fetches
  });

  it('hold: queued until released in-process, running until released by the admin route', async () => {
    const s = await sim({ acme: { concurrency: 2 } });
    s.faults.add({ action: 'hold', urlContains: '/pages/001/' });
    s.faults.add({ action: 'hold', holdIn: 'running', urlContains: '/pages/002/' });
    const q = await submit(s, { url: pages.pageUrl('001') });
    const run = await submit(s, { url: pages.pageUrl('002') });
    await s.waitForJob(run.body.job_id, { status: 'running' });
    await new Promise((res) => setTimeout(res, 200));
    expect((await status(s, q.body.job_id)).body.status).toBe('queued');
    expect((await status(s, run.body.job_id)).body.status).toBe('running');
    expect(s.release(q.body.job_id)).toBe(true);
    expect(s.release(q.body.job_id)).toBe(false);
    expect((await s.waitForJob(q.body.job_id)).status).toBe('completed');
    const rel = await admin(s, 'POST', `/_sim/jobs/${run.body.job_id}/release`);
    expect(rel.body).toEqual({ job_id: run.body.job_id, released: true });
    expect((await s.waitForJob(run.body.job_id)).status).toBe('completed');
  });

  it('forget: the job answers 404 delayMs after it completes', async () => {
    const s = await sim();
    const delayMs = 2_000;
    s.faults.add({ action: 'forget', delayMs });
    const r = await submit(s, { url: pages.pageUrl('001') });
    const done = await s.waitForJob(r.body.job_id);
    const finishedAt = Date.parse(done.finished_at!);
    // Every answer before the 404 is a 200; the 404 never comes sooner than delayMs (a busy machine
    // can only make it later).
    let seen = 0;
    for (;;) {
      const a = await status(s, r.body.job_id);
      if (a.status !== 200) {
        expectError(a, 404, 'NOT_FOUND');
        break;
      }
      seen++;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(Date.now() - finishedAt).toBeGreaterThanOrEqual(delayMs);
    expect(seen).toBeGreaterThan(0);
    expect(s.getJob(r.body.job_id)?.faults).toEqual(['forget']);
  });

  it('cancel_pending: 202 with the current status, cancelled only after delayMs', async () => {
    const s = await sim({ acme: { queueDelayMs: 60_000 } });
    s.faults.add({ endpoint: 'cancel', action: 'cancel_pending', delayMs: 300, times: 1 });
    const r = await submit(s, { url: pages.pageUrl('001') });
    const c = await cancel(s, r.body.job_id);
    expect(c.status).toBe(202);
    expect(c.body).toEqual({
      job_id: r.body.job_id,
      status: 'queued',
      progress: { pages_fetched: 0 },
      credits_used: 0,
    });
    expect((await status(s, r.body.job_id)).body.status).toBe('queued');
    const done = await s.waitForJob(r.body.job_id, { timeoutMs: 2000 });
    expect(done.status).toBe('cancelled');
  });

  it('cancel_pending: a job that finishes first stays completed', async () => {
    const s = await sim();
    s.faults.add({ endpoint: 'cancel', action: 'cancel_pending', delayMs: 400 });
    s.faults.add({ action: 'hold', holdIn: 'running' });
    const r = await submit(s, { url: pages.pageUrl('001') });
    await s.waitForJob(r.body.job_id, { status: 'running' });
    const c = await cancel(s, r.body.job_id);
    expect(c.body).toMatchObject({ job_id: r.body.job_id, status: 'running' });
    s.release(r.body.job_id);
    await s.waitForJob(r.body.job_id);
    await new Promise((res) => setTimeout(res, 500));
    expect((await status(s, r.body.job_id)).body.status).toBe('completed');
  });

  it('scopes rules by account, endpoint and urlContains; probability 0 never fires', async () => {
    const s = await sim({ acme: { concurrency: 5 }, beta: { concurrency: 5 } });
    s.faults.add({ account: 'beta', endpoint: 'submit', action: 'error_5xx' });
    s.faults.add({ endpoint: 'submit', action: 'error_5xx', status: 500, urlContains: '/pages/002/' });
    s.faults.add({ endpoint: 'any', action: 'rate_limit', probability: 0 });
    expect((await submit(s, { url: pages.pageUrl('001') })).status).toBe(202);
    expect((await submit(s, { url: pages.pageUrl('002') })).status).toBe(500);
    expect((await submit(s, { url: pages.pageUrl('001') }, { key: BETA })).status).toBe(503);
    const listed = s.faults.list();
    expect(listed.map((f) => f.fired)).toEqual([1, 1, 0]);
  });

  it('applies an X-Sim-Fault header to that request only, when allowed', async () => {
    const s = await sim({ allowFaultHeader: true });
    const r = await submit(
      s,
      { url: pages.pageUrl('001') },
      { headers: { 'x-sim-fault': JSON.stringify({ action: 'error_5xx', status: 504 }) } },
    );
    expectError(r, 504, 'UPSTREAM_UNAVAILABLE');
    const held = await submit(
      s,
      { url: pages.pageUrl('001') },
      { headers: { 'x-sim-fault': JSON.stringify({ action: 'hold' }) } },
    );
    expect(held.status).toBe(202);
    await new Promise((res) => setTimeout(res, 100));
    expect((await status(s, held.body.job_id)).body.status).toBe('queued');
    expect(s.getJob(held.body.job_id)?.faults).toEqual(['hold']);
    const bad = await status(s, held.body.job_id, ACME);
    expect(bad.status).toBe(200);
    const invalid = await call(s, 'GET', `/api/jobs/${held.body.job_id}`, {
      headers: { 'x-sim-fault': '{"action":"explode"}' },
    });
    expectError(invalid, 400, 'VALIDATION_ERROR');
    const withAccount = await call(s, 'GET', '/api/jobs', {
      headers: { 'x-sim-fault': '{"action":"rate_limit","account":"acme"}' },
    });
    expectError(withAccount, 400, 'VALIDATION_ERROR');
  });

  it('ignores the X-Sim-Fault header unless allowFaultHeader is set', async () => {
    const s = await sim();
    const r = await submit(
      s,
      { url: pages.pageUrl('001') },
      { headers: { 'x-sim-fault': JSON.stringify({ action: 'error_5xx' }) } },
    );
    expect(r.status).toBe(202);
  });
});

describe('admin routes', () => {
  it('are hidden (404) without the right token, and absent without a configured token', async () => {
    const s = await sim();
    expectError(await admin(s, 'GET', '/_sim/stats', undefined, 'wrong'), 404, 'NOT_FOUND');
    expectError(await call(s, 'GET', '/_sim/stats', { key: null }), 404, 'NOT_FOUND');
    const noToken = await sim({ adminToken: undefined });
    expectError(await admin(noToken, 'GET', '/_sim/stats'), 404, 'NOT_FOUND');
  });

  it('manage faults, read stats and reset', async () => {
    const s = await sim();
    const added = await admin(s, 'POST', '/_sim/faults', { endpoint: 'list', action: 'error_5xx', id: 'f1' });
    expect(added.body).toEqual({ id: 'f1' });
    expectError(await admin(s, 'POST', '/_sim/faults', { action: 'nope' }), 400, 'VALIDATION_ERROR');
    expect((await call(s, 'GET', '/api/jobs')).status).toBe(503);
    expect((await admin(s, 'GET', '/_sim/faults')).body.faults).toHaveLength(1);
    expect((await admin(s, 'DELETE', '/_sim/faults/f1')).status).toBe(200);
    expectError(await admin(s, 'DELETE', '/_sim/faults/f1'), 404, 'NOT_FOUND');
    expect((await call(s, 'GET', '/api/jobs')).status).toBe(200);
    await admin(s, 'POST', '/_sim/faults', { action: 'rate_limit' });
    expect((await admin(s, 'DELETE', '/_sim/faults')).body).toEqual({ removed: 1 });

    await submit(s, { url: pages.pageUrl('001') });
    const stats = await admin(s, 'GET', '/_sim/stats');
    expect(stats.status).toBe(200);
    expect(stats.body.jobsCreated.total).toBe(1);
    expect(stats.body.requests.byEndpoint.list).toBe(2);
    expectError(await admin(s, 'POST', '/_sim/jobs/job_nope/release'), 404, 'NOT_FOUND');

    expect((await admin(s, 'POST', '/_sim/reset')).body).toEqual({ reset: true });
    const after = s.stats();
    expect(after.jobsCreated.total).toBe(0);
    expect(after.requests.total).toBe(0);
    expect(after.jobs).toEqual([]);
    expect(s.faults.list()).toEqual([]);
  });
});

describe('stats and events', () => {
  it('counts requests per endpoint, account and status, and records status request times', async () => {
    const events: SimRequestEvent[] = [];
    const s = await sim({ onRequest: (e) => events.push(e) });
    const responses: Array<number | 'dropped'> = [];
    s.events.on('response', (e) => responses.push(e.status));
    const r = await submit(
      s,
      { url: pages.pageUrl('001'), client_ref: 'c1' },
      { headers: { 'idempotency-key': 'k1' } },
    );
    const id = r.body.job_id as string;
    await s.waitForJob(id);
    const before = Date.now();
    await status(s, id);
    await status(s, id);
    await status(s, id, BETA); // another account: not recorded on the job
    await call(s, 'GET', `/api/jobs/${id}/logs`);
    await cancel(s, id);
    await call(s, 'GET', '/api/jobs', { key: BETA });
    await status(s, id, null);

    const st = s.stats();
    expect(st.requests.total).toBe(8);
    expect(st.requests.byEndpoint).toEqual({ submit: 1, status: 4, logs: 1, cancel: 1, list: 1 });
    expect(st.requests.byAccount.acme).toMatchObject({ total: 5, submit: 1, status: 2, logs: 1, cancel: 1, list: 0 });
    expect(st.requests.byAccount.acme?.byEndpoint).toEqual({ submit: 1, status: 2, logs: 1, cancel: 1, list: 0 });
    expect(st.requests.byAccount.beta).toMatchObject({ total: 2, status: 1, list: 1 });
    expect(st.requests.byStatus).toEqual({ '202': 1, '200': 4, '404': 1, '409': 1, '401': 1 });
    expect(st.jobsCreated).toEqual({ total: 1, byAccount: { acme: 1, beta: 0 } });
    expect(st.cancelCalls).toBe(1);
    expect(st.jobs).toHaveLength(1);
    const job = st.jobs[0]!;
    expect(job).toMatchObject({
      job_id: id,
      account: 'acme',
      url: pages.pageUrl('001'),
      status: 'completed',
      client_ref: 'c1',
      idempotency_key: 'k1',
    });
    expect(job.status_request_times).toHaveLength(2);
    for (const t of job.status_request_times) {
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(Date.now());
    }
    expect(job.cancel_request_times).toHaveLength(1);
    expect(s.jobsFor('acme').map((j) => j.job_id)).toEqual([id]);
    expect(s.jobsFor('beta')).toEqual([]);

    expect(events).toHaveLength(8);
    expect(events.map((e) => e.endpoint)).toEqual([
      'submit',
      'status',
      'status',
      'status',
      'logs',
      'cancel',
      'list',
      'status',
    ]);
    expect(events[0]?.account).toBe('acme');
    expect(events.at(-1)?.account).toBeNull();
    expect(events[1]?.jobId).toBe(id);
    expect(responses).toHaveLength(8);
  });

  it('emits job transitions in order', async () => {
    const s = await sim();
    const seen: string[] = [];
    s.events.on('job', (t) => seen.push(t.to));
    const r = await submit(s, { url: pages.pageUrl('001') });
    await s.waitForJob(r.body.job_id);
    expect(seen).toEqual(['queued', 'running', 'completed']);
  });
});

describe('close', () => {
  it('closes promptly with running jobs, held jobs and delayed requests', async () => {
    const s = await startSim({ accounts: [{ name: 'acme', apiKeys: [ACME], profile: { concurrency: 3 } }] });
    s.faults.add({ action: 'never_finish', urlContains: '/pages/001/' });
    s.faults.add({ action: 'hold', urlContains: '/pages/002/' });
    await submit(s, { url: pages.pageUrl('001') });
    await submit(s, { url: pages.pageUrl('002') });
    await submit(s, { url: `${pages.url}/hang` });
    s.faults.add({ endpoint: 'list', action: 'delay', delayMs: 3_600_000 });
    const hanging = call(s, 'GET', '/api/jobs').catch((e: unknown) => e);
    await new Promise((res) => setTimeout(res, 100));
    const t0 = Date.now();
    await s.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await hanging).toBeInstanceOf(Error);
    await s.close(); // idempotent
  });
});
