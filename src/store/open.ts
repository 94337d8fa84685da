/**
 * Opening the store from its URL: SQLite (better-sqlite3, the embedded default) or PostgreSQL
 * (`pg`), with pending migrations applied.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { Database as DB } from './schema.js';
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

/**
 * Opens the store and applies pending migrations.
 *
 * SQLite runs in WAL mode with a 5 s busy timeout so that the worker, the CLI and the API can
 * share one file. Throws when the database cannot be opened or a migration fails.
 */
export async function openStore(url: StoreUrl): Promise<Store> {
  const parsed = parseStoreUrl(url);
  let db: Kysely<DB>;
  if (parsed.kind === 'sqlite') {
    if (parsed.file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(parsed.file)), { recursive: true });
    const sqlite = new Database(parsed.file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('synchronous = NORMAL');
    db = new Kysely<DB>({ dialect: new SqliteDialect({ database: sqlite }) });
  } else {
    db = new Kysely<DB>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: parsed.connectionString, max: 10 }) }),
    });
  }
  const store = new Store(db, parsed.kind, parsed.kind === 'sqlite' ? parsed.file : undefined);
  await store.migrate();
  return store;
}
