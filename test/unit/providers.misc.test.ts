/**
 * The `scraperapi`, `brightdata` and `oxylabs` kinds without Temporal: configuration (defaults,
 * refusals), status words, the submit bodies (the credential in the body or Basic auth, never in
 * a URL), the Bright Data IP-block guard (a simulated 429 storm in virtual time never puts 25
 * refusals in any 5-minute window), reconciliation bounds, ScraperAPI's `targetErrors`, and the
 * webhook parsers. HTTP goes to the kinds' fixture servers on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import type { ScrapeRequest } from '../../src/model/types.js';
import {
  BRIGHTDATA_BLOCK_AT,
  BRIGHTDATA_BLOCK_WINDOW_MS,
  brightDataProvider,
  brightDataState,
  brightDataWebhook,
  RefusalWindow,
  statedRunningJobsLimit,
} from '../../src/providers/brightdata/index.js';
import { isProviderError } from '../../src/providers/shared/errors.js';
import { oxylabsProvider, oxylabsState, oxylabsWebhook } from '../../src/providers/oxylabs/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { scraperApiProvider, scraperApiState, scraperApiWebhook } from '../../src/providers/scraperapi/index.js';
import { DEFAULT_RESULT_LIMITS, type SubmitContext } from '../../src/providers/adapter.js';
import {
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
} from '../fixtures/providers/brightdata/server.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { OXYLABS_FIXTURE_CREDENTIALS } from '../fixtures/providers/oxylabs/server.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../fixtures/providers/scraperapi/server.js';

const request = (url: string, options: Record<string, unknown> = {}): ScrapeRequest => ({
  url,
  format: 'markdown',
  options,
});
const submitCtx = (apiKey: string, extra: Partial<SubmitContext> = {}): SubmitContext => ({
  apiKey,
  secrets: [],
  idempotencyKey: '00000000-0000-4000-8000-000000000001',
  clientRef: 'ref-1',
  ...extra,
});

describe('configuration of the three kinds', () => {
  it('defaults: public base URLs, timeouts, and the kinds’ own fields', () => {
    const c = parseConfig(
      {
        providers: {
          sa: { kind: 'scraperapi', credentials: {} },
          bd: { kind: 'brightdata', datasetId: 'gd_x', credentials: {} },
          ox: { kind: 'oxylabs', credentials: {} },
        },
      },
      {},
    );
    expect(c.providers.sa).toMatchObject({
      baseUrl: 'https://async.scraperapi.com',
      failureReport: 'both',
      targetErrors: 'completed',
      apiParams: {},
    });
    expect(c.providers.bd).toMatchObject({
      baseUrl: 'https://api.brightdata.com',
      download: { batchSize: 1000 },
      rateLimit: { maxRefusals: 10, windowMs: BRIGHTDATA_BLOCK_WINDOW_MS, backoffMs: 2_000, maxBackoffMs: 32_000 },
      listing: { limit: 200, maxInputReads: 25, marginMs: 60_000 },
      trigger: { includeErrors: true },
    });
    expect(c.providers.ox).toMatchObject({ baseUrl: 'https://data.oxylabs.io', source: 'universal', params: {} });
  });

  it('bad fields are refused with a reason: no dataset, a batch under 1000, a misspelt field, a refusal budget at the block', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ kind: 'brightdata' }, /datasetId/],
      [{ kind: 'brightdata', datasetId: 'gd_x', download: { batchSize: 500 } }, /batchSize/],
      [{ kind: 'brightdata', datasetId: 'gd_x', rateLimit: { maxRefusals: 25 } }, /maxRefusals/],
      [{ kind: 'scraperapi', failureReport: 'sometimes' }, /failureReport/],
      [{ kind: 'oxylabs', sorce: 'universal' }, /sorce/],
    ];
    for (const [entry, why] of bad)
      expect(() => parseConfig({ providers: { p: { credentials: {}, ...entry } } }, {}), JSON.stringify(entry)).toThrow(
        why,
      );
  });

  it('a Bright Data entry whose refusal budget plus concurrent calls could reach 25 × 429 is refused when the worker builds it', () => {
    const config = parseConfig(
      {
        providers: {
          bd: {
            kind: 'brightdata',
            datasetId: 'gd_x',
            credentials: {},
            rateLimit: { maxRefusals: 20 },
            limits: { maxConcurrent: 8 },
          },
        },
      },
      {},
    );
    expect(() => new ProviderRegistry(config, {})).toThrow(
      /maxRefusals \(20\) \+ limits.maxConcurrent \(8\) − 1 = 27 .*IP block at 25/,
    );
  });
});

describe('status words', () => {
  it('maps each kind’s documented words, reports anything else (another case, a new word) as unrecognised', () => {
    expect(
      ['running', 'finished', 'failed', 'cancelled', 'Canceled', 'Finished', 'stalled', ''].map(scraperApiState),
    ).toEqual([
      'running',
      'completed',
      'failed',
      'cancelled',
      'cancelled',
      'unrecognised',
      'unrecognised',
      'unrecognised',
    ]);
    expect(['starting', 'running', 'ready', 'failed', 'canceled', 'Ready', 'building'].map(brightDataState)).toEqual([
      'queued',
      'running',
      'completed',
      'failed',
      'cancelled',
      'unrecognised',
      'unrecognised',
    ]);
    expect(['pending', 'done', 'faulted', 'Done', 'cancelled'].map(oxylabsState)).toEqual([
      'running',
      'completed',
      'failed',
      'unrecognised',
      'unrecognised',
    ]);
  });

  it('reads the running-jobs limit Bright Data states in its refusal', () => {
    expect(statedRunningJobsLimit('You have too many running jobs for this dataset. … Running jobs: 12>=10')).toBe(10);
    expect(statedRunningJobsLimit('Too many requests')).toBeUndefined();
  });
});

describe('submit bodies', () => {
  const sa = (entry: Record<string, unknown> = {}) =>
    scraperApiProvider.create(
      'sa',
      scraperApiProvider.entrySchema.parse({ kind: 'scraperapi', credentials: {}, ...entry }),
    );

  it('ScraperAPI: options first, entry apiParams merged under the job’s, our URL/meta/callback last; both failure flags with a callback, none without', () => {
    const a = sa({ apiParams: { country_code: 'us', render: false }, timeoutSec: 600 }) as unknown as {
      submitBody: (r: ScrapeRequest, c: SubmitContext) => Record<string, unknown>;
    };
    const withCb = a.submitBody(
      request('https://example.com/a', {
        apiParams: { render: true },
        url: 'https://evil.example/',
        meta: { mine: 1 },
      }),
      submitCtx('k', { callbackUrl: 'https://api.example.com/v1/webhooks/sa/' + 'a'.repeat(64) }),
    );
    expect(withCb).toEqual({
      timeoutSec: 600,
      apiParams: { country_code: 'us', render: true },
      url: 'https://example.com/a',
      meta: { mine: 1, scrapeOrchestratorRef: 'ref-1' },
      callback: { type: 'webhook', url: 'https://api.example.com/v1/webhooks/sa/' + 'a'.repeat(64) },
      expectUnsuccessReport: true,
      expectsUnsuccessReport: true,
    });
    const plain = a.submitBody(request('https://example.com/a'), submitCtx('k'));
    expect(plain).not.toHaveProperty('callback');
    expect(plain).not.toHaveProperty('expectUnsuccessReport');
    const one = (sa({ failureReport: 'expectsUnsuccessReport' }) as unknown as typeof a).submitBody(
      request('https://example.com/a'),
      submitCtx('k', { callbackUrl: 'https://h/x' }),
    );
    expect(one).toMatchObject({ expectsUnsuccessReport: true });
    expect(one).not.toHaveProperty('expectUnsuccessReport');
  });

  it('Oxylabs: entry params, then options, then source/url/client_notes/callback_url; a credential without a colon is refused before any call', async () => {
    const a = oxylabsProvider.create(
      'ox',
      oxylabsProvider.entrySchema.parse({
        kind: 'oxylabs',
        baseUrl: 'http://127.0.0.1:9',
        credentials: {},
        params: { geo_location: 'Germany', render: 'html' },
      }),
    );
    const body = (
      a as unknown as { submitBody: (r: ScrapeRequest, c: SubmitContext) => Record<string, unknown> }
    ).submitBody(
      request('https://example.com/a', { render: null, source: 'amazon', client_notes: 'x' }),
      submitCtx('u:p', { callbackUrl: 'https://h/cb' }),
    );
    expect(body).toEqual({
      geo_location: 'Germany',
      render: null,
      source: 'amazon',
      url: 'https://example.com/a',
      client_notes: 'ref-1',
      callback_url: 'https://h/cb',
    });
    const err = await a.submit(request('https://example.com/a'), submitCtx('no-colon')).catch((e) => e);
    expect(isProviderError(err) && err.kind === 'permanent' && err.details.code === 'BAD_CREDENTIALS').toBe(true);
    expect(err.message).not.toContain('no-colon');
  });
});

describe('the Bright Data IP-block guard', () => {
  it('holds every call once maxRefusals are in the window, until the oldest leaves it; back-off doubles to its cap', () => {
    let now = 0;
    const w = new RefusalWindow(300_000, 3, () => now);
    expect([w.record(), w.heldForMs()]).toEqual([1, 0]);
    now = 10_000;
    w.record();
    now = 20_000;
    expect(w.record()).toBe(3);
    expect(w.heldForMs()).toBe(280_000);
    now = 300_001;
    expect([w.count(), w.heldForMs()]).toEqual([2, 0]);
    expect([1, 2, 3, 4, 5, 6, 9].map((n) => RefusalWindow.backoffMs(n, 2_000, 32_000))).toEqual([
      2_000, 4_000, 8_000, 16_000, 32_000, 32_000, 32_000,
    ]);
  });

  it('a 30-minute storm of 50 jobs against a provider that refuses every call: no 5-minute window ever holds 25 refusals (virtual time)', () => {
    const maxRefusals = 10;
    const maxConcurrent = 8;
    let now = 0;
    const w = new RefusalWindow(BRIGHTDATA_BLOCK_WINDOW_MS, maxRefusals, () => now);
    const next = Array.from({ length: 50 }, () => 0);
    let keyCoolUntil = 0;
    const refusals: number[] = [];
    for (now = 0; now < 30 * 60_000; now += 100) {
      if (now < keyCoolUntil || w.heldForMs() > 0) continue;
      // Every caller that is due goes out at once, up to the concurrent-call limit: all in flight
      // before the first refusal is counted (the worst case for the guard).
      const due = next
        .map((t, i) => (t <= now ? i : -1))
        .filter((i) => i >= 0)
        .slice(0, maxConcurrent);
      for (const i of due) {
        const n = w.record();
        refusals.push(now);
        const wait = Math.max(RefusalWindow.backoffMs(n, 2_000, 32_000), w.heldForMs());
        keyCoolUntil = Math.max(keyCoolUntil, now + wait);
        next[i] = now + wait;
      }
    }
    let worst = 0;
    for (let i = 0, j = 0; i < refusals.length; i++) {
      while (refusals[i]! - refusals[j]! >= BRIGHTDATA_BLOCK_WINDOW_MS) j++;
      worst = Math.max(worst, i - j + 1);
    }
    expect(refusals.length).toBeGreaterThan(maxRefusals); // the storm did go on for 30 minutes
    expect(worst).toBeLessThanOrEqual(maxRefusals + maxConcurrent - 1);
    expect(worst).toBeLessThan(BRIGHTDATA_BLOCK_AT);
  });
});

describe('Bright Data reconciliation bounds (fixture on loopback)', () => {
  let fx: BrightDataFixture;
  beforeAll(async () => {
    fx = await startBrightDataFixture();
  });
  afterAll(async () => fx?.close());

  it('snapshots since the submit are read input by input: another input is not ours, our input only a weak match (Bright Data keeps nothing of ours); more candidates than inputs it may read: an incomplete reading, never absence', async () => {
    const adapter = brightDataProvider.create(
      'bd',
      brightDataProvider.entrySchema.parse({
        kind: 'brightdata',
        baseUrl: fx.url,
        datasetId: BRIGHTDATA_FIXTURE_DATASET,
        credentials: {},
        listing: { maxInputReads: 2 },
      }),
    );
    const after = new Date(Date.now() - 1_000).toISOString();
    fx.addForeign([{ url: 'https://example.com/before-the-submit' }]).created = new Date(
      Date.now() - 20_000,
    ).toISOString(); // in the skew margin
    const find = async (url: string, since = after) =>
      (
        await adapter.findSubmitted({
          apiKey: FIXTURE_KEYS.acme,
          secrets: [],
          clientRef: 'r',
          request: request(url),
          submittedAfter: since,
        })
      )[0]!;
    fx.addForeign([{ url: 'https://example.com/other-1' }]);
    const two = await find('https://example.com/mine');
    expect(two).toMatchObject({ complete: true });
    expect(two.candidates.map((c) => c.match)).toEqual(['foreign', 'foreign']);
    fx.addForeign([{ url: 'https://example.com/other-2' }]);
    fx.addForeign([{ url: 'https://example.com/other-3' }]);
    const bounded = await find('https://example.com/mine');
    expect(bounded).toMatchObject({ complete: false, note: expect.stringContaining('listing.maxInputReads') });
    const submitted = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    const mine = fx.addForeign([{ url: 'https://example.com/mine' }]);
    const withMine = await find('https://example.com/mine', submitted);
    expect(withMine.candidates[0]).toMatchObject({ taskId: mine.id, match: 'weak' });
    expect(withMine.candidates.some((c) => c.match === 'strong')).toBe(false);
  });
});

describe('ScraperAPI targetErrors (fixture on loopback)', () => {
  let fx: ScraperApiFixture;
  beforeAll(async () => {
    fx = await startScraperApiFixture();
  });
  afterAll(async () => fx?.close());

  it('a finished job whose target answered 403: completed with HTTP 403 by default, failed TARGET_HTTP_403 with targetErrors "failed"', async () => {
    const answer = {
      status: 200,
      json: {
        id: 'j1',
        status: 'finished',
        url: 'https://example.com/blocked',
        response: {
          statusCode: 403,
          headers: { 'content-type': 'text/html' },
          body: '<html><head><title>Denied</title></head><body>no</body></html>',
        },
      },
    };
    const make = (targetErrors: string) =>
      scraperApiProvider.create(
        'sa',
        scraperApiProvider.entrySchema.parse({ kind: 'scraperapi', baseUrl: fx.url, credentials: {}, targetErrors }),
      );
    fx.script('j1', answer, answer);
    const done = await make('completed').status('j1', { apiKey: FIXTURE_KEYS.acme, secrets: [] });
    expect(done).toMatchObject({
      state: 'completed',
      providerStatus: 'finished',
      result: { httpStatus: 403, title: 'Denied', url: 'https://example.com/blocked' },
    });
    const failed = await make('failed').status('j1', { apiKey: FIXTURE_KEYS.acme, secrets: [] });
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'TARGET_HTTP_403' } });
    expect(JSON.stringify(failed.evidence)).not.toContain(FIXTURE_KEYS.acme);
  });

  it('the result read of a finished answer without response is "not ready", never an empty page', async () => {
    fx.script('j2', { status: 200, json: { id: 'j2', status: 'finished' } });
    const a = scraperApiProvider.create(
      'sa',
      scraperApiProvider.entrySchema.parse({ kind: 'scraperapi', baseUrl: fx.url, credentials: {} }),
    );
    const err = await a
      .result('j2', {
        apiKey: FIXTURE_KEYS.acme,
        secrets: [],
        url: 'https://example.com/',
        request: request('https://example.com/'),
        limits: DEFAULT_RESULT_LIMITS,
      })
      .catch((e) => e);
    expect(isProviderError(err) && err.kind === 'transient' && err.details.code === 'NOT_READY').toBe(true);
  });
});

describe('webhook parsers', () => {
  it('event IDs are <task>:<status> (stable across redeliveries); task, reference and status are read; bad payloads are refused with the reason', () => {
    expect(scraperApiWebhook.signed({})).toBe(false);
    expect(
      scraperApiWebhook.parse(
        { id: 'j1', status: 'finished', meta: { scrapeOrchestratorRef: 'ref-9' } },
        {},
        Buffer.from(''),
      ),
    ).toEqual({
      ok: true,
      event: {
        eventId: 'j1:finished',
        type: 'job.finished',
        taskId: 'j1',
        clientRef: 'ref-9',
        providerStatus: 'finished',
      },
    });
    expect(oxylabsWebhook.parse({ id: 123, status: 'done', client_notes: 'ref-2' }, {}, Buffer.from(''))).toMatchObject(
      {
        ok: true,
        event: { eventId: '123:done', taskId: '123', clientRef: 'ref-2' },
      },
    );
    expect(brightDataWebhook.parse({ snapshot_id: 's_1', status: 'ready' }, {}, Buffer.from(''))).toMatchObject({
      ok: true,
      event: { eventId: 's_1:ready', taskId: 's_1', clientRef: null, providerStatus: 'ready' },
    });
    for (const hook of [scraperApiWebhook, oxylabsWebhook, brightDataWebhook]) {
      const bad = hook.parse({ nothing: true }, {}, Buffer.from(''));
      expect(bad.ok).toBe(false);
      expect(hook.claimedEventId!({ nothing: true }, {})).toBeNull();
    }
  });

  it('the fixture credentials are user:password pairs (Basic), one per account', () => {
    expect(OXYLABS_FIXTURE_CREDENTIALS.acme).toBe(`acme:${FIXTURE_KEYS.acme}`);
  });
});
