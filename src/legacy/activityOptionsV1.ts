/**
 * FROZEN with the v1 workflow (`scrapeWorkflowV1.ts`). Activity options of the v1 scrape workflow, per role: timeouts and retry policies derived from the
 * job's {@link PollPolicy}. One definition, used by `scrapeWorkflow` and by the benchmark's
 * alternative polling design (`bench/designs/retryPolling.ts`), so both measure the same retries.
 *
 * All durations are ms unless given as a Temporal duration string.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_TYPES } from '../activities/failureTypes.js';
import type { PollPolicy } from '../model/types.js';

/** The option sets, by the role of the activities proxied with them. */
export interface ScrapeActivityOptions {
  /** Store-only activities (register, record state/cancel outcome): short attempts, retried until they succeed. */
  store: ActivityOptions;
  /** `submitScrape`: cool-downs (429, concurrency limits) are waited out by retries within max(deadline, 10 attempts). */
  submitter: ActivityOptions;
  /** `reconcileSubmit` / `adoptTask`: retried until a provable answer; permanent errors stop it. */
  reconciler: ActivityOptions;
  /** `checkStatus`: the status-check budget (`statusCheckAttempts` attempts within `statusCheckBudgetMs`). */
  checker: ActivityOptions;
  /** `saveResult`: the write-once result write, retried for up to 30 min. */
  writer: ActivityOptions;
  /** `cancelTask`: bounded by the cancel-confirmation deadline. */
  canceller: ActivityOptions;
}

/** Builds the option sets for `policy` (its `activityTimeoutMs`, `deadlineMs`, `statusCheck*`, `cancelConfirmDeadlineMs`). */
export function scrapeActivityOptions(policy: PollPolicy): ScrapeActivityOptions {
  const attemptMs = policy.activityTimeoutMs;
  return {
    store: {
      startToCloseTimeout: Math.min(15_000, attemptMs),
      retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s' },
    },
    submitter: {
      startToCloseTimeout: attemptMs,
      scheduleToCloseTimeout: Math.max(policy.deadlineMs, 10 * attemptMs),
      retry: {
        initialInterval: '2s',
        backoffCoefficient: 2,
        maximumInterval: '60s',
        nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
      },
    },
    reconciler: {
      startToCloseTimeout: attemptMs,
      retry: {
        initialInterval: '2s',
        backoffCoefficient: 2,
        maximumInterval: '60s',
        nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
      },
    },
    checker: {
      startToCloseTimeout: attemptMs,
      scheduleToCloseTimeout: Math.max(policy.statusCheckBudgetMs, attemptMs),
      retry: {
        initialInterval: '1s',
        backoffCoefficient: 2,
        maximumInterval: '30s',
        maximumAttempts: policy.statusCheckAttempts,
        nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
      },
    },
    writer: {
      startToCloseTimeout: attemptMs,
      scheduleToCloseTimeout: '30m',
      retry: {
        initialInterval: '1s',
        backoffCoefficient: 2,
        maximumInterval: '30s',
        nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
      },
    },
    canceller: {
      startToCloseTimeout: attemptMs,
      scheduleToCloseTimeout: Math.max(policy.cancelConfirmDeadlineMs, attemptMs),
      retry: {
        initialInterval: '1s',
        backoffCoefficient: 2,
        maximumInterval: '15s',
        nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
      },
    },
  };
}
