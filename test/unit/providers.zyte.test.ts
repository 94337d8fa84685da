/**
 * The `zyte` adapter against its fixture servers (the Jobs API and the storage API on two loopback
 * origins, no Temporal): the run.json form (project, spider, our tag, URL and reference as spider
 * arguments), Basic auth with the key as user name or `?apikey=`, every state and close reason,
 * `deleted` and `404` as expiry, items paged with `start=P/S/J/N&count`, stop, reconcile by tag,
 * and Zyte's refusal of a second job with the same arguments ("already scheduled").
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { DEFAULT_RESULT_LIMITS, type CallContext, type SubmitContext } from '../../src/providers/adapter.js';
import { ZyteAdapter, zyteProvider, zyteState, type ZyteEntry } from '../../src/providers/zyte/index.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { startZyteFixture, type ZyteFixture } from '../fixtures/providers/zyte/server.js';

let fx: ZyteFixture;
beforeAll(async () => {
  fx = await startZyteFixture();
});
afterAll(async () => fx?.close());

function entry(extra: Record<string, unknown> = {}): ZyteEntry {
  return zyteProvider.entrySchema.parse({
    kind: 'zyte',
    credentials: {},
    baseUrl: fx.url,
    storageUrl: fx.storageUrl,
    project: 123,
    spider: 'quotes',
    ...extra,
  });
}
const ctx: CallContext = { apiKey: FIXTURE_KEYS.acme, secrets: [] };
const submitCtx = (ref: string): SubmitContext => ({ ...ctx, idempotencyKey: ref, clientRef: ref });
const request = (url: string, options: Record<string, unknown> = {}) => ({ url, format: 'markdown' as const, options });

async function caught(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ProviderError) return e;
    throw e;
  }
  throw new Error('expected a ProviderError');
}

describe('zyte: states and configuration', () => {
  it('maps pending, running and every known close reason; unknown words and reasons are unrecognised; the entry overrides close reasons', () => {
    expect(zyteState('pending', undefined)).toBe('queued');
    expect(zyteState('running', undefined)).toBe('running');
    const reasons: [string, string][] = [
      ['finished', 'completed'],
      ['closespider_itemcount', 'completed'],
      ['closespider_pagecount', 'completed'],
      ['closespider_timeout', 'completed'],
      ['cancelled', 'cancelled'],
      ['cancelled (stalled)', 'cancelled'],
      ['cancel_timeout', 'cancelled'],
      ['failed', 'failed'],
      ['shutdown', 'failed'],
      ['memusage_exceeded', 'failed'],
      ['diskusage_exceeded', 'failed'],
      ['closespider_errorcount', 'failed'],
      ['slybot_fewitems_scraped', 'failed'],
      ['something_new', 'unrecognised'],
    ];
    for (const [reason, state] of reasons) expect(zyteState('finished', reason), reason).toBe(state);
    expect(zyteState('finished', undefined)).toBe('unrecognised');
    expect(zyteState('Running', undefined)).toBe('unrecognised');
    expect(zyteState('paused', undefined)).toBe('unrecognised');
    expect(zyteState('finished', 'something_new', { something_new: 'completed' })).toBe('completed');
  });

  it('the entry: defaults, required project and spider, reserved argument names refused, no webhooks', () => {
    const e = entry();
    expect(e).toMatchObject({
      project: '123',
      spider: 'quotes',
      auth: 'basic',
      tagPrefix: 'scrape-ref-',
      refArgument: 'scrape_ref',
      urlArgument: 'url',
    });
    expect(zyteProvider.entrySchema.parse({ kind: 'zyte', credentials: {}, project: '7', spider: 's' })).toMatchObject({
      baseUrl: 'https://app.zyte.com/api',
      storageUrl: 'https://storage.zyte.com',
    });
    expect(() => entry({ project: 'abc' })).toThrow(/numeric project ID/);
    expect(() => entry({ jobArgs: { units: '2' } })).toThrow(/run.json fields/);
    expect(() => entry({ refArgument: 'add_tag' })).toThrow(/reserved/);
    expect(() =>
      parseConfig(
        {
          providers: {
            z: {
              kind: 'zyte',
              credentials: {},
              project: 1,
              spider: 's',
              webhook: { url: 'https://h/v1/webhooks/z', secretEnv: 'S' },
            },
          },
        },
        {},
      ),
    ).toThrow(/has no webhooks/);
    expect(() => new ZyteAdapter('z', entry({ refArgument: 'url' }))).toThrow(/must differ/);
  });
});

describe('zyte: a job end to end', () => {
  it('run.json gets project, spider, our tag, the URL and our reference; Basic auth with the key as user name; the job key P/S/J; status by metadata; items paged by start key', async () => {
    fx.plan('e2e', {
      items: Array.from({ length: 5 }, (_, i) => ({
        url: `https://q.example/${i}`,
        title: `Q${i}`,
        text: `quote ${i}`,
        author: 'A',
      })),
    });
    const a = new ZyteAdapter(
      'zyte',
      entry({ jobArgs: { lang: 'en' }, units: 2, priority: 3, jobSettings: { CLOSESPIDER_PAGECOUNT: 10 } }),
    );
    const acc = await a.submit(request('https://q.example/e2e', { depth: 2, follow: true }), submitCtx('ref-e2e'));
    expect(acc).toEqual({ taskId: expect.stringMatching(/^123\/1\/\d+$/), providerStatus: 'pending', replayed: false });
    const run = fx.app.requestsTo('POST', '/api/run.json').at(-1)!;
    expect(run.body).toEqual({
      lang: 'en',
      depth: '2',
      follow: 'true',
      url: 'https://q.example/e2e',
      scrape_ref: 'ref-e2e',
      project: '123',
      spider: 'quotes',
      add_tag: 'scrape-ref-ref-e2e',
      priority: '3',
      units: '2',
      job_settings: '{"CLOSESPIDER_PAGECOUNT":10}',
    });
    expect(run.headers.authorization).toBe(`Basic ${Buffer.from(`${FIXTURE_KEYS.acme}:`).toString('base64')}`);
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await a.status(acc.taskId, ctx));
    expect(seen.map((o) => [o.providerStatus, o.state])).toEqual([
      ['pending', 'queued'],
      ['running', 'running'],
      ['finished/finished', 'completed'],
    ]);
    expect(seen[2]!.progress).toEqual({ documents: 5, pagesFetched: 6 });
    expect(fx.storage.requestsTo('GET', `/jobs/${acc.taskId}`)).toHaveLength(3);
    const res = await a.result(acc.taskId, {
      ...ctx,
      url: 'https://q.example/e2e',
      request: request('https://q.example/e2e'),
      limits: { ...DEFAULT_RESULT_LIMITS, pageSize: 2 },
    });
    expect(
      fx.storage.requestsTo('GET', `/items/${acc.taskId}`).map((r) => [r.query.start, r.query.count, r.query.format]),
    ).toEqual([
      [`${acc.taskId}/0`, '2', 'json'],
      [`${acc.taskId}/2`, '2', 'json'],
      [`${acc.taskId}/4`, '2', 'json'],
    ]);
    expect(res.documents!.map((d) => d.url)).toEqual([0, 1, 2, 3, 4].map((i) => `https://q.example/${i}`));
    expect(res.documents![0]).toMatchObject({ title: 'Q0', text: 'quote 0', data: { author: 'A' } });
    // The items read are compared with the job's own count (its metadata read once more): all 5.
    expect(fx.storage.requestsTo('GET', `/jobs/${acc.taskId}`)).toHaveLength(4);
    expect(res.completeness).toMatchObject({ expected: 5, kept: 5, counter: "Zyte's `item_scraped_count`" });
  });

  it('auth "query" sends ?apikey= on both APIs; errors never carry the key', async () => {
    const a = new ZyteAdapter('zyte', entry({ auth: 'query' }));
    const acc = await a.submit(request('https://q.example/query-auth'), submitCtx('ref-q'));
    await a.status(acc.taskId, ctx);
    expect(fx.app.requestsTo('POST', '/api/run.json').at(-1)!.query.apikey).toBe(FIXTURE_KEYS.acme);
    expect(fx.storage.requestsTo('GET', `/jobs/${acc.taskId}`).at(-1)!.query.apikey).toBe(FIXTURE_KEYS.acme);
    const err = await caught(a.status(acc.taskId, { ...ctx, apiKey: 'wrong-key-00000000000000' }));
    expect(err).toMatchObject({ kind: 'permanent', details: { httpStatus: 401 } });
    expect(JSON.stringify({ m: err.message, e: err.details.evidence })).not.toMatch(/wrong-key-0000/);
  });

  it('failed close reasons keep the reason as the code; deleted is expired; a 404 on a known job is not_found; items gone are expired', async () => {
    const a = new ZyteAdapter('zyte', entry());
    fx.plan('mem', { closeReason: 'memusage_exceeded' });
    const mem = await a.submit(request('https://q.example/mem'), submitCtx('ref-mem'));
    await a.status(mem.taskId, ctx);
    await a.status(mem.taskId, ctx);
    expect(await a.status(mem.taskId, ctx)).toMatchObject({
      state: 'failed',
      providerStatus: 'finished/memusage_exceeded',
      error: { code: 'memusage_exceeded' },
      evidence: { httpStatus: 200 },
    });
    const del = await a.submit(request('https://q.example/deleted'), submitCtx('ref-del'));
    fx.setState(del.taskId, 'deleted');
    expect(await caught(a.status(del.taskId, ctx))).toMatchObject({
      kind: 'expired',
      details: { code: 'JOB_DELETED' },
    });
    const gone = await a.submit(request('https://q.example/gone'), submitCtx('ref-gone'));
    fx.expire(gone.taskId);
    expect((await caught(a.status(gone.taskId, ctx))).kind).toBe('not_found');
    expect(
      (await caught(a.result(gone.taskId, { ...ctx, url: 'u', request: request('u'), limits: DEFAULT_RESULT_LIMITS })))
        .kind,
    ).toBe('expired');
    expect(await caught(a.status('not-a-key', ctx))).toMatchObject({
      kind: 'permanent',
      details: { code: 'BAD_TASK_ID' },
    });
  });

  it('stop.json: pending and running jobs finish cancelled; a finished job is left alone', async () => {
    const a = new ZyteAdapter('zyte', entry());
    fx.plan('stop-me', { hold: true });
    const pend = await a.submit(request('https://q.example/stop-me/1'), submitCtx('ref-s1'));
    expect(await a.cancel(pend.taskId, ctx)).toEqual({ accepted: true });
    expect(await a.status(pend.taskId, ctx)).toMatchObject({
      state: 'cancelled',
      providerStatus: 'finished/cancelled',
    });
    expect(fx.app.requestsTo('POST', '/api/jobs/stop.json').at(-1)!.body).toEqual({ project: '123', job: pend.taskId });
    fx.plan('stop-late', { states: ['finished'] });
    const done = await a.submit(request('https://q.example/stop-late'), submitCtx('ref-s2'));
    await a.status(done.taskId, ctx);
    expect(await a.cancel(done.taskId, ctx)).toEqual({ accepted: true });
    expect(fx.jobs.get(done.taskId)).toMatchObject({ state: 'finished', closeReason: 'finished' });
  });
});

describe('zyte: reconcile by tag and the duplicate-job refusal', () => {
  it('findSubmitted lists by our tag, one request per state (pending, running, finished, deleted): every job it shows carries our reference (strong)', async () => {
    const a = new ZyteAdapter('zyte', entry());
    fx.plan('lost', { hold: true, states: ['running', 'finished'] });
    fx.dropAfterCommit('lost');
    expect((await caught(a.submit(request('https://q.example/lost'), submitCtx('ref-lost')))).kind).toBe('ambiguous');
    const job = fx.jobsFor('lost')[0]!;
    await a.status(job.id, ctx); // → running
    const before = fx.app.requestsTo('GET', '/api/jobs/list.json').length;
    const [reading] = await a.findSubmitted({
      ...ctx,
      clientRef: 'ref-lost',
      request: request('https://q.example/lost'),
      submittedAfter: new Date().toISOString(),
    });
    expect(reading).toMatchObject({
      lookup: 'GET /jobs/list.json?has_tag&state',
      available: true,
      complete: true,
      candidates: [{ taskId: job.id, providerStatus: 'running', match: 'strong' }],
    });
    const lists = fx.app.requestsTo('GET', '/api/jobs/list.json').slice(before);
    expect(lists.map((r) => [r.query.state, r.query.has_tag, r.query.spider])).toEqual([
      ['pending', 'scrape-ref-ref-lost', 'quotes'],
      ['running', 'scrape-ref-ref-lost', 'quotes'],
      ['finished', 'scrape-ref-ref-lost', 'quotes'],
      ['deleted', 'scrape-ref-ref-lost', 'quotes'],
    ]);
    const [none] = await a.findSubmitted({
      ...ctx,
      clientRef: 'ref-none',
      request: request('x'),
      submittedAfter: new Date().toISOString(),
    });
    expect(none!.candidates).toEqual([]);
  });

  it('"already scheduled" with our reference as an argument: our own job is adopted (replayed), or — not listed yet — the submit is ambiguous; without it, a transient retry', async () => {
    const a = new ZyteAdapter('zyte', entry());
    fx.plan('twice', { hold: true });
    const first = await a.submit(request('https://q.example/twice'), submitCtx('ref-twice'));
    const again = await a.submit(request('https://q.example/twice'), submitCtx('ref-twice'));
    expect(again).toEqual({ taskId: first.taskId, providerStatus: 'pending', replayed: true });
    expect(fx.duplicateRefusals).toBe(1);
    expect(fx.jobsFor('twice')).toHaveLength(1);
    // Another reference, same URL: other spider arguments, so Zyte accepts a second job.
    expect((await a.submit(request('https://q.example/twice'), submitCtx('ref-twice-b'))).taskId).not.toBe(
      first.taskId,
    );

    fx.listLagMs = 60_000;
    try {
      const err = await caught(a.submit(request('https://q.example/twice'), submitCtx('ref-twice')));
      expect(err).toMatchObject({ kind: 'ambiguous', details: { code: 'ALREADY_SCHEDULED', httpStatus: 400 } });
    } finally {
      fx.listLagMs = 0;
    }
    const anon = new ZyteAdapter('zyte', entry({ refArgument: null }));
    fx.plan('anon', { hold: true });
    await anon.submit(request('https://q.example/anon'), submitCtx('ref-anon-1'));
    const twin = await caught(anon.submit(request('https://q.example/anon'), submitCtx('ref-anon-2')));
    expect(twin).toMatchObject({ kind: 'transient', details: { code: 'ALREADY_SCHEDULED' } });
    expect(twin.message).toMatch(/already scheduled/);
  });

  it('options named like run.json fields, or null, are refused with the reason (nothing dropped silently)', async () => {
    const a = new ZyteAdapter('zyte', entry());
    expect(await caught(a.submit(request('https://q.example/bad', { units: 3 }), submitCtx('ref-bad')))).toMatchObject({
      kind: 'permanent',
      details: { code: 'BAD_OPTIONS' },
    });
    expect(
      await caught(a.submit(request('https://q.example/bad', { depth: null }), submitCtx('ref-bad2'))),
    ).toMatchObject({
      kind: 'permanent',
      details: { code: 'BAD_OPTIONS' },
    });
    expect(fx.jobsFor('q.example/bad')).toHaveLength(0);
  });
});

describe('zyte: refusals in 200 answers (the legacy API’s `{"status": "error"}`, its HTTP status not documented)', () => {
  let legacy: Server;
  let url = '';
  beforeAll(async () => {
    // A Jobs API that refuses in 200 answers, as python-scrapinghub's legacy client reads them.
    legacy = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          status: 'error',
          message: req.url?.startsWith('/run.json') ? 'Spider not found' : 'Job not running',
        }),
      );
    });
    await new Promise<void>((r) => legacy.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(legacy.address() as { port: number }).port}`;
  });
  afterAll(async () => new Promise<void>((r) => legacy?.close(() => r())));

  it('a submit refused in a 200 answer is permanent (the job fails with Zyte’s words, nothing was created), never ambiguous', async () => {
    const a = new ZyteAdapter('zyte', entry({ baseUrl: url }));
    const err = await caught(a.submit(request('https://q.example/legacy'), submitCtx('ref-legacy')));
    expect(err).toMatchObject({ kind: 'permanent', details: { httpStatus: 200 } });
    expect(err.message).toContain('Spider not found');
  });
});
