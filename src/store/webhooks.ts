/**
 * Store access of the HTTP API and its provider webhook receiver (issue 5), kept apart from the
 * core store (`index.ts`). Tables (migration `003_webhooks`, defined here and listed in
 * `migrations.ts`):
 *
 * - `webhook_deliveries`: one row per (provider, event ID) ever received and verified — the
 *   dedupe key, so that a provider delivering the same event five times has one effect;
 * - `webhook_quarantine`: every event we could not verify or could not match to a job, kept with
 *   its sanitised headers, the reason, the body's SHA-256 and size, and the sanitised body when the
 *   signature verified (an unverified body is anyone's bytes: not stored);
 *
 * Rows of both webhook tables older than the webhook retention (default 30 days) are deleted by
 * {@link purgeWebhookRecords} on the result-purge Schedule.
 * - `api_idempotency`: one row per (account, idempotency key) accepted by `POST /v1/scrapes`,
 *   with the fingerprint of the request body (a repeat with another body is refused).
 *
 * Times are UTC ISO-8601 strings, as in the rest of the store; JSON columns hold sanitised JSON.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, type Migration, type Selectable } from 'kysely';
import { FINAL_STATES } from '../model/states.js';
import type { JobRow, Store } from './index.js';

/** A verified webhook event we acted on (or deliberately did not). */
export interface WebhookDeliveriesTable {
  id: string;
  provider: string;
  /** The provider's event (or delivery) ID; unique per provider. */
  event_id: string;
  received_at: string;
  /** Event type as the provider named it (e.g. `job.completed`). */
  event_type: string | null;
  /** Provider status the event claimed (a hint, never trusted for the result). */
  provider_status: string | null;
  task_id: string | null;
  /** Our job, when matched. */
  job_id: string | null;
  /** `received` (being handled), `woken`, `job_final`, `not_running`, `quarantined`. */
  outcome: string;
}

/** An event kept for an operator: unverifiable, invalid or unmatched. */
export interface WebhookQuarantineTable {
  id: string;
  provider: string;
  event_id: string | null;
  received_at: string;
  /** `invalid_signature`, `invalid_payload`, `unmatched`. */
  reason: string;
  /** Human explanation (no secrets). */
  detail: string;
  /** JSON of the sanitised request headers. */
  headers: string;
  /** The sanitised body (JSON text when it parsed, else the text), truncated to 64 KiB. */
  body: string;
  /** Hex SHA-256 of the raw body as received. */
  body_sha256: string;
  /** Size of the raw body, bytes. */
  body_bytes: number;
}

/** An idempotency key accepted by the HTTP API. */
export interface ApiIdempotencyTable {
  account: string;
  idem_key: string;
  /** Fingerprint of the canonical request body. */
  body_hash: string;
  job_id: string;
  created_at: string;
}

/** The tables of this module, for `db.withTables<WebhookTables>()`. */
export type WebhookTables = {
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_quarantine: WebhookQuarantineTable;
  api_idempotency: ApiIdempotencyTable;
};

/** A row of `webhook_deliveries`. */
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
/** A row of `webhook_quarantine`. */
export type WebhookQuarantineRow = Selectable<WebhookQuarantineTable>;
/** A row of `api_idempotency`. */
export type ApiIdempotencyRow = Selectable<ApiIdempotencyTable>;

/** Migration `003_webhooks`: the three tables above. Never edit once released; add another. */
export const m003_webhooks: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text')
      .addColumn('provider_status', 'text')
      .addColumn('task_id', 'text')
      .addColumn('job_id', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addUniqueConstraint('webhook_deliveries_event_uq', ['provider', 'event_id'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_job_idx').on('webhook_deliveries').column('job_id').execute();

    await db.schema
      .createTable('webhook_quarantine')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text')
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('detail', 'text', (c) => c.notNull())
      .addColumn('headers', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('body_sha256', 'text', (c) => c.notNull())
      .addColumn('body_bytes', 'integer', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('webhook_quarantine_received_idx').on('webhook_quarantine').columns(['provider', 'received_at']).execute();

    await db.schema
      .createTable('api_idempotency')
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('idem_key', 'text', (c) => c.notNull())
      .addColumn('body_hash', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('api_idempotency_pk', ['account', 'idem_key'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('api_idempotency').execute();
    await db.schema.dropTable('webhook_quarantine').execute();
    await db.schema.dropTable('webhook_deliveries').execute();
  },
};

const nowIso = () => new Date().toISOString();
const tables = (store: Store) => store.db.withTables<WebhookTables>();

/**
 * Records a verified event under (provider, event ID), outcome `received`. Returns
 * `{inserted: false, existing}` when the event was recorded before (a redelivery: do nothing).
 */
export async function recordDelivery(
  store: Store,
  d: { provider: string; eventId: string; eventType: string | null; providerStatus: string | null; taskId: string | null },
): Promise<{ inserted: true } | { inserted: false; existing: WebhookDeliveryRow }> {
  const res = await tables(store)
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
  const existing = await tables(store).selectFrom('webhook_deliveries').selectAll().where('provider', '=', d.provider).where('event_id', '=', d.eventId).executeTakeFirstOrThrow();
  return { inserted: false, existing };
}

/** Sets the outcome (and matched job) of a recorded delivery. */
export async function setDeliveryOutcome(store: Store, provider: string, eventId: string, outcome: string, jobId: string | null): Promise<void> {
  await tables(store).updateTable('webhook_deliveries').set({ outcome, job_id: jobId }).where('provider', '=', provider).where('event_id', '=', eventId).execute();
}

/**
 * Deletes a delivery record so that the provider's retry of the same event is handled again
 * (used when the wake signal could not be sent, e.g. Temporal unreachable).
 */
export async function forgetDelivery(store: Store, provider: string, eventId: string): Promise<void> {
  await tables(store).deleteFrom('webhook_deliveries').where('provider', '=', provider).where('event_id', '=', eventId).execute();
}

/** Deliveries, newest first, optionally of one provider or one job (limit default 100). */
export async function listDeliveries(store: Store, filter: { provider?: string; jobId?: string; limit?: number } = {}): Promise<WebhookDeliveryRow[]> {
  let q = tables(store).selectFrom('webhook_deliveries').selectAll();
  if (filter.provider) q = q.where('provider', '=', filter.provider);
  if (filter.jobId) q = q.where('job_id', '=', filter.jobId);
  return q.orderBy('received_at', 'desc').orderBy('id').limit(filter.limit ?? 100).execute();
}

/** Keeps an event in quarantine. `headers` and `body` must already be sanitised. */
export async function quarantineEvent(
  store: Store,
  q: { provider: string; eventId: string | null; reason: string; detail: string; headers: Record<string, string>; body: string; bodySha256: string; bodyBytes: number },
): Promise<string> {
  const id = randomUUID();
  await tables(store)
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

/** Default retention of webhook delivery and quarantine rows: 30 days, in ms. */
export const WEBHOOK_RETENTION_MS = 30 * 24 * 3_600_000;

/**
 * Deletes webhook delivery and quarantine rows received before `before`. Returns the counts. A
 * redelivery of an event older than that would be processed again, which is harmless: a webhook
 * only wakes a job, and a finished job ignores it.
 */
export async function purgeWebhookRecords(store: Store, before: Date): Promise<{ deliveries: number; quarantined: number }> {
  const cutoff = before.toISOString();
  const d = await tables(store).deleteFrom('webhook_deliveries').where('received_at', '<', cutoff).executeTakeFirst();
  const q = await tables(store).deleteFrom('webhook_quarantine').where('received_at', '<', cutoff).executeTakeFirst();
  return { deliveries: Number(d.numDeletedRows), quarantined: Number(q.numDeletedRows) };
}

/** Quarantined events, newest first, optionally of one provider (limit default 100). */
export async function listQuarantine(store: Store, filter: { provider?: string; limit?: number } = {}): Promise<WebhookQuarantineRow[]> {
  let q = tables(store).selectFrom('webhook_quarantine').selectAll();
  if (filter.provider) q = q.where('provider', '=', filter.provider);
  return q.orderBy('received_at', 'desc').orderBy('id').limit(filter.limit ?? 100).execute();
}

/**
 * The non-final job of `provider` whose client reference (computed by `clientRefOf` from the
 * job's account and key, as sent to the provider) equals `clientRef`. Scans at most the 5,000
 * newest non-final jobs of the provider: the events that need this are those that arrive before
 * the task ID was recorded.
 */
export async function findJobByClientRef(store: Store, provider: string, clientRef: string, clientRefOf: (account: string, key: string) => string): Promise<JobRow | undefined> {
  const rows = await store.db
    .selectFrom('jobs')
    .selectAll()
    .where('provider', '=', provider)
    .where('state', 'not in', [...FINAL_STATES])
    .orderBy('created_at', 'desc')
    .limit(5_000)
    .execute();
  return rows.find((r) => clientRefOf(r.account, r.idem_key) === clientRef);
}

/** The recorded idempotency key of `account`, or undefined. */
export async function getIdempotentRequest(store: Store, account: string, key: string): Promise<ApiIdempotencyRow | undefined> {
  return tables(store).selectFrom('api_idempotency').selectAll().where('account', '=', account).where('idem_key', '=', key).executeTakeFirst();
}

/**
 * Records (account, key) → (body fingerprint, job) once. Returns whether this call inserted the
 * row, and the row as stored (the first writer's when another request won the race).
 */
export async function rememberIdempotentRequest(store: Store, r: { account: string; key: string; bodyHash: string; jobId: string }): Promise<{ inserted: boolean; row: ApiIdempotencyRow }> {
  const res = await tables(store)
    .insertInto('api_idempotency')
    .values({ account: r.account, idem_key: r.key, body_hash: r.bodyHash, job_id: r.jobId, created_at: nowIso() })
    .onConflict((oc) => oc.columns(['account', 'idem_key']).doNothing())
    .executeTakeFirst();
  const row = await getIdempotentRequest(store, r.account, r.key);
  if (!row) throw new Error(`idempotency record of ${r.jobId} could not be written`);
  return { inserted: Number(res.numInsertedOrUpdatedRows ?? 0n) > 0, row };
}

/** Position in a job list ordered by (`created_at` desc, `id` asc). */
export interface JobCursor {
  createdAt: string;
  id: string;
}

/**
 * One page of an account's jobs, newest first (`created_at` desc, then `id`), strictly after
 * `after` when given. Returns up to `limit` rows and whether more follow.
 */
export async function listJobsPage(store: Store, f: { account: string; states?: string[]; batchId?: string; limit: number; after?: JobCursor }): Promise<{ rows: JobRow[]; more: boolean }> {
  let q = store.db.selectFrom('jobs').selectAll().where('account', '=', f.account);
  if (f.states?.length) q = q.where('state', 'in', f.states);
  if (f.batchId) q = q.where('batch_id', '=', f.batchId);
  const after = f.after;
  if (after) {
    q = q.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)])]));
  }
  const rows = await q.orderBy('created_at', 'desc').orderBy('id').limit(f.limit + 1).execute();
  return { rows: rows.slice(0, f.limit), more: rows.length > f.limit };
}
