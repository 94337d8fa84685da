/**
 * The claim behind the `Idempotency-Key` rule of `POST /v1/scrapes`, against the real stack (API,
 * store, Temporal), on the failure paths of a start:
 *
 * - a request whose start fails does not release the key while another request with the same
 *   body is starting under it: a third request with another body is refused (`422`), the
 *   same-body request gets the job, and the job is made from its body;
 * - a claim left by an API process that died between claim and start (no job row, older than
 *   `API_CLAIM_STALE_MS`) is taken over by a request with another body; a younger one still
 *   refuses it.
 *
 * The client's start is held (and made to fail) through the API's own `ScrapeClient`, so the
 * requests interleave at the moment the race needs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_CLAIM_STALE_MS } from '../../src/api/idempotencyKey.js';
import { fingerprint } from '../../src/lib/hash.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApiStack, type ApiStack } from '../helpers/api.js';
import { FAST_POLICY, waitFor } from '../helpers/stack.js';

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({ profile: { concurrency: 4, minRunMs: 200 } });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

/** A promise and the function that settles it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe('a start that fails while a same-body request is starting under its key', () => {
  it('keeps the key for that request: another body is refused, and the job is the same body’s', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=claim-race`;
    const key = 'claim-race-1';
    const jobId = `scrape:acme:${key}`;
    const bodyX = { url, policy: FAST_POLICY, row: { who: 'x' } };
    const bodyY = { url, policy: FAST_POLICY, row: { who: 'y' } };
    const original = api.client.startScrape.bind(api.client);
    const failFirst = gate();
    const holdSecond = gate();
    let calls = 0;
    api.client.startScrape = async (input, extras) => {
      const n = ++calls;
      if (n === 1) {
        await failFirst.wait;
        throw new Error(`could not start job ${jobId} (nothing was kept; repeat the request): Temporal unreachable`);
      }
      if (n === 2) await holdSecond.wait;
      return original(input, extras);
    };
    try {
      const send = (json: unknown) =>
        api.call('acme', 'POST', '/v1/scrapes', { json, headers: { 'idempotency-key': key } });
      const a = send(bodyX);
      await waitFor(() => calls >= 1, 30_000, 'request A to reach its start');
      const b = send(bodyX);
      await waitFor(() => calls >= 2, 30_000, 'request B to reach its start');
      failFirst.open();
      expect((await a).status).toBeGreaterThanOrEqual(500);
      // B is still starting under the key: another body must not get it.
      const c = await send(bodyY);
      expect(c.status).toBe(422);
      expect(await c.json()).toMatchObject({ job_id: jobId });
      holdSecond.open();
      const bAnswer = await b;
      expect([200, 202]).toContain(bAnswer.status);
      expect(await bAnswer.json()).toMatchObject({ job_id: jobId });
      const row = await api.stack.store.jobs.get(jobId);
      expect(JSON.parse(row!.input)).toEqual({ who: 'x' });
      expect(await api.stack.store.apiIdempotency.get('acme', key)).toMatchObject({ job_id: jobId, holders: 0 });
      // A repeat of the body is the job; the other body is still refused.
      expect((await send(bodyX)).status).toBe(200);
      expect((await send(bodyY)).status).toBe(422);
    } finally {
      api.client.startScrape = original;
    }
  });

  it('a failed start with nobody else under the key frees it for another body', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=claim-free`;
    const key = 'claim-free-1';
    const original = api.client.startScrape.bind(api.client);
    let calls = 0;
    api.client.startScrape = async (input, extras) => {
      if (++calls === 1) throw new Error('could not start job (nothing was kept; repeat the request)');
      return original(input, extras);
    };
    try {
      const send = (json: unknown) =>
        api.call('acme', 'POST', '/v1/scrapes', { json, headers: { 'idempotency-key': key } });
      expect((await send({ url, policy: FAST_POLICY, row: { who: 'x' } })).status).toBeGreaterThanOrEqual(500);
      expect(await api.stack.store.apiIdempotency.get('acme', key)).toBeUndefined();
      expect((await send({ url, policy: FAST_POLICY, row: { who: 'y' } })).status).toBe(202);
    } finally {
      api.client.startScrape = original;
    }
  });
});

describe('a claim whose API process died before the start', () => {
  /** The row a process leaves when it dies after its claim: one holder, no job row. */
  async function deadClaim(key: string, ageMs: number) {
    const at = new Date(Date.now() - ageMs).toISOString();
    await api.stack.store.db
      .insertInto('api_idempotency')
      .values({
        account: 'acme',
        idem_key: key,
        body_hash: fingerprint({ never: 'sent again' }),
        job_id: `scrape:acme:${key}`,
        created_at: at,
        claimed_at: at,
        holders: 1,
      })
      .execute();
  }

  it('is taken over by another body once older than API_CLAIM_STALE_MS, and the job is that body’s', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=claim-dead`;
    const key = 'claim-dead-1';
    await deadClaim(key, API_CLAIM_STALE_MS + 60_000);
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY, row: { who: 'new' } },
      headers: { 'idempotency-key': key },
    });
    expect(r.status).toBe(202);
    expect(await r.json()).toMatchObject({ job_id: `scrape:acme:${key}` });
    const row = await api.stack.store.jobs.get(`scrape:acme:${key}`);
    expect(JSON.parse(row!.input)).toEqual({ who: 'new' });
    const again = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY, row: { who: 'new' } },
      headers: { 'idempotency-key': key },
    });
    expect(again.status).toBe(200);
  });

  it('still refuses another body while younger than the bound (its start may be under way)', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=claim-young`;
    const key = 'claim-young-1';
    await deadClaim(key, 1_000);
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': key },
    });
    expect(r.status).toBe(422);
    expect(await api.stack.store.jobs.get(`scrape:acme:${key}`)).toBeUndefined();
  });
});
