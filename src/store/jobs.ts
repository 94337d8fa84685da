/**
 * The jobs of the store (`store.jobs`): one row per logical scrape request (account + idempotency
 * key), its state, the provider task bound to it and the provider account and key it counts
 * toward. Every state change appends a timeline event in the same transaction. Times are UTC
 * ISO-8601 strings, durations ms.
 */
import { sql } from 'kysely';
import { FINAL_STATES, isFinalState, type JobState } from '../model/states.js';
import type { JobError, JobWait } from '../model/types.js';
import type { StoreConnection } from './connection.js';
import { eventRow, nowIso, type NewJobInput } from './rows.js';
import { IllegalTransitionError, moveJob, reportMove } from './transitions.js';
import type { JobRow } from './schema.js';
import {
  IdempotencyConflictStoreError,
  shownOwner,
  taskHolder,
  TaskCollisionError,
  type BindOutcome,
  type JobCursor,
  type JobFilter,
} from './jobTypes.js';

/** The store's jobs. Reach it as `store.jobs`. */
export class JobsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Inserts the job row if absent (the reference is persisted before anything else) and returns
   * the stored row and whether this call inserted it. Throws {@link IdempotencyConflictStoreError}
   * when the row exists with another request fingerprint (same key, other parameters).
   */
  async insert(row: NewJobInput): Promise<{ row: JobRow; inserted: boolean }> {
    const at = nowIso();
    // The inserted row comes back with the insert; only a row that was there already is read.
    const mine = await this.conn.db
      .insertInto('jobs')
      .values({ ...row, state: row.state ?? 'submitting', created_at: at, updated_at: at })
      .onConflict((oc) => oc.column('id').doNothing())
      .returningAll()
      .executeTakeFirst();
    const inserted = mine !== undefined;
    const existing = mine ?? (await this.get(row.id));
    if (!existing) throw new Error(`job ${row.id} could not be registered`);
    if (existing.request_hash !== row.request_hash) {
      throw new IdempotencyConflictStoreError(row.id, existing.request_hash, row.request_hash);
    }
    if (inserted)
      await this.conn.db
        .insertInto('job_events')
        .values(eventRow(row.id, 'created', existing.state, { url: row.url, batchId: row.batch_id ?? null }))
        .execute();
    return { row: existing, inserted };
  }

  /**
   * {@link insert}, then records this workflow run's deadline (UTC ISO-8601) on the row.
   * Returns the stored row; throws as {@link insert} does.
   */
  async register(row: NewJobInput): Promise<JobRow> {
    const { row: existing } = await this.insert(row);
    if (row.deadline_at && existing.deadline_at !== row.deadline_at) {
      await this.conn.db.updateTable('jobs').set({ deadline_at: row.deadline_at }).where('id', '=', row.id).execute();
      return { ...existing, deadline_at: row.deadline_at };
    }
    return existing;
  }

  /**
   * Removes a job row that was created for a workflow start Temporal then refused, with its
   * events, so that nothing half-made is left (only while it is `submitting` without a task ID; a
   * workflow that does run re-creates its row in `register`). Returns whether a row was removed.
   */
  async forgetUnstarted(jobId: string): Promise<boolean> {
    return this.conn.tx(async (trx) => {
      const res = await trx
        .deleteFrom('jobs')
        .where('id', '=', jobId)
        .where('state', '=', 'submitting')
        .where('task_id', 'is', null)
        .executeTakeFirst();
      const removed = Number(res.numDeletedRows) > 0;
      if (removed) await trx.deleteFrom('job_events').where('job_id', '=', jobId).execute();
      return removed;
    });
  }

  /** The job row, or undefined. */
  async get(id: string): Promise<JobRow | undefined> {
    return this.conn.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The job row that holds `taskId` at provider entry `provider`, or undefined. */
  async byTask(provider: string, taskId: string): Promise<JobRow | undefined> {
    return this.conn.db
      .selectFrom('jobs')
      .selectAll()
      .where('provider', '=', provider)
      .where('task_id', '=', taskId)
      .executeTakeFirst();
  }

  /**
   * The non-final job of `provider` whose client reference (computed by `clientRefOf` from the
   * job's account and key, as sent to the provider) equals `clientRef`. Scans at most the 5,000
   * newest non-final jobs of the provider: the webhook events that need this are those that
   * arrive before the task ID was recorded.
   */
  async byClientRef(
    provider: string,
    clientRef: string,
    clientRefOf: (account: string, key: string) => string,
  ): Promise<JobRow | undefined> {
    const rows = await this.conn.db
      .selectFrom('jobs')
      .selectAll()
      .where('provider', '=', provider)
      .where('state', 'not in', [...FINAL_STATES])
      .orderBy('created_at', 'desc')
      .limit(5_000)
      .execute();
    return rows.find((r) => clientRefOf(r.account, r.idem_key) === clientRef);
  }

  /** Jobs matching `filter`, newest first (default limit 100). */
  async list(filter: JobFilter = {}): Promise<JobRow[]> {
    let q = this.conn.db.selectFrom('jobs').selectAll();
    if (filter.account) q = q.where('account', '=', filter.account);
    if (filter.states?.length) q = q.where('state', 'in', filter.states);
    if (filter.batchId) q = q.where('batch_id', '=', filter.batchId);
    if (filter.provider) q = q.where('provider', '=', filter.provider);
    if (filter.updatedBefore) q = q.where('updated_at', '<', filter.updatedBefore);
    return q
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(filter.limit ?? 100)
      .execute();
  }

  /**
   * One page of an account's jobs, newest first (`created_at` desc, then `id`), strictly after
   * `after` when given. Returns up to `limit` rows and whether more follow.
   */
  async page(f: {
    account: string;
    states?: string[];
    batchId?: string;
    limit: number;
    after?: JobCursor;
  }): Promise<{ rows: JobRow[]; more: boolean }> {
    let q = this.conn.db.selectFrom('jobs').selectAll().where('account', '=', f.account);
    if (f.states?.length) q = q.where('state', 'in', f.states);
    if (f.batchId) q = q.where('batch_id', '=', f.batchId);
    const after = f.after;
    if (after) {
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '<', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)]),
        ]),
      );
    }
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(f.limit + 1)
      .execute();
    return { rows: rows.slice(0, f.limit), more: rows.length > f.limit };
  }

  /** The number of jobs in each state, every account together (states with no job are absent). */
  async countByState(): Promise<Record<string, number>> {
    const rows = await this.conn.db
      .selectFrom('jobs')
      .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  /** Non-final jobs whose row has not changed since `before` (UTC ISO-8601), oldest first, at most `limit`. */
  async stale(before: string, limit = 500): Promise<JobRow[]> {
    return this.conn.db
      .selectFrom('jobs')
      .selectAll()
      .where('state', 'not in', [...FINAL_STATES])
      .where('updated_at', '<', before)
      .orderBy('updated_at')
      .limit(limit)
      .execute();
  }

  /** Non-final jobs with at least `threshold` failed status checks in a row, at most `limit`. */
  async erroring(threshold: number, limit = 500): Promise<JobRow[]> {
    return this.conn.db
      .selectFrom('jobs')
      .selectAll()
      .where('state', 'not in', [...FINAL_STATES])
      .where('status_errors', '>=', threshold)
      .limit(limit)
      .execute();
  }

  /** Clears the submit intent after a definite rejection (nothing was created at the provider). */
  async clearSubmitIntent(jobId: string): Promise<void> {
    await this.conn.db
      .updateTable('jobs')
      .set({ submit_intent_at: null, updated_at: nowIso() })
      .where('id', '=', jobId)
      .where('task_id', 'is', null)
      .execute();
  }

  /**
   * Records the provider's task ID (the answer to a submit, or a task adopted by reconciliation)
   * and moves the job to `pending`, with the tracking deadline `trackingDeadlineMs` (ms) from now.
   * A task ID already recorded is never replaced: the stored one is returned instead. Throws
   * {@link TaskCollisionError} when the task is bound to another job of the same provider account,
   * and an `Error` when the job has already ended (see {@link bindTask}, which returns both instead).
   */
  async recordTaskId(
    jobId: string,
    taskId: string,
    providerStatus: string | null,
    source: string,
    trackingDeadlineMs?: number,
    providerAccount?: string | null,
  ): Promise<string> {
    const out = await this.bindTask({ jobId, taskId, providerStatus, source, trackingDeadlineMs, providerAccount });
    if (out.kind === 'collision') throw new TaskCollisionError(jobId, taskId, out.boundTo);
    if (out.kind === 'final')
      throw new Error(`job ${jobId} is already ${out.state}; task ${taskId} is kept in its timeline, not bound`);
    return out.taskId;
  }

  /**
   * Binds `taskId` to job `jobId` (a task belongs to one job): in one transaction, unless the
   * job already holds a task (then that one is returned; another task is kept as a
   * `task_after_bound` event: a second paid job) or another job of the same provider account —
   * or, without `providerAccount`, of the same provider entry — holds `taskId` (then nothing is
   * written and the collision is returned, with a `task_collision` event on the job, whatever this
   * job's state), or the job has ended (nothing is bound; a `task_after_final` event keeps the task
   * as evidence). On success the job moves to `pending` with the tracking deadline
   * `trackingDeadlineMs` (ms) from now, a `task_recorded` event naming `source`, and `submitAnswer`
   * (what the task's later calls need of that answer) kept. `claim`: the polling generation the
   * caller checks the task under from now on, claimed with the bind as `polling.beginCheck` claims
   * it (a newer one is never moved back), and the tracking deadline (UTC ISO-8601, instead of
   * `trackingDeadlineMs` from now). Throws when the job does not exist.
   */
  async bindTask(b: {
    jobId: string;
    taskId: string;
    providerStatus: string | null;
    source: string;
    trackingDeadlineMs?: number;
    providerAccount?: string | null;
    submitAnswer?: Record<string, unknown>;
    claim?: { generation: number; deadlineAt: string };
  }): Promise<BindOutcome> {
    const out = await this.conn.tx(async (trx): Promise<BindOutcome> => {
      const at = nowIso();
      const deadlineAt =
        b.claim?.deadlineAt ??
        (b.trackingDeadlineMs === undefined ? undefined : new Date(Date.now() + b.trackingDeadlineMs).toISOString());
      const set = (account: string | null | undefined) => ({
        task_id: b.taskId,
        provider_status: b.providerStatus,
        submit_answer: b.submitAnswer ? JSON.stringify(b.submitAnswer) : null,
        submit_intent_at: null,
        submitted_at: at,
        waiting: null,
        ...(account ? { provider_account: account } : {}),
        ...(deadlineAt === undefined ? {} : { deadline_at: deadlineAt }),
        ...(b.claim
          ? {
              poll_generation: sql<number>`case when poll_generation < ${b.claim.generation} then ${b.claim.generation} else poll_generation end`,
            }
          : {}),
      });
      const note = (type: string, state: string, detail: Record<string, unknown>) =>
        trx
          .insertInto('job_events')
          .values(eventRow(b.jobId, type, state, { taskId: b.taskId, ...detail }))
          .execute();
      // The usual case in one statement: a job without a task, not ended, and no other job of its
      // provider account (or, without one, of its provider entry) holding the task. Anything else
      // is read and decided below.
      const quick = await moveJob(trx, this.conn.kind, b.jobId, 'pending', {
        set: set(b.providerAccount),
        event: false,
        returnRow: true,
        only: (eb) =>
          eb.and([
            eb('task_id', 'is', null),
            eb('state', 'not in', [...FINAL_STATES]),
            eb.not(
              eb.exists(
                eb
                  .selectFrom('jobs as other')
                  .select('other.id')
                  .where('other.task_id', '=', b.taskId)
                  .where('other.id', '!=', b.jobId)
                  .where((o) =>
                    o.or([
                      o('other.provider_account', '=', b.providerAccount ?? o.ref('jobs.provider_account')),
                      o('other.provider', '=', o.ref('jobs.provider')),
                    ]),
                  ),
              ),
            ),
          ]),
      });
      if (quick.kind === 'moved') {
        await note('task_recorded', 'pending', { source: b.source, providerStatus: b.providerStatus });
        return { kind: 'bound', taskId: b.taskId, recorded: true, ...(quick.row ? { row: quick.row } : {}) };
      }
      const row = await trx
        .selectFrom('jobs')
        .select(['task_id', 'state', 'provider', 'provider_account', 'account'])
        .where('id', '=', b.jobId)
        .executeTakeFirstOrThrow();
      if (row.task_id === b.taskId) return { kind: 'bound', taskId: row.task_id, recorded: false };
      const account = b.providerAccount ?? row.provider_account;
      // A task of another job is never ours, whatever this job's state or task (so nothing acts on it).
      const other = await taskHolder(trx, { taskId: b.taskId, exceptJobId: b.jobId, account, provider: row.provider });
      if (other) {
        const boundTo = shownOwner(row.account, other);
        await note('task_collision', row.state, { boundTo, source: b.source });
        return { kind: 'collision', boundTo };
      }
      if (row.task_id) {
        // A second task for one job (a late answer after a resubmit was bound): a paid duplicate, kept as evidence.
        await note('task_after_bound', row.state, { source: b.source, bound: row.task_id });
        return { kind: 'bound', taskId: row.task_id, recorded: false };
      }
      if (isFinalState(row.state)) {
        // A late answer for a job that has ended: nothing tracks it now, so the row keeps its final
        // state and the timeline keeps the task, as evidence for an operator.
        await note('task_after_final', row.state, { source: b.source });
        return { kind: 'final', state: row.state };
      }
      // A job being cancelled keeps its state: the cancel path acts on the task it now knows.
      if (row.state === 'cancelling') {
        await trx
          .updateTable('jobs')
          .set({ ...set(account), updated_at: at })
          .where('id', '=', b.jobId)
          .execute();
        await note('task_recorded', 'cancelling', { source: b.source, providerStatus: b.providerStatus });
        return { kind: 'bound', taskId: b.taskId, recorded: true };
      }
      const moved = await moveJob(trx, this.conn.kind, b.jobId, 'pending', { set: set(account), event: false });
      if (moved.kind === 'refused') throw new IllegalTransitionError(b.jobId, moved.from, 'pending');
      await note('task_recorded', 'pending', { source: b.source, providerStatus: b.providerStatus });
      return { kind: 'bound', taskId: b.taskId, recorded: true };
    });
    if (out.kind === 'bound' && out.recorded) this.conn.metrics.transition('pending');
    return out;
  }

  /**
   * Which of `taskIds` are bound to a job other than `exceptJobId` in provider account
   * `providerAccount` (or on provider entry `provider`): task ID → the job holding it, as
   * {@link shownOwner} names it to `exceptJobId`'s account.
   */
  async tasksBoundElsewhere(f: {
    providerAccount: string;
    provider: string;
    taskIds: readonly string[];
    exceptJobId: string;
  }): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (f.taskIds.length === 0) return out;
    const asking = await this.conn.db
      .selectFrom('jobs')
      .select('account')
      .where('id', '=', f.exceptJobId)
      .executeTakeFirst();
    const rows = await this.conn.db
      .selectFrom('jobs')
      .select(['id', 'task_id', 'account'])
      .where('task_id', 'in', [...new Set(f.taskIds)])
      .where('id', '!=', f.exceptJobId)
      .where((eb) => eb.or([eb('provider_account', '=', f.providerAccount), eb('provider', '=', f.provider)]))
      .execute();
    for (const r of rows) if (r.task_id) out.set(r.task_id, shownOwner(asking?.account ?? null, r));
    return out;
  }

  /** Records the provider's raw status word as an answer other than a status check reported it (a cancel answer), with its normalised state and the cost it reported (the kind's unit) when known. */
  async recordProviderStatus(jobId: string, status: string, state?: string, cost?: number): Promise<void> {
    await this.conn.db
      .updateTable('jobs')
      .set({
        provider_status: status,
        ...(state ? { provider_state: state } : {}),
        ...(cost !== undefined && Number.isFinite(cost) && cost >= 0 ? { cost_reported: cost } : {}),
        updated_at: nowIso(),
      })
      .where('id', '=', jobId)
      .execute();
  }

  /** Sets the provider account and key of a job whose row does not name them yet (the worker knows them at submit). */
  async setProviderAccount(jobId: string, providerAccount: string, providerKey: string): Promise<void> {
    await this.conn.db
      .updateTable('jobs')
      .set({ provider_account: providerAccount, provider_key: providerKey })
      .where('id', '=', jobId)
      .where((eb) => eb.or([eb('provider_account', 'is', null), eb('provider_key', 'is', null)]))
      .execute();
  }

  /**
   * Moves the job to `state` through the store's one checked writer (`transitions.ts`): only a move
   * the transition table allows from the state the row holds (a compare-and-set), with `error` as
   * the last error and a timeline event (`detail`, else the error). Returns whether the job moved; a
   * job already in `state` takes the error and moves nothing, and a move the table forbids (a final
   * job, a race another writer won) changes nothing.
   */
  async transition(
    jobId: string,
    state: JobState,
    opts: { error?: JobError | null; detail?: unknown; waiting?: JobWait } = {},
  ): Promise<boolean> {
    const out = await this.conn.tx((trx) =>
      moveJob(trx, this.conn.kind, jobId, state, {
        set: {
          ...(opts.error !== undefined ? { last_error: opts.error ? JSON.stringify(opts.error) : null } : {}),
          ...(opts.waiting ? { waiting: JSON.stringify(opts.waiting) } : {}),
        },
        detail: opts.detail ?? (opts.error ? { error: opts.error } : null),
      }),
    );
    reportMove(this.conn, out, state);
    return out.kind === 'moved';
  }

  /**
   * Puts a job that an operator resumes back to `pending` (from `tracking_interrupted`, or from a
   * state whose run stopped: `submitting`, `unknown`); a job being cancelled stays `cancelling` (the
   * resumed run finishes that cancel), and a final one is not touched. Returns the row's state after.
   */
  async resume(jobId: string, detail: unknown): Promise<JobState | undefined> {
    const out = await this.conn.tx((trx) => moveJob(trx, this.conn.kind, jobId, 'pending', { detail }));
    reportMove(this.conn, out, 'pending');
    return ((await this.get(jobId))?.state as JobState | undefined) ?? undefined;
  }
}
