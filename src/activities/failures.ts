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
 * The failure's `type` is `Provider.<kind>` and its single detail is the sanitised
 * {@link JobError}, which the workflow reads back from `ActivityFailure.cause`.
 */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
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

/** Converts a provider error into the matching ApplicationFailure (see module docs). */
export function toFailure(e: ProviderError): ApplicationFailure {
  const jobError: JobError = e.toJobError();
  const type = isQuotaExhausted(e) ? FailureType.quota : FailureType[e.kind];
  const nonRetryable = NON_RETRYABLE_TYPES.includes(type);
  return ApplicationFailure.create({
    message: e.message,
    type,
    nonRetryable,
    details: [jobError],
    nextRetryDelay:
      !nonRetryable && e.details.retryAfterMs !== undefined ? Math.max(e.details.retryAfterMs, 1) : undefined,
  });
}

/** The inbound interceptor that gives every activity's provider error its failure ({@link toFailure}); anything else passes as it is. */
class ProviderErrorMapping implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (e) {
      throw isProviderError(e) ? toFailure(e) : e;
    }
  }
}

/** The activity interceptor factory of the mapping: the worker's innermost interceptor (tests give it to their activity environments). */
export function mapProviderErrors(_ctx: Context): ActivityInterceptors {
  return { inbound: new ProviderErrorMapping() };
}
