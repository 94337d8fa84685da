/**
 * The HTTP API's idempotency records (`store.apiIdempotency`; table `api_idempotency`, migration
 * `003_webhooks`): one row per (account, `Idempotency-Key`) accepted by `POST /v1/scrapes`, with
 * the fingerprint of the request body, so that a repeat with the same body answers the same job
 * and one with another body is refused (`422`). Times are UTC ISO-8601.
 */
import type { StoreConnection } from './connection.js';
import { nowIso } from './rows.js';
import type { ApiIdempotencyRow } from './schema.js';

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
   * Records (account, key) → (body fingerprint, job) once. Returns whether this call inserted the
   * row, and the row as stored (the first writer's when another request won the race). Throws when
   * the row cannot be read back.
   */
  async remember(r: {
    account: string;
    key: string;
    bodyHash: string;
    jobId: string;
  }): Promise<{ inserted: boolean; row: ApiIdempotencyRow }> {
    const res = await this.conn.db
      .insertInto('api_idempotency')
      .values({ account: r.account, idem_key: r.key, body_hash: r.bodyHash, job_id: r.jobId, created_at: nowIso() })
      .onConflict((oc) => oc.columns(['account', 'idem_key']).doNothing())
      .executeTakeFirst();
    const row = await this.get(r.account, r.key);
    if (!row) throw new Error(`idempotency record of ${r.jobId} could not be written`);
    return { inserted: Number(res.numInsertedOrUpdatedRows ?? 0n) > 0, row };
  }

  /**
   * Deletes the record of (account, key) when it still holds `bodyHash`: a claim made before a
   * start that then kept nothing (the key is free again). Returns whether a row was deleted.
   */
  async forget(r: { account: string; key: string; bodyHash: string }): Promise<boolean> {
    const res = await this.conn.db
      .deleteFrom('api_idempotency')
      .where('account', '=', r.account)
      .where('idem_key', '=', r.key)
      .where('body_hash', '=', r.bodyHash)
      .executeTakeFirst();
    return Number(res.numDeletedRows ?? 0n) > 0;
  }
}
