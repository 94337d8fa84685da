/**
 * The prepared-statement cache under Kysely on a real SQLite database: the same SQL is prepared
 * once, the least recently used text leaves first, a statement still being iterated is never
 * handed to a second reader, size 0 prepares every time, a statement that threw or ran in a
 * rolled-back transaction works again, a bad size is refused before anything is opened, and the
 * store opened with the cache (and using it) reads and writes what it did without it, across a
 * migration-style schema change.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, Store } from '../../src/store/index.js';
import { eventRow } from '../../src/store/rows.js';
import { cachingSqliteDatabase } from '../../src/store/statementCache.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('SQLite statement cache', () => {
  it('prepares a repeated query once and reuses it with new parameters', async () => {
    const database = cachingSqliteDatabase(new Database(':memory:'));
    const db = new Kysely<{ t: { id: number; v: string } }>({ dialect: new SqliteDialect({ database }) });
    await sql`create table t (id integer primary key, v text)`.execute(db);
    for (let i = 0; i < 20; i++)
      await db
        .insertInto('t')
        .values({ id: i, v: `v${i}` })
        .execute();
    const rows = await Promise.all(
      [3, 7, 11].map((id) => db.selectFrom('t').selectAll().where('id', '=', id).executeTakeFirst()),
    );
    expect(rows.map((r) => r?.v)).toEqual(['v3', 'v7', 'v11']);
    // create + one insert shape + one select shape.
    expect(database.stats.prepared).toBe(3);
    expect(database.stats.reused).toBe(19 + 2);
    await db.destroy();
  });

  it('evicts the least recently used text when full', () => {
    const raw = new Database(':memory:');
    const database = cachingSqliteDatabase(raw, 2);
    database.prepare('select 1');
    database.prepare('select 2');
    database.prepare('select 1'); // now most recent: 'select 2' is the eldest
    database.prepare('select 3'); // evicts 'select 2'
    database.prepare('select 1');
    database.prepare('select 2');
    expect(database.stats).toEqual({ prepared: 4, reused: 2 });
    database.close();
    expect(raw.open).toBe(false);
  });

  it('gives a second reader its own statement while the first still iterates', () => {
    // Kysely holds its one SQLite connection for a whole stream, so this is reached through
    // better-sqlite3 directly (a caller of the wrapped database that iterates and queries again).
    const database = cachingSqliteDatabase(new Database(':memory:'));
    database.prepare('create table t (id integer primary key)').run([]);
    database.prepare('insert into t (id) values (1), (2), (3)').run([]);
    const text = 'select id from t order by id';
    const first = database.prepare(text);
    const seen: unknown[] = [];
    for (const row of first.iterate([])) {
      const second = database.prepare(text);
      expect(second).not.toBe(first);
      expect(second.all([])).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
      seen.push(row);
    }
    expect(seen).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    // Finished iterating: the cached statement is served again.
    expect(database.prepare(text)).toBe(first);
    database.close();
  });

  it('leaves a cached statement usable after it threw, and after a rolled-back transaction', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stmt-cache-'));
    dirs.push(dir);
    const store = await openStore(path.join(dir, 's.db'));
    const insert = (id: string) =>
      store.db
        .insertInto('job_events')
        .values(eventRow(id, 'probe', 'pending', null))
        .execute();
    await sql`create unique index probe_once on job_events (job_id) where type = 'probe'`.execute(store.db);
    await insert('a');
    await expect(insert('a')).rejects.toThrow(/UNIQUE/);
    await insert('b');
    await expect(
      store.tx(async (trx) => {
        await trx
          .insertInto('job_events')
          .values(eventRow('c', 'probe', 'pending', null))
          .execute();
        throw new Error('give up');
      }),
    ).rejects.toThrow('give up');
    await insert('c');
    const ids = await store.db
      .selectFrom('job_events')
      .select('job_id')
      .where('type', '=', 'probe')
      .orderBy('job_id')
      .execute();
    expect(ids.map((r) => r.job_id)).toEqual(['a', 'b', 'c']);
    expect(store.sqliteStatements?.reused).toBeGreaterThan(0);
    await store.close();
  });

  it('refuses a bad cache size before it opens or creates anything', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stmt-cache-'));
    dirs.push(dir);
    for (const size of [-1, 1.5, Number.NaN]) {
      await expect(openStore(path.join(dir, 'sub', 'bad.db'), { sqliteStatementCacheSize: size })).rejects.toThrow(
        RangeError,
      );
    }
    expect(fs.existsSync(path.join(dir, 'sub'))).toBe(false);
  });

  it('prepares every query anew at size 0 and refuses a size that is not an integer ≥ 0', () => {
    const database = cachingSqliteDatabase(new Database(':memory:'), 0);
    database.prepare('select 1');
    database.prepare('select 1');
    expect(database.stats).toEqual({ prepared: 2, reused: 0 });
    database.close();
    for (const size of [-1, 1.5])
      expect(() => cachingSqliteDatabase(new Database(':memory:'), size)).toThrow(RangeError);
  });

  it('keeps the store’s answers the same with and without the cache, across a schema change', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stmt-cache-'));
    dirs.push(dir);
    const answers: unknown[] = [];
    for (const size of [256, 0]) {
      const store = await openStore(path.join(dir, `s${size}.db`), { sqliteStatementCacheSize: size });
      const row = Store.jobRow({
        jobId: 'job-1',
        account: 'acct',
        key: 'k1',
        provider: 'reference',
        requestHash: 'h1',
        request: { url: 'https://example.test/a', format: 'markdown', options: {} },
        workflowId: 'job-1',
      });
      await store.jobs.register(row);
      await store.jobs.transition('job-1', 'pending');
      const before = await store.jobs.get('job-1');
      // A schema change between two runs of the same cached SQL: SQLite re-prepares it.
      await sql`alter table jobs add column stmt_cache_probe text`.execute(store.db);
      const after = await store.jobs.get('job-1');
      expect(after?.state).toBe('pending');
      expect((after as Record<string, unknown> | undefined)?.stmt_cache_probe).toBeNull();
      answers.push({ state: before?.state, url: before?.url, events: (await store.findings.timeline('job-1')).length });
      // The store really goes through the cache when it has one, and never when its size is 0.
      const reused = store.sqliteStatements?.reused ?? -1;
      if (size > 0) expect(reused).toBeGreaterThan(0);
      else expect(reused).toBe(0);
      await store.close();
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0]).toMatchObject({ state: 'pending', url: 'https://example.test/a' });
  });
});
