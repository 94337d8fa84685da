/**
 * The store's connection: one Kysely instance over SQLite or PostgreSQL, its write transaction,
 * migrations, health check and shutdown. Every repository of the store (`jobs.ts`, `results.ts`,
 * …) is built over one of these and reaches the database only through it.
 */
import { Kysely, Migrator, sql } from 'kysely';
import { migrationProvider } from './migrations/index.js';
import type { Database as DB } from './schema.js';

/** The database dialect of a store. */
export type StoreKind = 'sqlite' | 'postgres';

/**
 * What the store reports as it commits, for the process's metrics: the worker and the API pass
 * `storeMetrics` of `src/observability/metrics.ts` (Prometheus); a store opened without it reports
 * nothing (a service's client has no metrics endpoint, and needs no metrics library).
 */
export interface StoreMetrics {
  /** A committed move of a job into `state` (once per transition). */
  transition(state: string): void;
  /** A shared cool-down of a provider key; `label` is `<provider>/<account>`. */
  cooldown(label: string): void;
}

/** Reports nothing. */
export const NO_STORE_METRICS: StoreMetrics = { transition() {}, cooldown() {} };

/** A database connection of the store. Construct a whole store with `openStore`. */
export class StoreConnection {
  constructor(
    /** The Kysely instance every repository queries through. */
    readonly db: Kysely<DB>,
    readonly kind: StoreKind,
    /** The SQLite file path, when `kind` is `sqlite`. */
    readonly file?: string,
    /**
     * SQLite: statements prepared and reused since opening (`statementCache.ts`), for
     * benchmarks and tests; absent on PostgreSQL.
     */
    readonly sqliteStatements?: { readonly prepared: number; readonly reused: number },
    /** Where committed transitions and cool-downs are reported (see {@link StoreMetrics}). */
    readonly metrics: StoreMetrics = NO_STORE_METRICS,
  ) {}

  /**
   * Runs `fn` in one write transaction. On SQLite it begins with `BEGIN IMMEDIATE`: a deferred
   * transaction that reads and then writes fails at once with `SQLITE_BUSY_SNAPSHOT` when another
   * process wrote in between (the busy timeout cannot help then); taking the write lock first
   * makes it wait instead. On PostgreSQL it is an ordinary transaction. Rethrows what `fn` throws
   * after rolling back.
   */
  async tx<T>(fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
    if (this.kind !== 'sqlite') return this.db.transaction().execute(fn);
    return this.db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn);
      try {
        const out = await fn(conn);
        await sql`commit`.execute(conn);
        return out;
      } catch (e) {
        await sql`rollback`.execute(conn).catch(() => undefined);
        throw e;
      }
    });
  }

  /** Applies pending migrations; throws with the failing migration's name and error. */
  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: migrationProvider });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error');
      throw new Error(`store migration ${failed?.migrationName ?? '?'} failed: ${String(error)}`);
    }
  }

  /** Answers when the database does (`select 1`); throws its connection error otherwise. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /** Closes connections. */
  async close(): Promise<void> {
    await this.db.destroy();
  }
}
