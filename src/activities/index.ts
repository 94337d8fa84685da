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
 * | file | activities |
 * |---|---|
 * | `submit/submit.ts` | `submitJob` |
 * | `jobRow.ts` | `registerJob`, `findRecordedTask` |
 * | `submit/reconcile.ts` | `reconcileJob` |
 * | `submit/adopt.ts` | `adoptTask` |
 * | `tracking/track.ts`, `tracking/poll.ts` | `trackStatus` (the polling loop in the worker, heartbeats throttled; detached for async completion in a worker with a tracker, `src/worker/tracker.ts`; `poll.ts` is one check and the result written once) |
 * | `cancel.ts` | `cancelAtProvider`, `closeAsCancelled` |
 * | `record.ts` | `recordState`, `recordCancelOutcome` |
 */
import { activityKit, type ActivityDeps } from './context.js';
import { adoptActivities } from './submit/adopt.js';
import { cancelActivities } from './cancel.js';
import { reconcileActivities } from './submit/reconcile.js';
import { recordActivities } from './record.js';
import { submitActivities } from './submit/submit.js';
import { jobRowActivities } from './jobRow.js';
import { trackActivities } from './tracking/track.js';

export type { ActivityDeps, TaskRef } from './context.js';
export type { SubmitJobInput, SubmitOutcome } from './submit/submit.js';
export type { ReconcileOutcome } from './submit/reconcile.js';
export type { TrackStatusInput, PollOutcome, PollSchedule, SavedResult } from './tracking/pollTypes.js';

export { handOffPolling } from './tracking/track.js';
export { mapProviderErrors } from './failures.js';
export { DetachedTracker } from '../worker/tracker.js';
export type { CancelCallOutcome } from './cancel.js';
export { providerKeys } from '../providers/shared/keys.js';

/** Builds every scrape activity over `deps`. */
export function createActivities(deps: ActivityDeps) {
  const kit = activityKit(deps);
  return {
    ...submitActivities(kit),
    ...jobRowActivities(kit),
    ...reconcileActivities(kit),
    ...adoptActivities(kit),
    trackStatus: trackActivities(kit, deps.tracker).trackStatus,
    ...cancelActivities(kit),
    ...recordActivities(kit),
  };
}

/** The activity functions, as the workflows proxy them. */
export type ScrapeActivities = ReturnType<typeof createActivities>;
