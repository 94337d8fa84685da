/**
 * The poll schedule: when the next status check of a job comes. One pure function, used by the
 * workflow (its first wait, with the workflow's deterministic randomness) and by the polling
 * activity (every later wait). Durations are ms.
 */

/** A job's poll schedule (ms): delay n = min(max, initial × multiplier^n) × slowdown, ± jitter. */
export interface PollSchedule {
  initialDelayMs: number;
  maxDelayMs: number;
  multiplier: number;
  /** Fraction 0..1. */
  jitter: number;
  /** Factor on every delay (the policy's `webhookSlowdown` when the provider sends webhooks, else 1). */
  slowdown: number;
}

/**
 * The wait before status check `n + 1` after `n` checks were made, ms (at least 1):
 * `slowdown × min(maxDelayMs, initialDelayMs × multiplier^n)`, scaled by `1 − jitter + 2 × jitter × random`.
 * `random` is a number in [0, 1): `Math.random()` in an activity, the workflow's deterministic
 * `Math.random()` in workflow code.
 */
export function scheduleDelay(s: PollSchedule, n: number, random: number): number {
  const base = s.slowdown * Math.min(s.maxDelayMs, s.initialDelayMs * Math.pow(s.multiplier, n));
  return Math.max(1, Math.round(base * (1 - s.jitter + 2 * s.jitter * random)));
}
