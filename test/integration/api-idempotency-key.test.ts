/**
 * The `Idempotency-Key` rule of `POST /v1/scrapes` against the real stack (API, store, Temporal):
 *
 * - under concurrency: two requests with the same key and different bodies sent at once make one
 *   job, and the one request told it has that job (`202`/`200`) is the one whose body the job was
 *   started with; the other is refused (`422 idempotency-key-reused`). Never is a request answered
 *   with a job made from another body;
 * - the spelling of the target URL: two spellings of one address (the WHATWG serialisation is the
 *   same) are one body, as they are one job for the client, so a repeat that spells the URL
 *   another way gets its job (`200`), never `422`;
 * - on the failure paths of a start: a request whose start fails does not release the key while
 *   another request with the same body is starting under it (a third request with another body is
 *   refused, the same-body request gets the job, made from its body); a claim left by an API
 *   process that died between claim and start (no job row, older than `API_CLAIM_STALE_MS`) is
 *   taken over by a request with another body; a younger one still refuses it. The client's start
 *   is held (and made to fail) through the API's own `ScrapeClient`, so the requests interleave at
 *   the moment the race needs.
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
  api = await startApiStack({ profile: { concurrency: 16, minRunMs: 200 } });
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

describe('one Idempotency-Key, two bodies at once', () => {
  it('the request answered with the job is the one whose body started it; the other is 422', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=race`;
    const pairs = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const key = `race-${i}`;
        const send = (who: string) =>
          api
            .call('acme', 'POST', '/v1/scrapes', {
              json: { url, policy: FAST_POLICY, row: { who } },
              headers: { 'idempotency-key': key },
            })
            .then((r) => ({ who, status: r.status }));
        return { key, answers: await Promise.all([send('a'), send('b')]) };
      }),
    );
    for (const { key, answers } of pairs) {
      const row = await api.stack.store.jobs.get(`scrape:acme:${key}`);
      const started = (JSON.parse(row!.input || '{}') as { who?: string }).who;
      const told = answers.filter((a) => a.status === 202 || a.status === 200).map((a) => a.who);
      expect({ key, told, refused: answers.filter((a) => a.status === 422).length }).toEqual({
        key,
        told: [started],
        refused: 1,
      });
    }
  });

  it('a key whose start is refused is free again: the refused body does not hold it', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=released`;
    // The key's job was started elsewhere (the typed client) for this URL, with no API record.
    await api.client.startScrape({ account: 'acme', key: 'released-1', url, policy: FAST_POLICY });
    const other = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: `${url}-other`, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'released-1' },
    });
    expect(other.status).toBe(422);
    const same = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'released-1' },
    });
    expect([200, 202]).toContain(same.status);
    expect(await same.json()).toMatchObject({ job_id: 'scrape:acme:released-1' });
  });
});

describe('Idempotency-Key and the spelling of the URL', () => {
  it('a repeat with the same key that spells the same address another way is the same job (200), not a reused key', async () => {
    const canonical = `${pages.pageUrl('herald-sun-1')}?t=spelling`;
    const typed = canonical.replace(/^http:/, 'HTTP:');
    expect(new URL(typed).href).toBe(canonical);
    const first = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: typed, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'spelling-1' },
    });
    expect(first.status).toBe(202);
    const again = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: canonical, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'spelling-1' },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toMatchObject({ job_id: 'scrape:acme:spelling-1' });
    // And the other way round: the canonical spelling first.
    const third = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: typed, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'spelling-1' },
    });
    expect(third.status).toBe(200);
    // Another address under the key is still refused.
    const other = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: `${canonical}-other`, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'spelling-1' },
    });
    expect(other.status).toBe(422);
  });
});

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
