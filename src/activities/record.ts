/**
 * Store-only bookkeeping the workflow asks for when no provider call carries it: a state
 * transition, the observed outcome of a cancel. Idempotent; run as local activities.
 */
import { sanitizeBody } from '../lib/sanitize.js';
import type { JobState } from '../model/states.js';
import type { CancelReport, JobError } from '../model/types.js';
import type { ActivityKit } from './context.js';

/**
 * Records a state transition (idempotent) through the store's checked writer. Returns false when
 * the job did not move (already there, or a move the transition table forbids: a final job).
 */
export async function recordState(
  kit: ActivityKit,
  input: { jobId: string; state: JobState; error?: JobError | null; detail?: unknown },
): Promise<boolean> {
  return kit.store.jobs.transition(input.jobId, input.state, {
    error: input.error,
    detail: input.detail === undefined ? undefined : sanitizeBody(input.detail, kit.secrets()),
  });
}

/**
 * Records the observed outcome of a cancel in the job's timeline (also when the state did not
 * change: a job that completed first), so that a later cancel can report it.
 */
export async function recordCancelOutcome(
  kit: ActivityKit,
  input: { jobId: string; report: CancelReport },
): Promise<void> {
  await kit.store.findings.appendEvent(input.jobId, 'cancel_outcome', null, {
    cancel: sanitizeBody(input.report, kit.secrets()),
  });
}
