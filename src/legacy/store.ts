/**
 * The store operations only the v1 workflow's activities (`activities.ts` here) use: the v1 submit
 * records its intent without a slot reservation, and the v1 status check counts checks and
 * failures without the poll state of workflow v2 (`store.polling`). Built over the store's
 * connection like every repository of `src/store/`, and kept here so that retiring v1 deletes it
 * with the rest of this folder. Times are UTC ISO-8601 strings.
 */
import { sql } from 'kysely';
import type { JobError } from '../model/types.js';
import type { JobRow, StoreConnection } from '../store/index.js';

const nowIso = () => new Date().toISOString();

/** The v1-only operations on job rows. Construct over the store: `new LegacyJobsRepository(store)`. */
export class LegacyJobsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Records the intent to submit (before the provider is called). Returns the row as it was
   * before, so that a retried submit attempt can see an earlier intent or an earlier answer;
   * undefined when the job does not exist.
   */
  async recordSubmitIntent(jobId: string): Promise<JobRow | undefined> {
    return this.conn.tx(async (trx) => {
      const before = await trx.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
      if (!before || before.task_id) return before;
      const at = nowIso();
      await trx
        .updateTable('jobs')
        .set({ submit_intent_at: at, submit_attempts: sql`submit_attempts + 1`, updated_at: at })
        .where('id', '=', jobId)
        .execute();
      return before;
    });
  }

  /** Records a successful status check (provider status, time, count) and clears the error count. */
  async recordStatusCheck(jobId: string, providerStatus: string): Promise<void> {
    const at = nowIso();
    await this.conn.db
      .updateTable('jobs')
      .set({
        provider_status: providerStatus,
        last_checked_at: at,
        status_checks: sql`status_checks + 1`,
        status_errors: 0,
        updated_at: at,
      })
      .where('id', '=', jobId)
      .execute();
  }

  /**
   * Counts a failed status check (`status_errors`: failures since the last successful check, which
   * `status` shows and orphan detection reads) and, when given, keeps `error` (sanitised) as the
   * job's last error, in one statement.
   */
  async recordStatusError(jobId: string, error?: JobError): Promise<void> {
    await this.conn.db
      .updateTable('jobs')
      .set({
        status_errors: sql`status_errors + 1`,
        updated_at: nowIso(),
        ...(error ? { last_error: JSON.stringify(error) } : {}),
      })
      .where('id', '=', jobId)
      .execute();
  }
}
