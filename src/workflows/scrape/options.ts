/**
 * Activity proxies of the scrape workflow, per role, with timeouts and retry policies derived from
 * the job's {@link PollPolicy}. Durations are ms.
 */
import { ActivityCancellationType, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ScrapeActivities } from '../../activities/index.js';
import { NON_RETRYABLE_TYPES } from '../../activities/failureTypes.js';
import type { PollPolicy } from '../../model/types.js';

/** The proxies the phases use. */
export type ScrapeProxies = ReturnType<typeof scrapeProxies>;

/** Builds the proxies for `policy`, one per role; each names the activities it calls. */
export function scrapeProxies(policy: PollPolicy) {
  const attemptMs = policy.activityTimeoutMs;
  /** Doubling from `initialInterval` to `maximumInterval`; our non-retryable failure types end it. */
  const backoff = (initialInterval: string, maximumInterval: string) => ({
    initialInterval,
    backoffCoefficient: 2,
    maximumInterval,
    nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
  });
  const retry = backoff('2s', '60s');
  return {
    /**
     * `submitJob`, going on into the first checks (`SubmitJobInput.track`): its attempt lasts up to
     * the fast path plus one attempt; cool-downs and slot waits are retried within max(deadline,
     * 10 attempts) plus the fast path. A cancel does not wait for it: the cancel path reads the
     * store, where the task ID is recorded the moment the provider answers (and an intent still
     * unanswered is reconciled, the late answer included).
     */
    submitter: proxyActivities<ScrapeActivities>({
      startToCloseTimeout: attemptMs + policy.fastPathMs,
      scheduleToCloseTimeout: Math.max(policy.deadlineMs, 10 * attemptMs) + policy.fastPathMs,
      retry,
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
    /**
     * `reconcileJob`, `adoptTask`, `registerJob`, `findRecordedTask`: retried until a provable
     * answer; a cancel does not wait (its own path reconciles from the store again).
     */
    reconciler: proxyActivities<ScrapeActivities>({
      startToCloseTimeout: attemptMs,
      retry,
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
    /**
     * `trackStatus`: one activity for the whole tracking phase (or a cancel's confirmation checks),
     * waiting and checking in-process; it heartbeats (the SDK sends one to the server per throttle
     * interval), so a worker that died is noticed after `pollHeartbeatTimeoutMs`.
     * `scheduleToCloseMs`: the tracking deadline left plus two attempts (a backstop: the activity
     * itself returns at the deadline).
     */
    tracker: (scheduleToCloseMs: number) =>
      proxyActivities<ScrapeActivities>({
        startToCloseTimeout: Math.max(1, scheduleToCloseMs) + 2 * attemptMs,
        scheduleToCloseTimeout: Math.max(1, scheduleToCloseMs) + 2 * attemptMs,
        heartbeatTimeout: policy.pollHeartbeatTimeoutMs,
        // A cancel or a wake never waits for it: an abandoned loop finds itself superseded in the store.
        cancellationType: ActivityCancellationType.TRY_CANCEL,
        retry: backoff('1s', '30s'),
      }),
    /** `cancelAtProvider`: bounded by the cancel-confirmation deadline. */
    canceller: proxyActivities<ScrapeActivities>({
      startToCloseTimeout: attemptMs,
      scheduleToCloseTimeout: Math.max(policy.cancelConfirmDeadlineMs, attemptMs),
      retry: backoff('1s', '15s'),
    }),
    /** `closeAsCancelled`: a short Temporal API call. */
    closer: proxyActivities<ScrapeActivities>({
      startToCloseTimeout: 10_000,
      retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s' },
    }),
    /** `recordState`, `recordWait`, `recordCancelOutcome`: local activities (store writes only). */
    recorder: proxyLocalActivities<ScrapeActivities>({
      startToCloseTimeout: Math.min(15_000, attemptMs),
      retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s' },
    }),
  };
}
