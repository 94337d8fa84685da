/**
 * Cancels of the `apify`, `brightdata` and `scraperapi` adapters against a real loopback server
 * answering a 2xx. Apify answers an abort with the run (`200 {data: Run}`: `ABORTING`/`ABORTED`,
 * or unchanged on a finished run); Bright Data answers an accepted cancel `200 "OK"` (text);
 * ScraperAPI documents no answer (JSON or nothing is taken as accepted, unless the JSON states an
 * error). Any other 2xx (a proxy's
 * page, other JSON, an empty body where the provider documents one) is not the provider's word and
 * must never be taken as an acceptance: after one, a read that fails or 404s is read as the stop
 * (`cancelled`).
 */
import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { ApifyAdapter, apifyProvider, type ApifyEntry } from '../../src/providers/apify/index.js';
import { BrightDataAdapter, brightDataProvider } from '../../src/providers/brightdata/index.js';
import { scraperApiProvider } from '../../src/providers/scraperapi/index.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { serveCannedAnswers } from '../helpers/answers.js';

/** The answer to a cancel of task `<name>`: Apify's `POST /v2/actor-runs/<name>/abort`, Bright Data's `POST /datasets/v3/snapshot/<name>/cancel`. */
const ANSWERS: Record<string, { type: string; body: string }> = {
  aborting: { type: 'application/json', body: '{"data": {"id": "aborting", "status": "ABORTING"}}' },
  finished: { type: 'application/json', body: '{"data": {"id": "finished", "status": "SUCCEEDED"}}' },
  ok: { type: 'text/plain', body: 'OK' },
  other: { type: 'application/json', body: '{"ok": true}' },
  html: { type: 'text/html', body: '<html><body>OK</body></html>' },
  empty: { type: 'application/json', body: '' },
  refused: { type: 'application/json', body: '{"error": "Job not found"}' },
  unsuccessful: { type: 'application/json', body: '{"success": false, "message": "not allowed"}' },
  errword: { type: 'application/json', body: '{"status": "error", "error": "Job not found"}' },
};

const base = serveCannedAnswers((req) => {
  const url = req.url ?? '';
  const name =
    /^\/(?:v2\/actor-runs|datasets\/v3\/snapshot)\/([a-z]+)\/(?:abort|cancel)/.exec(url)?.[1] ??
    /^\/jobs\/([a-z]+)(?:\?|$)/.exec(url)?.[1] ??
    '';
  return ANSWERS[name] ?? { body: '{}' };
});

const ctx = () => ({ apiKey: FIXTURE_KEYS.acme, secrets: [] });

function apify(name: string) {
  const entry = apifyProvider.entrySchema.parse({
    kind: 'apify',
    credentials: {},
    baseUrl: base(),
    actorId: 'acme~site-crawler',
  }) as ApifyEntry;
  return new ApifyAdapter('apify', entry).cancel(name, ctx());
}

function brightData(name: string) {
  const entry = brightDataProvider.entrySchema.parse({
    kind: 'brightdata',
    credentials: {},
    baseUrl: base(),
    datasetId: 'gd_x',
  });
  return new BrightDataAdapter('bd', entry).cancel(name, ctx());
}

async function expectUnexpectedAnswer(call: Promise<unknown>, name: string): Promise<void> {
  const err = await call.catch((e: unknown) => e);
  expect(err, name).toBeInstanceOf(ProviderError);
  expect((err as ProviderError).kind, name).toBe('transient');
  expect((err as ProviderError).details, name).toMatchObject({ httpStatus: 200, code: 'INVALID_RESPONSE' });
}

describe('apify: a 2xx answer to an abort', () => {
  it('the run, aborting: accepted, with its state', async () => {
    expect(await apify('aborting')).toMatchObject({ accepted: true, providerStatus: 'ABORTING' });
  });

  it('the run, unchanged and final: nothing to stop', async () => {
    expect(await apify('finished')).toMatchObject({ accepted: false, alreadyFinal: true, providerStatus: 'SUCCEEDED' });
  });

  it("any other 2xx (a proxy's page, other JSON, an empty body) is not an acceptance: an unexpected answer, tried again", async () => {
    for (const name of ['other', 'html', 'empty', 'ok']) await expectUnexpectedAnswer(apify(name), name);
  });
});

describe('brightdata: a 2xx answer to a cancel', () => {
  it('the documented "OK": accepted', async () => {
    expect(await brightData('ok')).toEqual({ accepted: true });
  });

  it("any other 2xx (a proxy's page, JSON, an empty body) is not an acceptance: an unexpected answer, tried again", async () => {
    for (const name of ['other', 'html', 'empty', 'aborting']) await expectUnexpectedAnswer(brightData(name), name);
  });
});

function scraperApi(name: string) {
  const entry = scraperApiProvider.entrySchema.parse({ kind: 'scraperapi', credentials: {}, baseUrl: base() });
  return scraperApiProvider.create('sa', entry).cancel(name, ctx());
}

describe('scraperapi: a 2xx answer to a cancel (undocumented)', () => {
  it('JSON, or nothing: accepted', async () => {
    expect(await scraperApi('other')).toMatchObject({ accepted: true });
    expect(await scraperApi('empty')).toMatchObject({ accepted: true });
  });

  it("a body that is not JSON (a proxy's page, text) is not an acceptance: an unexpected answer, tried again", async () => {
    for (const name of ['html', 'ok']) await expectUnexpectedAnswer(scraperApi(name), name);
  });

  it('JSON that states an error (`{"error": …}`, `{"success": false}`) is not an acceptance: a later 404 must not read as the stop', async () => {
    // Also beside a status word that is no job state (`"status": "error"`).
    for (const name of ['refused', 'unsuccessful', 'errword']) await expectUnexpectedAnswer(scraperApi(name), name);
    const err = (await scraperApi('refused').catch((e: unknown) => e)) as ProviderError;
    expect(err.message).toMatch(/Job not found/);
  });
});
