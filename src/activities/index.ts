/**
 * All I/O of the scrape workflows: provider calls and result-store writes, built from injected
 * dependencies so that unit tests can give fakes and the worker gives the real store, provider
 * registry and Temporal client.
 *
 * Every activity is safe to retry: writes are idempotent (keyed by job ID or by (provider, task
 * ID)), and submits record their intent and their answer in the store so that a retried attempt
 * adopts an earlier answer instead of submitting again.
 *
 * | file | activities |
 * |---|---|
 * | `submit.ts` | `submitJob` |
 * | `jobRow.ts` | `registerJob`, `findRecordedTask` |
 * | `reconcile.ts` | `reconcileJob` |
 * | `adopt.ts` | `adoptTask` |
 * | `track.ts`, `tracker.ts`, `poll.ts` | `trackStatus` (the polling loop in the worker, heartbeats throttled; detached for async completion in a worker with a tracker; `poll.ts` is one check and the result written once) |
 * | `cancel.ts` | `cancelAtProvider`, `closeAsCancelled` |
 * | `record.ts` | `recordState`, `recordCancelOutcome` |
 */
import { activityKit, type ActivityDeps } from './context.js';
import { adoptActivities } from './adopt.js';
import { cancelActivities } from './cancel.js';
import { reconcileActivities } from './reconcile.js';
import { recordActivities } from './record.js';
import { submitActivities } from './submit.js';
import { jobRowActivities } from './jobRow.js';
import { trackActivities } from './track.js';

export type { ActivityDeps, TaskRef } from './context.js';
export type { SubmitJobInput, SubmitOutcome } from './submit.js';
export type { ReconcileOutcome } from './reconcile.js';
export type { TrackStatusInput, PollOutcome, PollSchedule, SavedResult } from './pollTypes.js';

export { handOffPolling } from './track.js';
export { DetachedTracker } from './tracker.js';
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
