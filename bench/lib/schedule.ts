/**
 * The poll schedule of `src/model/schedule.ts` (`scheduleDelay`) as arithmetic: the delay before
 * status check n is `min(maxDelayMs, initialDelayMs × multiplier^n)` (× `webhookSlowdown` when
 * webhooks are on), times a jitter factor in `[1 − jitter, 1 + jitter]`. Used for "the minimum
 * the schedule allows" and for the demand a set of waiting jobs puts on the system. All durations
 * in ms.
 */
import type { PollPolicy } from '../../src/model/types.js';

/** The schedule fields of a {@link PollPolicy}. */
export type Schedule = Pick<PollPolicy, 'initialDelayMs' | 'maxDelayMs' | 'multiplier' | 'jitter'> & {
  slowdown?: number;
};

/** Nominal delay (ms, no jitter) before status check `n` (0-based). */
export function nominalDelayMs(s: Schedule, n: number): number {
  return (s.slowdown ?? 1) * Math.min(s.maxDelayMs, s.initialDelayMs * Math.pow(s.multiplier, n));
}

/**
 * Status checks the schedule makes until the first one at or after `durationMs` (ms after the
 * first timer started), with every delay multiplied by `factor` (1: nominal; `1 + jitter`: the
 * longest delays, hence the fewest checks any run of this schedule can make).
 */
export function checksToObserve(s: Schedule, durationMs: number, factor = 1): number {
  let t = 0;
  for (let k = 1; k < 1_000_000; k++) {
    t += nominalDelayMs(s, k - 1) * factor;
    if (t >= durationMs) return k;
  }
  return Number.POSITIVE_INFINITY;
}

/** Checks the nominal schedule has made `elapsedMs` ms after the first timer started. */
export function nominalChecksBy(s: Schedule, elapsedMs: number): number {
  let t = 0;
  let k = 0;
  for (;;) {
    t += nominalDelayMs(s, k);
    if (t > elapsedMs) return k;
    k++;
  }
}

/** The schedule `s` with every delay multiplied by `scale` (simulated time). */
export function scaleSchedule<T extends Partial<PollPolicy>>(p: T, scale: number): T {
  const out: T = { ...p };
  if (p.initialDelayMs !== undefined) out.initialDelayMs = Math.max(10, Math.round(p.initialDelayMs * scale));
  if (p.maxDelayMs !== undefined) out.maxDelayMs = Math.max(10, Math.round(p.maxDelayMs * scale));
  if (p.deadlineMs !== undefined) out.deadlineMs = Math.max(1_000, Math.round(p.deadlineMs * scale));
  return out;
}
