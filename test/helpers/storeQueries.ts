/**
 * Queries only the tests make of the result store: exact counts and rows that production code
 * never reads (documents of a result, the outbox, a provider key's learned limit, the webhook
 * quarantine). They go through the store's own Kysely instance (`store.db`).
 */
import type { OutboxRow, Store, WebhookQuarantineRow } from '../../src/store/index.js';

/** Number of document rows of a result, or of every result of a job (tests assert exact counts). */
export async function countResultDocuments(
  store: Store,
  filter: { resultId?: string; jobId?: string },
): Promise<number> {
  let q = store.db
    .selectFrom('result_documents')
    .innerJoin('results', 'results.id', 'result_documents.result_id')
    .select((eb) => eb.fn.countAll<number>().as('n'));
  if (filter.resultId) q = q.where('result_documents.result_id', '=', filter.resultId);
  if (filter.jobId) q = q.where('results.job_id', '=', filter.jobId);
  const r = await q.executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The outbox rows (downstream effects) of a job. */
export async function outboxFor(store: Store, jobId: string): Promise<OutboxRow[]> {
  return store.db.selectFrom('outbox').selectAll().where('job_id', '=', jobId).execute();
}

/** The learned limit of active jobs of provider key `label`, or undefined before any submit. */
export async function providerLimit(
  store: Store,
  label: string,
): Promise<{ limit: number; ceiling: number | null; refusals: number } | undefined> {
  const r = await store.db.selectFrom('provider_limits').selectAll().where('label', '=', label).executeTakeFirst();
  return r
    ? {
        limit: Number(r.active_limit),
        ceiling: r.ceiling === null ? null : Number(r.ceiling),
        refusals: Number(r.refusals),
      }
    : undefined;
}

/** Quarantined webhook events, newest first, optionally of one provider (limit default 100). */
export async function listQuarantine(
  store: Store,
  filter: { provider?: string; limit?: number } = {},
): Promise<WebhookQuarantineRow[]> {
  let q = store.db.selectFrom('webhook_quarantine').selectAll();
  if (filter.provider) q = q.where('provider', '=', filter.provider);
  return q
    .orderBy('received_at', 'desc')
    .orderBy('id')
    .limit(filter.limit ?? 100)
    .execute();
}
