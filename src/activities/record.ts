/**
 * Store-only bookkeeping the workflow asks for when no provider call carries it: a state
 * transition, what the job waits for, the observed outcome of a cancel. Idempotent; run as local
 * activities.
 */
import { sanitizeBody } from '../lib/sanitize.js';
import { isFinalState, type JobState } from '../model/states.js';
import type { CancelReport, JobError, JobWait } from '../model/types.js';
import type { ActivityKit } from './context.js';
import { announceSlotReleased } from './slots.js';

/**
 * Records a state transition (idempotent) through the store's checked writer. Returns false when
 * the job did not move (already there, or a move the transition table forbids: a final job). A
 * move to a final state frees the job's slot under its provider key's limit: submits of that key
 * waiting in this process are told at once (`provider`, `account`: the job's).
 */
export async function recordState(
  kit: ActivityKit,
  input: {
    jobId: string;
    state: JobState;
    error?: JobError | null;
    detail?: unknown;
    /** What the job waits for after this move (a job that moves to `submitting` or `unknown` may wait). */
    waiting?: JobWait;
    provider?: string;
    account?: string;
  },
): Promise<boolean> {
  await kit.deps.hooks?.beforeRecordState?.(input.jobId, input.state);
  const moved = await kit.store.jobs.transition(input.jobId, input.state, {
    error: input.error,
    detail: input.detail === undefined ? undefined : sanitizeBody(input.detail, kit.secrets()),
    ...(input.waiting ? { waiting: input.waiting } : {}),
  });
  if (moved && isFinalState(input.state) && input.provider !== undefined && input.account !== undefined) {
    // A key whose credential cannot be read has no waiting submit to tell.
    const label = (() => {
      try {
        return kit.deps.providers.resolve(input.provider!, input.account!).limiter.label;
      } catch {
        return undefined;
      }
    })();
    if (label !== undefined) announceSlotReleased(label);
  }
  return moved;
}

/**
 * Records what the job waits for in its row (`status`, the HTTP API), replacing an earlier wait;
 * `null` clears it. For a wait the workflow decides without an activity that records it (a
 * refused reconciliation leaves the job to an operator).
 */
export async function recordWait(kit: ActivityKit, input: { jobId: string; wait: JobWait | null }): Promise<void> {
  await kit.store.polling.recordWait(input.jobId, input.wait);
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
