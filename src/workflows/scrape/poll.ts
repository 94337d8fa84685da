/**
 * Phase 2 of a scrape: track the provider task until it is final. One activity does the checking:
 * `trackStatus`, which waits and checks in the worker with throttled heartbeats. The workflow only
 * reacts to its outcome, to webhook wakes (abandon the activity, start a new one that checks now)
 * and to cancel requests (the phase scope is cancelled; the activity is abandoned at once with
 * TRY_CANCEL, even while its check hangs).
 */
import { CancellationScope, condition, continueAsNew, isCancellation, sleep, workflowInfo } from '@temporalio/workflow';
import type { PollOutcome } from '../../activities/index.js';
import { failedReadPolicy } from '../../model/schedule.js';
import { isFinalState } from '../../model/states.js';
import { isTimeout, jobErrorOf } from './errors.js';
import type { ScrapeJob } from './machine.js';

/**
 * After a wake, the checks that follow the first one while the provider still says "not final"
 * (ms): a webhook says the task moved, and a provider may count its last page a moment after it
 * says so (Firecrawl counts a finished page 250 ms later), so the job looks again within seconds
 * (30 s in all) before the slowed safety net resumes.
 */
const WAKE_FOLLOW_UP_MS = [1_000, 2_000, 4_000, 8_000, 15_000];

/** Polls until the job is final, the deadline passes or a cancel request interrupts (a cancellation is thrown). */
export async function trackTask(job: ScrapeJob): Promise<void> {
  let firstDelayMs = job.firstDelay();
  let checkPastDeadline = false;
  let followUpMs: number[] | undefined;
  // A webhook hint that came while the task was being acquired makes the first check come now.
  if (job.wakes() > 0) {
    firstDelayMs = 0;
    followUpMs = WAKE_FOLLOW_UP_MS;
    checkPastDeadline = job.lastWakeAt() < Date.parse(job.deadlineAt!); // the hint came in time: its check too
  }
  for (;;) {
    if (workflowInfo().continueAsNewSuggested) {
      // Only wakes grow the history (a few events each): a job woken thousands of times starts afresh.
      await continueAsNew({
        ...job.input,
        resume: { taskId: job.view.taskId! },
        carry: { deadlineAt: job.deadlineAt!, statusChecks: job.view.statusChecks },
      });
    }
    const outcome = await pollOnce(job, firstDelayMs, checkPastDeadline, followUpMs);
    if (outcome === 'woken') {
      checkPastDeadline = Date.now() < Date.parse(job.deadlineAt!);
      firstDelayMs = 0; // the activity still keeps the provider's Retry-After and the minimum gap (store)
      followUpMs = WAKE_FOLLOW_UP_MS;
      continue;
    }
    if (await settleOutcome(job, outcome)) return;
    firstDelayMs = job.firstDelay();
    followUpMs = undefined;
  }
}

/**
 * Runs one polling activity until its outcome, or until a wake makes a check due now (then the
 * activity is cancelled and `woken` returned). Wakes within `initialDelayMs` of the previous one are
 * merged into a single new check (a flood of webhooks makes one check per gap).
 */
async function pollOnce(
  job: ScrapeJob,
  firstDelayMs: number,
  checkPastDeadline: boolean,
  followUpMs: number[] | undefined,
): Promise<PollOutcome | 'woken'> {
  const deadline = Date.parse(job.deadlineAt!);
  const generation = job.nextGeneration();
  job.scheduleCheck(firstDelayMs);
  const input = {
    ...job.taskRef(),
    url: job.input.request.url,
    request: job.input.request,
    generation,
    schedule: job.schedule(),
    firstDelayMs,
    deadlineAt: job.deadlineAt!,
    checkPastDeadline,
    notFoundLimit: job.policy.notFoundLimit,
    failedReads: failedReadPolicy(job.policy),
    ...(followUpMs ? { followUpMs } : {}),
    mode: 'track' as const,
    recordsOutcome: true, // settleOutcome records the move
  };
  const activityScope = new CancellationScope();
  const activity = activityScope.run(() => job.acts.tracker(deadline - Date.now()).trackStatus(input));
  const seen = job.wakes();
  const wakeScope = new CancellationScope();
  const woken = wakeScope.run(async () => {
    await condition(() => job.wakes() !== seen);
    const quiet = job.quietFor();
    if (quiet > 0) await sleep(quiet);
    return 'woken' as const;
  });
  woken.catch(() => undefined); // cancelled below once the activity wins
  try {
    const first = await Promise.race([activity, woken]);
    if (first !== 'woken') return first;
    activityScope.cancel();
    await activity.catch((e) => {
      if (!isCancellation(e)) throw e;
    });
    job.wakeHandled();
    return 'woken';
  } catch (e) {
    if (isCancellation(e) || !isTimeout(e)) throw e;
    // The activity's schedule-to-close backstop (no worker took it until past the deadline).
    return { kind: 'deadline', checks: job.view.statusChecks };
  } finally {
    wakeScope.cancel();
  }
}

/**
 * Applies an activity outcome to the job and records it (the activity only observed it; a
 * completion's move was written with its result). Returns true when tracking is over.
 */
export async function settleOutcome(job: ScrapeJob, o: PollOutcome): Promise<boolean> {
  job.observe(o);
  switch (o.kind) {
    case 'completed':
      job.completed(o.result); // written by the activity, atomically with the result
      return true;
    case 'failed':
      await job.record('failed', { error: o.error, note: o.note });
      return true;
    case 'cancelled':
      await job.record('cancelled', { note: 'the provider reports the task cancelled (not by this workflow)' });
      return true;
    case 'expired':
      await job.record('expired', { error: o.error, note: o.note });
      return true;
    case 'interrupted':
      await job.record('tracking_interrupted', { error: o.error, note: o.note });
      return true;
    case 'deadline':
      return onDeadline(job);
    case 'stale':
      return onStale(job, o);
  }
}

/** The tracking deadline passed: stop tracking (`tracking_interrupted`, resumable) or cancel, per the policy. */
async function onDeadline(job: ScrapeJob): Promise<boolean> {
  if (job.policy.onDeadline === 'cancel') {
    job.requestCancel({ reason: `deadline ${job.deadlineAt} passed`, requestedBy: 'deadline policy' }, 'deadline');
    return true;
  }
  await job.record('tracking_interrupted', {
    note: `deadline ${job.deadlineAt} passed while the provider task may still run; resume with the same task ID ${job.view.taskId}`,
  });
  return true;
}

/** The store says the job is final or being cancelled (a cancel recorded elsewhere): follow it. */
async function onStale(job: ScrapeJob, o: Extract<PollOutcome, { kind: 'stale' }>): Promise<boolean> {
  if (o.state === 'cancelling') {
    job.requestCancel({ reason: `the store shows a cancel under way (${o.reason})`, requestedBy: 'store' }, 'signal');
    return true;
  }
  if (o.state && !job.final && isFinalState(o.state)) {
    job.adoptFinal(o.state as never, `the store already holds this job as ${o.state}: ${o.reason}`);
    return true;
  }
  const error = jobErrorOf(new Error(o.reason), 'polling stopped');
  await job.record('tracking_interrupted', {
    error,
    note: `polling stopped unexpectedly (${o.reason}); resume with the same task ID ${job.view.taskId}`,
  });
  return true;
}
