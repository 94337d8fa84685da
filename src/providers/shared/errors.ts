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
 * **Quota or credit exhaustion** is not a kind of its own: it is `permanent` (a refused call:
 * Firecrawl `402` "Insufficient credits", Apify's `402` usage and payment types, ScraperAPI's `403`
 * out of credits, a `429` whose code or text says the quota is used up) or `task_failed` (a status
 * read saying the job failed for it: Bright Data `failed` "Account is suspended", its negative
 * balance), always with code {@link QUOTA_EXHAUSTED} and `details.quota` set ({@link quotaExhausted},
 * {@link isQuotaExhausted}). The job that meets it ends `failed` at once; the provider key's
 * limiter then holds every submit of that credential for `limits.quotaHoldMs`, followed by one
 * probe, instead of letting each queued submit spend a request on the same answer.
 *
 * Sources: the providers' published documentation (Apify `concurrent-runs-limit-exceeded` is a 400 that means
 * "try later"; Firecrawl sometimes states the wait only in the message), RFC 9110.
 */
import type { JobError } from '../../model/types.js';

/** See the table in this module's docs. */
type ProviderErrorKind =
  | 'permanent'
  | 'cooldown'
  | 'transient'
  | 'ambiguous'
  | 'not_found'
  | 'conflict'
  | 'unsupported'
  | 'task_failed'
  | 'expired';

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
      /**
       * The account's quota or credits are used up (code {@link QUOTA_EXHAUSTED}): no call of this
       * credential can succeed until the provider's balance is refilled, so submits are held.
       */
      quota?: boolean;
      /** The provider's own error code when `code` was replaced by ours (e.g. Apify's `platform-feature-disabled`). */
      providerCode?: string;
      /**
       * A refusal of a submit that proves our job exists at the provider (a `409` for our
       * idempotency key, Zyte's "already scheduled" for the spider arguments that carry our
       * reference): durable evidence, after which no lookup that comes back empty makes the job
       * "absent" and nothing is submitted again without an operator.
       */
      provesExistence?: boolean;
      /**
       * Of an `expired` task whose provider record still says how it ended before its data was
       * removed (a Scrapy Cloud job `deleted` keeps its `close_reason`): that end, in our words.
       * A cancel's confirmation weighs it: a task that finished or failed on its own was not
       * stopped by the cancel, whatever the cancel's answer said. `unrecognised`: the record says
       * how it ended in words we do not map (a spider's own close reason), so not that it was
       * cancelled.
       */
      endedAs?: 'completed' | 'failed' | 'cancelled' | 'unrecognised';
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

/** Code of every quota or credit exhaustion (see the module docs). */
export const QUOTA_EXHAUSTED = 'QUOTA_EXHAUSTED';

/** True for a provider error that says the account's quota or credits are used up. */
export function isQuotaExhausted(e: unknown): boolean {
  return isProviderError(e) && e.details.quota === true;
}

/**
 * The quota-exhaustion form of `err`: kind `permanent` (a refused call) or `task_failed` (a job
 * the provider failed for it), code {@link QUOTA_EXHAUSTED}, `details.quota` set, the provider's
 * own code kept as `details.providerCode`; message, HTTP status, evidence and any stated wait
 * (`retryAfterMs`, which lengthens the hold of submits) unchanged.
 */
export function quotaExhausted(
  kind: 'permanent' | 'task_failed',
  err: Pick<ProviderError, 'message' | 'details'>,
): ProviderError {
  const { code, ...rest } = err.details;
  const providerCode = rest.providerCode ?? (code !== QUOTA_EXHAUSTED ? code : undefined);
  return new ProviderError(kind, err.message, {
    ...rest,
    code: QUOTA_EXHAUSTED,
    quota: true,
    ...(providerCode !== undefined ? { providerCode } : {}),
    keyWide: undefined,
  });
}

/**
 * Error codes by which providers say the quota, credits or payment ran out (Apify's
 * `not-enough-usage-to-run-paid-actor` and `x402-payment-required`, `insufficient_quota`,
 * `QUOTA_EXCEEDED`, `INSUFFICIENT_CREDITS`, …).
 */
const QUOTA_CODE = /quota|credit|payment|not-enough-usage|usage[-_]limit|billing|balance/i;

/** Codes that look like money but mean a concurrency or memory limit (try later, not a spent quota). */
const NOT_QUOTA_CODE = /concurren|memory[-_]limit|rate[-_]limit|too[-_]many/i;

/** Texts that say the quota or credits are used up. */
const QUOTA_TEXT = new RegExp(
  [
    String.raw`\b(insufficient|not enough|out of)\s+(api\s+)?credits?\b`,
    String.raw`\bcredits?\b.{0,60}\b(exhausted|used up|depleted|ran out|run out)\b`,
    String.raw`\b(exhausted|used up|depleted)\b.{0,60}\bcredits?\b`,
    String.raw`\bquota\b.{0,40}\b(exceeded|exhausted|reached|used up)\b`,
    String.raw`\b(exceeded|exhausted|reached|used up)\b.{0,40}\bquota\b`,
    String.raw`\binsufficient[_ ](quota|balance|funds)\b`,
    String.raw`\bpayment required\b`,
    String.raw`\baccount is suspended\b`,
    String.raw`\b(monthly|usage) limit\b.{0,40}\b(exceeded|reached)\b`,
    String.raw`\bexceeded\b.{0,40}\b(monthly|usage) limit\b`,
  ].join('|'),
  'i',
);

/** A quota stated per unit of time is a rate limit: it comes back by itself within that unit. */
const RATE_TEXT =
  /\bper\s+(second|minute|hour)\b|\/\s*(s|sec|second|min|minute|h|hr|hour)\b|\brate\b|\breq(uests)?\/(s|min)\b/i;

/**
 * True when a provider's error code or text says the account's quota or credits are used up
 * (see {@link QUOTA_CODE}, {@link QUOTA_TEXT}); false for concurrency, memory and per-time-unit
 * (rate) limits, which pass by themselves.
 */
export function saysQuotaExhausted(code: string | null | undefined, text: string | null | undefined): boolean {
  if (code && NOT_QUOTA_CODE.test(code)) return false;
  const t = text ?? '';
  if (RATE_TEXT.test(t)) return false;
  return (code !== null && code !== undefined && QUOTA_CODE.test(code)) || QUOTA_TEXT.test(t);
}
