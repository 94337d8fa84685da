/**
 * The poll schedule (`src/model/schedule.ts`): the geometric delays, the safety net of a job whose
 * provider sends webhooks, and the plan learned from a provider key's recent durations — fewer
 * checks for no worse p95 lateness, and nothing learned from too few jobs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cooldownWaitMs,
  LEARN_MIN_SAMPLES,
  lateness,
  learnedPlan,
  nominalCheckTimes,
  quantile,
  scheduleDelay,
  type PollSchedule,
} from '../../src/model/schedule.js';

const GEOMETRIC: PollSchedule = {
  initialDelayMs: 2_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0.2,
  slowdown: 1,
};

/** `n` log-normal durations (ms) with median `medianMs` and log-spread `sigma`, from a seeded generator. */
function lognormal(n: number, medianMs: number, sigma: number, seed: number): number[] {
  let x = seed >>> 0 || 1;
  const rand = () => ((x = (1664525 * x + 1013904223) >>> 0) + 0.5) / 2 ** 32;
  return Array.from({ length: n }, () => {
    const z = Math.sqrt(-2 * Math.log(rand())) * Math.cos(2 * Math.PI * rand());
    return Math.round(medianMs * Math.exp(sigma * z));
  });
}

const checksFor = (times: readonly number[], ds: readonly number[]) =>
  ds.reduce((sum, d) => sum + times.filter((t) => t < d).length + 1, 0) / ds.length;

describe('the poll schedule', () => {
  it('geometric: 2 s ×1.5 up to 60 s, jitter ±20 %; a safety net (webhooks) waits maxDelayMs × slowdown first, then doubles each gap up to 8 times that', () => {
    expect([0, 1, 2, 3].map((n) => scheduleDelay(GEOMETRIC, n, 0.5))).toEqual([2_000, 3_000, 4_500, 6_750]);
    expect(scheduleDelay(GEOMETRIC, 40, 0.5)).toBe(60_000);
    expect(scheduleDelay(GEOMETRIC, 0, 0)).toBe(1_600);
    expect(scheduleDelay(GEOMETRIC, 0, 0.999_999)).toBe(2_400);
    const net = { ...GEOMETRIC, slowdown: 5, safetyNet: true };
    expect([0, 1, 2, 3, 4, 30].map((n) => scheduleDelay(net, n, 0.5))).toEqual([
      300_000, 600_000, 1_200_000, 2_400_000, 2_400_000, 2_400_000,
    ]);
  });

  it('learned from log-normal durations (median 60 s, spread 0.8): at least 40 % fewer checks than the geometric schedule, p95 lateness no worse', () => {
    const seen = lognormal(200, 60_000, 0.8, 7);
    const plan = learnedPlan(seen, GEOMETRIC)!;
    expect(plan).toBeDefined();
    const fresh = lognormal(2_000, 60_000, 0.8, 11); // other jobs of the same workload
    const geometric = nominalCheckTimes(GEOMETRIC, 3_600_000);
    const [g, l] = [checksFor(geometric, fresh), checksFor(plan, fresh)];
    expect(l).toBeLessThanOrEqual(0.6 * g);
    expect(quantile(lateness(plan, fresh), 0.95)).toBeLessThanOrEqual(quantile(lateness(geometric, fresh), 0.95) * 1.1);
  });

  it('nothing is learned from fewer than the minimum of completions, and a plan never makes more checks than the geometric schedule on the durations it came from', () => {
    expect(learnedPlan(lognormal(LEARN_MIN_SAMPLES - 1, 60_000, 0.8, 3), GEOMETRIC)).toBeUndefined();
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 1_800_000 }),
        fc.double({ min: 0.05, max: 1.5, noNaN: true }),
        fc.integer({ min: 1, max: 1e9 }),
        (median, sigma, seed) => {
          const ds = lognormal(60, median, sigma, seed);
          const plan = learnedPlan(ds, GEOMETRIC);
          if (!plan) return;
          expect(checksFor(plan, ds)).toBeLessThan(
            checksFor(nominalCheckTimes(GEOMETRIC, quantile(ds, 1) * 4 + 60_000), ds),
          );
          expect([...plan].sort((a, b) => a - b)).toEqual(plan);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("a cool-down's wait (the workflow waits it; the job's row says it)", () => {
  it("grows from 1 s, doubling, never shorter than the provider's Retry-After, to at most 10 min", () => {
    expect([1, 2, 3, 4].map((nth) => cooldownWaitMs(0, nth, 500_000))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(cooldownWaitMs(30_000, 2, 500_000)).toBe(30_000);
    expect(cooldownWaitMs(0, 40, 3_600_000)).toBe(600_000);
  });
  it("is cut at the job's submit time, for a last try then (the row says the cut wait, not the grown one), but never below the provider's wait", () => {
    // Before: the row said 128 s for a last try that came 10 s later.
    expect(cooldownWaitMs(0, 8, 10_000)).toBe(10_000);
    expect(cooldownWaitMs(60_000, 8, 10_000)).toBe(60_000);
    // Past the submit time: the grown wait is kept (the workflow ends the job then).
    expect(cooldownWaitMs(0, 8, -1)).toBe(128_000);
  });
});
