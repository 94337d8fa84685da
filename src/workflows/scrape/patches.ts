/**
 * Patch IDs of scrape workflow v2 (`patched()` from `@temporalio/workflow`). Each guards a change
 * made after runs were recorded, so that histories written before it replay unchanged
 * (test/replay/histories holds one recorded before and one after each).
 *
 * Workflow v3 (`scrapeWorkflowV3`) is v2 with every change below taken: it calls no `patched()`,
 * so its runs record no patch marker and no `TemporalChangeVersion` search-attribute upsert (two
 * billable Actions and two history events per job in v2). A change made later is a new patch
 * here that v3 takes through `patched()`, like v2 (it is not added to {@link V3_TAKES_WITHOUT_MARKER}).
 */

/** A final state whose store write a cancellation interrupted is written again before the run closes. */
export const PATCH_REWRITE_INTERRUPTED_FINAL = 'rewrite-interrupted-final-state';

/** A cancel call that failed is followed by status checks: the outcome is what the provider then reports. */
export const PATCH_CONFIRM_AFTER_FAILED_CANCEL = 'confirm-after-failed-cancel-call';

/**
 * A native cancellation (the Web UI's button, `temporal workflow cancel`) is recorded as a cancel
 * request the moment it arrives, as a signal or an Update is, even when the job turns final before
 * the phases notice it; the run then closes `Canceled` whichever door asked.
 */
export const PATCH_NATIVE_CANCEL_ON_ARRIVAL = 'native-cancel-recorded-on-arrival';

/**
 * Cancel outcomes as observed: a cancel the provider accepted and after which it no longer knows
 * the task (`404`) is `cancelled` with that evidence (was `cancel_unconfirmed`); a cancel answered
 * "cancelled" is followed by one status read, so that effects that landed meanwhile (pages,
 * credits) are in the report.
 */
export const PATCH_CANCEL_AS_OBSERVED = 'cancel-outcome-as-observed';

/**
 * A job waiting in `unknown` for an operator reconciles again when a webhook delivery for it
 * arrives (a delivery verified for this job that names the task is a strong match).
 */
export const PATCH_RECONCILE_ON_WAKE = 'reconcile-on-wake-in-unknown';

/**
 * Polling in one activity: the submit attempt goes on into the first status checks (a fast job's
 * whole life in one activity), and the tracking phase is one `trackStatus` activity that waits and
 * checks in-process with throttled heartbeats, instead of one activity retry per check. A job's
 * Temporal cost then barely grows with its length.
 */
export const PATCH_POLL_IN_ACTIVITY = 'poll-in-one-activity';

/**
 * A resolution offered by the `resolve` Update that was never taken, because the job left `unknown`
 * by other means first (a late answer adopted on a wake), is withdrawn: the Update fails saying it
 * was not applied, and the offer is not taken later.
 */
export const PATCH_WITHDRAW_UNTAKEN_RESOLUTION = 'withdraw-untaken-resolution';

/** Every patch ID above. */
export type PatchId =
  | typeof PATCH_REWRITE_INTERRUPTED_FINAL
  | typeof PATCH_CONFIRM_AFTER_FAILED_CANCEL
  | typeof PATCH_NATIVE_CANCEL_ON_ARRIVAL
  | typeof PATCH_CANCEL_AS_OBSERVED
  | typeof PATCH_RECONCILE_ON_WAKE
  | typeof PATCH_POLL_IN_ACTIVITY
  | typeof PATCH_WITHDRAW_UNTAKEN_RESOLUTION;

/** The patches workflow v3 takes unconditionally, without a marker: every one written before v3 existed. */
export const V3_TAKES_WITHOUT_MARKER: ReadonlySet<PatchId> = new Set<PatchId>([
  PATCH_REWRITE_INTERRUPTED_FINAL,
  PATCH_CONFIRM_AFTER_FAILED_CANCEL,
  PATCH_NATIVE_CANCEL_ON_ARRIVAL,
  PATCH_CANCEL_AS_OBSERVED,
  PATCH_RECONCILE_ON_WAKE,
  PATCH_POLL_IN_ACTIVITY,
  PATCH_WITHDRAW_UNTAKEN_RESOLUTION,
]);
