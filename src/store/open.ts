/**
 * Opening the store from its URL: SQLite (better-sqlite3, the embedded default) or PostgreSQL
 * (`pg`), with pending migrations applied.
 *
 * better-sqlite3 is a native module, loaded only when a `sqlite:` store is opened: the client
 * package (`packages/client`) has it as an optional peer dependency, so that a service on
 * PostgreSQL installs no native code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { StoreMetrics } from './connection.js';
import type { Database as DB } from './schema.js';
import { cachingSqliteDatabase, DEFAULT_STATEMENT_CACHE_SIZE } from './statementCache.js';
import { Store } from './store.js';

/** Where the store lives: `sqlite:<file>` / a bare file path, or `postgres://…`. */
export type StoreUrl = string;

/**
 * Parses a store URL. `sqlite::memory:` gives an in-memory database (tests only);
 * `sqlite:/path/file.db` or `/path/file.db` a file; `postgres://` / `postgresql://` a server.
 * Throws when a `sqlite:` URL names no file.
 */
export function parseStoreUrl(
  url: StoreUrl,
): { kind: 'sqlite'; file: string } | { kind: 'postgres'; connectionString: string } {
  if (/^postgres(ql)?:\/\//.test(url)) return { kind: 'postgres', connectionString: url };
  const file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  if (!file) throw new Error(`store URL "${url}" names no SQLite file`);
  return { kind: 'sqlite', file };
}

/** How a store is opened, beyond its URL. */
export interface OpenStoreOptions {
  /**
   * SQLite only: how many distinct SQL texts stay prepared for reuse (see `statementCache.ts`;
   * default 256, 0 prepares every query anew as Kysely does alone). PostgreSQL checks it and
   * otherwise ignores it.
   */
  sqliteStatementCacheSize?: number;
  /** Where committed transitions and cool-downs are reported (default: nowhere; see `StoreMetrics`). */
  metrics?: StoreMetrics;
}

/**
 * better-sqlite3's constructor, loaded on first use.
 * @throws Error naming the package to install when it is not installed (or does not load).
 */
async function loadSqlite(): Promise<typeof import('better-sqlite3')> {
  try {
    return (await import('better-sqlite3')).default;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw e;
    throw new Error(
      'a sqlite: store needs the package better-sqlite3, which is not installed (npm install better-sqlite3); ' +
        'a service in production uses PostgreSQL (postgres://…), which needs nothing more',
      { cause: e },
    );
  }
}

/**
 * Opens the store and applies pending migrations.
 *
 * SQLite runs in WAL mode with a 5 s busy timeout so that the worker, the CLI and the API can
 * share one file, and reuses prepared statements. Throws when the database cannot be opened, a
 * migration fails, a `sqlite:` store is opened where better-sqlite3 is not installed (an `Error`
 * naming the package), or `sqliteStatementCacheSize` is not an integer ≥ 0 (`RangeError`).
 */
export async function openStore(url: StoreUrl, options: OpenStoreOptions = {}): Promise<Store> {
  const parsed = parseStoreUrl(url);
  const cacheSize = options.sqliteStatementCacheSize ?? DEFAULT_STATEMENT_CACHE_SIZE;
  // Checked before anything is opened or created, so a bad value leaves no handle or file behind.
  if (!Number.isInteger(cacheSize) || cacheSize < 0)
    throw new RangeError(`sqliteStatementCacheSize ${cacheSize} is not an integer ≥ 0`);
  let db: Kysely<DB>;
  let sqliteStatements: { prepared: number; reused: number } | undefined;
  if (parsed.kind === 'sqlite') {
    const Database = await loadSqlite();
    if (parsed.file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(parsed.file)), { recursive: true });
    const sqlite = new Database(parsed.file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('synchronous = NORMAL');
    const database = cachingSqliteDatabase(sqlite, cacheSize);
    sqliteStatements = database.stats;
    db = new Kysely<DB>({ dialect: new SqliteDialect({ database }) });
  } else {
    db = new Kysely<DB>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: parsed.connectionString, max: 10 }) }),
    });
  }
  const store = new Store(
    db,
    parsed.kind,
    parsed.kind === 'sqlite' ? parsed.file : undefined,
    sqliteStatements,
    options.metrics,
  );
  await store.migrate();
  return store;
}
