/**
 * The `Idempotency-Key` rule of `POST /v1/scrapes` against the real stack, for the spelling of
 * the target URL: two spellings of one address (the WHATWG serialisation is the same) are one
 * body, as they are one job for the client, so a repeat that spells the URL another way gets its
 * job (`200`), never `422 idempotency-key-reused`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApiStack, type ApiStack } from '../helpers/api.js';
import { FAST_POLICY } from '../helpers/stack.js';

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
