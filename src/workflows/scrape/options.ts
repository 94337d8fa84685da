/**
 * Activity proxies of scrape workflow v2, per role, with timeouts and retry policies derived from
 * the job's {@link PollPolicy}. Durations are ms.
 */
import { ActivityCancellationType, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ScrapeActivities } from '../../activities/index.js';
import { NON_RETRYABLE_TYPES } from '../../activities/failureTypes.js';
import type { PollPolicy } from '../../model/types.js';

/** The proxies the phases use. */
export type ScrapeProxies = ReturnType<typeof scrapeProxies>;

/**
 * Builds the proxies for `policy`:
 * - `submitter` (`submitJob`): cool-downs and slot waits are retried within max(deadline, 10 attempts);
 * - `reconciler` (`reconcileJob`, `adoptTask`, `registerJob`, `findRecordedTask`): retried until a provable answer;
 * - `poller` (`awaitStatus`): one check per attempt, the server waits between checks; a silent
 *   attempt is retried after `activityTimeoutMs` (heartbeat timeout) — slow calls heartbeat;
 * - `canceller` (`cancelAtProvider`): bounded by the cancel-confirmation deadline;
 * - `closer` (`closeAsCancelled`): a short Temporal API call;
 * - `recorder` (`recordState`, `recordCancelOutcome`): local activities (store writes only).
 */
export function scrapeProxies(policy: PollPolicy) {
  const attemptMs = policy.activityTimeoutMs;
  const retry = { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '60s', nonRetryableErrorTypes: NON_RETRYABLE_TYPES };
  return {
    /** A cancel waits for an attempt in flight: its answer says whether a task exists (rule 3). */
    submitter: proxyActivities<ScrapeActivities>({ startToCloseTimeout: attemptMs, scheduleToCloseTimeout: Math.max(policy.deadlineMs, 10 * attemptMs), retry, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED }),
    /** A cancel does not wait (its own path reconciles from the store again). */
    reconciler: proxyActivities<ScrapeActivities>({ startToCloseTimeout: attemptMs, retry, cancellationType: ActivityCancellationType.TRY_CANCEL }),
    /** `scheduleToCloseMs`: the tracking deadline left plus two attempts (a backstop: the activity itself returns at the deadline). */
    poller: (scheduleToCloseMs: number) =>
      proxyActivities<ScrapeActivities>({
        startToCloseTimeout: Math.max(30 * 60_000, 10 * attemptMs),
        heartbeatTimeout: attemptMs,
        // A cancel or a wake never waits behind a check in flight (it may hang until its own timeout).
        cancellationType: ActivityCancellationType.TRY_CANCEL,
        scheduleToCloseTimeout: Math.max(1, scheduleToCloseMs) + 2 * attemptMs,
        retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
      }),
    canceller: proxyActivities<ScrapeActivities>({
      startToCloseTimeout: attemptMs,
      scheduleToCloseTimeout: Math.max(policy.cancelConfirmDeadlineMs, attemptMs),
      retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '15s', nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
    }),
    closer: proxyActivities<ScrapeActivities>({ startToCloseTimeout: 10_000, retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s' } }),
    recorder: proxyLocalActivities<ScrapeActivities>({ startToCloseTimeout: Math.min(15_000, attemptMs), retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s' } }),
  };
}
