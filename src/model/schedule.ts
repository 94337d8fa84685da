/**
 * The poll schedule: when the next status check of a job comes. One pure function, used by the
 * workflow (its first wait, with the workflow's deterministic randomness) and by the polling
 * activity (every later wait). And the one discipline of failed provider reads: their back-off
 * and their budget ({@link failedReadDelay}, {@link failedReadsSpent}). Durations are ms.
 */
import type { PollPolicy } from './types.js';

/** A job's poll schedule (ms): delay n = min(max, initial × multiplier^n) × slowdown, ± jitter. */
export interface PollSchedule extends Pick<PollPolicy, 'initialDelayMs' | 'maxDelayMs' | 'multiplier' | 'jitter'> {
  /** Factor on every delay (the policy's `webhookSlowdown` when the provider sends webhooks, else 1). */
  slowdown: number;
  /**
   * Polling is a safety net (webhooks carry the news): the first check comes `maxDelayMs × slowdown`
   * after the task is known and each later gap doubles, up to {@link SAFETY_NET_MAX_FACTOR} times
   * that, so a job whose events arrive makes few checks of its own whatever its length, and a job
   * whose event was lost is still seen, at the latest about its own age after it ended.
   */
  safetyNet?: boolean;
  /** Place the checks where the provider key's recent jobs finished ({@link learnedPlan}), when enough are known. */
  learn?: boolean;
}

/** The widest gap of a safety net, as a multiple of its first (`maxDelayMs × slowdown`). */
const SAFETY_NET_MAX_FACTOR = 8;

/**
 * The wait before status check `n + 1` after `n` checks were made, ms (at least 1):
 * `slowdown × min(maxDelayMs, initialDelayMs × multiplier^n)`, or for a safety net
 * `slowdown × maxDelayMs × min(2^n, SAFETY_NET_MAX_FACTOR)`, scaled by `1 − jitter + 2 × jitter × random`.
 * `random` is a number in [0, 1): `Math.random()` in an activity, the workflow's deterministic
 * `Math.random()` in workflow code.
 */
export function scheduleDelay(s: PollSchedule, n: number, random: number): number {
  const base =
    s.slowdown *
    (s.safetyNet
      ? s.maxDelayMs * Math.min(Math.pow(2, n), SAFETY_NET_MAX_FACTOR)
      : Math.min(s.maxDelayMs, s.initialDelayMs * Math.pow(s.multiplier, n)));
  return Math.max(1, Math.round(base * (1 - s.jitter + 2 * s.jitter * random)));
}

/** Fewest recent completions of a provider key before its schedule is learned from them. */
export const LEARN_MIN_SAMPLES = 20;

/** Cumulative check times (ms after the task is known) of schedule `s` without jitter, up to `untilMs`. */
export function nominalCheckTimes(s: PollSchedule, untilMs: number): number[] {
  const out: number[] = [];
  let t = 0;
  for (let n = 0; t <= untilMs && n < 10_000; n++) {
    t += scheduleDelay({ ...s, jitter: 0 }, n, 0.5);
    out.push(t);
  }
  return out;
}

/** How late each duration is observed by checks at `times` (ms; times sorted): the first check at or after it, minus it. */
export function lateness(times: readonly number[], durationsMs: readonly number[]): number[] {
  return durationsMs.map((d) => {
    const t = times.find((x) => x >= d);
    return t === undefined ? Number.POSITIVE_INFINITY : t - d;
  });
}

/** The q-quantile (0..1) of `xs` (nearest rank; xs need not be sorted). */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/**
 * A learned poll plan: check times (ms after the task was known) placed where jobs of the same
 * provider key finish, for the same p95 lateness as the geometric schedule `s` gives on those jobs,
 * with fewer checks. From the recent durations it takes the lateness `L` that `s` reaches at its
 * 95th percentile; it checks first at the 2.5th percentile of the durations, then every `L` up to
 * their 97.5th percentile (so at least 95 % of jobs are seen within `L`), then goes on with the
 * geometric schedule's delays. The geometric schedule spends checks early, where few jobs end;
 * this one spends them where they do. Returns undefined with fewer than {@link LEARN_MIN_SAMPLES}
 * durations, or when the plan would not make fewer checks than `s` on them.
 */
export function learnedPlan(durationsMs: readonly number[], s: PollSchedule): number[] | undefined {
  const ds = durationsMs.filter((d) => Number.isFinite(d) && d >= 0);
  if (ds.length < LEARN_MIN_SAMPLES) return undefined;
  const horizon = quantile(ds, 1) * 4 + s.maxDelayMs * s.slowdown;
  const geometric = nominalCheckTimes(s, horizon);
  const L = Math.max(s.initialDelayMs, quantile(lateness(geometric, ds), 0.95));
  const lo = quantile(ds, 0.025);
  const hi = quantile(ds, 0.975);
  const plan: number[] = [];
  for (let t = Math.max(lo, 1); t < hi + L; t += L) plan.push(Math.round(t));
  // After the bulk: the geometric schedule's delays from where it would be at that time.
  let t = plan.at(-1)!;
  let n = geometric.findIndex((g) => g > t);
  if (n < 0) n = geometric.length;
  while (t <= horizon) {
    t += scheduleDelay({ ...s, jitter: 0 }, n++, 0.5);
    plan.push(Math.round(t));
  }
  const checks = (times: readonly number[]) => ds.reduce((sum, d) => sum + times.filter((x) => x < d).length + 1, 0);
  return checks(plan) < checks(geometric) ? plan : undefined;
}

/**
 * How the failed provider reads of one job (status, result pages, lookups, a cancel's
 * confirmation checks) are spaced and bounded, ms and counts: from the job's {@link PollPolicy}.
 */
export interface FailedReadPolicy {
  /** The first back-off (the policy's `initialDelayMs`). */
  initialDelayMs: number;
  /** The back-off's ceiling. */
  maxDelayMs: number;
  /** Fraction 0..1. */
  jitter: number;
  /** Failed reads in a row the budget allows. */
  limit: number;
  /** How long a streak of failed reads may last. */
  budgetMs: number;
}

/** The failed-read discipline of policy `p`. */
export function failedReadPolicy(p: PollPolicy): FailedReadPolicy {
  return {
    initialDelayMs: p.initialDelayMs,
    maxDelayMs: p.failedReadMaxDelayMs,
    jitter: p.jitter,
    limit: p.failedReadLimit,
    budgetMs: p.failedReadBudgetMs,
  };
}

/**
 * The wait after the `failures`-th failed read in a row, ms (at least 1):
 * `min(maxDelayMs, initialDelayMs × 2^(failures − 1))` scaled by `1 − jitter + 2 × jitter × random`,
 * and never shorter than the provider's `retryAfterMs` (its `Retry-After`, however it was given).
 * It grows with failures only: successful reads never enter it.
 */
export function failedReadDelay(
  p: FailedReadPolicy,
  failures: number,
  retryAfterMs: number | undefined,
  random: number,
): number {
  const base = Math.min(p.maxDelayMs, p.initialDelayMs * Math.pow(2, Math.max(0, failures - 1)));
  const jittered = Math.round(base * (1 - p.jitter + 2 * p.jitter * random));
  return Math.max(1, jittered, Math.ceil(retryAfterMs ?? 0));
}

/**
 * Whether a streak of `failures` failed reads in a row that began at `sinceMs` has spent the
 * budget at `nowMs` (epoch ms): it holds at least `limit` reads and has lasted at least
 * `budgetMs`. Both, so that neither a burst of quick failures nor two reads a long `Retry-After`
 * apart end a job.
 */
export function failedReadsSpent(p: FailedReadPolicy, failures: number, sinceMs: number, nowMs: number): boolean {
  return failures >= p.limit && nowMs - sinceMs >= p.budgetMs;
}

/**
 * The least wait (ms) after a job's `nth` submit refused for a while by the provider (a `429`, a
 * concurrency refusal): 1 s doubling per such wait, at most 10 min. A provider that answers every
 * submit `429` with `Retry-After: 0` (or a wait shorter than this) still meets a growing back-off;
 * a longer `Retry-After` is honoured as it is. The workflow waits it; the submit attempt records it
 * in the job's row, so that the wait the API shows is the one the job keeps.
 */
function cooldownFloorMs(nth: number): number {
  return Math.min(COOLDOWN_BACKOFF_MS * Math.pow(2, Math.min(Math.max(nth, 1) - 1, 20)), COOLDOWN_BACKOFF_MAX_MS);
}

/**
 * The wait (ms) before a job's `nth` submit try held back by a cool-down (`nth` 0: a hold that
 * does not count, {@link HELD_LOCALLY}): the provider's `retryInMs`, lengthened to
 * {@link cooldownFloorMs}, but the lengthening never past `untilSubmitByMs` (ms left of the job's
 * submit time; none when not positive): the growth alone never ends a job, only the provider's
 * wait may, and the last try comes at the submit time.
 */
export function cooldownWaitMs(retryInMs: number, nth: number, untilSubmitByMs: number): number {
  if (nth <= 0) return retryInMs;
  return Math.max(retryInMs, Math.min(cooldownFloorMs(nth), untilSubmitByMs > 0 ? untilSubmitByMs : Infinity));
}

/**
 * The code of a submit the worker held back itself, sending nothing (the provider key's shared
 * cool-down; its wait is the release slot the call claimed): such a hold is no refusal by the
 * provider and does not grow the job's cool-down, which would make it miss that slot.
 */
export const HELD_LOCALLY = 'LOCAL_COOLDOWN';

const COOLDOWN_BACKOFF_MS = 1_000;
const COOLDOWN_BACKOFF_MAX_MS = 10 * 60_000;
