/**
 * The provider webhook receiver's records (`store.webhooks`). Tables (migration `003_webhooks` in
 * `migrations.ts`, shapes in `schema.ts`):
 *
 * - `webhook_deliveries`: one row per (provider, event ID) ever received and verified — the
 *   dedupe key, so that a provider delivering the same event five times has one effect;
 * - `webhook_quarantine`: every event we could not verify or could not match to a job, kept with
 *   its sanitised headers, the reason, the body's SHA-256 and size, and the sanitised body when the
 *   signature verified (an unverified body is anyone's bytes: not stored);
 *
 * Rows of both webhook tables older than the webhook retention (default 30 days) are deleted by
 * {@link WebhooksRepository.purge} on the result-purge Schedule. (The API's `api_idempotency`
 * table is `apiIdempotency.ts`'s.)
 *
 * Times are UTC ISO-8601 strings, as in the rest of the store; JSON columns hold sanitised JSON.
 */
import { randomUUID } from 'node:crypto';
import type { StoreConnection } from './connection.js';
import { nowIso } from './rows.js';
import type { WebhookDeliveryRow } from './schema.js';

/** Default retention of webhook delivery and quarantine rows: 30 days, in ms. */
export const WEBHOOK_RETENTION_MS = 30 * 24 * 3_600_000;

/** The store's webhook deliveries and quarantine. Reach it as `store.webhooks`. */
export class WebhooksRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Records a verified event under (provider, event ID), outcome `received` (`received_at` is
   * when a delivery of it was last taken for handling: {@link reopenUnmatched} and
   * {@link reclaimStale} move it). Returns
   * `{inserted: false, existing}` when the event was recorded before (a redelivery: do nothing).
   */
  async recordDelivery(d: {
    provider: string;
    eventId: string;
    eventType: string | null;
    providerStatus: string | null;
    taskId: string | null;
  }): Promise<{ inserted: true } | { inserted: false; existing: WebhookDeliveryRow }> {
    const res = await this.conn.db
      .insertInto('webhook_deliveries')
      .values({
        id: randomUUID(),
        provider: d.provider,
        event_id: d.eventId,
        received_at: nowIso(),
        event_type: d.eventType,
        provider_status: d.providerStatus,
        task_id: d.taskId,
        job_id: null,
        outcome: 'received',
      })
      .onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0n) > 0) return { inserted: true };
    const existing = await this.conn.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('provider', '=', d.provider)
      .where('event_id', '=', d.eventId)
      .executeTakeFirstOrThrow();
    return { inserted: false, existing };
  }

  /** Sets the outcome (and matched job) of a recorded delivery. */
  async setDeliveryOutcome(provider: string, eventId: string, outcome: string, jobId: string | null): Promise<void> {
    await this.conn.db
      .updateTable('webhook_deliveries')
      .set({ outcome, job_id: jobId })
      .where('provider', '=', provider)
      .where('event_id', '=', eventId)
      .execute();
  }

  /**
   * Claims a delivery kept as unmatched (outcome `quarantined`, no job) for one more match: sets
   * its outcome back to `received` and returns true, or returns false when it is not such a
   * delivery or another redelivery claimed it first. A redelivered event whose first delivery
   * overtook the submit answer (its task ID was not known yet) can then reach its job.
   */
  async reopenUnmatched(provider: string, eventId: string): Promise<boolean> {
    const res = await this.conn.db
      .updateTable('webhook_deliveries')
      // Taken for handling now: a concurrent redelivery sees a fresh `received`, not a stale one.
      .set({ outcome: 'received', received_at: nowIso() })
      .where('provider', '=', provider)
      .where('event_id', '=', eventId)
      .where('outcome', '=', 'quarantined')
      .where('job_id', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows ?? 0n) > 0;
  }

  /**
   * Claims a delivery left `received` (being handled) since more than `staleAfterMs` (ms) ago for
   * handling again: its handler died before settling it (a process killed between recording and
   * settling), so nothing woke its job. Sets its `received_at` to now and returns true, or returns
   * false when it is not such a delivery or another redelivery claimed it first (compare-and-set
   * on the outcome and the time: one of two concurrent redeliveries wins).
   */
  async reclaimStale(provider: string, eventId: string, staleAfterMs: number): Promise<boolean> {
    const cutoff = new Date(Date.now() - staleAfterMs).toISOString();
    const res = await this.conn.db
      .updateTable('webhook_deliveries')
      .set({ received_at: nowIso() })
      .where('provider', '=', provider)
      .where('event_id', '=', eventId)
      .where('outcome', '=', 'received')
      .where('received_at', '<', cutoff)
      .executeTakeFirst();
    return Number(res.numUpdatedRows ?? 0n) > 0;
  }

  /**
   * Deletes a delivery record so that the provider's retry of the same event is handled again
   * (used when the wake signal could not be sent, e.g. Temporal unreachable).
   */
  async forgetDelivery(provider: string, eventId: string): Promise<void> {
    await this.conn.db
      .deleteFrom('webhook_deliveries')
      .where('provider', '=', provider)
      .where('event_id', '=', eventId)
      .execute();
  }

  /** Deliveries, newest first, optionally of one provider or one job (limit default 100). */
  async listDeliveries(
    filter: { provider?: string; jobId?: string; limit?: number } = {},
  ): Promise<WebhookDeliveryRow[]> {
    let q = this.conn.db.selectFrom('webhook_deliveries').selectAll();
    if (filter.provider) q = q.where('provider', '=', filter.provider);
    if (filter.jobId) q = q.where('job_id', '=', filter.jobId);
    return q
      .orderBy('received_at', 'desc')
      .orderBy('id')
      .limit(filter.limit ?? 100)
      .execute();
  }

  /**
   * Keeps an event in quarantine (a body over 64 KiB is cut, marked `…[truncated]`). `headers` and
   * `body` must already be sanitised. Returns the quarantine row's id.
   */
  async quarantine(q: {
    provider: string;
    eventId: string | null;
    reason: string;
    detail: string;
    headers: Record<string, string>;
    body: string;
    bodySha256: string;
    bodyBytes: number;
  }): Promise<string> {
    const id = randomUUID();
    await this.conn.db
      .insertInto('webhook_quarantine')
      .values({
        id,
        provider: q.provider,
        event_id: q.eventId,
        received_at: nowIso(),
        reason: q.reason,
        detail: q.detail,
        headers: JSON.stringify(q.headers),
        body: q.body.length > 65_536 ? `${q.body.slice(0, 65_536)}…[truncated]` : q.body,
        body_sha256: q.bodySha256,
        body_bytes: q.bodyBytes,
      })
      .execute();
    return id;
  }

  /**
   * Deletes webhook delivery and quarantine rows received before `before`. Returns the counts. A
   * redelivery of an event older than that would be processed again, which is harmless: a webhook
   * only wakes a job, and a finished job ignores it.
   */
  async purge(before: Date): Promise<{ deliveries: number; quarantined: number }> {
    const cutoff = before.toISOString();
    const d = await this.conn.db.deleteFrom('webhook_deliveries').where('received_at', '<', cutoff).executeTakeFirst();
    const q = await this.conn.db.deleteFrom('webhook_quarantine').where('received_at', '<', cutoff).executeTakeFirst();
    return { deliveries: Number(d.numDeletedRows), quarantined: Number(q.numDeletedRows) };
  }
}
