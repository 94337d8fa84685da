/**
 * Upgrade compatibility with the retired `scrapeWorkflowV4`, should one of its runs still be open
 * (docs/operations.md, "Upgrading"; its release was the one before the previous one); deleted with
 * V4's last run. Temporal does not route activity tasks by workflow type, so a V4 run's polling
 * activity may run on this release's worker. V4 only moves its own view when a check ends its
 * tracking; V5 and V6 record that move themselves (`recordsOutcome` in their input). For a V4 run the activity records it, through the same {@link recordState}.
 */
import type { JobError } from '../../model/types.js';
import type { ActivityKit } from '../context.js';
import { recordState } from '../record.js';
import type { CheckResult, PollOutcome, TrackStatusInput } from './pollTypes.js';

/** The final state of a tracking outcome other than `completed` (the workflow's move), with its note. */
function finalMoveOf(
  o: PollOutcome,
): { state: 'failed' | 'cancelled' | 'expired' | 'tracking_interrupted'; error?: JobError; note: string } | undefined {
  switch (o.kind) {
    case 'failed':
      return { state: 'failed', error: o.error, note: o.note };
    case 'cancelled':
      return { state: 'cancelled', note: 'the provider reports the task cancelled (not by this workflow)' };
    case 'expired':
      return { state: 'expired', error: o.error, note: o.note };
    case 'interrupted':
      return { state: 'tracking_interrupted', error: o.error, note: o.note };
    default:
      return undefined;
  }
}

/**
 * Returns `r` as it is; first, when it ends the tracking of a run that does not record its outcome
 * itself (`input.recordsOutcome` absent: a V4 run), records its final move as V4's activity did
 * (the slot released with it): else the row would stay `pending` after the run closed, holding
 * the key's slot. A cancel's confirmation checks (`confirm_cancel`) never move the row here.
 */
export async function recordForRetiredRun(
  kit: ActivityKit,
  input: TrackStatusInput,
  r: CheckResult,
): Promise<CheckResult> {
  if (!('outcome' in r) || input.mode !== 'track' || input.recordsOutcome === true) return r;
  const move = finalMoveOf(r.outcome);
  if (move)
    await recordState(kit, {
      jobId: input.jobId,
      provider: input.provider,
      account: input.account,
      state: move.state,
      error: move.error,
      detail: { note: move.note, ...(move.error ? { error: move.error } : {}) },
    });
  return r;
}
