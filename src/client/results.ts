/**
 * Reading a job's stored result for the client: the result as callers see it, or the typed error
 * that says why there is none (not ready yet, or purged after retention). Reads only the store.
 */
import type { JobRow, ResultRow, Store } from '../store/index.js';
import { ResultExpiredError, ResultNotReadyError } from './errors.js';
import { ownedRow, toResult, type JobResult } from './views.js';

/**
 * The stored result of job `jobId` of `account` (see `ScrapeClient.getResult`). Throws
 * {@link JobNotFoundError} (missing or another account's job), {@link ResultNotReadyError} (with the
 * state) when there is none, {@link ResultExpiredError} (with evidence that the job ran) after
 * retention purged it.
 */
export async function readResult(store: Store, account: string, jobId: string): Promise<JobResult> {
  const row = await ownedRow(store, account, jobId);
  const res = await store.results.forJob(jobId);
  assertReadable(row, res);
  return toResult(res);
}

/**
 * Throws {@link ResultExpiredError} (with evidence that the job ran) when the job expired or `res`
 * was purged, {@link ResultNotReadyError} (with the state) when there is no result.
 */
export function assertReadable<R extends Pick<ResultRow, 'written_at' | 'purged_at' | 'title'>>(
  row: JobRow,
  res: R | undefined,
): asserts res is R {
  if (row.state === 'expired' || res?.purged_at) {
    throw new ResultExpiredError(row.id, {
      state: row.state,
      taskId: row.task_id,
      provider: row.provider,
      finishedAt: row.finished_at,
      resultWrittenAt: res?.written_at ?? null,
      purgedAt: res?.purged_at ?? null,
      title: res?.title ?? null,
    });
  }
  if (!res) throw new ResultNotReadyError(row.id, row.state);
}
