/**
 * All I/O of the scrape workflows: provider calls and result-store writes, built from injected
 * dependencies so that unit tests can give fakes and the worker gives the real store, provider
 * registry and Temporal client.
 *
 * Every activity is safe to retry: writes are idempotent (keyed by job ID or by (provider, task
 * ID)), and submits record their intent and their answer in the store so that a retried attempt
 * adopts an earlier answer instead of submitting again.
 *
 * | file | activities | used by |
 * |---|---|---|
 * | `submit.ts` | `submitJob`, `findRecordedTask`, `registerJob` | workflows v2 and v3 (`registerJob`: v1 too) |
 * | `reconcile.ts` | `reconcileJob` | workflows v2 and v3 (under v1's `reconcileSubmit` too) |
 * | `adopt.ts` | `adoptTask` | workflows v3, v2 and v1 |
 * | `poll.ts` | `awaitStatus` (retry-driven polling, result written once) | workflows v2 and v3 (the cancel path; v2 runs started before polling moved into one activity) |
 * | `track.ts`, `tracker.ts` | `trackStatus` (in-process polling in one activity, heartbeats throttled; detached for async completion in a worker with a tracker) | workflows v2 and v3 |
 * | `cancel.ts` | `cancelAtProvider`, `closeAsCancelled` | workflows v2 and v3 |
 * | `record.ts` | `recordState`, `recordCancelOutcome` | every version |
 * | `../legacy/activities.ts` | `submitScrape`, `reconcileSubmit`, `checkStatus`, `recordStatusFailure`, `saveResult`, `cancelTask` | v1 runs only (retired with `src/legacy/`: delete its import and its spread below) |
 */
import { activityKit, type ActivityDeps } from './context.js';
import { adoptActivities } from './adopt.js';
import { cancelActivities } from './cancel.js';
import { pollActivities } from './poll.js';
import { reconcileActivities } from './reconcile.js';
import { recordActivities } from './record.js';
import { submitActivities } from './submit.js';
import { trackActivities } from './track.js';
import { legacyActivities } from '../legacy/activities.js';

export type { ActivityDeps, TaskRef } from './context.js';
export type { SubmitJobInput, SubmitOutcome } from './submit.js';
export type { ReconcileOutcome } from './reconcile.js';
export type { AwaitStatusInput, PollOutcome, PollSchedule, SavedResult } from './pollTypes.js';
export type { TrackStatusInput } from './track.js';
export { handOffPolling } from './track.js';
export { DetachedTracker } from './tracker.js';
export type { CancelCallOutcome } from './cancel.js';
export { providerKeys } from '../providers/shared/keys.js';

/** Builds every scrape activity over `deps`. */
export function createActivities(deps: ActivityDeps) {
  const kit = activityKit(deps);
  return {
    ...submitActivities(kit),
    ...reconcileActivities(kit),
    ...adoptActivities(kit),
    ...pollActivities(kit),
    trackStatus: trackActivities(kit, deps.tracker).trackStatus,
    ...cancelActivities(kit),
    ...recordActivities(kit),
    ...legacyActivities(kit),
  };
}

/** The activity functions, as the workflows proxy them. */
export type ScrapeActivities = ReturnType<typeof createActivities>;
