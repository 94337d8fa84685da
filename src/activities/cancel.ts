/**
 * The provider side of cancellation (a request, not an erasure): record `cancelling` with the request, ask
 * the provider to stop, and report what it answered. The workflow then confirms the outcome with
 * `trackStatus` in `confirm_cancel` mode and records it with `recordState`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { REOPENED_BY_CANCEL, isFinalState, type JobState } from '../model/states.js';
import { isProviderError } from '../providers/shared/errors.js';
import type { CancelAnswer } from '../providers/adapter.js';
import { sanitizeBody } from '../lib/sanitize.js';
import type { CancelReport, JobError, JobView } from '../model/types.js';
import type { JobRow } from '../store/index.js';
import type { ActivityKit, TaskRef } from './context.js';

/**
 * Outcome of `cancelAtProvider`: the provider's answer; `unsupported` when it has no cancel
 * endpoint; `skipped` when nothing was sent because the job is already final or the provider
 * already reported it completed (its result is being written: the cancel comes too late).
 */
export type CancelCallOutcome = {
  /** The provider's raw status at the last check before the cancel (from the store), when known. */
  lastStatus?: string;
} & (
  | ({ kind: 'answered' } & CancelAnswer)
  | { kind: 'unsupported'; error: JobError; reachedProvider: boolean }
  /**
   * Nothing was sent. `finalState`: the row's state when it is final (nothing was moved either);
   * `providerState`: the provider's normalised state the row holds.
   */
  | { kind: 'skipped'; reason: string; finalState?: JobState; providerState?: JobView['providerState'] }
);

/** A `skipped` answer for `row` (as read): its last status, and its state when final. */
function skipped(reason: string, row: JobRow | undefined): CancelCallOutcome {
  return {
    kind: 'skipped',
    reason,
    lastStatus: row?.provider_status ?? undefined,
    ...(row && isFinalState(row.state) ? { finalState: row.state as JobState } : {}),
    ...(row?.provider_state ? { providerState: row.provider_state as JobView['providerState'] } : {}),
  };
}

/** The reason (history: the cancel request's `cause`) of the request that closes a job cancelled by signal, Update or deadline. */
export const CLOSE_AS_CANCELLED_REASON =
  'scrape: closing a job whose cancel request was handled (signal, Update or deadline policy)';

/**
 * Moves the job to `cancelling` (once; the report is kept in the timeline) and asks the provider
 * to cancel the task — unless the store shows the job final (but for the `REOPENED_BY_CANCEL` states,
 * whose task may still run, when `reopen`: the run is a resumed one) or a check already saw the task completed, failed or cancelled at the
 * provider (`skipped`: nothing is sent). Returns the provider's answer, or `unsupported`.
 * Transient failures throw (retried within the cancel-confirmation deadline).
 */
export async function cancelAtProvider(
  kit: ActivityKit,
  ref: TaskRef & { report: CancelReport; reopen?: boolean },
): Promise<CancelCallOutcome> {
  const { store } = kit;
  const row = await store.jobs.get(ref.jobId);
  const lastStatus = row?.provider_status ?? undefined;
  // A final state whose task may still run is reopened only by a resumed run (never by a late
  // attempt of the run that made it final).
  const final = (r: typeof row) =>
    r && isFinalState(r.state) && !(ref.reopen && REOPENED_BY_CANCEL.includes(r.state as JobState));
  if (final(row)) return skipped(`the job is already ${row!.state}`, row);
  if (row?.provider_state === 'completed')
    return skipped(
      isFinalState(row.state)
        ? 'the provider already reported the task completed'
        : 'the provider already reported the task completed; its result is being written',
      row,
    );
  // A check saw the task end and its outcome is on its way to the workflow, which records it: the
  // provider has nothing left to stop.
  if (row?.provider_state === 'failed' || row?.provider_state === 'cancelled')
    return skipped(`the provider already reported the task ${row.provider_state}`, row);
  if (row && row.state !== 'cancelling') {
    const moved = await store.jobs.transition(ref.jobId, 'cancelling', {
      detail: { cancel: sanitizeBody(ref.report, kit.secrets()) },
    });
    // Another writer made the job final meanwhile: nothing is sent.
    const now = moved ? row : await store.jobs.get(ref.jobId);
    if (final(now)) return skipped(`the job is already ${now!.state}`, now);
  }
  try {
    const answer = await kit.call(ref.provider, ref.account, (p) =>
      p.adapter.cancel(ref.taskId, kit.taskCall(p, row, ref.taskId)),
    );
    await store.findings.appendEvent(ref.jobId, 'cancel_requested_at_provider', 'cancelling', answer);
    // The row shows what the provider last said, the cancel's answer included (`ABORTED`, `cancelled`).
    if (answer.providerStatus)
      await store.jobs.recordProviderStatus(ref.jobId, answer.providerStatus, answer.state, answer.cost);
    return { kind: 'answered', ...answer, lastStatus };
  } catch (e) {
    if (isProviderError(e) && e.kind === 'unsupported') {
      await store.findings.appendEvent(ref.jobId, 'cancel_unsupported', 'cancelling', { error: e.toJobError() });
      // `reachedProvider`: the provider itself said so (an HTTP exchange), not the adapter's capabilities.
      return {
        kind: 'unsupported',
        error: e.toJobError(),
        reachedProvider: e.details.evidence !== undefined,
        lastStatus,
      };
    }
    throw e;
  }
}

/**
 * Asks Temporal to cancel the workflow run itself, so that a job cancelled by signal or Update
 * closes `Canceled` like one cancelled from the Web UI (a workflow cannot cancel itself from
 * workflow code: the server refuses a self-targeted external cancel).
 */
export async function closeAsCancelled(kit: ActivityKit, input: { workflowId: string; runId: string }): Promise<void> {
  const temporal = kit.deps.temporal;
  if (!temporal)
    throw ApplicationFailure.nonRetryable('no Temporal client in the activity dependencies', 'Internal.noClient');
  await kit.deps.hooks?.beforeCloseAsCancelled?.(input.workflowId);
  await temporal.workflowService.requestCancelWorkflowExecution({
    namespace: temporal.options.namespace,
    workflowExecution: { workflowId: input.workflowId, runId: input.runId },
    identity: temporal.options.identity,
    requestId: `close-as-cancelled-${input.runId}`, // a retried attempt is the same request
    reason: CLOSE_AS_CANCELLED_REASON,
  });
}
