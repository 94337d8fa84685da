/**
 * The HTTP API against the real stack: a real Temporal dev server, the reference
 * provider really fetching pages over loopback, a real SQLite store, a real worker, and the API
 * listening on loopback, called over real HTTP (fetch, and a raw socket for a lost answer).
 */
import net from 'node:net';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { API_KEYS, startApiStack, type ApiStack } from '../helpers/api.js';
import { FAST_POLICY, waitFor, waitForState } from '../helpers/stack.js';

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({
    profile: { concurrency: 16, minRunMs: 200 },
    api: {
      rateLimit: {
        default: { max: 10_000, timeWindowMs: 60_000 },
        accounts: { limited: { max: 3, timeWindowMs: 60_000 } },
        unauthenticated: { max: 1_000, timeWindowMs: 60_000 },
        webhooks: { max: 1_000, timeWindowMs: 60_000 },
      },
    },
  });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

const page = (name: string, tag: string) => `${pages.pageUrl(name)}?t=${tag}`;
const providerJobsFor = (url: string) => api.stack.sim.stats().jobs.filter((j) => j.url === url).length;

async function waitForJobState(
  account: 'acme' | 'globex' | 'lister',
  statusUrl: string,
  states: string[],
  timeoutMs = 30_000,
) {
  return waitFor(
    async () => {
      const r = await api.call(account, 'GET', statusUrl);
      const body = (await r.json()) as { state: string };
      return states.includes(body.state) ? body : undefined;
    },
    timeoutMs,
    `${statusUrl} to reach ${states.join('|')}`,
  );
}

describe('starting and reading a scrape over HTTP', () => {
  it('POST answers 202 with the job, Location and Retry-After; the status and result follow the encoded status_url', async () => {
    const url = page('001', 'start');
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-start-1' },
    });
    expect(r.status).toBe(202);
    const job = (await r.json()) as {
      job_id: string;
      status_url: string;
      result_url: string;
      cancel_url: string;
      state: string;
      poll_after_s: number;
    };
    expect(job.job_id).toBe('scrape:acme:api-start-1');
    expect(job.status_url).toBe('/v1/scrapes/scrape%3Aacme%3Aapi-start-1');
    expect(r.headers.get('location')).toBe(job.status_url);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(job.poll_after_s).toBe(Number(r.headers.get('retry-after')));

    // The raw colons route too.
    const raw = await api.call('acme', 'GET', '/v1/scrapes/scrape:acme:api-start-1');
    expect(raw.status).toBe(200);
    expect(((await raw.json()) as { job_id: string }).job_id).toBe(job.job_id);

    const done = (await waitForJobState('acme', job.status_url, ['completed'])) as Record<string, unknown>;
    expect(done).toMatchObject({ state: 'completed', final: true, provider: 'reference', poll_after_s: null });
    expect(done.task_id).toMatch(/^job_/);
    expect((done.progress as { status_checks: number }).status_checks).toBeGreaterThanOrEqual(1);
    const final = await api.call('acme', 'GET', job.status_url);
    expect(final.headers.get('retry-after')).toBeNull();

    const res = await api.call('acme', 'GET', job.result_url);
    expect(res.status).toBe(200);
    const result = (await res.json()) as {
      title: string;
      http_status: number;
      markdown: string;
      links: string[];
      task_id: string;
    };
    expect(result.http_status).toBe(200);
    expect(result.title).toBeTruthy();
    expect(result.markdown.length).toBeGreaterThan(500);
    expect(result.task_id).toBe(done.task_id);
    expect(providerJobsFor(url)).toBe(1);
  });

  it('a running job: status carries Retry-After, the result is 409 with the state; cancel answers 202 with the observed outcome', async () => {
    const url = page('002', 'held');
    api.stack.sim.faults.add({ id: 'hold-held', urlContains: 't=held', action: 'hold', holdIn: 'running' });
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-held-1' },
    });
    expect(r.status).toBe(202);
    const job = (await r.json()) as { job_id: string; status_url: string; result_url: string; cancel_url: string };
    await waitForState(api.stack.store, job.job_id, ['pending']);

    const status = await api.call('acme', 'GET', job.status_url);
    expect(status.status).toBe(200);
    expect(Number(status.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const notReady = await api.call('acme', 'GET', job.result_url);
    expect(notReady.status).toBe(409);
    expect(notReady.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(notReady.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await notReady.json()).toMatchObject({
      type: '/problems/result-not-ready',
      status: 409,
      state: 'pending',
      final: false,
      job_id: job.job_id,
    });

    const c = await api.call('acme', 'POST', job.cancel_url, { json: { reason: 'test: no longer needed' } });
    expect(c.status).toBe(202);
    const outcome = (await c.json()) as {
      result: string;
      state: string;
      cancel: { outcome: string; provider_cancel_calls: number; reason: string };
    };
    expect(outcome.result).toBe('observed');
    expect(outcome.cancel.outcome).toBe('cancelled');
    expect(outcome.cancel.reason).toBe('test: no longer needed');
    expect(outcome.cancel.provider_cancel_calls).toBeGreaterThanOrEqual(1);
    expect(api.stack.sim.stats().jobs.find((j) => j.url === url)?.status).toBe('cancelled');

    // Once the workflow has closed, cancelling again changes nothing and says so; the result is
    // "not ready" for good.
    await api.stack.temporal.workflow
      .getHandle(job.job_id)
      .result()
      .catch(() => undefined);
    const again = await api.call('acme', 'POST', job.cancel_url);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ result: 'already_final', state: 'cancelled' });
    const never = await api.call('acme', 'GET', job.result_url);
    expect(never.status).toBe(409);
    expect(never.headers.get('retry-after')).toBeNull();
    expect(await never.json()).toMatchObject({ state: 'cancelled', final: true });
    api.stack.sim.faults.remove('hold-held');
  });

  it('an expired result answers 410 with the evidence that the job ran', async () => {
    const url = page('003-metadata-preferred', 'expire');
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-expire-1' },
    });
    const job = (await r.json()) as { job_id: string; result_url: string };
    const row = await waitForState(api.stack.store, job.job_id, ['completed']);
    const before = await api.call('acme', 'GET', job.result_url);
    expect(before.status).toBe(200);
    const title = ((await before.json()) as { title: string }).title;

    // Retention purge (the maintenance Schedule does this in production): payload gone, evidence kept.
    const purgedAt = new Date().toISOString();
    await api.stack.store.db
      .updateTable('results')
      .set({ purged_at: purgedAt, text: null, markdown: null, links: null })
      .where('job_id', '=', job.job_id)
      .execute();
    await api.stack.store.db.updateTable('jobs').set({ state: 'expired' }).where('id', '=', job.job_id).execute();

    const gone = await api.call('acme', 'GET', job.result_url);
    expect(gone.status).toBe(410);
    expect(gone.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await gone.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      type: '/problems/result-expired',
      status: 410,
      job_id: job.job_id,
      state: 'expired',
      provider: 'reference',
      task_id: row.task_id,
      purged_at: purgedAt,
      title,
    });
    expect(body.result_written_at).toEqual(expect.any(String));
    expect(body.finished_at).toEqual(expect.any(String));
    expect(JSON.stringify(body)).not.toContain('stack');
  });
});

describe('result documents', () => {
  it('a multi-document result is read page by page; a single-page result has none; not ready is 409, purged is 410, a bad page is 400', async () => {
    const store = api.stack.store;
    const jobId = 'scrape:acme:api-docs-1';
    await store.jobs.insert({
      id: jobId,
      account: 'acme',
      idem_key: 'api-docs-1',
      provider: 'reference',
      request_hash: 'h',
      url: 'https://crawl.example/',
      input: '{}',
      options: '{}',
      batch_id: null,
      workflow_id: jobId,
      task_id: null,
      deadline_at: null,
    });
    const path = `/v1/scrapes/${encodeURIComponent(jobId)}/documents`;
    const early = await api.call('acme', 'GET', path);
    expect(early.status).toBe(409);
    expect(await early.json()).toMatchObject({ type: '/problems/result-not-ready', state: 'submitting' });
    await store.jobs.recordTaskId(jobId, 'crawl-task-1', 'running', 'test');
    const documents = Array.from({ length: 5 }, (_, i) => ({
      url: `https://crawl.example/${i}`,
      httpStatus: 200,
      title: `Page ${i}`,
      markdown: `# ${i}`,
      links: [],
      data: { depth: i },
    }));
    documents[3] = { url: 'https://crawl.example/3', error: { code: 'TIMEOUT', message: 'timed out' } } as never;
    await store.results.writeOnce(
      jobId,
      'reference',
      'crawl-task-1',
      {
        url: 'https://crawl.example/',
        finalUrl: null,
        httpStatus: null,
        title: 'Page 0',
        byline: null,
        excerpt: null,
        lang: null,
        siteName: null,
        publishedTime: null,
        text: null,
        markdown: null,
        links: [],
        contentLength: null,
        documents,
      },
      null,
    );

    const first = await api.call('acme', 'GET', `${path}?limit=2`);
    expect(first.status).toBe(200);
    const p1 = (await first.json()) as {
      total: number;
      offset: number;
      limit: number;
      next_offset: number | null;
      documents: { seq: number; url: string; title: string | null; data: unknown; error: unknown }[];
    };
    expect(p1).toMatchObject({ total: 5, offset: 0, limit: 2, next_offset: 2 });
    expect(p1.documents.map((d) => [d.seq, d.url, d.title])).toEqual([
      [0, 'https://crawl.example/0', 'Page 0'],
      [1, 'https://crawl.example/1', 'Page 1'],
    ]);
    expect(p1.documents[1]!.data).toEqual({ depth: 1 });
    const last = (await (await api.call('acme', 'GET', `${path}?offset=2&limit=10`)).json()) as typeof p1;
    expect(last.next_offset).toBeNull();
    expect(last.documents.map((d) => d.seq)).toEqual([2, 3, 4]);
    expect(last.documents[1]).toMatchObject({
      seq: 3,
      markdown: null,
      error: { code: 'TIMEOUT', message: 'timed out' },
    });
    for (const q of [
      'limit=0',
      'limit=1001',
      'offset=-1',
      'offset=x',
      'offset=',
      'offset=0x10',
      'limit=1e2',
      'limit=+5',
      'page=2',
    ]) {
      const bad = await api.call('acme', 'GET', `${path}?${q}`);
      expect(bad.status, q).toBe(400);
      const problem = (await bad.json()) as { type: string; detail: string };
      expect(problem.type).toBe('/problems/invalid-request');
      if (q.startsWith('offset=') && q !== 'offset=-1') expect(problem.detail, q).toContain('in decimal digits');
    }
    expect((await api.call('globex', 'GET', path)).status).toBe(404);

    await store.db
      .updateTable('results')
      .set({ expires_at: new Date(Date.now() - 1).toISOString() })
      .where('job_id', '=', jobId)
      .execute();
    await store.results.purgeExpired(new Date());
    const gone = await api.call('acme', 'GET', path);
    expect(gone.status).toBe(410);
    expect(await gone.json()).toMatchObject({ type: '/problems/result-expired', task_id: 'crawl-task-1' });
  });

  it('a single-page scrape has a result and zero documents', async () => {
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: page('002', 'docs-single'), policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-docs-2' },
    });
    const job = (await r.json()) as { job_id: string; status_url: string };
    await waitForState(api.stack.store, job.job_id, ['completed']);
    const docs = await api.call('acme', 'GET', `${job.status_url}/documents`);
    expect(docs.status).toBe(200);
    expect(await docs.json()).toMatchObject({ total: 0, documents: [], next_offset: null });
  });
});

describe('authorisation by account', () => {
  it("another account's job is a 404 byte-identical to a missing one, for status, result and cancel; the list shows only own jobs", async () => {
    const url = page('aclu', 'private');
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-private-1' },
    });
    const job = (await r.json()) as { job_id: string };
    await waitForState(api.stack.store, job.job_id, ['completed']);
    const cancelsBefore = api.stack.sim.stats().cancelCalls;

    const answers = async (id: string) => {
      const enc = encodeURIComponent(id);
      const out = [];
      for (const [m, p] of [
        ['GET', `/v1/scrapes/${enc}`],
        ['GET', `/v1/scrapes/${enc}/result`],
        ['GET', `/v1/scrapes/${enc}/documents`],
        ['POST', `/v1/scrapes/${enc}/cancel`],
      ] as const) {
        const res = await api.call('globex', m, p);
        out.push({
          status: res.status,
          type: res.headers.get('content-type'),
          length: res.headers.get('content-length'),
          body: await res.text(),
        });
      }
      return out;
    };
    const real = await answers(job.job_id);
    const guessedOther = await answers('scrape:acme:no-such-key');
    const guessedOwn = await answers('scrape:globex:no-such-key');
    const garbage = await answers('not-a-job-id');
    for (const a of real) {
      expect(a.status).toBe(404);
      expect(a.type).toMatch(/^application\/problem\+json/);
      expect(a.body).not.toContain('acme');
    }
    expect(real).toEqual(guessedOther);
    expect(real).toEqual(guessedOwn);
    expect(real).toEqual(garbage);
    expect(JSON.parse(real[0]!.body)).toEqual({
      type: '/problems/not-found',
      title: 'No such job',
      status: 404,
      detail: 'no such job for this account',
    });

    // Nothing happened to acme's job.
    expect(api.stack.sim.stats().cancelCalls).toBe(cancelsBefore);
    expect((await api.stack.store.jobs.get(job.job_id))?.state).toBe('completed');
    const own = await api.call('acme', 'GET', `/v1/scrapes/${encodeURIComponent(job.job_id)}`);
    expect(own.status).toBe(200);

    const g = await api.call('globex', 'POST', '/v1/scrapes', {
      json: { url: page('001', 'globex-own'), policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-mine' },
    });
    expect(g.status).toBe(202);
    const list = (await (await api.call('globex', 'GET', '/v1/scrapes')).json()) as { jobs: { job_id: string }[] };
    expect(list.jobs.map((j) => j.job_id)).toEqual(['scrape:globex:api-mine']);
    const acmeList = (await (await api.call('acme', 'GET', '/v1/scrapes?limit=1000')).json()) as {
      jobs: { job_id: string }[];
    };
    expect(acmeList.jobs.map((j) => j.job_id)).toContain(job.job_id);
    expect(acmeList.jobs.every((j) => j.job_id.startsWith('scrape:acme:'))).toBe(true);
  });

  it('a missing or unknown key is 401 with WWW-Authenticate, and the key never reaches the log', async () => {
    const none = await api.call(null, 'GET', '/v1/scrapes');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await none.json()).toMatchObject({ type: '/problems/unauthorized', status: 401 });
    const wrong = await api.call(null, 'GET', '/v1/scrapes', {
      headers: { authorization: `Bearer ${API_KEYS.acme}x` },
    });
    expect(wrong.status).toBe(401);
    const basic = await api.call(null, 'GET', '/v1/scrapes', {
      headers: { authorization: `Basic ${Buffer.from(`acme:${API_KEYS.acme}`).toString('base64')}` },
    });
    expect(basic.status).toBe(401);
    const ok = await api.call('acme', 'GET', '/v1/scrapes?limit=1');
    expect(ok.status).toBe(200);
    // A credential under another header name, and one in a media-type parameter, reach neither the log nor an answer.
    const elsewhere = await api.call('acme', 'GET', '/v1/scrapes?limit=1', {
      headers: { 'x-access': `Bearer ${API_KEYS.globex}` },
    });
    expect(elsewhere.status).toBe(200);
    const media = await api.call('acme', 'POST', '/v1/scrapes', {
      body: 'url=x',
      headers: { 'content-type': `text/plain; token=${API_KEYS.globex}` },
    });
    expect(media.status).toBe(415);
    const mediaBody = await media.text();
    expect(mediaBody).toMatch(/content type \\?"text\/plain\\?" is not supported/);
    expect(mediaBody).not.toContain(API_KEYS.globex);
    const logs = api.logs();
    expect(logs).toContain('"authorization":"[REDACTED]"');
    expect(logs).toContain('"x-access":"[REDACTED]"');
    for (const key of Object.values(API_KEYS)) expect(logs).not.toContain(key);
  });

  it('an account over its own limit gets 429 with Retry-After; other accounts are not affected', async () => {
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const res = await api.call('limited', 'GET', '/v1/scrapes');
      statuses.push(res.status);
      if (res.status === 429) limited = res;
      else await res.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited!.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await limited!.json()).toMatchObject({ type: '/problems/rate-limited', status: 429 });
    const other = await api.call('acme', 'GET', '/v1/scrapes?limit=1');
    expect(other.status).toBe(200);
  });
});

describe('idempotency over HTTP', () => {
  it('the same POST 10 times in parallel makes one job and one provider job: one 202, nine 200', async () => {
    const url = page('ars-1', 'parallel');
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.call('acme', 'POST', '/v1/scrapes', {
          json: { url, policy: FAST_POLICY },
          headers: { 'idempotency-key': 'api-parallel-1' },
        }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 202]);
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as { job_id: string }[];
    expect(new Set(bodies.map((b) => b.job_id))).toEqual(new Set(['scrape:acme:api-parallel-1']));
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
    await waitForState(api.stack.store, 'scrape:acme:api-parallel-1', ['completed']);
    expect(providerJobsFor(url)).toBe(1);
    const runs = [];
    for await (const w of api.stack.temporal.workflow.list({ query: 'WorkflowId = "scrape:acme:api-parallel-1"' }))
      runs.push(w.runId);
    expect(runs).toHaveLength(1);

    // After completion a repeat still answers the same job and creates nothing.
    const later = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-parallel-1' },
    });
    expect(later.status).toBe(200);
    expect(await later.json()).toMatchObject({ job_id: 'scrape:acme:api-parallel-1', state: 'completed' });
    expect(providerJobsFor(url)).toBe(1);
  });

  it('the same key with another body is 422 with the job it belongs to, and starts nothing', async () => {
    const url = page('herald-sun-1', 'conflict');
    const first = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'api-conflict-1' },
    });
    expect(first.status).toBe(202);
    await waitForState(api.stack.store, 'scrape:acme:api-conflict-1', ['completed']);
    const jobsBefore = api.stack.sim.stats().jobsCreated.total;
    for (const other of [
      { url: page('herald-sun-1', 'conflict-other'), policy: FAST_POLICY },
      { url, policy: FAST_POLICY, format: 'text' },
      { url, policy: FAST_POLICY, row: { order: 7 } },
    ]) {
      const r = await api.call('acme', 'POST', '/v1/scrapes', {
        json: other,
        headers: { 'idempotency-key': 'api-conflict-1' },
      });
      expect(r.status).toBe(422);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await r.json()).toMatchObject({
        type: '/problems/idempotency-key-reused',
        status: 422,
        job_id: 'scrape:acme:api-conflict-1',
      });
    }
    expect(api.stack.sim.stats().jobsCreated.total).toBe(jobsBefore);
    expect(providerJobsFor(page('herald-sun-1', 'conflict-other'))).toBe(0);
  });

  it('lost acceptance: the client drops the connection right after sending; repeating with the same key recovers the same job', async () => {
    const url = page('tumblr', 'lost');
    const body = JSON.stringify({ url, policy: FAST_POLICY });
    const { port } = new URL(api.url);
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `POST /v1/scrapes HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${API_KEYS.acme}\r\nIdempotency-Key: api-lost-1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          () => {
            socket.destroy(); // the answer is lost
            resolve();
          },
        );
      });
      socket.on('error', reject);
    });
    // The request did take effect (the client cannot know that).
    await waitFor(
      () => api.stack.store.apiIdempotency.get('acme', 'api-lost-1'),
      15_000,
      'the dropped request to be accepted',
    );
    const again = await api.call('acme', 'POST', '/v1/scrapes', {
      body,
      headers: { 'idempotency-key': 'api-lost-1', 'content-type': 'application/json' },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toMatchObject({ job_id: 'scrape:acme:api-lost-1' });
    await waitForState(api.stack.store, 'scrape:acme:api-lost-1', ['completed']);
    expect(providerJobsFor(url)).toBe(1);
  });
});

describe('bad input is refused with the reason and starts nothing', () => {
  it('missing URL, non-http(s) URL, unknown fields, a 10 MB body, a wrong content type, malformed JSON, a bad key header', async () => {
    const jobsBefore = api.stack.sim.stats().jobsCreated.total;
    const cases: { name: string; send: () => Promise<Response>; status: number; type: string; reason: RegExp }[] = [
      {
        name: 'missing url',
        send: () => api.call('badin', 'POST', '/v1/scrapes', { json: { format: 'text' } }),
        status: 400,
        type: 'invalid-request',
        reason: /url/,
      },
      {
        name: 'ftp url',
        send: () => api.call('badin', 'POST', '/v1/scrapes', { json: { url: 'ftp://example.com/file' } }),
        status: 400,
        type: 'invalid-request',
        reason: /http or https/,
      },
      {
        name: 'javascript url',
        send: () => api.call('badin', 'POST', '/v1/scrapes', { json: { url: 'javascript:alert(1)' } }),
        status: 400,
        type: 'invalid-request',
        reason: /http or https/,
      },
      {
        name: 'unknown field',
        send: () => api.call('badin', 'POST', '/v1/scrapes', { json: { url: page('001', 'bad'), priority: 'high' } }),
        status: 400,
        type: 'invalid-request',
        reason: /priority/,
      },
      {
        name: 'unknown policy field',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', { json: { url: page('001', 'bad'), policy: { fastest: true } } }),
        status: 400,
        type: 'invalid-request',
        reason: /fastest/,
      },
      {
        name: 'policy deadline too short',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', { json: { url: page('001', 'bad'), policy: { deadlineMs: 500 } } }),
        status: 400,
        type: 'invalid-request',
        reason: /deadlineMs must be a whole number of milliseconds from 1000 \(1 s\) to 2592000000 \(30 d\)/,
      },
      {
        name: 'policy start delay over its ceiling',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', {
            json: { url: page('001', 'bad'), policy: { initialDelayMs: 120_000, maxDelayMs: 60_000 } },
          }),
        status: 400,
        type: 'invalid-request',
        reason: /initialDelayMs \(120000 ms\) is longer than maxDelayMs \(60000 ms\)/,
      },
      {
        name: 'unknown provider',
        send: () => api.call('badin', 'POST', '/v1/scrapes', { json: { url: page('001', 'bad'), provider: 'nope' } }),
        status: 400,
        type: 'invalid-request',
        reason: /unknown provider "nope"/,
      },
      {
        name: '10 MB body',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', {
            body: JSON.stringify({ url: page('001', 'bad'), row: { blob: 'x'.repeat(10 * 1024 * 1024) } }),
            headers: { 'content-type': 'application/json' },
          }),
        status: 413,
        type: 'payload-too-large',
        reason: /exceeds the limit/,
      },
      {
        name: 'text/plain',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', {
            body: `url=${page('001', 'bad')}`,
            headers: { 'content-type': 'text/plain' },
          }),
        status: 415,
        type: 'unsupported-media-type',
        reason: /text\/plain/,
      },
      {
        name: 'form',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', {
            body: `url=${encodeURIComponent(page('001', 'bad'))}`,
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          }),
        status: 415,
        type: 'unsupported-media-type',
        reason: /application\/json/,
      },
      {
        name: 'malformed json',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', {
            body: '{"url": ',
            headers: { 'content-type': 'application/json' },
          }),
        status: 400,
        type: 'invalid-request',
        reason: /JSON/,
      },
      {
        name: 'bad Idempotency-Key',
        send: () =>
          api.call('badin', 'POST', '/v1/scrapes', {
            json: { url: page('001', 'bad') },
            headers: { 'idempotency-key': 'has spaces/and slashes' },
          }),
        status: 400,
        type: 'invalid-request',
        reason: /idempotency-key/,
      },
    ];
    for (const c of cases) {
      const r = await c.send();
      expect(r.status, c.name).toBe(c.status);
      expect(r.headers.get('content-type'), c.name).toMatch(/^application\/problem\+json/);
      const body = (await r.json()) as { type: string; detail: string };
      expect(body.type, c.name).toBe(`/problems/${c.type}`);
      expect(body.detail, c.name).toMatch(c.reason);
    }
    // Nothing started anywhere: no provider job, no store row, no workflow, no idempotency record.
    expect(api.stack.sim.stats().jobsCreated.total).toBe(jobsBefore);
    expect(await api.stack.store.jobs.list({ account: 'badin' })).toEqual([]);
    const wfs = [];
    for await (const w of api.stack.temporal.workflow.list({ query: 'ScrapeAccount = "badin"' }))
      wfs.push(w.workflowId);
    expect(wfs).toEqual([]);
    const list = (await (await api.call('badin', 'GET', '/v1/scrapes')).json()) as { jobs: unknown[] };
    expect(list.jobs).toEqual([]);
  });
});

describe('poll policy over HTTP', () => {
  it('the deadline and delays of `policy` reach the workflow; progress shows checks answered and failing', async () => {
    const url = page('002', 'api-policy');
    api.stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'api-policy',
      action: 'never_finish',
    });
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: { deadlineMs: 3_000, initialDelayMs: 200, maxDelayMs: 500, jitter: 0 } },
      headers: { 'idempotency-key': 'api-policy-1' },
    });
    expect(r.status).toBe(202);
    const job = (await r.json()) as { job_id: string; status_url: string };
    const done = (await waitForJobState('acme', job.status_url, ['tracking_interrupted'], 60_000)) as unknown as {
      submitted_at: string;
      deadline_at: string;
      progress: { status_checks: number; failing_checks: number; last_checked_at: string | null };
    };
    const deadlineAfterSubmit = Date.parse(done.deadline_at) - Date.parse(done.submitted_at);
    expect(deadlineAfterSubmit).toBeGreaterThanOrEqual(2_500);
    expect(deadlineAfterSubmit).toBeLessThanOrEqual(4_000);
    expect(done.progress).toMatchObject({ status_checks: expect.any(Number), failing_checks: 0 });
    expect(done.progress).toHaveProperty('last_checked_at');
  });
});

describe('listing', () => {
  it('pages through the account’s jobs with a cursor and filters by state', async () => {
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const r = await api.call('lister', 'POST', '/v1/scrapes', {
        json: { url: page('001', `list-${n}`), policy: FAST_POLICY, batch_id: 'list-batch' },
        headers: { 'idempotency-key': `api-list-${n}` },
      });
      expect(r.status).toBe(202);
      ids.push(((await r.json()) as { job_id: string }).job_id);
    }
    for (const id of ids) await waitForState(api.stack.store, id, ['completed']);
    const p1 = (await (await api.call('lister', 'GET', '/v1/scrapes?limit=2&batch_id=list-batch')).json()) as {
      jobs: { job_id: string }[];
      next_cursor: string | null;
    };
    expect(p1.jobs).toHaveLength(2);
    expect(p1.next_cursor).toEqual(expect.any(String));
    const p2 = (await (
      await api.call(
        'lister',
        'GET',
        `/v1/scrapes?limit=2&batch_id=list-batch&cursor=${encodeURIComponent(p1.next_cursor!)}`,
      )
    ).json()) as {
      jobs: { job_id: string }[];
      next_cursor: string | null;
    };
    expect(p2.jobs).toHaveLength(1);
    expect(p2.next_cursor).toBeNull();
    expect([...p1.jobs, ...p2.jobs].map((j) => j.job_id).sort()).toEqual([...ids].sort());
    const completed = (await (await api.call('lister', 'GET', '/v1/scrapes?state=completed')).json()) as {
      jobs: unknown[];
    };
    expect(completed.jobs).toHaveLength(3);
    const pending = (await (await api.call('lister', 'GET', '/v1/scrapes?state=pending,submitting')).json()) as {
      jobs: unknown[];
    };
    expect(pending.jobs).toHaveLength(0);
    const bad = await api.call('lister', 'GET', '/v1/scrapes?state=done');
    expect(bad.status).toBe(400);
    const badCursor = await api.call('lister', 'GET', '/v1/scrapes?cursor=garbage');
    expect(badCursor.status).toBe(400);
    expect(await badCursor.json()).toMatchObject({ type: '/problems/invalid-request' });
  });
});

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document generated from the route schemas, with every endpoint, status and problem type', async () => {
    const r = await api.call(null, 'GET', '/openapi.json');
    expect(r.status).toBe(200);
    const doc = (await r.json()) as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          { responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, unknown> }> }
        >
      >;
    };
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/healthz',
      '/problems/{slug}',
      '/v1/budget-policy',
      '/v1/budgets',
      '/v1/budgets/{id}',
      '/v1/scrapes',
      '/v1/scrapes/{id}',
      '/v1/scrapes/{id}/cancel',
      '/v1/scrapes/{id}/cost',
      '/v1/scrapes/{id}/documents',
      '/v1/scrapes/{id}/result',
      '/v1/webhooks/{provider}',
      '/v1/webhooks/{provider}/{token}',
    ]);
    const documents = doc.paths['/v1/scrapes/{id}/documents']!.get!;
    expect(Object.keys(documents.responses).sort()).toEqual(['200', '400', '401', '404', '409', '410', '429', '503']);
    expect(Object.keys(doc.paths['/v1/webhooks/{provider}/{token}']!.post!.responses).sort()).toEqual([
      '200',
      '202',
      '400',
      '401',
      '404',
      '413',
      '415',
      '429',
      '503',
    ]);
    const post = doc.paths['/v1/scrapes']!.post!;
    expect(Object.keys(post.responses).sort()).toEqual([
      '200',
      '202',
      '400',
      '401',
      '402',
      '413',
      '415',
      '422',
      '429',
      '503',
    ]);
    expect(Object.keys(post.responses['202']!.headers ?? {})).toEqual(['Location', 'Retry-After']);
    expect(Object.keys(post.responses['422']!.content ?? {})).toEqual(['application/problem+json']);
    const result = doc.paths['/v1/scrapes/{id}/result']!.get!;
    // 400: an ID the schema refuses (longer than 300 characters) is declared, so the answer never breaks the document (hostile HTTP input).
    expect(Object.keys(result.responses).sort()).toEqual(['200', '400', '401', '404', '409', '410', '429', '503']);
    expect(Object.keys(doc.paths['/v1/scrapes/{id}']!.get!.responses['200']!.headers ?? {})).toEqual(['Retry-After']);
    // The request schema is the model's: its strictness shows in the document.
    expect(JSON.stringify(doc)).toContain('"additionalProperties":false');
  });

  it('health reports Temporal and the store', async () => {
    const r = await api.call(null, 'GET', '/healthz');
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok', temporal: 'ok', store: 'ok' });
  });
});
