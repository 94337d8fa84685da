/**
 * The `apify` adapter against its fixture server (real HTTP on loopback, no Temporal): every status
 * word, where the token and our reference go, the ad-hoc webhook parameter and its redaction, the
 * concurrency refusal keyed on the error type (402 and 400), rate limits, the replica-lag `404`,
 * dataset pagination with and without `clean` (a filtered window is short or empty mid-dataset and
 * the count header reports the scanned window), expiry of the dataset, result limits, abort
 * (immediate, graceful, no-op on a finished run), reconciliation by listing runs and reading their
 * inputs (bounded), and the webhook payload.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import {
  ApifyAdapter,
  apifyProvider,
  apifyState,
  apifyWebhook,
  statedRunLimit,
  type ApifyEntry,
} from '../../src/providers/apify/index.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { isConcurrencyRefusal } from '../../src/providers/shared/limiter.js';
import { DEFAULT_RESULT_LIMITS, type CallContext, type SubmitContext } from '../../src/providers/adapter.js';
import { startApifyFixture, type ApifyFixture } from '../fixtures/providers/apify/server.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';

let fx: ApifyFixture;
beforeAll(async () => {
  fx = await startApifyFixture();
});
afterAll(async () => fx?.close());

function entry(extra: Record<string, unknown> = {}): ApifyEntry {
  return apifyProvider.entrySchema.parse({
    kind: 'apify',
    credentials: {},
    baseUrl: fx.url,
    actorId: 'acme~site-crawler',
    readTimeoutMs: 3_000,
    submitTimeoutMs: 3_000,
    ...extra,
  });
}
const ctx: CallContext = { apiKey: FIXTURE_KEYS.acme, secrets: [] };
const submitCtx = (ref: string, extra: Partial<SubmitContext> = {}): SubmitContext => ({
  ...ctx,
  idempotencyKey: ref,
  clientRef: ref,
  ...extra,
});
const request = (url: string) => ({ url, format: 'markdown' as const, options: {} });
const resultCtx = (url: string, limits = DEFAULT_RESULT_LIMITS) => ({ ...ctx, url, request: request(url), limits });

async function caught(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ProviderError) return e;
    throw e;
  }
  throw new Error('expected a ProviderError');
}

describe('apify: status words and configuration', () => {
  it('maps every documented status; other words and cases are unrecognised; TIMED-OUT follows timedOutAs', () => {
    expect(
      ['READY', 'RUNNING', 'SUCCEEDED', 'FAILED', 'TIMING-OUT', 'TIMED-OUT', 'ABORTING', 'ABORTED'].map((w) =>
        apifyState(w),
      ),
    ).toEqual(['queued', 'running', 'completed', 'failed', 'running', 'failed', 'running', 'cancelled']);
    expect(apifyState('TIMED-OUT', 'completed')).toBe('completed');
    for (const w of ['Succeeded', 'succeeded', 'PAUSED', 'FINISHED', '']) expect(apifyState(w)).toBe('unrecognised');
    expect(statedRunLimit('By launching this job you will exceed your limit of 5 concurrent Actor runs.')).toBe(5);
    expect(statedRunLimit('no number here')).toBeUndefined();
  });

  it('the entry validates its own fields and refuses webhooks of nothing else; defaults are the documented ones', () => {
    const e = entry();
    expect(e).toMatchObject({
      baseUrl: fx.url,
      actorPath: 'actors',
      tokenIn: 'header',
      input: { urlField: 'startUrls', urlFormat: 'requestList', clientRefField: 'scrapeOrchestratorRef' },
      clean: false,
      timedOutAs: 'failed',
    });
    expect(
      apifyProvider.entrySchema.parse({ kind: 'apify', credentials: {}, actorId: 'HDSasDasz78YcAPEB' }).baseUrl,
    ).toBe('https://api.apify.com');
    expect(() => entry({ actorId: 'apify/crawler' })).toThrow(/tilde/);
    expect(() => entry({ input: { urlField: 'x', clientRefField: 'x' } })).toThrow(/must differ/);
    expect(() => entry({ abortGracefuly: true })).toThrow(/abortGracefuly/);
    expect(() =>
      parseConfig(
        { providers: { a: { kind: 'apify', credentials: {}, actorId: 'a~b', run: { memoryMbytes: 64 } } } },
        {},
      ),
    ).toThrow(/memoryMbytes/);
    // Apify accepts only powers of 2: a memory it would refuse is refused at configuration, naming the rule.
    expect(() =>
      parseConfig(
        { providers: { a: { kind: 'apify', credentials: {}, actorId: 'a~b', run: { memoryMbytes: 1000 } } } },
        {},
      ),
    ).toThrow(/power of 2[\s\S]*providers.a.run.memoryMbytes/);
  });
});

describe('apify: submit', () => {
  it('POST /v2/actors/{actorId}/runs → 201: the run is READY; the input carries the URL and our reference; the token is a Bearer header, never in the URL', async () => {
    const a = new ApifyAdapter(
      'apify',
      entry({
        input: { defaults: { maxCrawlPages: 5 } },
        run: { build: 'beta', timeoutSecs: 300, memoryMbytes: 1024 },
      }),
    );
    const acc = await a.submit(
      {
        url: 'https://shop.example/submit-1',
        format: 'markdown',
        options: { maxCrawlDepth: 1, startUrls: 'overridden' },
      },
      submitCtx('ref-submit-1'),
    );
    expect(acc).toMatchObject({ providerStatus: 'READY', replayed: false });
    const run = fx.runs.get(acc.taskId)!;
    expect(run.input).toEqual({
      maxCrawlPages: 5,
      maxCrawlDepth: 1,
      startUrls: [{ url: 'https://shop.example/submit-1' }],
      scrapeOrchestratorRef: 'ref-submit-1',
    });
    const req = fx.requestsTo('POST', '/v2/actors/acme~site-crawler/runs').at(-1)!;
    expect(req.headers.authorization).toBe(`Bearer ${FIXTURE_KEYS.acme}`);
    expect(req.query).toEqual({ build: 'beta', timeout: '300', memory: '1024' });
  });

  it('tokenIn "query" puts ?token= in the URL; actorPath "acts" uses the deprecated prefix; urlFormat "string"', async () => {
    const a = new ApifyAdapter(
      'apify',
      entry({ tokenIn: 'query', actorPath: 'acts', input: { urlField: 'url', urlFormat: 'string' } }),
    );
    const acc = await a.submit(request('https://shop.example/legacy'), submitCtx('ref-legacy'));
    const req = fx.requestsTo('POST', '/v2/acts/acme~site-crawler/runs').at(-1)!;
    expect(req.query.token).toBe(FIXTURE_KEYS.acme);
    expect(req.headers.authorization).toBeUndefined();
    expect(fx.runs.get(acc.taskId)!.input).toMatchObject({
      url: 'https://shop.example/legacy',
      scrapeOrchestratorRef: 'ref-legacy',
    });
  });

  it('an ad-hoc webhook (terminal events, the per-job callback URL) travels Base64 in ?webhooks=; a refusal records neither it nor the token', async () => {
    const a = new ApifyAdapter('apify', entry({ tokenIn: 'query' }));
    const callbackUrl = `http://127.0.0.1:9/v1/webhooks/apify/${'ab'.repeat(32)}`;
    const acc = await a.submit(request('https://shop.example/hooked'), submitCtx('ref-hook', { callbackUrl }));
    expect(fx.runs.get(acc.taskId)!.webhooks).toEqual([
      {
        eventTypes: ['ACTOR.RUN.SUCCEEDED', 'ACTOR.RUN.FAILED', 'ACTOR.RUN.ABORTED', 'ACTOR.RUN.TIMED_OUT'],
        requestUrl: callbackUrl,
      },
    ]);
    fx.fault({
      endpoint: 'submit',
      status: 400,
      type: 'invalid-input',
      message: 'Input is not valid',
      urlContains: 'refused',
    });
    const err = await caught(
      a.submit(request('https://shop.example/refused'), submitCtx('ref-refused', { callbackUrl })),
    );
    expect(err).toMatchObject({ kind: 'permanent', details: { code: 'invalid-input', httpStatus: 400 } });
    const recorded = JSON.stringify({ message: err.message, evidence: err.details.evidence });
    expect(recorded).not.toContain(FIXTURE_KEYS.acme);
    expect(recorded).not.toContain('ab'.repeat(32));
    expect(recorded).not.toContain('webhooks=W3');
    expect(recorded).toContain('webhooks=[REDACTED]');
  });

  it('concurrent-runs-limit-exceeded is a concurrency refusal whatever its status (402 as clients see it, 400 as an earlier reading of the docs said), with the stated limit', async () => {
    const a = new ApifyAdapter('apify', entry());
    for (const status of [402, 400]) {
      fx.fault({
        endpoint: 'submit',
        status,
        type: 'concurrent-runs-limit-exceeded',
        message: 'By launching this job you will exceed your limit of 3 concurrent Actor runs.',
        urlContains: 'busy',
      });
      const err = await caught(a.submit(request('https://shop.example/busy'), submitCtx(`ref-busy-${status}`)));
      expect(err).toMatchObject({
        kind: 'cooldown',
        details: { code: 'concurrent-runs-limit-exceeded', httpStatus: status, statedLimit: 3 },
      });
      expect(isConcurrencyRefusal(err)).toBe(true);
    }
    fx.fault({
      endpoint: 'submit',
      status: 402,
      type: 'actor-memory-limit-exceeded',
      message: 'By launching this job you will exceed the memory limit of 8192MB',
      urlContains: 'memory',
    });
    expect(await caught(a.submit(request('https://shop.example/memory'), submitCtx('ref-mem')))).toMatchObject({
      kind: 'cooldown',
      details: { code: 'actor-memory-limit-exceeded' },
    });
    fx.fault({
      endpoint: 'submit',
      status: 429,
      type: 'rate-limit-exceeded',
      message: 'You have exceeded the rate limit',
      retryAfterSeconds: 3,
      urlContains: 'rate',
    });
    const rate = await caught(a.submit(request('https://shop.example/rate'), submitCtx('ref-rate')));
    expect(rate).toMatchObject({ kind: 'cooldown', details: { code: 'rate-limit-exceeded', retryAfterMs: 3_000 } });
    expect(isConcurrencyRefusal(rate)).toBe(false);
    const payment =
      (fx.fault({ endpoint: 'submit', status: 402, type: 'not-enough-usage-to-run-paid-actor', urlContains: 'broke' }),
      await caught(a.submit(request('https://shop.example/broke'), submitCtx('ref-broke'))));
    expect(payment.kind).toBe('permanent');
  });

  it('a bad token is a permanent 401 naming Apify’s error type', async () => {
    const a = new ApifyAdapter('apify', entry());
    expect(
      await caught(
        a.submit(request('https://shop.example/x'), { ...submitCtx('ref-x'), apiKey: 'wrong-token-0000000000' }),
      ),
    ).toMatchObject({
      kind: 'permanent',
      details: { code: 'invalid-token', httpStatus: 401 },
    });
  });
});

describe('apify: status, replica lag and expiry', () => {
  it('reports each status word as the run goes; FAILED keeps the status message and the evidence', async () => {
    const a = new ApifyAdapter('apify', entry());
    fx.plan('status-walk', {
      statuses: ['READY', 'RUNNING', 'TIMING-OUT', 'TIMED-OUT'],
      statusMessage: 'Run timed out after 300 s',
    });
    const { taskId } = await a.submit(request('https://shop.example/status-walk'), submitCtx('ref-walk'));
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await a.status(taskId, ctx));
    expect(seen.map((o) => [o.providerStatus, o.state])).toEqual([
      ['READY', 'queued'],
      ['RUNNING', 'running'],
      ['TIMING-OUT', 'running'],
      ['TIMED-OUT', 'failed'],
    ]);
    expect(seen[3]).toMatchObject({
      error: { code: 'TIMED-OUT', message: 'Run timed out after 300 s' },
      evidence: { httpStatus: 200 },
    });
    fx.plan('odd-word', { statuses: ['Succeeded'] });
    const odd = await a.submit(request('https://shop.example/odd-word'), submitCtx('ref-odd'));
    expect(await a.status(odd.taskId, ctx)).toMatchObject({ state: 'unrecognised', providerStatus: 'Succeeded' });
  });

  it('a 404 right after the run was created (replica lag) is not_found at the adapter: the poll loop, not the adapter, applies the kind’s propagation window', async () => {
    fx.plan('lagging', { lag404: 2 });
    const a = new ApifyAdapter('apify', entry());
    const { taskId } = await a.submit(request('https://shop.example/lagging'), submitCtx('ref-lag'));
    expect(await caught(a.status(taskId, ctx))).toMatchObject({
      kind: 'not_found',
      details: { code: 'record-not-found', httpStatus: 404 },
    });
    await caught(a.status(taskId, ctx));
    expect((await a.status(taskId, ctx)).providerStatus).toBe('READY');
  });

  it('an expired run is not_found on every read; a gone dataset is expired', async () => {
    const a = new ApifyAdapter('apify', entry());
    const { taskId } = await a.submit(request('https://shop.example/expire-me'), submitCtx('ref-exp'));
    fx.expire(taskId);
    expect((await caught(a.status(taskId, ctx))).kind).toBe('not_found');
    fx.plan('no-dataset', { statuses: ['SUCCEEDED'], datasetGone: true });
    const gone = await a.submit(request('https://shop.example/no-dataset'), submitCtx('ref-gone'));
    expect(await caught(a.result(gone.taskId, resultCtx('https://shop.example/no-dataset')))).toMatchObject({
      kind: 'expired',
      details: { httpStatus: 404 },
    });
  });
});

describe('apify: dataset items', () => {
  const raw = [
    { url: 'https://d.example/1', title: 'One', text: 'one', '#debug': { at: 1 } },
    {},
    {},
    {},
    { url: 'https://d.example/2', title: 'Two', markdown: '# Two', crawl: { httpStatusCode: 200 } },
    {
      url: 'https://d.example/3',
      metadata: { title: 'Three' },
      loadedUrl: 'https://d.example/3?final',
      '#hidden': 'x',
    },
    { url: 'https://d.example/4', statusCode: 404 },
  ];

  it('without clean: pages of `pageSize` until a short page, every item a document, heartbeat per page', async () => {
    fx.plan('items-plain', { statuses: ['SUCCEEDED'], items: raw });
    const a = new ApifyAdapter('apify', entry());
    const { taskId } = await a.submit(request('https://d.example/items-plain'), submitCtx('ref-plain'));
    const beats: number[] = [];
    const before = fx.requestsTo('GET', `/v2/actor-runs/${taskId}/dataset/items`).length;
    const res = await a.result(taskId, {
      ...resultCtx('https://d.example/items-plain', { ...DEFAULT_RESULT_LIMITS, pageSize: 3 }),
      heartbeat: (p) => beats.push(p.documents),
    });
    const reqs = fx.requestsTo('GET', `/v2/actor-runs/${taskId}/dataset/items`).slice(before);
    expect(reqs.map((r) => [r.query.offset, r.query.limit, r.query.clean])).toEqual([
      ['0', '3', undefined],
      ['3', '3', undefined],
      ['6', '3', undefined],
    ]);
    expect(res.documents).toHaveLength(7);
    expect(beats).toEqual([3, 6, 7]);
    expect(res.documents![0]).toMatchObject({
      url: 'https://d.example/1',
      title: 'One',
      text: 'one',
      data: { '#debug': { at: 1 } },
    });
    expect(res.documents![4]).toMatchObject({ url: 'https://d.example/2', httpStatus: 200, markdown: '# Two' });
    expect(res.documents![5]).toMatchObject({ title: 'Three', finalUrl: 'https://d.example/3?final' });
    expect(res.documents![6]).toMatchObject({ httpStatus: 404 });
    expect(res).toMatchObject({ url: 'https://d.example/items-plain', title: 'One', finalUrl: null });
  });

  it('a run read just after it finished, while its item count lags (X-Apify-Pagination-Total says 100 of 150): every item is read, until a page comes back short of its limit, and the read is not called partial', async () => {
    const items = Array.from({ length: 150 }, (_, i) => ({ url: `https://d.example/lag-${i}` }));
    fx.plan('items-lag', { statuses: ['SUCCEEDED'], items, staleTotal: { total: 100, ms: 60_000 } });
    const a = new ApifyAdapter('apify', entry());
    const { taskId } = await a.submit(request('https://d.example/items-lag'), submitCtx('ref-lag'));
    const res = await a.result(
      taskId,
      resultCtx('https://d.example/items-lag', { ...DEFAULT_RESULT_LIMITS, pageSize: 50 }),
    );
    const reqs = fx.requestsTo('GET', `/v2/actor-runs/${taskId}/dataset/items`);
    expect(reqs.map((r) => r.query.offset)).toEqual(['0', '50', '100', '150']);
    expect(res.documents).toHaveLength(150);
    expect(res.completeness).toEqual({
      expected: 100,
      kept: 150,
      counter: "Apify's dataset item count (`X-Apify-Pagination-Total`)",
      why: 'the dataset pages ended before it',
    });
  });

  it('with clean: a window of empty items answers [] mid-dataset and the count header reports the scanned window; reading goes on to the total', async () => {
    fx.plan('items-clean', { statuses: ['SUCCEEDED'], items: raw });
    const a = new ApifyAdapter('apify', entry({ clean: true }));
    const { taskId } = await a.submit(request('https://d.example/items-clean'), submitCtx('ref-clean'));
    const res = await a.result(
      taskId,
      resultCtx('https://d.example/items-clean', { ...DEFAULT_RESULT_LIMITS, pageSize: 2 }),
    );
    const reqs = fx.requestsTo('GET', `/v2/actor-runs/${taskId}/dataset/items`);
    expect(reqs.map((r) => [r.query.offset, r.query.clean])).toEqual([
      ['0', '1'],
      ['2', '1'],
      ['4', '1'],
      ['6', '1'],
    ]);
    expect(res.documents!.map((d) => d.url)).toEqual([
      'https://d.example/1',
      'https://d.example/2',
      'https://d.example/3',
      'https://d.example/4',
    ]);
    expect(res.documents![0]!.data).not.toHaveProperty('#debug');
    // Filtered items are fewer than the count: the positions scanned are compared, all of them read.
    expect(res.completeness).toMatchObject({ expected: 7, kept: 7 });
  });

  it('more items than results.maxDocuments is RESULT_TOO_LARGE naming the setting', async () => {
    fx.plan('items-big', {
      statuses: ['SUCCEEDED'],
      items: Array.from({ length: 12 }, (_, i) => ({ url: `https://d.example/big-${i}` })),
    });
    const a = new ApifyAdapter('apify', entry());
    const { taskId } = await a.submit(request('https://d.example/items-big'), submitCtx('ref-big'));
    const err = await caught(
      a.result(
        taskId,
        resultCtx('https://d.example/items-big', { ...DEFAULT_RESULT_LIMITS, pageSize: 5, maxDocuments: 10 }),
      ),
    );
    expect(err).toMatchObject({ kind: 'permanent', details: { code: 'RESULT_TOO_LARGE' } });
    expect(err.message).toContain('providers.apify.results.maxDocuments');
  });
});

describe('apify: abort', () => {
  it('aborts a running run at once, or gracefully when configured; a finished run is a 200 no-op reported as already final', async () => {
    fx.plan('abort-me', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    const a = new ApifyAdapter('apify', entry());
    const now = await a.submit(request('https://shop.example/abort-me/1'), submitCtx('ref-ab1'));
    expect(await a.cancel(now.taskId, ctx)).toEqual({ accepted: true, state: 'cancelled', providerStatus: 'ABORTED' });
    const graceful = new ApifyAdapter('apify', entry({ abortGracefully: true }));
    const g = await graceful.submit(request('https://shop.example/abort-me/2'), submitCtx('ref-ab2'));
    expect(await graceful.cancel(g.taskId, ctx)).toEqual({
      accepted: true,
      state: 'running',
      providerStatus: 'ABORTING',
    });
    expect(fx.requestsTo('POST', `/v2/actor-runs/${g.taskId}/abort`)[0]!.query).toEqual({ gracefully: 'true' });
    fx.plan('done-already', { statuses: ['SUCCEEDED'] });
    const done = await a.submit(request('https://shop.example/done-already'), submitCtx('ref-ab3'));
    expect(await a.cancel(done.taskId, ctx)).toEqual({
      accepted: false,
      alreadyFinal: true,
      state: 'completed',
      providerStatus: 'SUCCEEDED',
    });
    expect(fx.runs.get(done.taskId)!.status).toBe('SUCCEEDED');
  });
});

describe('apify: reconcile by listing runs and reading inputs', () => {
  it('finds the run whose stored INPUT carries our reference, skipping runs not started through the API; bounded by maxInputReads', async () => {
    const local = await startApifyFixture();
    try {
      const mk = (extra: Record<string, unknown> = {}) =>
        new ApifyAdapter(
          'apify',
          apifyProvider.entrySchema.parse({
            kind: 'apify',
            credentials: {},
            baseUrl: local.url,
            actorId: 'acme~site-crawler',
            ...extra,
          }),
        );
      const since = new Date().toISOString();
      local.dropAfterCommit('lost-run', { decoys: { api: 2, web: 3 } });
      const a = mk({ reconcileList: { marginMs: 1_000, maxInputReads: 5 } });
      expect((await caught(a.submit(request('https://shop.example/lost-run'), submitCtx('ref-lost')))).kind).toBe(
        'ambiguous',
      );
      const ours = local.runsFor('lost-run')[0]!;
      const [reading] = await a.findSubmitted({
        ...ctx,
        clientRef: 'ref-lost',
        request: request('https://shop.example/lost-run'),
        submittedAfter: since,
      });
      // Every run of the window: the two API decoys (their INPUT read, another reference), the
      // three WEB runs (not started through the API: no read) and ours (strong).
      expect(reading).toMatchObject({
        lookup: 'GET /v2/actors/{actorId}/runs + INPUT record',
        available: true,
        complete: true,
      });
      expect(reading!.candidates.filter((c) => c.match === 'strong')).toEqual([
        expect.objectContaining({ taskId: ours.id, providerStatus: 'READY' }),
      ]);
      expect(reading!.candidates.map((c) => c.match).sort()).toEqual([
        'foreign',
        'foreign',
        'foreign',
        'foreign',
        'foreign',
        'strong',
      ]);
      expect(local.requestsTo('GET', '/v2/actors/acme~site-crawler/runs').map((r) => r.query.offset)).toEqual([
        '0',
        '5',
      ]);
      expect(local.requestsTo('GET', '/v2/key-value-stores/')).toHaveLength(3);
      const [none] = await a.findSubmitted({
        ...ctx,
        clientRef: 'ref-never-sent',
        request: request('https://x'),
        submittedAfter: since,
      });
      expect(none!.candidates.some((c) => c.match === 'strong')).toBe(false);
      expect(none!.complete).toBe(true);
      // More inputs to read than the bound: an incomplete reading (absence cannot be proven from it).
      const tight = mk({ reconcileList: { marginMs: 1_000, maxInputReads: 2 } });
      const [bounded] = await tight.findSubmitted({
        ...ctx,
        clientRef: 'ref-never-sent',
        request: request('https://x'),
        submittedAfter: since,
      });
      expect(bounded).toMatchObject({
        complete: false,
        note: expect.stringContaining('providers.apify.reconcileList.maxInputReads'),
      });
      const [later] = await mk().findSubmitted({
        ...ctx,
        clientRef: 'ref-lost',
        request: request('https://x'),
        submittedAfter: new Date(Date.now() + 600_000).toISOString(),
      });
      expect(later).toMatchObject({ complete: true, candidates: [] });
      // An INPUT record that answers 404 proves nothing about whose run it is.
      local.dropAfterCommit('no-input', { decoys: { api: 0, web: 0 } });
      expect((await caught(a.submit(request('https://shop.example/no-input'), submitCtx('ref-noinput')))).kind).toBe(
        'ambiguous',
      );
      const run = local.runsFor('no-input')[0]!;
      (run as { input?: unknown }).input = undefined;
      const [unread] = await mk({ reconcileList: { marginMs: 1_000, maxInputReads: 25 } }).findSubmitted({
        ...ctx,
        clientRef: 'ref-noinput',
        request: request('https://shop.example/no-input'),
        submittedAfter: since,
      });
      expect(unread!.candidates.find((c) => c.taskId === run.id)).toMatchObject({
        match: 'unreadable',
        why: expect.stringContaining('404'),
      });
    } finally {
      await local.close();
    }
  });
});

describe('apify: webhook payload', () => {
  const body = {
    userId: 'u1',
    createdAt: '2026-11-30T10:00:00.000Z',
    eventType: 'ACTOR.RUN.SUCCEEDED',
    eventData: { actorId: 'act1', actorRunId: 'run123' },
    resource: { id: 'run123', status: 'SUCCEEDED' },
  };
  it('is unsigned; the dispatch ID header is the event ID; the run comes from eventData or resource', () => {
    expect(apifyWebhook.signed({})).toBe(false);
    const p = apifyWebhook.parse(body, { 'x-apify-webhook-dispatch-id': 'disp-1' }, Buffer.from(JSON.stringify(body)));
    expect(p).toEqual({
      ok: true,
      event: {
        eventId: 'disp-1',
        type: 'ACTOR.RUN.SUCCEEDED',
        taskId: 'run123',
        clientRef: null,
        providerStatus: 'SUCCEEDED',
      },
    });
    expect(apifyWebhook.claimedEventId!(body, { 'x-apify-webhook-dispatch-id': 'disp-1' })).toBe('disp-1');
    const noHeader = apifyWebhook.parse({ ...body, eventData: undefined }, {}, Buffer.from('{}'));
    expect(noHeader).toMatchObject({ ok: true, event: { eventId: '', taskId: 'run123' } });
    expect(apifyWebhook.parse({ eventType: 'ACTOR.RUN.FAILED' }, {}, Buffer.from('{}'))).toMatchObject({ ok: false });
    expect(apifyWebhook.parse({ nope: 1 }, {}, Buffer.from('{}'))).toMatchObject({ ok: false });
  });
});
