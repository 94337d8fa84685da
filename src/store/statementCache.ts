/**
 * A prepared-statement cache between Kysely's SQLite driver and better-sqlite3.
 *
 * Kysely's `SqliteDialect` calls `database.prepare(sql)` for every query it runs, and preparing
 * (parsing and planning the SQL) is a large part of what a short query costs: in a CPU profile of
 * the worker at 10,000 waiting jobs it was 5.1 % of the main thread, against 11.6 % for all of
 * Kysely's SQLite driver (`bench/README.md`). The store's queries are built from a few shapes with
 * bound parameters, so the same SQL text recurs and its statement can be reused. SQLite
 * re-prepares a cached statement by itself when the schema (or a setting such as `foreign_keys`)
 * changes, also when another connection changed it (statements made with `sqlite3_prepare_v3`, as
 * better-sqlite3 makes them), so a migration never runs stale SQL.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** How many distinct SQL texts the store keeps prepared by default (least recently used leave first). */
export const DEFAULT_STATEMENT_CACHE_SIZE = 256;

/** A database as Kysely's SQLite dialect sees it, and how often it prepared or reused a statement. */
export interface CachingSqliteDatabase extends SqliteDatabase {
  /** Counts since opening: `prepared` statements compiled, `reused` served from the cache. */
  readonly stats: { prepared: number; reused: number };
}

/**
 * Wraps `db` so that `prepare(sql)` returns the statement already prepared for the same text, up
 * to `capacity` distinct texts (least recently used evicted). A cached statement that is still
 * being iterated (`busy`, a streamed query not yet finished) is not handed out again: that call
 * gets a fresh statement, so two readers never share one cursor. `capacity` 0 turns caching off
 * (every call prepares, as Kysely does alone). Throws what better-sqlite3's `prepare` throws (a
 * `SqliteError` for bad SQL); `close()` drops the cache and closes `db`.
 */
export function cachingSqliteDatabase(
  db: BetterSqlite3.Database,
  capacity = DEFAULT_STATEMENT_CACHE_SIZE,
): CachingSqliteDatabase {
  if (!Number.isInteger(capacity) || capacity < 0)
    throw new RangeError(`statement cache size ${capacity} is not an integer ≥ 0`);
  const cache = new Map<string, BetterSqlite3.Statement>();
  const stats = { prepared: 0, reused: 0 };
  return {
    stats,
    close() {
      cache.clear();
      db.close();
    },
    prepare(sql: string): SqliteStatement {
      const cached = cache.get(sql);
      if (cached && !cached.busy) {
        // Map keeps insertion order: re-inserting marks the entry most recently used.
        cache.delete(sql);
        cache.set(sql, cached);
        stats.reused++;
        return cached;
      }
      const stmt = db.prepare(sql);
      stats.prepared++;
      if (capacity > 0 && !cached) {
        cache.set(sql, stmt);
        if (cache.size > capacity) cache.delete(cache.keys().next().value as string);
      }
      return stmt;
    },
  };
}
