/**
 * The result store against both dialects: SQLite (a real file) and PostgreSQL (a real server
 * started for the test). Migrations, registration with conflict detection, intent/answer
 * recording, transitions that never leave a final state, and write-once under concurrency.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyConflictStoreError, openStore, type Store } from '../../src/store/index.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';

let pg: TestPostgres | undefined;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-store-test-'));

beforeAll(async () => {
  pg = await startTestPostgres();
  if (!pg) throw new Error('PostgreSQL is not installed (initdb/pg_ctl not found): install the Debian package "postgresql" or set SCRAPE_TEST_PG_URL');
});
afterAll(async () => {
  await pg?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const payload = (title: string) => ({ url: 'https://e.x/', finalUrl: 'https://e.x/', httpStatus: 200, title, byline: null, excerpt: null, lang: 'en', siteName: null, publishedTime: null, text: 't', markdown: 'm', links: ['https://e.x/a'], contentLength: 10 });

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`store on ${dialect}`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await openStore(dialect === 'sqlite' ? `sqlite:${path.join(dir, 'store.db')}` : pg!.url);
      await store.migrate(); // a second migrate is a no-op
    });
    afterAll(async () => store?.close());

    const job = (id: string, hash = 'h1') => ({ id, account: 'acme', idem_key: id, provider: 'p', request_hash: hash, url: 'https://e.x/', input: '{}', options: '{}', batch_id: null, workflow_id: id, task_id: null, deadline_at: null });

    it('registers a job once and refuses the same key with other parameters', async () => {
      const a = await store.registerJob(job('j1'));
      const b = await store.registerJob(job('j1'));
      expect(b.created_at).toBe(a.created_at);
      await expect(store.registerJob(job('j1', 'other'))).rejects.toBeInstanceOf(IdempotencyConflictStoreError);
    });

    it('records intent then answer; a recorded task ID is never replaced', async () => {
      await store.registerJob(job('j2'));
      const before = await store.recordSubmitIntent('j2');
      expect(before?.submit_intent_at).toBeNull();
      expect((await store.getJob('j2'))?.submit_intent_at).toBeTruthy();
      expect(await store.recordTaskId('j2', 't-2', 'queued', 'submit')).toBe('t-2');
      expect(await store.recordTaskId('j2', 't-OTHER', 'queued', 'reconcile')).toBe('t-2');
      const row = await store.getJob('j2');
      expect(row).toMatchObject({ task_id: 't-2', state: 'pending', submit_intent_at: null });
    });

    it('never moves a final job unless forced', async () => {
      await store.registerJob(job('j3'));
      expect(await store.transition('j3', 'failed', { error: { kind: 'permanent', message: 'bad', at: new Date().toISOString() } })).toBe(true);
      expect(await store.transition('j3', 'pending')).toBe(false);
      expect((await store.getJob('j3'))?.state).toBe('failed');
      expect(await store.transition('j3', 'pending', { force: true })).toBe(true);
    });

    it('writes a result once under 10 concurrent writers, atomically with completion', async () => {
      await store.registerJob(job('j4'));
      await store.recordTaskId('j4', 't-4', 'queued', 'submit');
      const outs = await Promise.all(Array.from({ length: 10 }, (_, i) => store.writeResultOnce('j4', 'p', 't-4', payload(`w${i}`), 60_000)));
      expect(outs.filter((o) => o.inserted)).toHaveLength(1);
      expect(outs.filter((o) => o.transitioned)).toHaveLength(1);
      expect(new Set(outs.map((o) => o.resultId)).size).toBe(1);
      expect(await store.countResults({ provider: 'p', taskId: 't-4' })).toBe(1);
      expect((await store.getJob('j4'))?.state).toBe('completed');
      expect((await store.timeline('j4')).filter((e) => e.state === 'completed')).toHaveLength(1);
    });
  });
}
