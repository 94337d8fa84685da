/**
 * The time of the current activity attempt: what is left of its start-to-close timeout, and a
 * promise that settles shortly before it runs out or when the attempt is cancelled; what is left of
 * the activity's schedule-to-close time, and what a submit cooled down to its end says. Outside an
 * activity (unit tests calling the functions directly) an attempt never runs out.
 */
import { Context } from '@temporalio/activity';
import type { ScrapeWorkflowInput } from '../../model/types.js';
import type { Accepted } from '../../providers/adapter.js';
import type { ResolvedProvider } from '../../providers/registry.js';
import { providerKeys } from '../../providers/shared/keys.js';
import type { ActivityKit } from '../context.js';
import type { LimitedCall } from '../../providers/shared/limiter.js';

/** How long before its start-to-close timeout an attempt stops waiting for a submit's answer, ms. */
export const GIVE_UP_MARGIN_MS = 1_000;

/** Time a reconcile attempt keeps, after a wait in it, to read the lookups once more and answer, ms. */
export const SETTLE_READ_MARGIN_MS = 5_000;

/**
 * {@link SETTLE_READ_MARGIN_MS}, or a fifth of the attempt's start-to-close timeout when that is
 * shorter, ms: an attempt of 5 s keeps 1 s, not all of it (a replay answered in 10 ms was taken
 * as late, and every replay of a round came 1 s apart).
 */
export function settleReadMarginMs(): number {
  try {
    const ms = Context.current().info.startToCloseTimeoutMs;
    return ms > 0 ? Math.min(SETTLE_READ_MARGIN_MS, ms / 5) : SETTLE_READ_MARGIN_MS;
  } catch {
    return SETTLE_READ_MARGIN_MS;
  }
}

/** What is left of the current activity attempt's start-to-close time, ms (Infinity outside an activity). */
export function attemptBudget(startedAt: number): number {
  try {
    const ms = Context.current().info.startToCloseTimeoutMs;
    return ms > 0 ? startedAt + ms - Date.now() : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * Resolves with `gave_up` shortly before the current activity attempt's start-to-close timeout
 * (counted from `startedAt`, epoch ms, when the attempt began),
 * or when the attempt is cancelled (never outside an activity). `cancel()` clears the timer.
 */
export function attemptEnds(startedAt: number): { promise: Promise<'gave_up'>; cancel(): void } {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    return { promise: new Promise<'gave_up'>(() => undefined), cancel: () => undefined };
  }
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<'gave_up'>((resolve) => {
    const ms = ctx.info.startToCloseTimeoutMs;
    if (ms > 0)
      timer = setTimeout(() => resolve('gave_up'), Math.max(1, startedAt + ms - GIVE_UP_MARGIN_MS - Date.now()));
    ctx.cancellationSignal.addEventListener('abort', () => resolve('gave_up'), { once: true });
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * The provider submit of `job`: its request under the job's idempotency keys (the same on every
 * attempt, so a replay is recognised) and with its per-job callback, through the kit's limited call
 * in the `submit` phase (held by the key's quota hold). `opts` are {@link ActivityKit.call}'s, and
 * `onSend`.
 * Resolves the provider's acceptance; rejects with its error (a `ProviderError` when it answered).
 */
export function submitAtProvider(
  kit: ActivityKit,
  job: ScrapeWorkflowInput,
  opts: {
    heartbeat?: () => boolean;
    onHeld?: (waitMs: number, why: string) => void | Promise<void>;
    /** Awaited when the key's limiter lets the call out, just before the request is sent. */
    onSend?: () => Promise<void>;
    /** The key's shared cool-downs as read just before (`LimitedCall.seen`). */
    seen?: LimitedCall['seen'];
  } = {},
): Promise<Accepted> {
  const keys = providerKeys(job.account, job.key);
  const { onSend, ...callOpts } = opts;
  return kit.call(
    job.provider,
    job.account,
    async (p) => {
      await onSend?.();
      return p.adapter.submit(job.request, {
        apiKey: p.apiKey,
        secrets: kit.secrets(),
        ...keys,
        ...p.callback(job.jobId),
      });
    },
    { ...callOpts, phase: 'submit' },
  );
}

/**
 * When this resubmit activity was first scheduled (server time, epoch ms), less a margin for the
 * worker's clock, by which its intents are recorded: an intent older than that was decided by the
 * reconcile before it; a newer one is an earlier attempt of this activity. Infinity outside an activity.
 */
export function resubmitScheduledAt(): number {
  try {
    return Context.current().info.scheduledTimestampMs - INTENT_CLOCK_MARGIN_MS;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Clock difference allowed between a worker and the server when intents are compared with scheduling times, ms (a reconcile's settle window is longer). */
const INTENT_CLOCK_MARGIN_MS = 2_000;

/** The HTTP timeout of one submit of `resolved`'s entry (its `submitTimeoutMs`, else 30 s), ms: until it has passed, a submit's answer may still come. */
export function submitTimeoutOf(resolved: ResolvedProvider): number {
  const t = (resolved.entry as { submitTimeoutMs?: unknown }).submitTimeoutMs;
  return typeof t === 'number' && t > 0 ? t : 30_000;
}
