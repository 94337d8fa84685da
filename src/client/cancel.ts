/**
 * Cancellation from the client side (a request, not an erasure): the `cancel` Update,
 * which returns the outcome observed at the provider, or the `cancel` signal, which returns at
 * once; both reach the workflow's one cancel path. Also cancelling a whole batch through the same
 * per-job path.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { REOPENED_BY_CANCEL, isFinalState, type JobState } from '../model/states.js';
import type { CancelReport } from '../model/types.js';
import type { Store } from '../store/index.js';
import { cancelSignal, cancelUpdate } from '../model/messages.js';
import { JobNotFoundError } from './errors.js';

/** The default of `CancelOptions.timeoutMs`, in ms. */
export const DEFAULT_CANCEL_TIMEOUT_MS = 120_000;

/** Outcome of a cancel request. */
export type CancelResult =
  | { kind: 'observed'; state: JobState; report: CancelReport }
  | { kind: 'requested'; state: JobState; note?: string }
  | { kind: 'already_final'; state: JobState; report?: CancelReport }
  /** The workflow no longer runs but the job never reached a final state (an orphan): resume it or see `orphans`. */
  | { kind: 'not_running'; state: JobState };

/**
 * Options of {@link cancelJob}. `timeoutMs`: how long the call may take in all, in ms (default
 * 120000), every wait included (for the outcome, for a closing run, for a run resumed to cancel).
 */
export interface CancelOptions {
  reason?: string;
  requestedBy?: string;
  /** Wait for the observed outcome (the `cancel` Update; default) or only send the signal. */
  wait?: boolean;
  timeoutMs?: number;
}

/** What cancelling needs of the client. */
export interface CancelContext {
  temporal: Client;
  store: Store;
  taskQueue: string;
}

/**
 * Cancels the job `jobId` (already authorised for `account`). See `ScrapeClient.cancelScrape`
 * for the outcomes. Throws {@link JobNotFoundError} when no workflow has that ID.
 */
export async function cancelJob(
  ctx: CancelContext,
  account: string,
  jobId: string,
  opts: CancelOptions = {},
  followHandOver = true,
): Promise<CancelResult> {
  // `followHandOver`: false for the one follow-up request to the run a hand-over started.
  const handle = ctx.temporal.workflow.getHandle(jobId);
  const req = { reason: opts.reason ?? 'requested by client', requestedBy: opts.requestedBy ?? account };
  let desc;
  try {
    desc = await handle.describe();
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
    throw e;
  }
  if (desc.status.name !== 'RUNNING') return settledCancel(ctx.store, jobId);
  // A job the store holds final is final, even while its workflow is still closing (it records the
  // outcome, then closes): a cancel changes nothing and says so, with no Update the workflow would
  // answer with the earlier outcome as if it were this request's. A job whose task may still run
  // (`REOPENED_BY_CANCEL`) is the exception: a run resumed to cancel it may be starting, and the
  // Update reaches it (or is refused by a closing run, which also answers `already_final`).
  const row = await ctx.store.jobs.get(jobId);
  if (row && isFinalState(row.state as JobState) && !REOPENED_BY_CANCEL.includes(row.state as JobState))
    return settledCancel(ctx.store, jobId);
  if (opts.wait === false) {
    try {
      await handle.signal(cancelSignal, req);
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return settledCancel(ctx.store, jobId); // it closed meanwhile
      throw e;
    }
    return { kind: 'requested', state: 'cancelling' };
  }
  const timeoutMs = Math.max(1, opts.timeoutMs ?? DEFAULT_CANCEL_TIMEOUT_MS);
  const until = Date.now() + timeoutMs;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const report = await ctx.temporal.withAbortSignal(abort.signal, () =>
      handle.executeUpdate(cancelUpdate, { args: [req] }),
    );
    const after = await ctx.store.jobs.get(jobId);
    return { kind: 'observed', state: (after?.state ?? 'cancelling') as JobState, report };
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return settledCancel(ctx.store, jobId);
    if (e instanceof WorkflowUpdateFailedError) {
      // Refused: the run holds the job final and is closing; its last store write may still be on
      // its way, so the answer is read once the run has closed. Or handed over: tracking stopped
      // as the request came, and a run resumed to cancel the task (the next run) carries it and
      // answers it.
      await waitForRunToClose(ctx.temporal, jobId, desc.runId, Math.min(30_000, until - Date.now()));
      if (followHandOver && (await runAfter(ctx.temporal, jobId, desc.runId)))
        // That run may have closed before the follow-up reached it: its outcome is this request's.
        return asObserved(await cancelJob(ctx, account, jobId, { ...opts, timeoutMs: until - Date.now() }, false), req);
      return settledCancel(ctx.store, jobId);
    }
    if (!abort.signal.aborted) throw e;
    // No outcome in time: the provider may still be confirming (up to the job's
    // cancelConfirmDeadlineMs), or no worker polls the task queue. An Update not yet accepted by
    // a worker is not durable, so the request is also sent as a signal, which is.
    try {
      await handle.signal(cancelSignal, req);
    } catch (se) {
      if (se instanceof WorkflowNotFoundError) return settledCancel(ctx.store, jobId); // it ended meanwhile
      throw se;
    }
    const now = await ctx.store.jobs.get(jobId);
    // The job may have ended while we waited: its answer is the settled one, never "requested" beside
    // a final state. Not one whose task may still run: the run that got this request was resumed to cancel it.
    if (now && isFinalState(now.state) && !REOPENED_BY_CANCEL.includes(now.state as JobState))
      return settledCancel(ctx.store, jobId);
    return {
      kind: 'requested',
      state: (now?.state ?? 'cancelling') as JobState,
      note: `no observed outcome within ${Math.round(timeoutMs / 1000)} s: the provider may still be confirming, or no worker polls task queue "${ctx.taskQueue}"; the request is recorded (also as a signal) and the outcome will show in the job's state`,
    };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits until run `runId` of workflow `jobId` closes, `ms` at most (default 30000): a run that
 * recorded its final state closes within moments, unless no worker runs it. Only that run: a run
 * started after it (resumed to cancel) is not waited for. Leaves no timer or long poll behind.
 */
export async function waitForRunToClose(temporal: Client, jobId: string, runId: string, ms = 30_000): Promise<void> {
  if (ms <= 0) return;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ms);
  try {
    const run = temporal.workflow.getHandle(jobId, runId, { followRuns: false });
    await temporal.withAbortSignal(abort.signal, () => run.result());
  } catch {
    // Closed failed or cancelled, or still running at the limit: the caller reads the store.
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `answer`, or for an `already_final` one whose last cancel report is request `req`'s (same reason
 * and requester), that outcome as observed: a run that carried this request closed before its
 * answer was asked for.
 */
export function asObserved(answer: CancelResult, req: { reason: string; requestedBy: string }): CancelResult {
  if (answer.kind !== 'already_final' || !answer.report) return answer;
  if (answer.report.reason !== req.reason || answer.report.requestedBy !== req.requestedBy) return answer;
  return { kind: 'observed', state: answer.state, report: answer.report };
}

/** Whether a run of workflow `jobId` followed run `runId` (running, or closed already). */
async function runAfter(temporal: Client, jobId: string, runId: string): Promise<boolean> {
  try {
    return (await temporal.workflow.getHandle(jobId).describe()).runId !== runId;
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return false;
    throw e;
  }
}

/** The answer for a job whose workflow closed before or while a cancel was asked for. */
async function settledCancel(store: Store, jobId: string): Promise<CancelResult> {
  const after = await store.jobs.get(jobId);
  const state = (after?.state ?? 'submitting') as JobState;
  if (!isFinalState(state)) return { kind: 'not_running', state };
  return { kind: 'already_final', state, report: await lastCancel(store, jobId, true) };
}

/** The most recent cancel recorded in the job's timeline (only one with an outcome when `withOutcome`). */
export async function lastCancel(store: Store, jobId: string, withOutcome: boolean): Promise<CancelReport | undefined> {
  const events = await store.findings.timeline(jobId);
  for (const ev of events.reverse()) {
    const d = ev.detail ? (JSON.parse(ev.detail) as { cancel?: CancelReport }) : undefined;
    if (d?.cancel && (!withOutcome || d.cancel.outcome)) return d.cancel;
  }
  return undefined;
}

/** One job's line of {@link cancelBatch}. */
export interface BatchCancelOutcome {
  jobId: string;
  result: CancelResult | { kind: 'error'; message: string };
}

/**
 * Cancels every job of a batch of `account` through `cancelOne` (the per-job path),
 * `concurrency` at a time (default 16), and returns each job's outcome, sorted by job ID.
 */
export async function cancelBatch(
  store: Store,
  account: string,
  batchId: string,
  cancelOne: (jobId: string) => Promise<CancelResult>,
  concurrency = 16,
): Promise<BatchCancelOutcome[]> {
  const jobs = await store.jobs.list({ account, batchId, limit: 100_000 });
  const out: BatchCancelOutcome[] = [];
  let next = 0;
  const worker = async () => {
    for (;;) {
      const job = jobs[next++];
      if (!job) return;
      try {
        out.push({ jobId: job.id, result: await cancelOne(job.id) });
      } catch (e) {
        out.push({ jobId: job.id, result: { kind: 'error', message: (e as Error).message } });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(jobs.length, 1)) }, worker));
  return out.sort((a, b) => a.jobId.localeCompare(b.jobId));
}
