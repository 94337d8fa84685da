/**
 * Conversion of {@link ProviderError}s into Temporal `ApplicationFailure`s, once for every activity
 * ({@link mapProviderErrors}, the worker's activity interceptor: activities throw provider errors
 * as they are), so that the activity retry policy does the right thing for each kind:
 *
 * - `permanent`, `conflict`, `unsupported` → non-retryable (the workflow stops with the reason);
 * - a quota or credit exhaustion (code `QUOTA_EXHAUSTED`) → non-retryable, type
 *   `Provider.quota_exhausted`: the job that met it is final at once (the provider key's limiter
 *   holds the other submits; retrying this one would spend a request on the same answer);
 * - `cooldown` → retryable, with `nextRetryDelay` = the provider's wait (Retry-After);
 * - `transient`, `ambiguous` (on reads), `not_found` → retryable with the policy's backoff, or
 *   after the provider's `Retry-After` when it gave one (a `503` or `520` with a wait).
 *
 * A provider's wait replaces the policy's back-off only when it is longer: `nextRetryDelay` is
 * the longer of the two (the policy's wait after this attempt, from the activity's retry policy),
 * so that a provider answering `Retry-After: 0` (or a past date, or a header a proxy doubled into
 * `10, 10`, which reads as a date in 2001) to every call still meets a growing back-off.
 *
 * The failure's `type` is `Provider.<kind>` and its single detail is the sanitised
 * {@link JobError}, which the workflow reads back from `ActivityFailure.cause`.
 */
import type { Context, Info } from '@temporalio/activity';
import { ApplicationFailure, type RetryPolicy } from '@temporalio/common';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptors,
  Next,
} from '@temporalio/worker';
import { isProviderError, isQuotaExhausted, type ProviderError } from '../providers/shared/errors.js';
import type { JobError } from '../model/types.js';
import { FailureType, NON_RETRYABLE_TYPES } from './failureTypes.js';

export { FailureType, NON_RETRYABLE_TYPES };

/**
 * The wait (ms) the retry `policy` gives after failed attempt `attempt` (1-based):
 * `initialInterval × backoffCoefficient^(attempt−1)`, at most `maximumInterval` (Temporal's defaults:
 * 1 s, 2, 100 × initialInterval). `undefined` when the policy is unknown (a server that did not send it).
 */
export function policyBackoffMs(policy: RetryPolicy | undefined, attempt: number): number | undefined {
  if (!policy) return undefined;
  // The SDK gives an activity's policy with its durations decompiled to ms.
  const initial = typeof policy.initialInterval === 'number' ? policy.initialInterval : 1_000;
  const max = typeof policy.maximumInterval === 'number' ? policy.maximumInterval : 100 * initial;
  const coefficient = policy.backoffCoefficient ?? 2;
  return Math.min(max, initial * coefficient ** Math.max(0, attempt - 1));
}

/**
 * Converts a provider error into the matching ApplicationFailure (see module docs). `floorMs`: the
 * retry policy's own wait after this attempt ({@link policyBackoffMs}); a provider's shorter wait
 * does not shorten it.
 */
export function toFailure(e: ProviderError, floorMs?: number): ApplicationFailure {
  const jobError: JobError = e.toJobError();
  const type = isQuotaExhausted(e) ? FailureType.quota : FailureType[e.kind];
  const nonRetryable = NON_RETRYABLE_TYPES.includes(type);
  return ApplicationFailure.create({
    message: e.message,
    type,
    nonRetryable,
    details: [jobError],
    nextRetryDelay:
      !nonRetryable && e.details.retryAfterMs !== undefined
        ? Math.max(e.details.retryAfterMs, floorMs ?? 0, 1)
        : undefined,
  });
}

/** The inbound interceptor that gives every activity's provider error its failure ({@link toFailure}); anything else passes as it is. */
class ProviderErrorMapping implements ActivityInboundCallsInterceptor {
  constructor(private readonly info: Info) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (e) {
      throw isProviderError(e) ? toFailure(e, policyBackoffMs(this.info.retryPolicy, this.info.attempt)) : e;
    }
  }
}

/** The activity interceptor factory of the mapping: the worker's innermost interceptor (tests give it to their activity environments). */
export function mapProviderErrors(ctx: Context): ActivityInterceptors {
  return { inbound: new ProviderErrorMapping(ctx.info) };
}
