/**
 * The one cancellation path, reached from every door: the `cancel` signal, the `cancel` Update,
 * the Web UI's / CLI's native cancellation and the deadline policy all record a request with
 * `ScrapeJob.requestCancel`, which interrupts the running phase; the workflow then calls
 * {@link finishCancel} once, shielded, and {@link closeRun}. Read top to bottom:
 *
 * 1. {@link finishCancel}: a final state whose store write the interruption cut short is written;
 *    a request on a job not final runs {@link cancelJob}; a request that came too late (the job
 *    finished first) is handed to a run resumed to cancel when the task may still run
 *    (`ScrapeJob.handOverCancel`), else settled with what the job reached ({@link settleLateCancel});
 * 2. {@link cancelJob}: mark `cancelling`; make sure we know whether a task exists (store, then
 *    reconcile); ask the provider to stop (`cancelAtProvider`); confirm what the provider then
 *    reports ({@link confirm}); record the outcome actually observed ({@link recordOutcome});
 * 3. {@link closeRun}: a job whose cancel did not end `completed` closes the run `Canceled`.
 *
 * A cancel is a request, not an erasure: the outcome is what the provider's answers prove.
 */
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import { failedReadPolicy } from '../../model/schedule.js';
import { outcomeFailureType } from '../../model/states.js';
import type { PollOutcome } from '../../activities/index.js';
import type { CancelReport, JobError, JobView } from '../../model/types.js';
import { jobErrorOf } from './errors.js';
import type { ScrapeJob } from './machine.js';
import type { CancelOutcome } from './view.js';

type Finish = (outcome: CancelOutcome, detail: string, error?: JobError) => Promise<void>;

/**
 * Everything that follows the phases when a cancel was asked for (call inside a non-cancellable
 * scope; a no-op for a job that finished without one).
 */
export async function finishCancel(job: ScrapeJob): Promise<void> {
  await job.writeInterruptedFinal();
  if (job.cancel && !job.final) await cancelJob(job);
  // A native cancellation that arrived while a shielded step finished the job is recorded too.
  if (CancellationScope.current().parent?.consideredCancelled && !job.cancel) job.requestNativeCancel();
  // A request that came as tracking stopped (its deadline, its failed reads) may still stop the
  // task: a run resumed to cancel takes it (`workflow.ts`), not a report that nothing was sent.
  if (!job.handOverCancel()) await settleLateCancel(job);
}

/** Runs the cancel path for the job's recorded cancel request (call inside a non-cancellable scope). */
async function cancelJob(job: ScrapeJob): Promise<void> {
  if (job.final || !job.cancel) return;
  const report = job.cancel;
  const finish: Finish = (outcome, detail, error) => recordOutcome(job, outcome, detail, error);
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
        rec = await job.acts.reconciler.reconcileJob({
          job: { ...job.input, workflowId: job.input.jobId },
          trackingDeadlineMs: job.policy.deadlineMs,
          failedReads: failedReadPolicy(job.policy),
        });
      } catch (e) {
        const error = jobErrorOf(e, 'reconciliation failed');
        return finish(
          'cancel_unconfirmed',
          `could not determine whether a provider task exists: reconciliation was refused (${error.message}); nothing was cancelled at the provider`,
          error,
        );
      }
      if (rec.kind === 'found') job.taskKnown(rec.taskId);
      else if (rec.kind === 'absent')
        return finish('cancelled', 'reconciled before cancelling: no task exists at the provider, nothing to stop');
      else
        return finish(
          'cancel_unconfirmed',
          `could not determine whether a provider task exists (${rec.reason}); nothing was cancelled at the provider`,
        );
    } else {
      return finish('cancelled', 'cancelled before any task was submitted; nothing ran at the provider');
    }
  } else {
    job.move('cancelling', { note }); // `cancelAtProvider` records it in the store with the request
  }

  // Only a resumed run (started after the job went final) may take a final row whose task may
  // still run to `cancelling`; a late attempt of the run that made it final may not.
  const reopen = job.input.resume !== undefined;
  let answer;
  try {
    answer = await job.acts.canceller.cancelAtProvider({ ...job.taskRef(), report, ...(reopen ? { reopen } : {}) });
  } catch (e) {
    job.countCancelCall();
    const error = jobErrorOf(e, 'cancel call failed');
    // The call may have reached the provider although its answer was lost or refused (a dropped
    // connection, a 5xx from a proxy after the fact, a slow answer past the attempt timeout): what
    // the provider reports afterwards is the outcome observed.
    job.noteError(error);
    return confirm(job, finish, error);
  }
  if (answer.kind === 'answered' || (answer.kind === 'unsupported' && answer.reachedProvider)) job.countCancelCall();
  if (answer.lastStatus) job.observe({ checks: 0, providerStatus: answer.lastStatus });
  if (answer.kind === 'skipped' && reopen && answer.finalState) {
    // A run resumed for a final job whose task, the store shows, has nothing left to stop (the
    // provider already reported it final): the job keeps the row's state, and the request is
    // settled with it (`finishCancel`), nothing sent.
    if (answer.providerState) job.observe({ checks: 0, providerState: answer.providerState });
    job.adoptFinal(answer.finalState, `nothing to cancel: ${answer.reason}`);
    return;
  }
  if (answer.kind === 'unsupported') {
    return finish(
      'cancel_unconfirmed',
      `provider "${job.input.provider}" has no cancel endpoint; the task may still run (last provider status: ${job.view.providerStatus ?? 'unknown'})`,
      answer.error,
    );
  }
  if (answer.kind === 'answered' && answer.state === 'cancelled') {
    job.observe({ checks: 0, providerStatus: answer.providerStatus ?? 'cancelled', progress: answer.progress });
    // The provider's own answer observes the stop; one status read then collects the effects
    // that landed meanwhile (a crawl page written after the cancel) for the report.
    return confirm(job, finish, undefined, { accepted: true, acceptedAt: new Date().toISOString(), firstDelayMs: 0 });
  }
  const accepted = answer.kind === 'answered' && answer.accepted;
  return confirm(job, finish, undefined, { accepted, ...(accepted ? { acceptedAt: new Date().toISOString() } : {}) });
}

/**
 * Polls (`trackStatus` in `confirm_cancel` mode: it records nothing final) until the provider reports a final state or the
 * cancel-confirmation deadline passes. `callError`: the cancel call failed (then a cancel takes at
 * most two cancel-confirmation deadlines: the call's, then this one's); outcomes that stay
 * unconfirmed name it. `opts.accepted`: the provider accepted the cancel (a `404` afterwards
 * means it stopped and forgot the task).
 */
async function confirm(
  job: ScrapeJob,
  finish: Finish,
  callError?: JobError,
  opts: { accepted?: boolean; acceptedAt?: string; firstDelayMs?: number } = {},
): Promise<void> {
  const failedCall = callError ? `the cancel call failed (${callError.message}) and ` : '';
  const until = Date.now() + job.policy.cancelConfirmDeadlineMs;
  const firstDelayMs = opts.firstDelayMs ?? Math.min(job.policy.initialDelayMs, 2_000);
  let o: PollOutcome;
  try {
    o = await job.acts.tracker(until - Date.now()).trackStatus({
      ...job.taskRef(),
      url: job.input.request.url,
      request: job.input.request,
      generation: job.nextGeneration(),
      schedule: { ...job.schedule(true), initialDelayMs: Math.min(job.policy.initialDelayMs, 2_000), slowdown: 1 },
      firstDelayMs,
      deadlineAt: new Date(until).toISOString(),
      notFoundLimit: 1,
      failedReads: failedReadPolicy(job.policy),
      mode: 'confirm_cancel',
    });
  } catch (e) {
    const error = jobErrorOf(e, 'status check during cancel failed');
    return finish(
      'cancel_unconfirmed',
      `${failedCall}the provider did not confirm the cancel within ${job.policy.cancelConfirmDeadlineMs} ms (${error.message})`,
      error,
    );
  }
  job.observe(o);
  switch (o.kind) {
    case 'cancelled':
      return finish('cancelled', `the provider confirmed the task stopped (status ${o.providerStatus ?? 'cancelled'})`);
    case 'completed': {
      job.keepResult(o.result);
      if (job.cancel!.providerCancelCalls === 0)
        return finish(
          'completed',
          'the job reached completed before the cancel request could act; nothing was sent to the provider; the result was written once',
        );
      // Only what was observed: the cancel call's answer, then the provider's final word.
      const sent = opts.accepted
        ? `the provider accepted the cancel at ${opts.acceptedAt ?? 'an unrecorded time'}`
        : `${failedCall}the cancel was not confirmed as accepted`;
      const word = `status ${o.providerStatus ?? 'completed'}`;
      const docs = `${o.result.documents} document${o.result.documents === 1 ? '' : 's'} kept and written once`;
      if (o.afterCancel === 'stopped_or_completed')
        return finish(
          'completed',
          `${sent}; its final word (${word}) is the same whether the work stopped early or finished, so whether it was cut short is not known; ${docs} (possibly partial)`,
        );
      return finish(
        'completed',
        `${sent}; it then reported the task completed (${word}), which it says only of work that ran to its end; ${docs}`,
      );
    }
    case 'failed':
      // Accepted, then a final word that a stopped task shares with a finished one, and no result:
      // the work stopped before it produced anything (evidence: the accepted answer, then the empty read).
      if (o.afterCancel === 'stopped_or_completed' && opts.accepted)
        return finish(
          'cancelled',
          `the provider accepted the cancel at ${opts.acceptedAt ?? 'an unrecorded time'}; its final word (status ${o.providerStatus ?? 'finished'}) came with no result (${o.error.message}): the work stopped before it produced any`,
        );
      if (job.cancel!.providerCancelCalls === 0)
        return finish(
          'failed',
          `the task ended failed before the cancel request could act; nothing was sent to the provider (${o.error.message})`,
          o.error,
        );
      return finish('failed', `the task ended failed after the cancel request (${o.error.message})`, o.error);
    case 'expired':
      // The provider's record says how the task ended before its data was removed: a task that
      // finished or failed on its own was not stopped by the cancel, whatever the cancel answered.
      if (o.endedAs === 'failed')
        return finish(
          'failed',
          `the task had failed at the provider, which then removed it (${o.error.message})`,
          o.error,
        );
      if (o.endedAs === 'completed')
        return finish(
          'cancel_unconfirmed',
          `the provider's record shows the task ran to its end on its own and was then removed with its result (${o.error.message}): the cancel did not stop it, and there is no result to keep`,
          o.error,
        );
      if (o.endedAs === 'unrecognised')
        return finish(
          'cancel_unconfirmed',
          `the provider's record shows the task closed for a reason that does not say it was cancelled, and was then removed (${o.error.message}): whether the cancel stopped it is not known`,
          o.error,
        );
      if (o.endedAs === 'cancelled')
        return finish('cancelled', `the provider's record shows the task cancelled, then removed (${o.error.message})`);
      // Accepted, then forgotten: the provider stopped and removed it (evidence: the accepted answer, then the 404).
      if (opts.accepted)
        return finish(
          'cancelled',
          `the provider accepted the cancel and then no longer knows the task (${o.error.message})`,
        );
      return finish(
        'cancel_unconfirmed',
        'the provider no longer knows the task (404) after the cancel request',
        o.error,
      );
    case 'interrupted':
      return finish(
        'cancel_unconfirmed',
        `${failedCall}the provider's status could not be read after the cancel request (${o.error.message})`,
        o.error,
      );
    case 'deadline':
      return finish(
        'cancel_unconfirmed',
        `${failedCall}the provider did not confirm the cancel within ${job.policy.cancelConfirmDeadlineMs} ms (last status: ${job.view.providerStatus ?? 'unknown'})`,
        callError,
      );
    case 'stale':
      if (o.state === 'failed' || o.state === 'expired' || o.state === 'cancelled')
        return finish(
          o.state === 'expired' ? 'cancel_unconfirmed' : o.state,
          `the job reached ${o.state} before the cancel could act (${o.reason})`,
        );
      return finish('cancel_unconfirmed', `the cancel could not be confirmed: ${o.reason}`);
  }
}

/** Records the observed outcome: the state (with the report in the timeline), then the view (Update result, query). */
async function recordOutcome(job: ScrapeJob, outcome: CancelOutcome, detail: string, error?: JobError): Promise<void> {
  const final: CancelReport = { ...job.cancel!, outcome, detail, remainingEffects: job.remainingEffects() };
  if (outcome === 'completed') {
    // The result write already moved the row to `completed`; record the outcome beside it.
    job.move('completed', { note: detail });
    await job.acts.recorder.recordCancelOutcome({ jobId: job.input.jobId, report: final });
  } else {
    await job.record(outcome, { note: detail, error, detail: { cancel: final } });
  }
  job.reportCancel(final);
}

/**
 * A cancel that arrived while the job was finishing found nothing left to stop: report the state
 * actually reached, with no provider call.
 */
async function settleLateCancel(job: ScrapeJob): Promise<void> {
  const report = job.cancel;
  if (!report || report.outcome) return;
  const s = job.state;
  const outcome: CancelOutcome = s === 'completed' || s === 'failed' || s === 'cancelled' ? s : 'cancel_unconfirmed';
  const final: CancelReport = {
    ...report,
    outcome,
    detail: `the job reached ${s} before the cancel request could act; nothing was sent to the provider`,
    remainingEffects: job.remainingEffects(),
  };
  await job.acts.recorder.recordCancelOutcome({ jobId: job.input.jobId, report: final });
  job.reportCancel(final);
}

/**
 * Ends the run so that Temporal's own status tells the outcome (docs/design.md, "How a run
 * closes"): `completed` closes Completed with the view; a job whose cancel request did not end in
 * `completed` closes Canceled, and so does one the provider reports cancelled by someone else;
 * `failed`, `expired` and `tracking_interrupted` close Failed with a non-retryable
 * `ScrapeJob.<state>` failure whose message is the reason and whose details hold the view. A cancel by signal or Update asks Temporal to cancel this run (an activity: workflow code
 * cannot cancel itself) and then ends on that cancellation.
 */
export async function closeRun(job: ScrapeJob): Promise<JobView> {
  if (!job.cancel) {
    const state = job.state;
    if (state === 'failed' || state === 'expired' || state === 'tracking_interrupted') {
      const failure = ApplicationFailure.create({
        type: outcomeFailureType(state),
        message: closingReason(job.view),
        nonRetryable: true,
        details: [job.view],
      });
      // An outcome, not a crash: no stack (its frames would name the worker's source paths).
      failure.stack = `${failure.name}: ${failure.message}`;
      throw failure;
    }
    // A task the provider reports cancelled by someone else closes Canceled too, as a `cancelled`
    // job's run does whoever asked: only `completed` closes Completed.
    if (state !== 'cancelled') return job.view as JobView;
  }
  if (job.state === 'completed') return job.view as JobView;
  if (!CancellationScope.current().consideredCancelled) {
    try {
      await job.acts.closer.closeAsCancelled({ workflowId: workflowInfo().workflowId, runId: workflowInfo().runId });
      await condition(() => false); // ends with the cancellation just requested
    } catch (e) {
      if (!isCancellation(e)) return job.view as JobView; // Temporal refused: the job's state still says it
    }
  }
  throw new CancelledFailure(
    `job ${job.state}: ${job.cancel ? (job.cancel.detail ?? job.cancel.reason) : (job.view.note ?? 'cancelled at the provider')}`,
  );
}

/** The one line a Failed run shows in the Web UI: the state, then the provider's words (or our note). */
function closingReason(v: Readonly<JobView>): string {
  const why = v.lastError?.message ?? v.note ?? 'no reason recorded';
  const code = v.lastError?.code ? ` [${v.lastError.code}]` : '';
  return `job ${v.state}${code}: ${why}`;
}
