/**
 * Patch IDs of scrape workflow v2 (`patched()` from `@temporalio/workflow`). Each guards a change
 * made after runs were recorded, so that histories written before it replay unchanged
 * (test/replay/histories holds one recorded before and one after each).
 */

/** A final state whose store write a cancellation interrupted is written again before the run closes. */
export const PATCH_REWRITE_INTERRUPTED_FINAL = 'rewrite-interrupted-final-state';

/** A cancel call that failed is followed by status checks: the outcome is what the provider then reports. */
export const PATCH_CONFIRM_AFTER_FAILED_CANCEL = 'confirm-after-failed-cancel-call';
