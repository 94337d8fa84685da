/**
 * The provider requests of a job whose reads keep failing, computed from the product's own pure
 * schedule functions (`src/model/schedule.ts`), without running anything. It follows what the
 * polling activity does (`src/activities/tracking/poll.ts`):
 *
 * - the first status read comes `scheduleDelay(schedule, 0)` after the task is known (the submit's
 *   answer: time 0 here);
 * - every failed read adds one to the streak and waits `failedReadDelay(failures, Retry-After)`
 *   (doubling from `initialDelayMs` up to `failedReadMaxDelayMs`, jittered, never shorter than the
 *   provider's `Retry-After`), cut at the tracking deadline;
 * - the job ends `tracking_interrupted` at the failed read that spends the budget
 *   (`failedReadsSpent`: at least `failedReadLimit` reads in a row AND `failedReadBudgetMs` since the
 *   streak's first failure), or at its deadline (no read is made then: `tracking_interrupted` too);
 * - a result that cannot be read: the first status read succeeds and says `completed` without the
 *   result, the result read right after it fails, and every later read is a result read (a task
 *   the provider said is complete is asked for its result only), on the same discipline.
 *
 * Not modelled: the time a read itself takes, and the few ms between the submit's first checks and
 * the tracking activity that takes the job over (the row keeps the streak and its earliest next
 * read, so the schedule goes on unchanged). Durations are ms.
 */
import {
  failedReadDelay,
  failedReadPolicy,
  failedReadsSpent,
  scheduleDelay,
  type PollSchedule,
} from '../../src/model/schedule.js';
import type { PollPolicy } from '../../src/model/types.js';

/** How the provider answers the job's reads. */
export interface FailingReadsCase {
  /** The `Retry-After` of every failed answer, ms; undefined: none. */
  retryAfterMs?: number;
  /** The first status read says `completed` without the result; every result read then fails. */
  resultReadFails?: boolean;
  /**
   * The jitter draw of every delay, in [0, 1): 0.5 is the nominal schedule, 0 the shortest delays
   * (the most reads any run can make), 0.999 the longest (the fewest).
   */
  random?: number;
}

/** One provider read of the job. */
export interface ComputedRead {
  /** ms after the task was known. */
  atMs: number;
  read: 'status' | 'result';
  ok: boolean;
}

/** What the job does, computed. */
export interface ComputedFailingJob {
  /** Every read after the submit, in order. */
  reads: ComputedRead[];
  /** When the job ended (ms after the task was known). */
  endedAtMs: number;
  /** What ended it: the failed-read budget, or the tracking deadline. Either way `tracking_interrupted`. */
  endedBy: 'budget' | 'deadline';
  state: 'tracking_interrupted';
}

/** The poll schedule of `policy` without webhooks (as `ScrapeJob.schedule()` builds it). */
function scheduleOf(policy: PollPolicy): PollSchedule {
  return {
    initialDelayMs: policy.initialDelayMs,
    maxDelayMs: policy.maxDelayMs,
    multiplier: policy.multiplier,
    jitter: policy.jitter,
    slowdown: 1,
  };
}

/** The reads and the end of a job of `policy` whose reads fail as `c` says (see the module comment). */
export function failingJob(policy: PollPolicy, c: FailingReadsCase = {}): ComputedFailingJob {
  const random = c.random ?? 0.5;
  const p = failedReadPolicy(policy);
  const reads: ComputedRead[] = [];
  let t = scheduleDelay(scheduleOf(policy), 0, random);
  let failures = 0;
  let since = 0;
  if (c.resultReadFails && t < policy.deadlineMs) reads.push({ atMs: t, read: 'status', ok: true });
  for (;;) {
    if (t >= policy.deadlineMs)
      return { reads, endedAtMs: policy.deadlineMs, endedBy: 'deadline', state: 'tracking_interrupted' };
    reads.push({ atMs: t, read: c.resultReadFails ? 'result' : 'status', ok: false });
    if (failures++ === 0) since = t;
    if (failedReadsSpent(p, failures, since, t))
      return { reads, endedAtMs: t, endedBy: 'budget', state: 'tracking_interrupted' };
    t += Math.min(failedReadDelay(p, failures, c.retryAfterMs, random), policy.deadlineMs - t);
  }
}

/** `policy` with every duration of its schedule, budget and deadline divided by `factor` (simulated time). */
export function scaledPolicy(policy: PollPolicy, factor: number): PollPolicy {
  const div = (ms: number, min: number) => Math.max(min, Math.round(ms / factor));
  return {
    ...policy,
    initialDelayMs: div(policy.initialDelayMs, 10),
    maxDelayMs: div(policy.maxDelayMs, 10),
    deadlineMs: div(policy.deadlineMs, 1_000),
    failedReadMaxDelayMs: div(policy.failedReadMaxDelayMs, 10),
    failedReadBudgetMs: div(policy.failedReadBudgetMs, 1_000),
    fastPathMs: div(policy.fastPathMs, 0),
  };
}

/** The policy fields {@link scaledPolicy} changes, as a job's policy overrides. */
export function scaledOverrides(policy: PollPolicy): Partial<PollPolicy> {
  const { initialDelayMs, maxDelayMs, deadlineMs, failedReadMaxDelayMs, failedReadBudgetMs, fastPathMs } = policy;
  return { initialDelayMs, maxDelayMs, deadlineMs, failedReadMaxDelayMs, failedReadBudgetMs, fastPathMs };
}
