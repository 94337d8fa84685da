/**
 * The one cancellation path (DESIGN.md rule 7), reached from every door: the `cancel` signal, the
 * `cancel` Update, the Web UI's / CLI's native cancellation, and the deadline policy. It runs
 * shielded: mark `cancelling`, make sure we know whether a task exists (store, then reconcile),
 * ask the provider to stop, confirm what the provider then reports, and record the outcome actually
 * observed — a cancel is a request, not an erasure.
 */
import { patched } from '@temporalio/workflow';
import type { PollOutcome } from '../../activities/index.js';
import type { CancelReport, JobError } from '../../model/types.js';
import { jobErrorOf } from './errors.js';
import type { ScrapeJob } from './machine.js';
import { PATCH_CANCEL_AS_OBSERVED, PATCH_CONFIRM_AFTER_FAILED_CANCEL } from './patches.js';

type Outcome = NonNullable<CancelReport['outcome']>;

/** Runs the cancel path for the job's recorded cancel request (call inside a non-cancellable scope). */
export async function cancelJob(job: ScrapeJob): Promise<void> {
  if (job.final || !job.cancel) return;
  const report = job.cancel;
  const finish = (outcome: Outcome, detail: string, error?: JobError) => finishCancel(job, outcome, detail, error);
  const note = `cancel requested via ${report.via} by ${report.requestedBy}: ${report.reason}`;
  const unknownBefore = job.state === 'unknown' || (job.input.pendingCancel !== undefined && !job.view.taskId);

  if (!job.view.taskId) {
    await job.record('cancelling', { note, detail: { cancel: report } });
    // A cancel may have interrupted the acquisition: a submit may have been answered (store) or may
    // have created a task without our knowing (an unanswered intent, `unknown`): find out first.
    const known = await job.acts.reconciler.findRecordedTask({ jobId: job.input.jobId });
    if (known.taskId) job.taskKnown(known.taskId);
    else if (known.intentOpen || unknownBefore) {
      let rec;
      try {
        rec = await job.acts.reconciler.reconcileJob({ job: { ...job.input, workflowId: job.input.jobId }, trackingDeadlineMs: job.policy.deadlineMs });
      } catch (e) {
        const error = jobErrorOf(e, 'reconciliation failed');
        return finish('cancel_unconfirmed', `could not determine whether a provider task exists: reconciliation was refused (${error.message}); nothing was cancelled at the provider`, error);
      }
      if (rec.kind === 'found') job.taskKnown(rec.taskId);
      else if (rec.kind === 'absent') return finish('cancelled', 'reconciled before cancelling: no task exists at the provider, nothing to stop');
      else return finish('cancel_unconfirmed', `could not determine whether a provider task exists (${rec.reason}); nothing was cancelled at the provider`);
    } else {
      return finish('cancelled', 'cancelled before any task was submitted; nothing ran at the provider');
    }
  } else {
    job.move('cancelling', { note }); // `cancelAtProvider` records it in the store with the request
  }

  let answer;
  try {
    answer = await job.acts.canceller.cancelAtProvider({ ...job.taskRef(), report });
  } catch (e) {
    report.providerCancelCalls++;
    const error = jobErrorOf(e, 'cancel call failed');
    if (!patched(PATCH_CONFIRM_AFTER_FAILED_CANCEL)) return finish('cancel_unconfirmed', `the provider did not accept the cancel request (${error.message})`, error);
    // The call may have reached the provider although its answer was lost or refused (a dropped
    // connection, a 5xx from a proxy after the fact, a slow answer past the attempt timeout): what
    // the provider reports afterwards is the outcome observed.
    job.view.lastError = error;
    job.publish();
    return confirm(job, finish, error);
  }
  if (answer.kind === 'answered' || (answer.kind === 'unsupported' && answer.reachedProvider)) report.providerCancelCalls++;
  if (answer.lastStatus) job.view.providerStatus = answer.lastStatus;
  job.publish();
  if (answer.kind === 'unsupported') {
    return finish('cancel_unconfirmed', `provider "${job.input.provider}" has no cancel endpoint; the task may still run (last provider status: ${job.view.providerStatus ?? 'unknown'})`, answer.error);
  }
  if (answer.kind === 'answered' && answer.state === 'cancelled') {
    job.view.providerStatus = answer.providerStatus ?? 'cancelled';
    job.noteProgress(answer.progress);
    // The provider's own answer observes the stop; one status read then collects the effects
    // that landed meanwhile (a crawl page written after the cancel) for the report.
    if (patched(PATCH_CANCEL_AS_OBSERVED)) return confirm(job, finish, undefined, { accepted: true, firstDelayMs: 0 });
    return finish('cancelled', `the provider confirmed the task stopped (status ${answer.providerStatus ?? 'cancelled'})`);
  }
  return confirm(job, finish, undefined, { accepted: answer.kind === 'answered' && answer.accepted });
}

/**
 * Polls (retry-driven, `confirm_cancel` mode) until the provider reports a final state or the
 * cancel-confirmation deadline passes. `callError`: the cancel call failed (then a cancel takes at
 * most two cancel-confirmation deadlines: the call's, then this one's); outcomes that stay
 * unconfirmed name it.
 */
async function confirm(
  job: ScrapeJob,
  finish: (o: Outcome, detail: string, error?: JobError) => Promise<void>,
  callError?: JobError,
  opts: { accepted?: boolean; firstDelayMs?: number } = {},
): Promise<void> {
  const failedCall = callError ? `the cancel call failed (${callError.message}) and ` : '';
  const until = Date.now() + job.policy.cancelConfirmDeadlineMs;
  const firstDelayMs = opts.firstDelayMs ?? Math.min(job.policy.initialDelayMs, 2_000);
  let o: PollOutcome;
  try {
    o = await job.acts.poller(until - Date.now()).awaitStatus({
      ...job.taskRef(),
      url: job.input.request.url,
      request: job.input.request,
      generation: job.nextGeneration(),
      schedule: { ...job.schedule(), initialDelayMs: Math.min(job.policy.initialDelayMs, 2_000), slowdown: 1 },
      firstDelayMs,
      deadlineAt: new Date(until).toISOString(),
      notFoundLimit: 1,
      mode: 'confirm_cancel',
    });
  } catch (e) {
    const error = jobErrorOf(e, 'status check during cancel failed');
    return finish('cancel_unconfirmed', `${failedCall}the provider did not confirm the cancel within ${job.policy.cancelConfirmDeadlineMs} ms (${error.message})`, error);
  }
  job.view.statusChecks = Math.max(job.view.statusChecks, o.checks);
  if (o.providerStatus) job.view.providerStatus = o.providerStatus;
  job.noteProgress(o.progress);
  switch (o.kind) {
    case 'cancelled':
      return finish('cancelled', `the provider confirmed the task stopped (status ${o.providerStatus ?? 'cancelled'})`);
    case 'completed':
      job.view.result = { resultId: o.result.resultId, title: o.result.title, httpStatus: o.result.httpStatus, finalUrl: o.result.finalUrl };
      if (job.cancel!.providerCancelCalls === 0) return finish('completed', 'the job reached completed before the cancel request could act; nothing was sent to the provider; the result was written once');
      return finish('completed', 'the provider finished the task before the cancel took effect: the result was kept and written once; the cancel came too late');
    case 'failed':
      return finish('failed', 'the provider reported the task failed while cancelling', o.error);
    case 'expired':
      // Accepted, then forgotten: the provider stopped and removed it (evidence: the accepted answer, then the 404).
      if (opts.accepted && patched(PATCH_CANCEL_AS_OBSERVED)) return finish('cancelled', `the provider accepted the cancel and then no longer knows the task (${o.error.message})`);
      return finish('cancel_unconfirmed', 'the provider no longer knows the task (404) after the cancel request', o.error);
    case 'interrupted':
      return finish('cancel_unconfirmed', `${failedCall}the provider's status could not be read after the cancel request (${o.error.message})`, o.error);
    case 'deadline':
      return finish('cancel_unconfirmed', `${failedCall}the provider did not confirm the cancel within ${job.policy.cancelConfirmDeadlineMs} ms (last status: ${job.view.providerStatus ?? 'unknown'})`, callError);
    case 'stale':
      if (o.state === 'failed' || o.state === 'expired' || o.state === 'cancelled') return finish(o.state === 'expired' ? 'cancel_unconfirmed' : o.state, `the job reached ${o.state} before the cancel could act (${o.reason})`);
      return finish('cancel_unconfirmed', `the cancel could not be confirmed: ${o.reason}`);
  }
}

/** Records the observed outcome: the state (with the report in the timeline), then the view (Update result, query). */
async function finishCancel(job: ScrapeJob, outcome: Outcome, detail: string, error?: JobError): Promise<void> {
  const report = job.cancel!;
  const final: CancelReport = { ...report, outcome, detail, remainingEffects: { ...job.progress } };
  if (outcome === 'completed') {
    // The result write already moved the row to `completed`; record the outcome beside it.
    job.move('completed', { note: detail });
    await job.acts.recorder.recordCancelOutcome({ jobId: job.input.jobId, report: final });
  } else {
    await job.record(outcome, { note: detail, error, detail: { cancel: final } });
  }
  Object.assign(report, final); // only now is the outcome visible: the store already holds it
  job.publish();
}

/**
 * A cancel that arrived while the job was finishing found nothing left to stop: report the state
 * actually reached, with no provider call.
 */
export async function settleLateCancel(job: ScrapeJob): Promise<void> {
  const report = job.cancel;
  if (!report || report.outcome) return;
  const s = job.state;
  const outcome: Outcome = s === 'completed' ? 'completed' : s === 'failed' ? 'failed' : s === 'cancelled' ? 'cancelled' : 'cancel_unconfirmed';
  const final: CancelReport = { ...report, outcome, detail: `the job reached ${s} before the cancel request could act; nothing was sent to the provider`, remainingEffects: { ...job.progress } };
  await job.acts.recorder.recordCancelOutcome({ jobId: job.input.jobId, report: final });
  Object.assign(report, final);
  job.publish();
}
