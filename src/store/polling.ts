/**
 * Poll state of the store (`store.polling`): what the polling and submit activities keep on the
 * job row. The polling loop keeps no state in workflow history: each check reads the job row (generation, 404 streak, failed-read streak,
 * earliest next check) and writes what it saw, so the row is also what `status` shows while checks
 * run or fail, and what the next loop (after a hand-over or a restart) starts from. (A submit's
 * slot and the key's adaptive limit are `store.slots`, `slots.ts`.) Times are UTC ISO-8601
 * strings, durations ms.
 */
import { sql } from 'kysely';
import { isFinalState } from '../model/states.js';
import type { JobError, JobWait } from '../model/types.js';
import type { StoreConnection } from './connection.js';
import type { CooldownState } from '../model/types.js';
import { cooldownOf, eventRow, nowIso } from './rows.js';
import type { JobRow } from './schema.js';

/**
 * What an attempt of the polling activity learns before it calls the provider. `seen`: the shared
 * cool-down of the job's provider key, read with the row (key → its state, undefined for none),
 * for the call's limiter ({@link LimitedCall.seen}); absent when the row names no key.
 */
export type CheckStart =
  | { kind: 'go'; row: JobRow; seen?: Map<string, CooldownState | undefined> }
  /** A newer polling activity owns the job, or the job is final / being cancelled: do nothing. */
  | { kind: 'stale'; reason: string; row?: JobRow };

/** The store's poll state. Reach it as `store.polling`. */
export class PollingRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Claims the job for polling generation `generation` (a newer one wins; an older attempt learns
   * it is stale) and returns the row. `allowCancelling`: the cancel path's confirmation checks run
   * while the job is `cancelling`. `deadlineAt` (UTC ISO-8601): the tracking deadline the workflow
   * enforces, stored with the claim when the row says otherwise — the submit activity records one
   * when the task ID is written, and a workflow that learns the task ID later (its submit attempt's
   * worker died after the write, the retry waited in a long task queue) counts from that later time.
   */
  async beginCheck(
    jobId: string,
    generation: number,
    allowCancelling: boolean,
    deadlineAt?: string,
  ): Promise<CheckStart> {
    const read = await this.conn.db
      .selectFrom('jobs')
      .leftJoin('provider_cooldowns as c', 'c.label', 'jobs.provider_key')
      .selectAll('jobs')
      .select(['c.until as cooldown_until', 'c.reason as cooldown_reason', 'c.release_next as cooldown_release_next'])
      .where('jobs.id', '=', jobId)
      .executeTakeFirst();
    if (!read) return { kind: 'stale', reason: `job ${jobId} is not in the store` };
    const { cooldown_until, cooldown_reason, cooldown_release_next, ...row } = read;
    const seen = row.provider_key
      ? new Map([
          [
            row.provider_key,
            cooldownOf({ until: cooldown_until, reason: cooldown_reason, release_next: cooldown_release_next }),
          ],
        ])
      : undefined;
    if (Number(row.poll_generation) > generation)
      return { kind: 'stale', reason: `superseded by polling generation ${row.poll_generation}`, row };
    if (isFinalState(row.state)) return { kind: 'stale', reason: `job is already ${row.state}`, row };
    if (row.state === 'cancelling' && !allowCancelling) return { kind: 'stale', reason: 'job is being cancelled', row };
    const newDeadline = deadlineAt !== undefined && row.deadline_at !== deadlineAt;
    if (Number(row.poll_generation) < generation || newDeadline) {
      // Monotonic: a concurrent attempt of a newer generation is never moved back.
      await this.conn.db
        .updateTable('jobs')
        .set({ poll_generation: generation, ...(newDeadline ? { deadline_at: deadlineAt } : {}) })
        .where('id', '=', jobId)
        .where('poll_generation', '<=', generation)
        .execute();
      return { kind: 'go', row: { ...row, ...(newDeadline ? { deadline_at: deadlineAt } : {}) }, seen };
    }
    return { kind: 'go', row, seen };
  }

  /**
   * Records a successful status check: provider status (raw and normalised), the cost the provider
   * reported so far (`seen.cost`, in the kind's unit, when the answer carried it), count + 1, time, the earliest next check
   * (`minGapMs` after now, or the provider's `retryAfterMs` if longer), and clears the failed-read
   * streak (count and start) and (unless `resetNotFound` is false: a `completed` answer whose
   * result read may still 404) the 404 streak. Returns the new count of successful checks (0 when
   * the job has no row).
   */
  async recordCheck(
    jobId: string,
    seen: { providerStatus: string; state: string; cost?: number },
    minGapMs: number,
    retryAfterMs = 0,
    resetNotFound = true,
  ): Promise<number> {
    const at = nowIso();
    const row = await this.conn.db
      .updateTable('jobs')
      .set({
        provider_status: seen.providerStatus,
        provider_state: seen.state,
        ...(seen.cost !== undefined && Number.isFinite(seen.cost) && seen.cost >= 0
          ? { cost_reported: seen.cost }
          : {}),
        last_checked_at: at,
        status_checks: sql`status_checks + 1`,
        status_errors: 0,
        failing_since: null,
        waiting: null,
        ...(resetNotFound ? { not_found_streak: 0 } : {}),
        check_not_before: new Date(Date.now() + Math.max(minGapMs, retryAfterMs)).toISOString(),
        updated_at: at,
      })
      .where('id', '=', jobId)
      .returning('status_checks')
      .executeTakeFirst();
    return Number(row?.status_checks ?? 0);
  }

  /**
   * Records a provider read that failed (a status or result read, a lookup: timeout, 5xx, 429): the
   * streak's count + 1, its start (kept from its first failure), the error as the job's last one,
   * and the earliest next read, `delayMs(failures)` ms from now — kept on the row, so that a
   * `Retry-After` outlives a hand-over to another worker and a restart — and a `read_failed` event
   * (`read`: what was read, `retryAfterMs`: the provider's ask) in the timeline. Returns the streak.
   */
  async recordReadError(
    jobId: string,
    error: JobError,
    delayMs: (failures: number, since: number) => number,
    read: { phase: string; retryAfterMs?: number },
  ): Promise<{ failures: number; since: number; delayMs: number }> {
    return this.conn.tx(async (trx) => {
      const at = nowIso();
      await trx
        .updateTable('jobs')
        .set({
          status_errors: sql`status_errors + 1`,
          failing_since: sql`coalesce(failing_since, ${at})`,
          last_error: JSON.stringify(error),
          // A read was sent (and failed): the job no longer waits for a cool-down it met before.
          waiting: null,
          updated_at: at,
        })
        .where('id', '=', jobId)
        .execute();
      const row = await trx
        .selectFrom('jobs')
        .select(['status_errors', 'failing_since'])
        .where('id', '=', jobId)
        .executeTakeFirst();
      const failures = Number(row?.status_errors ?? 1);
      const since = Date.parse(row?.failing_since ?? at);
      const wait = delayMs(failures, since);
      await trx
        .updateTable('jobs')
        .set({ check_not_before: new Date(Date.now() + wait).toISOString() })
        .where('id', '=', jobId)
        .execute();
      await trx
        .insertInto('job_events')
        .values(eventRow(jobId, 'read_failed', null, { ...read, failures, nextReadInMs: wait, error }))
        .execute();
      return { failures, since, delayMs: wait };
    });
  }

  /** Ends the job's failed-read streak after a read that succeeded other than a status check (a lookup); no write when there is none. */
  async clearReadErrors(jobId: string): Promise<void> {
    await this.conn.db
      .updateTable('jobs')
      .set({ status_errors: 0, failing_since: null })
      .where('id', '=', jobId)
      .where('status_errors', '>', 0)
      .execute();
  }

  /** Records why the job waits (`null`: it no longer does), for `status`, the API and the Web UI. */
  async recordWait(jobId: string, wait: JobWait | null): Promise<void> {
    await this.conn.db
      .updateTable('jobs')
      .set({ waiting: wait ? JSON.stringify(wait) : null, updated_at: nowIso() })
      .where('id', '=', jobId)
      .execute();
  }

  /**
   * Records a `404` for the known task. Returns the consecutive count of those `counted` (default
   * true); one not counted (a task still inside its kind's propagation window) only becomes the
   * job's last error.
   */
  async recordNotFound(jobId: string, error: JobError, opts: { counted?: boolean } = {}): Promise<number> {
    const counted = opts.counted ?? true;
    await this.conn.db
      .updateTable('jobs')
      .set({
        ...(counted ? { not_found_streak: sql`not_found_streak + 1` } : {}),
        last_error: JSON.stringify(error),
        waiting: null,
        updated_at: nowIso(),
      })
      .where('id', '=', jobId)
      .execute();
    const row = await this.conn.db
      .selectFrom('jobs')
      .select('not_found_streak')
      .where('id', '=', jobId)
      .executeTakeFirst();
    return Number(row?.not_found_streak ?? 1);
  }

  /**
   * How long the recently completed jobs of provider key `providerKey` took, ms (from the task being
   * known to the result written), newest first, at most `limit` (for a learned poll schedule).
   */
  async recentDurations(providerKey: string, limit = 200): Promise<number[]> {
    const rows = await this.conn.db
      .selectFrom('jobs')
      .select(['submitted_at', 'finished_at'])
      .where('provider_key', '=', providerKey)
      .where('state', '=', 'completed')
      .where('submitted_at', 'is not', null)
      .where('finished_at', 'is not', null)
      .orderBy('finished_at', 'desc')
      .limit(limit)
      .execute();
    return rows
      .map((r) => Date.parse(r.finished_at!) - Date.parse(r.submitted_at!))
      .filter((d) => Number.isFinite(d) && d >= 0);
  }
}
