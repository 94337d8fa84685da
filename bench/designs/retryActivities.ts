/**
 * The activity of the bench-only retry-driven polling design (see `retryPolling.ts`): one status
 * check per attempt, through the product's own `checkStatus` (the same provider call through the
 * same limiter, the same store write). A task that is not final ends the attempt with a retryable,
 * BENIGN `ApplicationFailure` whose `nextRetryDelay` is the schedule's next delay (with jitter, and
 * never shorter than the provider's `Retry-After`), so the server waits between checks.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { ScrapeActivities, StatusOutcome, TaskRef } from '../../src/activities/index.js';
import { nominalDelayMs, type Schedule } from '../lib/schedule.js';

/** Input of {@link RetryPollActivities.awaitFinalStatus}: the task and the poll schedule (ms). */
export interface AwaitFinalInput extends TaskRef {
  schedule: Schedule;
}

/** Builds the bench activity over the product's activities. */
export function createRetryPollActivities(base: Pick<ScrapeActivities, 'checkStatus'>) {
  return {
    /**
     * Checks the task once. Returns the final observation (with the attempt count); otherwise
     * throws a retryable failure with `nextRetryDelay` = the delay before the next check (ms).
     */
    async awaitFinalStatus(input: AwaitFinalInput): Promise<StatusOutcome & { attempts: number }> {
      const { schedule, ...ref } = input;
      const attempt = Context.current().info.attempt;
      const out = await base.checkStatus(ref);
      if (out.kind === 'not_found' || out.state === 'completed' || out.state === 'failed' || out.state === 'cancelled') return { ...out, attempts: attempt };
      // Attempt 1 is check 0 (after the workflow's first timer): the next wait is delay index `attempt`.
      const base_ = nominalDelayMs(schedule, attempt);
      const jittered = base_ * (1 - schedule.jitter + 2 * schedule.jitter * Math.random());
      const delay = Math.max(Math.round(jittered), out.retryAfterMs ?? 0, 1);
      throw ApplicationFailure.create({
        type: 'Bench.notFinal',
        message: `task ${ref.taskId} is ${out.providerStatus}; next check in ${delay} ms`,
        nextRetryDelay: delay,
        category: ApplicationFailureCategory.BENIGN,
      });
    },
  };
}

/** The bench activity functions, as the workflow proxies them. */
export type RetryPollActivities = ReturnType<typeof createRetryPollActivities>;
