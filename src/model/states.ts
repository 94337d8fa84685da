/**
 * The job state machine's vocabulary (docs/design.md, “The scrape workflow: a small explicit state machine”). Pure constants and types:
 * imported by workflow code, activities, the store, the client and the CLI alike.
 */

/** Every local job state. The provider's own status string is kept beside it, never instead. */
export const JOB_STATES = [
  'submitting',
  'unknown',
  'pending',
  'completed',
  'failed',
  'cancelling',
  'cancelled',
  'cancel_unconfirmed',
  'tracking_interrupted',
  'expired',
] as const;

/** A local job state; see {@link JOB_STATES}. */
export type JobState = (typeof JOB_STATES)[number];

/**
 * States in which the workflow has stopped tracking the provider task. `tracking_interrupted` is
 * final for the run but resumable with the same task ID; `expired` can follow `completed`.
 */
export const FINAL_STATES: readonly JobState[] = [
  'completed',
  'failed',
  'cancelled',
  'cancel_unconfirmed',
  'tracking_interrupted',
  'expired',
];

/**
 * The moves a job's state may make (docs/design.md, "The scrape workflow"): the workflow's
 * `ScrapeJob` checks every move against it, and so does the store's one writer of `jobs.state`
 * (`src/store/transitions.ts`), which refuses any other. Staying put is not a move. Four edges
 * leave a final state, and only the store takes them: `completed` → `expired` (the result's
 * retention ended), `tracking_interrupted` → `pending` (an operator resumed tracking), and into
 * `cancelling` from the {@link REOPENED_BY_CANCEL} states (a run resumed to cancel a task that may
 * still run).
 */
export const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  submitting: ['pending', 'unknown', 'failed', 'cancelling'],
  unknown: ['pending', 'submitting', 'failed', 'cancelling'],
  pending: ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted', 'cancelling'],
  cancelling: ['cancelled', 'completed', 'failed', 'cancel_unconfirmed'],
  completed: ['expired'],
  failed: [],
  cancelled: [],
  cancel_unconfirmed: ['cancelling'],
  tracking_interrupted: ['pending', 'cancelling'],
  expired: [],
};

/**
 * Final states whose provider task may still run (tracking stopped; a cancel the provider never
 * confirmed): a cancel of such a job starts a run resumed for it, which moves the row to
 * `cancelling` and asks the provider again.
 */
export const REOPENED_BY_CANCEL: readonly JobState[] = ['tracking_interrupted', 'cancel_unconfirmed'];

/**
 * Whether a cancel of a final job can still reach its provider task: the job is in a
 * {@link REOPENED_BY_CANCEL} state with a task ID, the provider gave no final answer
 * (`providerState` completed, failed or cancelled: nothing is left to stop; a completed task's
 * result is read by a `resume`), and its last cancel did not meet a provider without a cancel
 * endpoint (`lastErrorKind` `unsupported`: asking again cannot help).
 */
export function cancelMayReachTask(j: {
  state: string;
  taskId?: string | null;
  providerState?: string | null;
  lastErrorKind?: string;
}): boolean {
  if (!REOPENED_BY_CANCEL.includes(j.state as JobState) || !j.taskId) return false;
  if (['completed', 'failed', 'cancelled'].includes(j.providerState ?? '')) return false;
  return !(j.state === 'cancel_unconfirmed' && j.lastErrorKind === 'unsupported');
}

/** Whether `from` → `to` is a move of {@link TRANSITIONS} (staying put is not). */
export function canMove(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** The states a job may move to `to` from (the predecessors of `to` in {@link TRANSITIONS}). */
export function movesInto(to: JobState): JobState[] {
  return JOB_STATES.filter((from) => canMove(from, to));
}

/** True when `state` is one of {@link FINAL_STATES}. */
export function isFinalState(state: string): boolean {
  return (FINAL_STATES as readonly string[]).includes(state);
}

/**
 * Final states a job reaches without its result (and without a cancel request): the workflow run
 * closes Failed in Temporal, with a non-retryable failure of type {@link outcomeFailureType}, so
 * the Web UI's status column and its Failures filter tell them from `completed` at a glance.
 * `completed` closes Completed; a cancelled job (any cancel outcome) closes Canceled.
 */
export const UNSUCCESSFUL_STATES = ['failed', 'expired', 'tracking_interrupted'] as const;

/** The failure type a run closes with when its job ends in `state` (one of {@link UNSUCCESSFUL_STATES}): `ScrapeJob.<state>`. */
export function outcomeFailureType(state: (typeof UNSUCCESSFUL_STATES)[number]): string {
  return `ScrapeJob.${state}`;
}

/** Normalised provider status: what every adapter maps its raw status strings into. */
export type ProviderState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
