/**
 * Poll state of the store (`store.polling`): what the polling and submit activities keep on the
 * job row, and the adaptive limit of active jobs per provider key. The polling loop keeps no state
 * in workflow history: each check reads the job row (generation, 404 streak, failed-read streak,
 * earliest next check) and writes what it saw, so the row is also what `status` shows while checks
 * run or fail, and what the next loop (after a hand-over or a restart) starts from. Times are UTC
 * ISO-8601 strings, durations ms.
 */
import { sql } from 'kysely';
import { isFinalState } from '../model/states.js';
import type { JobError, JobWait } from '../model/types.js';
import type { StoreConnection } from './connection.js';
import { eventRow, nowIso } from './rows.js';
import type { JobRow } from './schema.js';

/** What an attempt of the polling activity learns before it calls the provider. */
export type CheckStart =
  | { kind: 'go'; row: JobRow }
  /** A newer polling activity owns the job, or the job is final / being cancelled: do nothing. */
  | { kind: 'stale'; reason: string; row?: JobRow };

/** Which jobs share one provider key: every job whose row names it (`provider_key`, set by the worker at submit). */
export interface KeyScope {
  /** The provider key (`<kind>@<host>#<credential fingerprint>`). */
  label: string;
}

/** Configured bounds of the adaptive limit (count of active provider jobs per key). */
export interface ActiveJobsLimits {
  /** Limit before anything is learned. */
  initial: number;
  /** Highest limit the additive increase may reach; undefined = none. */
  max?: number;
}

/** Outcome of {@link PollingRepository.reserveSubmit}. */
export type Reservation =
  | { kind: 'reserved'; before: JobRow; active: number; limit: number }
  /** The job already has an answer or an unanswered intent: the caller adopts or reconciles. */
  | { kind: 'known'; before: JobRow }
  /** No slot: `waiting` other jobs of the key wait for one too (registered, no intent, no task), `ahead` of them registered before this one. */
  | { kind: 'full'; active: number; limit: number; waiting: number; ahead: number }
  /** The job ended (cancelled while its submit waited for a slot, say): nothing may be submitted. */
  | { kind: 'final'; state: string }
  | { kind: 'missing' };

/** States whose provider task may be running (or may exist: an unanswered submit). */
const ACTIVE_STATES = ['submitting', 'unknown', 'pending', 'cancelling'];

/** The store's poll state and adaptive submit limits. Reach it as `store.polling`. */
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
    const row = await this.conn.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
    if (!row) return { kind: 'stale', reason: `job ${jobId} is not in the store` };
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
      return { kind: 'go', row: { ...row, ...(newDeadline ? { deadline_at: deadlineAt } : {}) } };
    }
    return { kind: 'go', row };
  }

  /**
   * Records a successful status check: provider status (raw and normalised), count + 1, time, the earliest next check
   * (`minGapMs` after now, or the provider's `retryAfterMs` if longer), and clears the failed-read
   * streak (count and start) and (unless `resetNotFound` is false: a `completed` answer whose
   * result read may still 404) the 404 streak. Returns the new count of successful checks.
   */
  async recordCheck(
    jobId: string,
    seen: { providerStatus: string; state: string },
    minGapMs: number,
    retryAfterMs = 0,
    resetNotFound = true,
  ): Promise<number> {
    const at = nowIso();
    const notBefore = new Date(Date.now() + Math.max(minGapMs, retryAfterMs)).toISOString();
    await this.conn.db
      .updateTable('jobs')
      .set({
        provider_status: seen.providerStatus,
        provider_state: seen.state,
        last_checked_at: at,
        status_checks: sql`status_checks + 1`,
        status_errors: 0,
        failing_since: null,
        waiting: null,
        ...(resetNotFound ? { not_found_streak: 0 } : {}),
        check_not_before: notBefore,
        updated_at: at,
      })
      .where('id', '=', jobId)
      .execute();
    const row = await this.conn.db
      .selectFrom('jobs')
      .select('status_checks')
      .where('id', '=', jobId)
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

  /** Records a `404` for the known task. Returns the consecutive count. */
  async recordNotFound(jobId: string, error: JobError): Promise<number> {
    await this.conn.db
      .updateTable('jobs')
      .set({ not_found_streak: sql`not_found_streak + 1`, last_error: JSON.stringify(error), updated_at: nowIso() })
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
   * Records the intent to submit job `jobId` (before the provider is called), but only while fewer
   * than the key's learned limit of provider jobs are active: counting and recording happen in one
   * write transaction, with the key's limit row locked on PostgreSQL, so two workers cannot both
   * take the last slot. A job with a task ID or an unanswered earlier intent is returned as `known`
   * (the intent is recorded again for the attempt count) and does not need a slot; an ended job
   * (without a task) is `final`: nothing may be submitted for it.
   * `afterReconcile`: the submit follows a reconcile that proved the task absent, so an intent the
   * reconcile decided is no obstacle — but only one recorded before `intentsSinceMs` (epoch ms, the
   * resubmit activity's first scheduling): an intent of an earlier attempt of this very resubmit may
   * have reached the provider, and is reconciled like any other.
   */
  async reserveSubmit(
    jobId: string,
    scope: KeyScope,
    limits: ActiveJobsLimits,
    afterReconcile: boolean,
    intentsSinceMs = Number.POSITIVE_INFINITY,
  ): Promise<Reservation> {
    return this.conn.tx(async (trx) => {
      const before = await trx.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
      if (!before) return { kind: 'missing' };
      const at = nowIso();
      const intent = () =>
        trx
          .updateTable('jobs')
          .set({ submit_intent_at: at, submit_attempts: sql`submit_attempts + 1`, updated_at: at, waiting: null })
          .where('id', '=', jobId)
          .execute();
      if (before.task_id) return { kind: 'known', before };
      if (isFinalState(before.state)) return { kind: 'final', state: before.state };
      const decided = afterReconcile && Date.parse(before.submit_intent_at ?? '') < intentsSinceMs;
      if (before.submit_intent_at && !decided) {
        await intent();
        return { kind: 'known', before };
      }
      await trx
        .insertInto('provider_limits')
        .values({
          label: scope.label,
          active_limit: limits.initial,
          ceiling: limits.max ?? null,
          threshold: null,
          updated_at: at,
        })
        .onConflict((oc) => oc.column('label').doNothing())
        .execute();
      let lq = trx.selectFrom('provider_limits').select(['active_limit', 'ceiling']).where('label', '=', scope.label);
      if (this.conn.kind === 'postgres') lq = lq.forUpdate();
      const lim = await lq.executeTakeFirstOrThrow();
      const ofKey = () =>
        trx
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('provider_key', '=', scope.label)
          .where('id', '!=', jobId);
      const active = Number(
        (
          await ofKey()
            .where('state', 'in', ACTIVE_STATES)
            .where((eb) => eb.or([eb('task_id', 'is not', null), eb('submit_intent_at', 'is not', null)]))
            .executeTakeFirstOrThrow()
        ).n,
      );
      const limit = Math.max(1, Math.floor(Number(lim.active_limit)));
      if (active >= limit) {
        const waiters = () =>
          ofKey().where('state', '=', 'submitting').where('task_id', 'is', null).where('submit_intent_at', 'is', null);
        const waiting = Number((await waiters().executeTakeFirstOrThrow()).n);
        const ahead = Number((await waiters().where('created_at', '<', before.created_at).executeTakeFirstOrThrow()).n);
        return { kind: 'full', active, limit, waiting, ahead };
      }
      await intent();
      return { kind: 'reserved', before, active, limit };
    });
  }

  /**
   * Increase after a submit accepted while the key was at its limit (`activeBefore + 1 >= limit`):
   * by one job while below the threshold (slow start: the limit doubles per window of accepted
   * submits until the first refusal), else by 1/limit (additive: one job per window); never above
   * the ceiling.
   */
  async noteSubmitAccepted(label: string, activeBefore: number): Promise<void> {
    await this.conn.tx(async (trx) => {
      const lim = await trx
        .selectFrom('provider_limits')
        .select(['active_limit', 'ceiling', 'threshold'])
        .where('label', '=', label)
        .executeTakeFirst();
      if (!lim) return;
      const current = Number(lim.active_limit);
      if (activeBefore + 1 < Math.floor(current)) return;
      const slowStart = lim.threshold === null || current < Number(lim.threshold);
      const next = Math.min(
        current + (slowStart ? 1 : 1 / Math.max(1, current)),
        lim.ceiling ?? Number.POSITIVE_INFINITY,
      );
      if (next !== current)
        await trx
          .updateTable('provider_limits')
          .set({ active_limit: next, updated_at: nowIso() })
          .where('label', '=', label)
          .execute();
    });
  }

  /**
   * Multiplicative decrease after a concurrency refusal: the limit halves (at least 1) and never
   * exceeds what the provider said it allows (`statedLimit`, which also becomes the ceiling); the
   * new limit becomes the threshold above which growth is additive. Returns the new limit.
   */
  async noteSubmitRefused(label: string, activeBefore: number, statedLimit?: number): Promise<number> {
    return this.conn.tx(async (trx) => {
      const lim = await trx
        .selectFrom('provider_limits')
        .select(['active_limit', 'ceiling'])
        .where('label', '=', label)
        .executeTakeFirst();
      const current = Number(lim?.active_limit ?? Math.max(1, activeBefore));
      let next = Math.max(1, Math.floor(Math.min(current, activeBefore + 1) / 2));
      let ceiling = lim?.ceiling ?? null;
      if (statedLimit !== undefined && statedLimit >= 1) {
        ceiling = ceiling === null ? statedLimit : Math.min(ceiling, statedLimit);
        next = Math.max(next, Math.min(statedLimit, current));
      }
      next = Math.min(next, ceiling ?? next);
      await trx
        .insertInto('provider_limits')
        .values({ label, active_limit: next, ceiling, threshold: next, refusals: 1, updated_at: nowIso() })
        .onConflict((oc) =>
          oc.column('label').doUpdateSet({
            active_limit: next,
            ceiling,
            threshold: next,
            refusals: sql`provider_limits.refusals + 1`,
            updated_at: nowIso(),
          }),
        )
        .execute();
      return next;
    });
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
