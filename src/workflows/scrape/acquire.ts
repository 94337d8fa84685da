/**
 * Phase 1 of a scrape: get a provider task ID. Submit under the job's idempotency key; an ambiguous
 * outcome goes to `unknown` and is reconciled before anything is submitted again (reconcile on evidence): found →
 * adopt; proven absent → resubmit under the same key, backed off and bounded by `submitRounds`;
 * neither provable → wait in `unknown` for an operator's `resolve` (never a silent resubmit).
 */
import { condition, isCancellation, workflowInfo } from '@temporalio/workflow';
import type { ReconcileOutcome, SubmitJobInput, SubmitOutcome } from '../../activities/index.js';
import { isDefiniteRejection, jobErrorOf } from './errors.js';
import type { ScrapeJob } from './machine.js';
import { settleOutcome } from './poll.js';

/**
 * Submits (or reconciles, or waits for an operator) until a task ID is known. Returns false when
 * the job ended without one (`failed`, or the deadline policy cancelled it). Throws a cancellation
 * when a cancel request interrupts it.
 */
export async function acquireTask(job: ScrapeJob): Promise<boolean> {
  // The submit goes on into the first checks (not with webhooks, whose events make the checks),
  // and a cancel does not wait for it.
  const submitInput = (afterReconcile: boolean): SubmitJobInput => ({
    job: { ...job.input, workflowId: workflowInfo().workflowId },
    afterReconcile,
    trackingDeadlineMs: job.policy.deadlineMs,
  });
  let afterReconcile = false;
  let absentRounds = 0;
  for (;;) {
    let out: SubmitOutcome;
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
    if (rec.kind === 'found') {
      job.taskKnown(rec.taskId);
      await job.acts.recorder.recordState({
        jobId: job.input.jobId,
        state: 'pending',
        detail: { note: `reconciled: adopted task ${rec.taskId} via ${rec.via}` },
      });
      return true;
    }
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
      await job.record('submitting', {
        note: `reconciled: the provider's list proves no task exists; resubmitting under the same key in ${delayMs} ms (round ${absentRounds + 1} of ${job.policy.submitRounds})`,
      });
      await condition(() => false, delayMs);
      continue;
    }
    // The evidence cannot decide: wait for an operator. Never resubmit silently.
    job.note(
      `waiting for an operator: ${rec.reason}. Resolve with the \`resolve\` Update (a task ID, or resubmit: true).`,
    );
    const adopted = await awaitOperator(job, submitInput(false));
    if (adopted !== 'resubmit') return adopted;
    afterReconcile = true;
    const by = job.lastResolutionBy();
    await job.record('submitting', { note: `operator ${by} asked to resubmit under the same key`.replace('  ', ' ') });
  }
}

/**
 * Waits in `unknown` for the operator's `resolve` until one is applied: a task ID the worker
 * accepts (true), `resubmit` (returned), or the deadline policy's cancel (false). A task ID the
 * worker refuses (bound to another job, unreadable with the job's credential, for another
 * request) fails that Update with the reason and the job keeps waiting.
 */
async function awaitOperator(job: ScrapeJob, input: SubmitJobInput): Promise<boolean | 'resubmit'> {
  for (;;) {
    const seen = job.wakes();
    const woken = () => job.wakes() !== seen;
    if (!(await awaitResolution(job, woken))) return false;
    if (!job.hasResolution()) {
      // A webhook delivery for this job arrived while it waited: it may name the task (a strong
      // match: it was verified for this job). Reconcile again; anything but a found task waits on.
      const rec = await reconcile(job, input);
      if (rec.kind === 'found') {
        job.taskKnown(rec.taskId);
        job.checkSoon(); // the delivery says the task moved: look now, not after the first delay
        await job.acts.recorder.recordState({
          jobId: job.input.jobId,
          state: 'pending',
          detail: { note: `reconciled after a webhook delivery: adopted task ${rec.taskId} via ${rec.via}` },
        });
        return true;
      }
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

/** Reconciles an ambiguous submit; a refused reconciliation leaves the job in `unknown` for an operator. */
async function reconcile(job: ScrapeJob, input: SubmitJobInput): Promise<ReconcileOutcome> {
  try {
    return await job.acts.reconciler.reconcileJob(input);
  } catch (e) {
    if (isCancellation(e)) throw e;
    const error = jobErrorOf(e, 'reconciliation failed');
    job.noteError(error);
    return { kind: 'unresolvable', reason: `reconciliation was refused (${error.message})` };
  }
}

/**
 * Waits in `unknown` for the `resolve` Update. With `onDeadline: "cancel"` the wait is bounded by
 * the job's maximum duration (counted from its start, as no task is known) and then the job is
 * cancelled by the deadline policy. Returns whether a resolution (or, with `woken`, a wake) arrived.
 */
async function awaitResolution(job: ScrapeJob, woken: () => boolean = () => false): Promise<boolean> {
  if (job.policy.onDeadline !== 'cancel') {
    await condition(() => job.hasResolution() || woken());
    return true;
  }
  const left = Date.parse(job.view.startedAt) + job.policy.deadlineMs - Date.now();
  if (left > 0 && (await condition(() => job.hasResolution() || woken(), left))) return true;
  job.requestCancel(
    {
      reason: `deadline ${new Date(Date.parse(job.view.startedAt) + job.policy.deadlineMs).toISOString()} passed in unknown`,
      requestedBy: 'deadline policy',
    },
    'deadline',
  );
  return false;
}

/** Backoff before resubmitting after round `round` (1-based) was proven absent: 2 s × 2^(round−1), at most 60 s, jittered; ms. */
function resubmitDelay(round: number, jitter: number): number {
  const base = Math.min(60_000, 2_000 * Math.pow(2, round - 1));
  return Math.round(base * (1 - jitter + 2 * jitter * Math.random()));
}
