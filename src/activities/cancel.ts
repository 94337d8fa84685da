/**
 * The provider side of cancellation (DESIGN.md rule 7): record `cancelling` with the request, ask
 * the provider to stop, and report what it answered. The workflow then confirms the outcome with
 * `awaitStatus` in `confirm_cancel` mode and records it with `recordState`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isProviderError } from '../providers/errors.js';
import type { CancelAnswer } from '../providers/types.js';
import { sanitizeBody } from '../lib/sanitize.js';
import type { CancelReport, JobError } from '../model/types.js';
import type { ActivityKit, TaskRef } from './context.js';
import { rethrow } from './failures.js';

/** Outcome of a provider cancel call: its answer, or `unsupported` when it has no cancel endpoint. */
export type CancelCallOutcome = ({ kind: 'answered' } & CancelAnswer) | { kind: 'unsupported'; error: JobError; reachedProvider: boolean };

/** Builds `cancelAtProvider` and `closeAsCancelled` over `kit`. */
export function cancelActivities(kit: ActivityKit) {
  const { store } = kit;
  return {
    /**
     * Moves the job to `cancelling` (once; the report is kept in the timeline) and asks the provider
     * to cancel the task. Returns the provider's answer, or `unsupported`. Transient failures throw
     * (retried within the cancel-confirmation deadline).
     */
    async cancelAtProvider(ref: TaskRef & { report: CancelReport }): Promise<CancelCallOutcome> {
      const row = await store.getJob(ref.jobId);
      if (row && row.state !== 'cancelling') {
        await store.transition(ref.jobId, 'cancelling', { detail: { cancel: sanitizeBody(ref.report, kit.secrets()) } });
      }
      try {
        const answer = await kit.call(ref.provider, ref.account, (p) => p.adapter.cancel(ref.taskId, { apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal() }));
        await store.appendEvent(ref.jobId, 'cancel_requested_at_provider', 'cancelling', answer);
        return { kind: 'answered', ...answer };
      } catch (e) {
        if (isProviderError(e) && e.kind === 'unsupported') {
          await store.appendEvent(ref.jobId, 'cancel_unsupported', 'cancelling', { error: e.toJobError() });
          // `reachedProvider`: the provider itself said so (an HTTP exchange), not the adapter's capabilities.
          return { kind: 'unsupported', error: e.toJobError(), reachedProvider: e.details.evidence !== undefined };
        }
        rethrow(e);
      }
    },

    /**
     * Asks Temporal to cancel the workflow run itself, so that a job cancelled by signal or Update
     * closes `Canceled` like one cancelled from the Web UI (a workflow cannot cancel itself from
     * workflow code: the server refuses a self-targeted external cancel).
     */
    async closeAsCancelled(input: { workflowId: string; runId: string }): Promise<void> {
      const temporal = kit.deps.temporal;
      if (!temporal) throw ApplicationFailure.nonRetryable('no Temporal client in the activity dependencies', 'Internal.noClient');
      await temporal.workflow.getHandle(input.workflowId, input.runId).cancel();
    },
  };
}
