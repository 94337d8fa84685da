/**
 * Phase 1 of a scrape: get a provider task ID. Submit under the job's idempotency key; an ambiguous
 * outcome goes to `unknown` and is reconciled before anything is submitted again (reconcile on evidence): found →
 * adopt; proven absent → resubmit under the same key, backed off and bounded by `submitRounds`;
 * neither provable → wait in `unknown` for an operator's `resolve` (never a silent resubmit).
 */
import { condition, isCancellation, workflowInfo } from '@temporalio/workflow';
import type { ReconcileOutcome, SubmitJobInput, SubmitOutcome } from '../../activities/index.js';
import { cooldownWaitMs, failedReadPolicy, HELD_LOCALLY } from '../../model/schedule.js';
import { isDefiniteRejection, jobErrorOf } from './errors.js';
import type { ScrapeJob } from './machine.js';
import { settleOutcome } from './poll.js';

/**
 * Submits (or reconciles, or waits for an operator) until a task ID is known. Returns false when
 * the job ended without one (`failed`, or the deadline policy cancelled it). Throws a cancellation
 * when a cancel request interrupts it.
 */
export async function acquireTask(job: ScrapeJob): Promise<boolean> {
  const waits = { slot: 0, cooldown: 0, credential: 0, operator: 0, budget: 0, evidence: 0, resubmit: 0 };
  // The submit goes on into the first checks (not with webhooks, whose events make the checks),
  // and a cancel does not wait for it.
  const submitInput = (afterReconcile: boolean): SubmitJobInput => ({
    job: { ...job.input, workflowId: workflowInfo().workflowId },
    afterReconcile,
    trackingDeadlineMs: job.policy.deadlineMs,
    failedReads: failedReadPolicy(job.policy),
    cooldowns: waits.cooldown,
    submitBy: submitTimeEnd(job),
  });
  let afterReconcile = false;
  let absentRounds = 0;
  for (;;) {
    let out: SubmitOutcome;
    // A slot the key's fair queue grants while this attempt runs (another worker gave it away, or
    // the attempt found the key full just before) must end the wait that follows, not be missed.
    const nudges = job.submitNudges();
    try {
      const fast = job.policy.fastPathMs > 0 && !job.input.webhooks ? { track: job.fastPath() } : {};
      out = await job.acts.submitter.submitJob({ ...submitInput(afterReconcile), ...fast });
    } catch (e) {
      if (isCancellation(e)) throw e;
      const error = jobErrorOf(e, 'submit failed');
      if (isDefiniteRejection(e)) {
        await job.record('failed', { error, note: `submit rejected: ${error.message}` });
        return false;
      }
      // A timed-out or crashed attempt is not proof that nothing happened: reconcile on evidence.
      out = { kind: 'ambiguous', error: { ...error, kind: 'ambiguous' } };
    }
    if (out.kind === 'finished') {
      // Submitted and final within the attempt (the result already written): one upsert for both.
      job.taskKnown(out.taskId, { deferUpsert: true, deadlineAt: out.deadlineAt });
      job.observe(out.outcome);
      await settleOutcome(job, out.outcome);
      return false;
    }
    if (out.kind === 'waiting') {
      // A hold by the worker itself (nothing sent) is not counted: only the provider's refusals grow a cool-down.
      const counts = !(out.wait.reason === 'cooldown' && out.wait.detail?.code === HELD_LOCALLY);
      const nth = counts ? ++waits[out.wait.reason] : 0;
      if (!(await waitToSubmit(job, out, nth, nudges))) return false;
      continue;
    }
    if (out.kind === 'accepted') {
      job.taskKnown(out.taskId, { deadlineAt: out.deadlineAt });
      if (out.checks) job.observe({ checks: out.checks, providerStatus: out.providerStatus });
      return true;
    }
    await job.record('unknown', {
      error: out.error,
      note: 'submit outcome unknown; reconciling before any new submission',
    });
    const rec = await reconcile(job, submitInput(false));
    if (rec.kind === 'found') return adoptFound(job, rec, 'reconciled');
    if (rec.kind === 'absent') {
      afterReconcile = true;
      absentRounds++;
      if (absentRounds >= job.policy.submitRounds) {
        await job.record('failed', {
          error: {
            ...out.error,
            kind: 'submit_unacknowledged',
            message: `${absentRounds} submissions went unanswered and each time the provider's list showed no task (last: ${out.error.message})`,
          },
          note: `no task exists at the provider after ${absentRounds} unanswered submissions; nothing is running there`,
        });
        return false;
      }
      const delayMs = resubmitDelay(absentRounds, job.policy.jitter);
      const round = `round ${absentRounds + 1} of ${job.policy.submitRounds}`;
      await job.record('submitting', {
        note: `reconciled: the provider's list proves no task exists; resubmitting under the same key in ${delayMs} ms (${round})`,
        waiting: {
          reason: 'resubmit',
          message: `the provider's list proves the last submit created no task: it is sent again under the same key (${round})`,
          until: new Date(Date.now() + delayMs).toISOString(),
        },
      });
      await condition(() => false, delayMs);
      job.waiting(undefined);
      continue;
    }
    waitForOperator(job, rec.reason);
    const adopted = await awaitOperator(job, submitInput(false), rec.lookAgain === true);
    job.waiting(undefined);
    if (adopted !== 'resubmit') return adopted;
    afterReconcile = true;
    const by = job.lastResolutionBy();
    await job.record('submitting', { note: `operator ${by} asked to resubmit under the same key`.replace('  ', ' ') });
  }
}

/** Waits for a credential the worker lacks before the job fails (count; each {@link SubmitOutcome} `retryInMs` apart). */
const CREDENTIAL_WAITS = 3;

/** First re-check of a job held by its budget, ms (doubling per wait to {@link BUDGET_RECHECK_MAX_MS}, never past the period's renewal). */
const BUDGET_RECHECK_MS = 30_000;
const BUDGET_RECHECK_MAX_MS = 30 * 60_000;

/**
 * A submit that sent nothing waits as its outcome says (a free slot, a cool-down, a credential, a
 * budget; a cool-down's wait grows with each, see `cooldownWaitMs`, never past the job's submit
 * time: a last try comes then), on a durable timer that the `submitNow` signal ends early (a slot
 * the key's fair queue granted, a budget raised), the reason shown in the view and the Web UI meanwhile; a signal that
 * came after `nudgesBefore` (the count when the attempt was scheduled) ends it before it starts,
 * so a grant that reached the job while its attempt ran is taken at once. A job held by
 * its budget looks again after 30 s, doubling to 30 min, and at the latest when the period renews.
 * Returns false when the job ended instead: failed when the worker still has no credential after
 * {@link CREDENTIAL_WAITS} waits, or when the next try would come after the job's submit time
 * (`max(deadlineMs, 10 × activityTimeoutMs)` from its start; for a budget's hold, from the
 * period's renewal) — nothing was created at the provider.
 */
async function waitToSubmit(
  job: ScrapeJob,
  out: Extract<SubmitOutcome, { kind: 'waiting' }>,
  nth: number,
  nudgesBefore: number,
): Promise<boolean> {
  const renews = out.wait.reason === 'budget' && out.wait.until ? Date.parse(out.wait.until) : Number.NaN;
  const submitBy = submitTimeEnd(job, Number.isNaN(renews) ? undefined : renews);
  // A grown cool-down that would pass the submit time is cut to it, for a last try then (once it
  // has come, the grown wait passes it and the job ends).
  const waitMs =
    out.wait.reason === 'budget'
      ? Math.min(out.retryInMs, BUDGET_RECHECK_MS * Math.pow(2, Math.min(nth - 1, 6)), BUDGET_RECHECK_MAX_MS)
      : out.wait.reason === 'cooldown'
        ? cooldownWaitMs(out.retryInMs, nth, submitBy - Date.now())
        : out.retryInMs;
  const at = new Date().toISOString();
  if (out.wait.reason === 'credential' && nth > CREDENTIAL_WAITS) {
    const error = { kind: 'permanent', code: 'NO_CREDENTIALS', message: out.wait.message, at };
    await job.record('failed', { error, note: `the worker has no credential for this job: ${out.wait.message}` });
    return false;
  }
  if (job.submitNudges() !== nudgesBefore) return true;
  if (Date.now() + waitMs > submitBy) {
    const message = `no submit could be sent within the job's submit time (until ${new Date(submitBy).toISOString()}): ${out.wait.message}; the provider created nothing for this job`;
    await job.record('failed', { error: { kind: 'permanent', code: 'SUBMIT_NOT_SENT', message, at }, note: message });
    return false;
  }
  // A cool-down's wait grown past the provider's is shown as it is: the view says when the job goes again.
  job.waiting(
    out.wait.reason === 'cooldown' && waitMs > out.retryInMs
      ? { ...out.wait, until: new Date(Date.now() + waitMs).toISOString() }
      : out.wait,
  );
  await condition(() => job.submitNudges() !== nudgesBefore, Math.max(1, waitMs));
  job.waiting(undefined);
  return true;
}

/**
 * When the job's submit time ends (epoch ms): `max(deadlineMs, 10 × activityTimeoutMs)` from its
 * start, or from `renewsAt` (a budget period's renewal, epoch ms) when later.
 */
function submitTimeEnd(job: ScrapeJob, renewsAt = 0): number {
  const window = Math.max(job.policy.deadlineMs, 10 * job.policy.activityTimeoutMs);
  return Math.max(Date.parse(job.view.startedAt), renewsAt) + window;
}

/** First wait before the lookups are read again for a job whose existence is proven, ms (then doubling, at most {@link LOOK_AGAIN_MAX_MS}). */
const LOOK_AGAIN_FIRST_MS = 30_000;
const LOOK_AGAIN_MAX_MS = 10 * 60_000;

/**
 * Waits in `unknown` for the operator's `resolve` until one is applied: a task ID the worker
 * accepts (true), `resubmit` (returned), or the deadline policy's cancel (false). A task ID the
 * worker refuses (bound to another job, unreadable with the job's credential, for another
 * request) fails that Update with the reason and the job keeps waiting. A webhook delivery wakes
 * it to reconcile again; with `lookAgain` (the provider proved our job exists) so does a timer,
 * 30 s, then doubling to 10 min, until the job's deadline: a lookup that shows the job adopts it.
 */
async function awaitOperator(job: ScrapeJob, input: SubmitJobInput, lookAgain: boolean): Promise<boolean | 'resubmit'> {
  let lookInMs = LOOK_AGAIN_FIRST_MS;
  for (;;) {
    const seen = job.wakes();
    const woken = () => job.wakes() !== seen;
    const lookBy = Date.parse(job.view.startedAt) + job.policy.deadlineMs;
    const timer = lookAgain && Date.now() + lookInMs < lookBy ? lookInMs : undefined;
    if (!(await awaitResolution(job, woken, timer))) return false;
    if (!job.hasResolution()) {
      lookInMs = Math.min(LOOK_AGAIN_MAX_MS, lookInMs * 2);
      // A webhook delivery for this job arrived while it waited: it may name the task (a strong
      // match: it was verified for this job). Reconcile again; anything but a found task waits on.
      const rec = await reconcile(job, input);
      if (rec.kind === 'found') {
        job.checkSoon(); // the delivery says the task moved: look now, not after the first delay
        return adoptFound(job, rec, 'reconciled while waiting for an operator');
      }
      if (rec.kind === 'unresolvable') waitForOperator(job, rec.reason);
      continue;
    }
    const r = job.takeResolution();
    if (!('taskId' in r)) return 'resubmit';
    const adopted = await job.acts.reconciler.adoptTask({
      jobId: job.input.jobId,
      taskId: r.taskId,
      by: r.by ?? 'operator',
      trackingDeadlineMs: job.policy.deadlineMs,
    });
    if (typeof adopted === 'string') {
      job.taskKnown(adopted);
      return true;
    }
    job.refuseResolution(r, adopted.refused);
  }
}

/**
 * Reconciles an ambiguous submit; a refused reconciliation leaves the job in `unknown` for an
 * operator. Meanwhile the view says the job waits for the provider's lookups (the row says until
 * when, once the reconcile knows their lag).
 */
async function reconcile(job: ScrapeJob, input: SubmitJobInput): Promise<ReconcileOutcome> {
  const before = job.view.waiting;
  job.waiting({
    reason: 'evidence',
    message:
      "the submit's outcome is unknown: the provider's lookups (read after their lag) decide it before anything is submitted again",
  });
  try {
    return await job.acts.reconciler.reconcileJob(input);
  } catch (e) {
    if (isCancellation(e)) throw e;
    const error = jobErrorOf(e, 'reconciliation failed');
    job.noteError(error);
    const reason = `reconciliation was refused (${error.message})`;
    // The row may still show what an earlier attempt waited for (the lookups' lag): an operator
    // decides now, and `status` must say so.
    await job.acts.recorder.recordWait({ jobId: job.input.jobId, wait: { reason: 'operator', message: reason } });
    return { kind: 'unresolvable', reason };
  } finally {
    job.waiting(before);
  }
}

/** Shows that the job waits in `unknown` for an operator, and why: its note and its wait. */
function waitForOperator(job: ScrapeJob, reason: string): void {
  job.note(`waiting for an operator: ${reason}. Resolve with the \`resolve\` Update (a task ID, or resubmit: true).`);
  job.waiting({ reason: 'operator', message: reason });
}

/** Adopts the task a reconciliation found: `pending`, recorded with `<how>: adopted task … via …`. */
async function adoptFound(
  job: ScrapeJob,
  rec: Extract<ReconcileOutcome, { kind: 'found' }>,
  how: string,
): Promise<true> {
  job.taskKnown(rec.taskId);
  const note = `${how}: adopted task ${rec.taskId} via ${rec.via}`;
  await job.acts.recorder.recordState({ jobId: job.input.jobId, state: 'pending', detail: { note } });
  return true;
}

/**
 * Waits in `unknown` for the `resolve` Update. With `onDeadline: "cancel"` the wait is bounded by
 * the job's maximum duration (counted from its start, as no task is known) and then the job is
 * cancelled by the deadline policy. Returns whether a resolution (or, with `woken`, a wake; with
 * `timerMs`, that many ms passing) arrived.
 */
async function awaitResolution(job: ScrapeJob, woken: () => boolean, timerMs?: number): Promise<boolean> {
  const arrived = () => job.hasResolution() || woken();
  if (job.policy.onDeadline !== 'cancel') {
    if (timerMs === undefined) await condition(arrived);
    else await condition(arrived, timerMs);
    return true;
  }
  const end = Date.parse(job.view.startedAt) + job.policy.deadlineMs;
  const left = end - Date.now();
  if (left > 0 && (await condition(arrived, Math.min(left, timerMs ?? left)))) return true;
  if (timerMs !== undefined && timerMs < left) return true;
  const reason = `deadline ${new Date(end).toISOString()} passed in unknown`;
  job.requestCancel({ reason, requestedBy: 'deadline policy' }, 'deadline');
  return false;
}

/** Backoff before resubmitting after round `round` (1-based) was proven absent: 2 s × 2^(round−1), at most 60 s, jittered; ms. */
function resubmitDelay(round: number, jitter: number): number {
  const base = Math.min(60_000, 2_000 * Math.pow(2, round - 1));
  return Math.round(base * (1 - jitter + 2 * jitter * Math.random()));
}
