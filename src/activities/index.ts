/**
 * All I/O of the scrape workflows: provider calls and result-store writes, built from injected
 * dependencies so that unit tests can give fakes and the worker gives the real store, provider
 * registry and Temporal client.
 *
 * Activities throw provider errors as they are: the worker's activity interceptor
 * (`mapProviderErrors`, `failures.ts`) gives each its Temporal failure, once for all.
 *
 * Every activity is safe to retry: writes are idempotent (keyed by job ID or by (provider, task
 * ID)), and submits record their intent and their answer in the store so that a retried attempt
 * adopts an earlier answer instead of submitting again.
 *
 * Each activity is one function of the kit ({@link ActivityKit}: the dependencies and what the
 * activities share) and its input; {@link createActivities} binds them to one kit by name.
 *
 * | file | activities |
 * |---|---|
 * | `submit/submit.ts` | `submitJob` |
 * | `jobRow.ts` | `registerJob`, `findRecordedTask` |
 * | `submit/reconcile.ts` | `reconcileJob` |
 * | `submit/adopt.ts` | `adoptTask` |
 * | `tracking/track.ts`, `tracking/poll.ts` | `trackStatus` (the polling loop `pollLoop` in the worker, heartbeats throttled; detached for async completion in a worker with a tracker, `src/worker/tracker.ts`; `poll.ts` `checkOnce` is one check and the result written once) |
 * | `cancel.ts` | `cancelAtProvider`, `closeAsCancelled` |
 * | `record.ts` | `recordState`, `recordWait`, `recordCancelOutcome` |
 */
import { activityKit, type ActivityDeps, type ActivityKit } from './context.js';
import { adoptTask } from './submit/adopt.js';
import { cancelAtProvider, closeAsCancelled } from './cancel.js';
import { reconcileJob } from './submit/reconcile.js';
import { recordCancelOutcome, recordState, recordWait } from './record.js';
import { submitJob } from './submit/submit.js';
import { findRecordedTask, registerJob } from './jobRow.js';
import { trackStatus } from './tracking/track.js';

export type { ActivityDeps, TaskRef } from './context.js';
export type { SubmitJobInput, SubmitOutcome } from './submit/submit.js';
export type { ReconcileOutcome } from './submit/reconcile.js';
export type { TrackStatusInput, PollOutcome, PollSchedule, SavedResult } from './tracking/pollTypes.js';

export { handOffPolling } from './tracking/track.js';
export { mapProviderErrors } from './failures.js';
export { DetachedTracker } from '../worker/tracker.js';
export type { CancelCallOutcome } from './cancel.js';
export { providerKeys } from '../providers/shared/keys.js';

/** `activity` with its kit given: the function the worker registers under the activity's name. */
function bound<I, O>(kit: ActivityKit, activity: (kit: ActivityKit, input: I) => Promise<O>): (input: I) => Promise<O> {
  return (input) => activity(kit, input);
}

/** Builds every scrape activity over `deps`: one kit, each activity bound to it by name (the names histories record). */
export function createActivities(deps: ActivityDeps) {
  const kit = activityKit(deps);
  return {
    submitJob: bound(kit, submitJob),
    registerJob: bound(kit, registerJob),
    findRecordedTask: bound(kit, findRecordedTask),
    reconcileJob: bound(kit, reconcileJob),
    adoptTask: bound(kit, adoptTask),
    trackStatus: bound(kit, trackStatus),
    cancelAtProvider: bound(kit, cancelAtProvider),
    closeAsCancelled: bound(kit, closeAsCancelled),
    recordState: bound(kit, recordState),
    recordWait: bound(kit, recordWait),
    recordCancelOutcome: bound(kit, recordCancelOutcome),
  };
}

/** The activity functions, as the workflows proxy them. */
export type ScrapeActivities = ReturnType<typeof createActivities>;
