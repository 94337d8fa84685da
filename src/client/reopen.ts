/**
 * A new run for a job whose run has ended: `resume` (tracking again the same provider task, never
 * submitting), and the run a cancel starts for a final job whose task may still run
 * (`REOPENED_BY_CANCEL`: tracking stopped, or a cancel the provider never confirmed), which moves
 * the row to `cancelling` itself and asks the provider to stop the task.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { REOPENED_BY_CANCEL, cancelMayReachTask, isFinalState } from '../model/states.js';
import type { ScrapeWorkflowInput } from '../model/types.js';
import type { JobRow } from '../store/index.js';
import { ScrapeState } from '../workflows/searchAttributes.js';
import {
  DEFAULT_CANCEL_TIMEOUT_MS,
  asObserved,
  cancelJob,
  lastCancel,
  waitForRunToClose,
  type CancelOptions,
  type CancelResult,
} from './cancel.js';
import { ScrapeError } from './errors.js';
import { startResumedRun, type JobRef, type StartContext } from './start.js';

/**
 * Cancels job `jobId` of `account` (authorised; `row` its store row, `undefined` when not yet
 * registered) through `cancelJob`; first, a job whose task may still run although the job is final
 * gets a run resumed to cancel it. See `ScrapeClient.cancelScrape` for the outcomes.
 */
export async function cancelReopening(
  ctx: StartContext,
  account: string,
  jobId: string,
  row: JobRow | undefined,
  opts: CancelOptions,
): Promise<CancelResult> {
  // The run itself takes the row to `cancelling`, so a client that dies here leaves either nothing
  // started or a run that carries the cancel: never a non-final row without a run.
  const until = Date.now() + (opts.timeoutMs ?? DEFAULT_CANCEL_TIMEOUT_MS);
  const left = () => Math.max(0, until - Date.now());
  const pendingCancel = {
    reason: opts.reason ?? 'requested by client',
    requestedBy: opts.requestedBy ?? account,
    via: opts.wait === false ? ('signal' as const) : ('update' as const),
  };
  let started = mayStillRun(row) && (await reopen(ctx, row, pendingCancel, left()));
  let answer = await cancelJob(ctx, account, jobId, { ...opts, timeoutMs: left() });
  // The run stopped tracking while this cancel was on its way (its deadline, its failed reads) and
  // refused it as it closed: the task may still run, so it is stopped as above, once.
  if (!started && answer.kind === 'already_final' && REOPENED_BY_CANCEL.includes(answer.state)) {
    const now = await ctx.store.jobs.get(jobId);
    if (mayStillRun(now)) {
      started = await reopen(ctx, now, pendingCancel, left());
      answer = await cancelJob(ctx, account, jobId, { ...opts, timeoutMs: left() });
    }
  }
  // The run this call started may have finished before its Update arrived: its outcome is this
  // request's, not an earlier one.
  return started ? asObserved(answer, pendingCancel) : answer;
}

/**
 * Starts a run resumed to cancel `row`'s task, unless one is under way. Returns whether this call
 * started it. Throws {@link ScrapeError} `conflict` when the run that made the job final has not
 * closed within `waitMs` (at most 30000; no worker runs it): nothing could take the cancel, and
 * nothing was sent.
 */
async function reopen(
  ctx: StartContext,
  row: JobRow,
  pendingCancel: NonNullable<ScrapeWorkflowInput['pendingCancel']>,
  waitMs: number,
): Promise<boolean> {
  if (await resumedRunUnderWay(ctx, row, Math.min(30_000, waitMs))) return false;
  if (await startResumedRun(ctx, row, { pendingCancel })) return true;
  if (await resumedRunUnderWay(ctx, row, 0)) return false;
  throw new ScrapeError(
    'conflict',
    `job ${row.id} is ${row.state} but the run that ended it has not closed yet (is a worker polling task queue "${ctx.taskQueue}"?): nothing was cancelled; cancel again once it has closed`,
    { state: row.state },
  );
}

/**
 * Resumes tracking of the `tracking_interrupted` job `row` (authorised) with a new run of the same
 * workflow ID that polls the same provider task and never submits; also an orphan (a non-final job
 * whose workflow no longer runs), and one stopped mid-cancel finishes that cancel. Throws
 * {@link ScrapeError} `conflict` when the job is not resumable.
 */
export async function resumeJob(
  ctx: StartContext,
  row: JobRow,
  opts: { policy?: ScrapeWorkflowInput['policy'] } = {},
): Promise<JobRef> {
  const jobId = row.id;
  const orphan = !isFinalState(row.state) && !(await isRunning(ctx, jobId));
  if (!orphan && (row.state !== 'tracking_interrupted' || !row.task_id)) {
    throw new ScrapeError(
      'conflict',
      `job ${jobId} is ${row.state}${row.task_id ? '' : ' without a task ID'}; only tracking_interrupted jobs with a task ID, or non-final jobs whose workflow no longer runs, can be resumed`,
      { state: row.state },
    );
  }
  let pendingCancel: ScrapeWorkflowInput['pendingCancel'];
  if (row.state === 'cancelling') {
    // The previous run stopped mid-cancel: the new run finishes that cancel, never forgets it.
    const requested = await lastCancel(ctx.store, jobId, false);
    pendingCancel = {
      reason: requested?.reason ?? 'cancel under way before resume',
      requestedBy: requested?.requestedBy ?? 'unknown',
    };
  }
  if (orphan || !(await resumedRunUnderWay(ctx, row)))
    await startResumedRun(ctx, row, { policy: opts.policy, pendingCancel });
  return { jobId, account: row.account, key: row.idem_key };
}

/** Whether `row` is a final job whose task a cancel can still reach ({@link cancelMayReachTask}). */
function mayStillRun(row: JobRow | undefined): row is JobRow {
  if (!row) return false;
  const j = { state: row.state, taskId: row.task_id, providerState: row.provider_state };
  return cancelMayReachTask({ ...j, lastErrorKind: lastErrorKind(row) });
}

/** The kind of the row's last error (`JobError.kind`), if any. */
function lastErrorKind(row: JobRow): string | undefined {
  try {
    return row.last_error ? (JSON.parse(row.last_error) as { kind?: string }).kind : undefined;
  } catch {
    return undefined;
  }
}

/**
 * For a row in a final state: true when a run resumed for its task already runs (leave it alone)
 * or the row changed meanwhile (another caller resumed or cancelled it, or a whole cancel round ran
 * and ended in the same state). A run records its final state just before it closes: while it
 * still runs, this waits up to `waitMs` (default 30000) for it to close, so a new run can start.
 */
async function resumedRunUnderWay(ctx: StartContext, row: JobRow, waitMs = 30_000): Promise<boolean> {
  if (await isRunning(ctx, row.id)) {
    const d = await ctx.temporal.workflow.getHandle(row.id).describe();
    // A resumed run that is itself closing (interrupted again) is waited for like any other.
    const closing = isFinalState(d.typedSearchAttributes.get(ScrapeState) ?? 'pending');
    if (!closing && d.memo?.resumedTaskId === row.task_id) return true;
    if (waitMs > 0) await waitForRunToClose(ctx.temporal, row.id, d.runId, waitMs);
  }
  const now = await ctx.store.jobs.get(row.id);
  return now?.state !== row.state || now?.finished_at !== row.finished_at;
}

/** Whether the workflow `jobId` runs (false when it never did). */
async function isRunning(ctx: StartContext, jobId: string): Promise<boolean> {
  try {
    return (await ctx.temporal.workflow.getHandle(jobId).describe()).status.name === 'RUNNING';
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return false;
    throw e;
  }
}
