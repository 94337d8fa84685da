/**
 * The vocabulary of `store.jobs` ({@link JobsRepository}): the errors its writes throw (a reused
 * idempotency key, a task already bound to another job), the filter and cursor of its lists, and
 * what binding a task did. Times are UTC ISO-8601 strings.
 */
import type { Kysely } from 'kysely';
import type { Database, JobRow } from './schema.js';

/** Thrown when a job exists under the same (account, key) with a different request fingerprint. */
export class IdempotencyConflictStoreError extends Error {
  override readonly name = 'IdempotencyConflictStoreError';
  constructor(
    readonly jobId: string,
    readonly existingHash: string,
    readonly requestHash: string,
  ) {
    super(`job ${jobId} already exists with different parameters (idempotency key reused)`);
  }
}

/** Thrown when a task is already bound to another job of the same provider account: a task belongs to one job. */
export class TaskCollisionError extends Error {
  override readonly name = 'TaskCollisionError';
  constructor(
    readonly jobId: string,
    readonly taskId: string,
    readonly boundTo: string,
  ) {
    super(`task ${taskId} is already bound to job ${boundTo}; it cannot also belong to job ${jobId}`);
  }
}

/** Position in a job list ordered by (`created_at` desc, `id` asc): the last row of a page. */
export interface JobCursor {
  createdAt: string;
  id: string;
}

/** Filters for {@link JobsRepository.list}. */
export interface JobFilter {
  account?: string;
  states?: string[];
  batchId?: string;
  provider?: string;
  /** Only jobs updated before this UTC ISO-8601 time. */
  updatedBefore?: string;
  limit?: number;
}

/** What {@link JobsRepository.bindTask} did: bound (now or before), or refused because another job holds the task. */
export type BindOutcome =
  /** `row`: the job's row as the bind wrote it, when the bind recorded the task in one statement (its usual case). */
  | { kind: 'bound'; taskId: string; recorded: boolean; row?: JobRow }
  | { kind: 'collision'; boundTo: string }
  /** The job had ended (`state`) before the task arrived: nothing bound, the task kept in its timeline (`task_after_final`). */
  | { kind: 'final'; state: string };

/** How a collision names the job that holds a task, to a job of `account`. */
export const ANOTHER_ACCOUNTS_JOB = 'a job of another account';

/**
 * The ID of job `other` when it belongs to `account`, else {@link ANOTHER_ACCOUNTS_JOB}: a
 * collision is shown in the asking job's timeline, which its account reads, and another account's
 * job IDs name that account and its keys.
 */
export function shownOwner(account: string | null, other: { id: string; account: string }): string {
  return account !== null && other.account === account ? other.id : ANOTHER_ACCOUNTS_JOB;
}

/**
 * The job other than `exceptJobId` that holds `taskId` in provider account `account` (or, without
 * one, under provider entry `provider`), read through `db` (a transaction's too); undefined when none.
 */
export function taskHolder(
  db: Kysely<Database>,
  f: { taskId: string; exceptJobId: string; account: string | null; provider: string },
): Promise<{ id: string; account: string } | undefined> {
  return db
    .selectFrom('jobs')
    .select(['id', 'account'])
    .where('task_id', '=', f.taskId)
    .where('id', '!=', f.exceptJobId)
    .where((eb) =>
      f.account
        ? eb.or([eb('provider_account', '=', f.account), eb('provider', '=', f.provider)])
        : eb('provider', '=', f.provider),
    )
    .executeTakeFirst();
}
