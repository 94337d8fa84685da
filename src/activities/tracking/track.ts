/**
 * Polling in one activity: `trackStatus` waits and checks in-process, on the job's schedule, until
 * the task is final, the deadline passes or a newer polling activity supersedes it — the Temporal
 * server sees one activity and a heartbeat now and then, whatever the job's length. The waits
 * are timers in the worker, the checks are `checkOnce` (`poll.ts`); every check is recorded in the job row (what `status` shows at once) and in the
 * heartbeat details (what the Web UI's pending activity shows, as of the last heartbeat that
 * reached the server). In a worker with a {@link DetachedTracker} (every worker that
 * `createScrapeWorker` builds) the loop runs detached from the activity, which returns for async
 * completion at once: a waiting job then holds no activity slot and none of the SDK's
 * per-activity machinery (`tracker.ts`).
 *
 * What it costs: heartbeats are throttled to one per `maxHeartbeatThrottleInterval` (see
 * `src/worker.ts`), and each that reaches the server is one mutable-state write and one billable
 * Action; the checks in between cost the server nothing. What it trades: a worker killed without
 * warning is noticed after the heartbeat timeout (the poll policy's `pollHeartbeatTimeoutMs`),
 * then the server retries the activity on another worker; a worker that shuts down hands its
 * polling activities over at once ({@link handOffPolling}, and the tracker's hand-off), so a
 * deploy costs one retry per job and no wait. A cancel or a wake never waits for this activity:
 * the workflow abandons it (TRY_CANCEL) and the next check of an abandoned one finds itself
 * superseded in the store and stops without calling the provider (a detached loop also stops when
 * a heartbeat's answer says the attempt was cancelled, or when a newer polling activity of the same
 * job comes to the same worker).
 */
import { CompleteAsyncError, Context } from '@temporalio/activity';
import { EventEmitter } from 'node:events';
import { learnedPlan } from '../../model/schedule.js';
import type { ActivityKit } from '../context.js';
import type { JobRow } from '../../store/index.js';
import { checkOnce } from './poll.js';
import type { CheckResult, PollOutcome, TrackStatusInput } from './pollTypes.js';
import { handOffFailure, heartbeatCadenceMs } from '../../worker/tracker.js';

const draining = new EventEmitter();
draining.setMaxListeners(0);
let drainingNow = false;

/**
 * Makes every poll loop running inside an activity of this process (a submit's first checks, the
 * tracking of a worker without a {@link DetachedTracker}) hand its job over: each ends its attempt
 * with a retryable failure at once (a check in flight finishes first), so the server starts the
 * next attempt on another worker instead of waiting out a heartbeat timeout. Called when the
 * worker process begins to shut down; detached loops are handed over by their tracker.
 */
export function handOffPolling(): void {
  drainingNow = true;
  draining.emit('drain');
}

/**
 * The longest wait one timer can hold, ms: Node fires a longer `setTimeout` after 1 ms, so a
 * longer wait (a safety net of weeks, a far Retry-After) is cut to this and the check comes then.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** What one timer of the poll loop waits for a wait of `ms`: at least 0, at most {@link MAX_TIMER_MS}. */
export function timerDelayMs(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, ms));
}

/**
 * Resolves after `ms` (at most {@link MAX_TIMER_MS}; with `sleep`, the injected clock's; else a
 * timer), or when the attempt is cancelled, or when the worker drains (the process's drain for a
 * loop inside an activity; its own `handOver` signal for a detached loop, which its tracker aborts:
 * thousands of detached loops never share one list of listeners); says which. Calls `beat` every
 * `beatEveryMs` while it waits.
 */
function pause(
  ms: number,
  signal: AbortSignal | undefined,
  handOver: AbortSignal | undefined,
  beat: () => void,
  beatEveryMs: number,
  sleep?: (ms: number) => Promise<void>,
): Promise<'elapsed' | 'aborted' | 'draining'> {
  ms = timerDelayMs(ms);
  if (drainingNow || handOver?.aborted) return Promise.resolve('draining');
  if (signal?.aborted) return Promise.resolve('aborted');
  return new Promise((resolve) => {
    let settled = false;
    const done = (why: 'elapsed' | 'aborted' | 'draining') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(beats);
      if (handOver) handOver.removeEventListener('abort', onDrain);
      else draining.off('drain', onDrain);
      signal?.removeEventListener('abort', onAbort);
      resolve(why);
    };
    const onDrain = () => done('draining');
    const onAbort = () => done('aborted');
    const timer = sleep ? undefined : setTimeout(() => done('elapsed'), Math.max(0, ms));
    if (sleep)
      void sleep(Math.max(0, ms)).then(
        () => done('elapsed'),
        () => done('elapsed'),
      );
    const beats = setInterval(beat, beatEveryMs);
    if (handOver) handOver.addEventListener('abort', onDrain, { once: true });
    else draining.once('drain', onDrain);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Waits and checks until the task is final (the outcome, the result already written) or, with
 * `budgetMs`, until the next wait would end past that budget (then `undefined`, with what the
 * last check saw in `last`). The first wait is `input.firstDelayMs` or the store's earliest next
 * check, whichever is later. `claimed`: the job's row as this attempt just wrote it with its claim
 * of `input.generation` and `input.deadlineAt` (the submit's bind), which then needs no claim of
 * its own.
 */
export async function pollLoop(
  kit: ActivityKit,
  input: TrackStatusInput,
  budgetMs?: number,
  claimed?: JobRow,
): Promise<{ outcome?: PollOutcome; last?: Extract<CheckResult, { again: unknown }> }> {
  const { store } = kit;
  const startedAt = Date.now();
  const start =
    claimed &&
    Number(claimed.poll_generation) === input.generation &&
    (input.mode !== 'track' || claimed.deadline_at === input.deadlineAt)
      ? ({ kind: 'go', row: claimed } as const)
      : await store.polling.beginCheck(
          input.jobId,
          input.generation,
          input.mode === 'confirm_cancel',
          input.mode === 'track' ? input.deadlineAt : undefined,
        );
  const notBefore = start.kind === 'go' && start.row.check_not_before ? Date.parse(start.row.check_not_before) : 0;
  const clock = await kit.serverClock();
  const deadline = Date.parse(input.deadlineAt);
  // Where the provider key's recent jobs finished (when asked for, and enough are known): the
  // check times of the plan, counted from the moment the task became known.
  const plan = input.schedule.learn
    ? learnedPlan(
        await store.polling.recentDurations(kit.deps.providers.resolve(input.provider, input.account).providerKey),
        input.schedule,
      )
    : undefined;
  const knownAt = start.kind === 'go' && start.row.submitted_at ? Date.parse(start.row.submitted_at) : Date.now();
  // A plan learned from the key's other jobs knows nothing of this job's deadline: a plan point
  // past it (the key's recent jobs ran far longer than this one may) gives way to the schedule,
  // so the job is still checked before its deadline.
  const planned = (fallback: number) => {
    if (!plan) return fallback;
    const elapsed = Date.now() - knownAt;
    const next = plan.find((t) => t > elapsed);
    return next === undefined || knownAt + next > deadline ? fallback : next - elapsed;
  };
  // Never past the deadline: the check then says `deadline` (or, after a wake, checks anyway).
  const bounded = (ms: number) =>
    input.checkPastDeadline && !last ? ms : Math.min(ms, Math.max(0, deadline - clock()));
  let last: Extract<CheckResult, { again: unknown }> | undefined;
  let wait = bounded(Math.max(input.firstDelayMs === 0 ? 0 : planned(input.firstDelayMs), notBefore - Date.now()));
  let checkPastDeadline = input.checkPastDeadline === true;
  const followUps = [...(input.followUpMs ?? [])];
  const details = () => ({
    checks: last?.checks ?? 0,
    providerStatus: last?.providerStatus,
    nextCheckAt: new Date(Date.now() + wait).toISOString(),
    note: last?.again.message,
  });
  // The server needs a heartbeat from a tracking attempt only before its heartbeat timeout, and
  // the SDK sends the first one at once and later ones at most once per throttle interval: the
  // first is left until half the timeout has passed, which saves the billable Action a first
  // heartbeat would cost every job tracked for less than that. The submit going on into its
  // first checks (`budgetMs`) heartbeats as before: its heartbeat is how a cancel reaches that
  // attempt. Nothing is lost to the Web UI (a first heartbeat's details would be those
  // of the first checks, shown as of then until the next one 8 minutes later; the job row and
  // the state query show every check at once), and a worker that dies is noticed as before, one
  // heartbeat timeout after the attempt started.
  const attempt = kit.current();
  const timeoutMs = attempt?.info.heartbeatTimeoutMs ?? 0;
  const quietMs = budgetMs === undefined ? Math.floor(timeoutMs / 2) : 0;
  // Often enough that one falls between half the timeout and the timeout, however short it is.
  const beatEveryMs = heartbeatCadenceMs(timeoutMs);
  const beat = () => {
    if (Date.now() - startedAt >= quietMs) kit.heartbeat(details());
  };
  for (;;) {
    if (budgetMs !== undefined && Date.now() - startedAt + wait > budgetMs) return { last };
    const why = await pause(wait, attempt?.cancellationSignal, attempt?.handOver, beat, beatEveryMs, kit.deps.sleep);
    if (why === 'aborted') await attempt?.cancelled; // rejects with the cancellation
    if (why === 'draining') throw handOffFailure(`tracking of task ${input.taskId}`);
    const r = await checkOnce(kit, input, checkPastDeadline);
    checkPastDeadline = false;
    if ('outcome' in r) return { outcome: r.outcome };
    last = r;
    // A learned plan sets the next check; the provider's Retry-After and our minimum gap (the
    // row's earliest next check) still hold.
    const followUp = followUps.shift();
    if (followUp !== undefined && r.retryAfterMs !== undefined) {
      // A wake's promise to look again soon: the provider answered, not final yet. The follow-ups
      // are few and bounded (30 s in all), so they go under the minimum gap, never under Retry-After.
      wait = bounded(Math.max(followUp, r.retryAfterMs));
      r.again.message = `${r.again.message.replace(/, next in [\d.]+ s$/, '')}; a webhook said it moved: next in ${(wait / 1000).toFixed(1)} s`;
    } else if (plan) {
      const row = await store.jobs.get(input.jobId);
      const notBeforeNow = row?.check_not_before ? Date.parse(row.check_not_before) - Date.now() : 0;
      wait = bounded(
        Math.max(planned(r.again.delayMs), notBeforeNow, row && Number(row.status_errors) > 0 ? r.again.delayMs : 0),
      );
    } else {
      wait = r.again.delayMs;
    }
    beat();
  }
}

/**
 * Tracks the task in-process until it is final, the deadline passes or a newer polling activity
 * supersedes this one (see the module docs). Returns the outcome; a worker shutting down hands it
 * over (a retryable failure, retried at once elsewhere). With a tracker in the kit's dependencies
 * (`ActivityDeps.tracker`) the loop goes on detached and this throws `CompleteAsyncError` at once:
 * the outcome completes the activity later, by its task token. Without (unit tests, embedders that
 * give no Temporal client), the loop runs inside the activity.
 */
export async function trackStatus(kit: ActivityKit, input: TrackStatusInput): Promise<PollOutcome> {
  // The loop of a tracking phase: its outcome (there is no budget, so it always has one).
  const loopOutcome = async (i: TrackStatusInput): Promise<PollOutcome> => (await pollLoop(kit, i)).outcome!;
  const tracker = kit.deps.tracker;
  if (tracker) {
    tracker.adopt(input, Context.current().info, loopOutcome);
    throw new CompleteAsyncError();
  }
  return loopOutcome(input);
}
