/**
 * The claims of the HTTP API's `Idempotency-Key` records in the store, on SQLite (a real file) and
 * PostgreSQL (a real server started for the test): a claim counts its holders and is deleted only
 * when the last one releases it and its job has no row; a dead claim (no job row, not taken for
 * the bound) is taken over by one of two requests at once, a live or started one never is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/index.js';
import { bothDialects } from '../helpers/postgres.js';

const { urlOf } = bothDialects('scrape-api-idempotency-store-');

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`Idempotency-Key claims on ${dialect}`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await openStore(urlOf(dialect, 'claims.db'));
    });
    afterAll(async () => {
      await store?.close();
    });

    const claimOf = (key: string, bodyHash: string, staleAfterMs = 60_000) =>
      store.apiIdempotency.claim({
        account: 'acme',
        key,
        bodyHash,
        sameHashes: [bodyHash],
        jobId: `scrape:acme:${key}`,
        staleAfterMs,
      });
    const ref = (key: string, bodyHash: string) => ({ account: 'acme', key, bodyHash });

    it('a claim held by two same-body requests is released only by the last; another body is refused meanwhile', async () => {
      expect((await claimOf('k1', 'x')).outcome).toBe('claimed');
      expect((await claimOf('k1', 'x')).outcome).toBe('joined');
      expect(await store.apiIdempotency.release(ref('k1', 'x'))).toBe(false);
      expect(await claimOf('k1', 'y')).toMatchObject({ outcome: 'other', row: { body_hash: 'x', holders: 1 } });
      expect(await store.apiIdempotency.release(ref('k1', 'x'))).toBe(true);
      expect((await claimOf('k1', 'y')).outcome).toBe('claimed');
    });

    it('a claim whose job has a row is never released, nor taken over however old', async () => {
      expect((await claimOf('k2', 'x')).outcome).toBe('claimed');
      await store.jobs.register({
        id: 'scrape:acme:k2',
        account: 'acme',
        idem_key: 'k2',
        provider: 'p',
        request_hash: 'h',
        url: 'https://e.x/',
        input: '{}',
        options: '{}',
        batch_id: null,
        workflow_id: 'scrape:acme:k2',
        task_id: null,
        deadline_at: null,
      });
      expect(await store.apiIdempotency.release(ref('k2', 'x'))).toBe(false);
      expect((await claimOf('k2', 'y', -60_000)).outcome).toBe('other');
      // Unless the start found that job made with other parameters: the claim was never its.
      expect((await claimOf('k2', 'x')).outcome).toBe('joined');
      expect(await store.apiIdempotency.release({ ...ref('k2', 'x'), jobHasOtherParameters: true })).toBe(true);
    });

    it('a dead claim is taken over by one of two requests at once; the other is refused', async () => {
      expect((await claimOf('k3', 'x')).outcome).toBe('claimed');
      expect((await claimOf('k3', 'y')).outcome).toBe('other'); // alive under the bound
      // Its process died: nobody took it for an hour.
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      await store.db.updateTable('api_idempotency').set({ claimed_at: hourAgo }).where('idem_key', '=', 'k3').execute();
      const [a, b] = await Promise.all([claimOf('k3', 'y'), claimOf('k3', 'z')]);
      expect([a.outcome, b.outcome].sort()).toEqual(['other', 'taken_over']);
      const winner = a.outcome === 'taken_over' ? a : b;
      expect(winner).toMatchObject({ previousHash: 'x', row: { holders: 1 } });
    });
  });
}
