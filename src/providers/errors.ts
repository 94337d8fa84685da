/**
 * Classified provider errors. Every adapter turns HTTP and network failures into a
 * {@link ProviderError} whose `kind` drives what the workflow does:
 *
 * | kind        | meaning                                                         | workflow action            |
 * |-------------|-----------------------------------------------------------------|----------------------------|
 * | permanent   | validation, credentials, disallowed target (400/401/403/422)    | stop at once, keep reason  |
 * | cooldown    | rate limit or concurrency limit (429, Apify `400 concurrent-…`) | wait `retryAfterMs`, retry |
 * | transient   | 5xx on a read, connection refused, timeout on a read            | retry with backoff         |
 * | ambiguous   | submit whose outcome is unknown (reset/timeout after send, 5xx) | `unknown` → reconcile      |
 * | not_found   | 404 for a task                                                  | count; persistent → expired|
 * | conflict    | idempotency key reused with other parameters (409)              | stop, report conflict      |
 * | unsupported | the provider has no such endpoint (no list, no cancel)          | choose another path        |
 * | task_failed | a read says nothing will ever come (empty snapshot, bad input)  | `failed` with code + body  |
 * | expired     | the provider's documented expiry of a task we know (Bright Data `400 expired`) | `expired`, never resubmit |
 *
 * Sources: ../shared/providers.md (Apify `concurrent-runs-limit-exceeded` is a 400 that means
 * "try later"; Firecrawl sometimes states the wait only in the message), RFC 9110.
 */
import type { JobError } from '../model/types.js';

/** See the table in this module's docs. */
export type ProviderErrorKind = 'permanent' | 'cooldown' | 'transient' | 'ambiguous' | 'not_found' | 'conflict' | 'unsupported' | 'task_failed' | 'expired';

/** Sanitised evidence of one failed provider exchange (an incident record). */
export interface ProviderEvidence {
  /** `METHOD url` with credentials removed. */
  endpoint: string;
  httpStatus?: number;
  /** UTC ISO-8601. */
  at: string;
  /** Request options sent (sanitised). */
  request?: unknown;
  /** Response body (sanitised, truncated to 8 kB). */
  body?: unknown;
  /** Response headers worth keeping (Retry-After, request id), sanitised. */
  headers?: Record<string, string>;
}

/** A classified failure of a provider call. `message` is sanitised. */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly details: {
      code?: string;
      httpStatus?: number;
      /** How long the provider asked us to wait, in ms (Retry-After or parsed from the message). */
      retryAfterMs?: number;
      /** The concurrent-job limit the provider stated in a concurrency refusal (count), when it did. */
      statedLimit?: number;
      /**
       * A concurrency refusal that must also hold back every call of the key (a key-wide, shared
       * cool-down), not only submits: Bright Data counts its "too many running jobs" `429` toward
       * its 25-in-5-minutes IP block, like any other `429`.
       */
      keyWide?: boolean;
      evidence?: ProviderEvidence;
    } = {},
  ) {
    super(message);
  }

  /** The {@link JobError} record kept with the job. */
  toJobError(): JobError {
    return {
      kind: this.kind,
      code: this.details.code,
      message: this.message,
      httpStatus: this.details.httpStatus,
      endpoint: this.details.evidence?.endpoint,
      at: this.details.evidence?.at ?? new Date().toISOString(),
    };
  }
}

/** True for a {@link ProviderError} (also across module copies). */
export function isProviderError(e: unknown): e is ProviderError {
  return e instanceof ProviderError || (e instanceof Error && e.name === 'ProviderError' && 'kind' in e);
}

/**
 * True when a provider's failure reason means the job was cancelled ("Collection was canceled",
 * `failReason: "cancelled"`, "aborted by user"): such a job is `cancelled`, never `failed`.
 */
export function meansCancelled(reason: string | null | undefined): boolean {
  return typeof reason === 'string' && /\b(cancell?ed|cancel(l)?ation|aborted by (the )?user)\b/i.test(reason);
}
