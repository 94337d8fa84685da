/**
 * The HTTP API's idempotency records (`store.apiIdempotency`; table `api_idempotency`, migrations
 * `003_webhooks` and `012_api_idempotency_claims`): one row per (account, `Idempotency-Key`)
 * accepted by `POST /v1/scrapes`, with the fingerprint of the request body, so that a repeat with
 * the same body answers the same job and one with another body is refused (`422`).
 *
 * A row is first a claim, taken before the job starts ({@link ApiIdempotencyRepository.claim}):
 * `holders` counts the requests with its body whose start is under way, `claimed_at` is when one
 * last took it. A start that failed releases its hold ({@link ApiIdempotencyRepository.release}),
 * and the row is deleted only when no other request holds it and the key's job has no row in
 * `jobs` (never started). A claim whose job never started and that nobody took for longer than
 * a bound is dead (its API process died between claim and start) and another body may take it
 * over. Times are UTC ISO-8601.
 */
import { sql, type ExpressionBuilder } from 'kysely';
import type { StoreConnection } from './connection.js';
import { nowIso } from './rows.js';
import type { ApiIdempotencyRow, Database } from './schema.js';

/** What {@link ApiIdempotencyRepository.claim} found or did. */
export type ApiClaim =
  /** A new claim: this request holds the key alone. */
  | { outcome: 'claimed'; row: ApiIdempotencyRow }
  /** The key was claimed (or its job started) with this body: this request holds it too. */
  | { outcome: 'joined'; row: ApiIdempotencyRow }
  /** A dead claim of another body (`previousHash`) was taken over: this request holds the key alone. */
  | { outcome: 'taken_over'; row: ApiIdempotencyRow; previousHash: string }
  /** The key is another body's (its claim is alive or its job exists): nothing was changed. */
  | { outcome: 'other'; row: ApiIdempotencyRow };

/** True (in SQL) when the row's job has no row in `jobs`: it was never started, or its start left nothing. */
function jobNeverStarted(eb: ExpressionBuilder<Database, 'api_idempotency'>) {
  return eb.not(eb.exists(eb.selectFrom('jobs').select('jobs.id').whereRef('jobs.id', '=', 'api_idempotency.job_id')));
}

/** The store's API idempotency records. Reach it as `store.apiIdempotency`. */
export class ApiIdempotencyRepository {
  constructor(private readonly conn: StoreConnection) {}

  /** The recorded idempotency key `key` of `account`, or undefined. */
  async get(account: string, key: string): Promise<ApiIdempotencyRow | undefined> {
    return this.conn.db
      .selectFrom('api_idempotency')
      .selectAll()
      .where('account', '=', account)
      .where('idem_key', '=', key)
      .executeTakeFirst();
  }

  /**
   * Takes a hold on (account, key) for a start of the body `bodyHash` (`sameHashes`: every
   * fingerprint that is this body, `bodyHash` included, e.g. one made before URLs were
   * canonicalised) of job `jobId`. A row of another body is taken over only when its job never
   * started and nobody took it for `staleAfterMs` (ms) or more. Every outcome but `other` is a
   * hold the caller must end with {@link settle} or {@link release}. Throws on a store error.
   */
  async claim(r: {
    account: string;
    key: string;
    bodyHash: string;
    sameHashes: readonly string[];
    jobId: string;
    staleAfterMs: number;
  }): Promise<ApiClaim> {
    const byKey = this.conn.db
      .updateTable('api_idempotency')
      .where('account', '=', r.account)
      .where('idem_key', '=', r.key);
    // A row can vanish between two statements (its last holder released it): then claim afresh.
    for (let attempt = 0; ; attempt++) {
      const now = nowIso();
      const inserted = await this.insertIfAbsent(r, now, 1);
      if (!inserted) {
        const joined = await byKey
          .set((eb) => ({ holders: eb('holders', '+', 1), claimed_at: now }))
          .where('body_hash', 'in', [...r.sameHashes])
          .executeTakeFirst();
        if (Number(joined.numUpdatedRows ?? 0n) > 0) return { outcome: 'joined', row: await this.read(r) };
      }
      const row = await this.get(r.account, r.key);
      if (inserted && row) return { outcome: 'claimed', row };
      if (row && !r.sameHashes.includes(row.body_hash)) {
        const cutoff = new Date(Date.now() - r.staleAfterMs).toISOString();
        // Compare-and-set on the body seen and its claim time: of two requests taking one dead
        // claim over, one wins; a claim joined meanwhile is alive again and is not taken.
        const taken = await byKey
          .set({ body_hash: r.bodyHash, job_id: r.jobId, holders: 1, created_at: now, claimed_at: now })
          .where('body_hash', '=', row.body_hash)
          .where(sql<string>`coalesce(claimed_at, created_at)`, '=', row.claimed_at ?? row.created_at)
          .where(sql<string>`coalesce(claimed_at, created_at)`, '<', cutoff)
          .where(jobNeverStarted)
          .executeTakeFirst();
        if (Number(taken.numUpdatedRows ?? 0n) > 0)
          return { outcome: 'taken_over', row: await this.read(r), previousHash: row.body_hash };
        const now2 = await this.get(r.account, r.key);
        if (now2 && now2.body_hash === row.body_hash) return { outcome: 'other', row: now2 };
      }
      if (attempt >= 4) throw new Error(`idempotency record of ${r.jobId} changed under every attempt to claim it`);
    }
  }

  /** Ends the hold of a request whose start succeeded (the row stays: the key's job exists). */
  async settle(r: { account: string; key: string; bodyHash: string }): Promise<void> {
    await this.conn.db
      .updateTable('api_idempotency')
      .set((eb) => ({ holders: eb('holders', '-', 1) }))
      .where('account', '=', r.account)
      .where('idem_key', '=', r.key)
      .where('body_hash', '=', r.bodyHash)
      .where('holders', '>', 0)
      .execute();
  }

  /**
   * Ends the hold of a request whose start kept nothing, and deletes the claim when it still holds
   * `bodyHash`, no other request holds it and its job has no row (the key is free again). With
   * `jobHasOtherParameters` (the start found the key's job made with other parameters, e.g. by the
   * typed client) the job's row does not keep the claim: it was never this body's. Returns whether
   * the row was deleted.
   */
  async release(r: {
    account: string;
    key: string;
    bodyHash: string;
    jobHasOtherParameters?: boolean;
  }): Promise<boolean> {
    return this.conn.tx(async (trx) => {
      const ours = trx
        .updateTable('api_idempotency')
        .where('account', '=', r.account)
        .where('idem_key', '=', r.key)
        .where('body_hash', '=', r.bodyHash);
      await ours
        .set((eb) => ({ holders: eb('holders', '-', 1) }))
        .where('holders', '>', 0)
        .execute();
      let del = trx
        .deleteFrom('api_idempotency')
        .where('account', '=', r.account)
        .where('idem_key', '=', r.key)
        .where('body_hash', '=', r.bodyHash)
        .where('holders', '<=', 0);
      if (!r.jobHasOtherParameters) del = del.where(jobNeverStarted);
      const res = await del.executeTakeFirst();
      return Number(res.numDeletedRows ?? 0n) > 0;
    });
  }

  /**
   * Gives a claim taken over from `previousHash` back to it (the earlier claim's start turned out
   * alive and made the job): sets the body back when the row still holds `bodyHash`.
   */
  async giveBack(r: { account: string; key: string; bodyHash: string; previousHash: string }): Promise<void> {
    await this.conn.db
      .updateTable('api_idempotency')
      .set({ body_hash: r.previousHash, holders: 0 })
      .where('account', '=', r.account)
      .where('idem_key', '=', r.key)
      .where('body_hash', '=', r.bodyHash)
      .execute();
  }

  /**
   * Records (account, key) → (body fingerprint, job) once, with no hold (a job that started).
   * Returns whether this call inserted the row, and the row as stored (the first writer's when
   * another request won the race). Throws when the row cannot be read back.
   */
  async remember(r: {
    account: string;
    key: string;
    bodyHash: string;
    jobId: string;
  }): Promise<{ inserted: boolean; row: ApiIdempotencyRow }> {
    const inserted = await this.insertIfAbsent(r, nowIso(), 0);
    return { inserted, row: await this.read(r) };
  }

  /** Inserts the row of (account, key) with `holders` holds, taken at `now`, unless one exists; true when inserted. */
  private async insertIfAbsent(
    r: { account: string; key: string; bodyHash: string; jobId: string },
    now: string,
    holders: number,
  ): Promise<boolean> {
    const res = await this.conn.db
      .insertInto('api_idempotency')
      .values({
        account: r.account,
        idem_key: r.key,
        body_hash: r.bodyHash,
        job_id: r.jobId,
        created_at: now,
        claimed_at: now,
        holders,
      })
      .onConflict((oc) => oc.columns(['account', 'idem_key']).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  private async read(r: { account: string; key: string; jobId: string }): Promise<ApiIdempotencyRow> {
    const row = await this.get(r.account, r.key);
    if (!row) throw new Error(`idempotency record of ${r.jobId} could not be written`);
    return row;
  }
}
