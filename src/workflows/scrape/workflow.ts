/**
 * The scrape workflow (type `scrapeWorkflowV6`): one logical scrape request, from submit to a
 * result written once.
 *
 * This file only wires the message handlers and runs the phases; the job's state and every change
 * to it are in `machine.ts` (`ScrapeJob`), the phases in `acquire.ts` (submit, reconcile,
 * resolve), `poll.ts` (retry-driven polling, wakes, deadline) and `cancel.ts` (the one
 * cancellation path, and how the run closes).
 *
 * Deterministic code only: `Date.now()`, `new Date()` and `Math.random()` here are the SDK's
 * deterministic versions; all I/O is in activities.
 */
import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  makeContinueAsNewFunc,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { isFinalState, type JobState } from '../../model/states.js';
import type { CancelReport, JobView } from '../../model/types.js';
import { acquireTask } from './acquire.js';
import { closeRun, finishCancel } from './cancel.js';
import { ScrapeJob } from './machine.js';
import type { ScrapeRunInput } from './view.js';
import {
  HANDLER_DESCRIPTIONS,
  cancelSignal,
  cancelUpdate,
  resolveUpdate,
  stateQuery,
  submitNowSignal,
  wakeSignal,
  type CancelRequest,
  type Resolution,
} from './messages.js';
import { trackTask } from './poll.js';
import { ScrapeState } from '../searchAttributes.js';

/**
 * Runs one scrape (workflow type `scrapeWorkflowV6`, the only type a worker serves; older types are
 * drained before an upgrade: docs/operations.md, "Upgrading"). Returns the final {@link JobView}; a
 * job whose cancel request did not end in `completed` closes `Canceled` instead.
 */
export async function scrapeWorkflowV6(input: ScrapeRunInput): Promise<JobView> {
  const job = new ScrapeJob(input);
  wireHandlers(job);
  job.announce();
  job.watchNativeCancel();
  // A resumed job that was `cancelling` when its previous run stopped finishes that cancel first.
  if (input.pendingCancel)
    job.requestCancel(
      {
        reason: input.pendingCancel.reason ?? 'cancel under way before resume',
        requestedBy: input.pendingCancel.requestedBy ?? 'unknown',
      },
      input.pendingCancel.via ?? 'signal',
    );

  try {
    if (!job.cancel) await job.interruptible(() => runPhases(job));
  } catch (e) {
    if (!isCancellation(e)) throw e;
    if (CancellationScope.current().consideredCancelled) job.requestNativeCancel();
  }
  // A job that ended with no cancel, no store write left unfinished and no handler still running
  // has nothing to finish: skipping the step saves a dozen promises (the SDK captures a stack trace
  // for each) and sends no command either way.
  if (
    job.cancel ||
    job.hasUnwrittenFinal() ||
    CancellationScope.current().consideredCancelled ||
    !allHandlersFinished()
  )
    await CancellationScope.nonCancellable(async () => {
      await finishCancel(job);
      await condition(allHandlersFinished);
    });
  if (job.cancelAfterFinal) return reopenToCancel(job, job.cancelAfterFinal);
  return closeRun(job);
}

/**
 * Hands a cancel that came while the run was closing on a final state whose task may still run
 * (`ScrapeJob.cancelAfterFinal`) to a new run resumed to cancel that task: the run a client's
 * cancel of the final job would start (same input, memo and state shown), so the request a signal
 * or the Web UI's button made is carried out, never dropped.
 */
async function reopenToCancel(job: ScrapeJob, late: Readonly<CancelReport>): Promise<never> {
  const { carry: _carry, ...input } = job.input;
  const taskId = job.view.taskId!;
  const info = workflowInfo();
  return makeContinueAsNewFunc<typeof scrapeWorkflowV6>({
    memo: { ...info.memo, resumedTaskId: taskId },
    typedSearchAttributes: info.typedSearchAttributes.updateCopy([{ key: ScrapeState, value: 'cancelling' }]),
  })({
    ...input,
    resume: { taskId },
    pendingCancel: { reason: late.reason, requestedBy: late.requestedBy, via: late.via },
  });
}

/** Registers the query, signals and Updates (see `messages.ts`); each handler is one call into the job. */
function wireHandlers(job: ScrapeJob): void {
  setHandler(stateQuery, () => job.view as JobView, { description: HANDLER_DESCRIPTIONS.state });
  setHandler(cancelSignal, (req) => job.requestCancel(req ?? {}, 'signal'), {
    description: HANDLER_DESCRIPTIONS.cancel,
  });
  setHandler(cancelUpdate, (req) => cancelAndWait(job, req ?? {}), {
    description: HANDLER_DESCRIPTIONS.cancelUpdate,
    // Refused once the job is final, unless a cancel is still settling: a run closing with an
    // outcome never hands that earlier outcome to a new request as its own (the client answers
    // from the store, or asks again in a new run when the task may still run).
    validator: (_req) => {
      if (job.final && (!job.cancel || job.cancel.outcome !== undefined))
        throw new Error(`job is already ${job.state}; cancelling changes nothing`);
    },
  });
  setHandler(resolveUpdate, (r) => resolveAndWait(job, r), {
    description: HANDLER_DESCRIPTIONS.resolve,
    validator: (r) => {
      if (job.state !== 'unknown') throw new Error(`job is ${job.state}, not unknown; nothing to resolve`);
      if (job.resolving()) throw new Error('a resolution is already being applied');
      const hasTask = 'taskId' in r && typeof r.taskId === 'string' && r.taskId.length > 0;
      const resubmit = 'resubmit' in r && r.resubmit === true;
      if (hasTask === resubmit) throw new Error('give exactly one of taskId or resubmit: true');
    },
  });
  setHandler(wakeSignal, () => job.wake(), { description: HANDLER_DESCRIPTIONS.wake });
  setHandler(submitNowSignal, () => job.nudgeSubmit(), { description: HANDLER_DESCRIPTIONS.submitNow });
}

/** The `cancel` Update: requests the cancel and returns the outcome observed at the provider. */
async function cancelAndWait(job: ScrapeJob, req: CancelRequest): Promise<CancelReport> {
  job.requestCancel(req, 'update');
  // Shielded: a native cancellation arriving meanwhile joins the same path; it must not fail
  // this Update with "workflow cancelled".
  await CancellationScope.nonCancellable(() =>
    condition(() => job.cancel?.outcome !== undefined || job.cancelAfterFinal !== undefined),
  );
  if (job.cancel?.outcome === undefined)
    throw ApplicationFailure.create({
      type: 'Cancel.handedOver',
      message:
        'tracking stopped as this cancel arrived, with the task still running: a run resumed to cancel it carries the request',
      nonRetryable: true,
    });
  return job.cancel as CancelReport;
}

/** The `resolve` Update: offers the resolution and returns the view once applied; fails with the worker's reason when refused. */
async function resolveAndWait(job: ScrapeJob, r: Resolution): Promise<JobView> {
  job.offerResolution(r);
  const refused = await job.resolutionSettled(r);
  if (refused !== undefined)
    throw ApplicationFailure.create({ type: 'Resolve.refused', message: refused, nonRetryable: true });
  return job.view as JobView;
}

/** Acquire a task (or adopt the resumed one), then track it to a final state. */
async function runPhases(job: ScrapeJob): Promise<void> {
  const { input } = job;
  if (input.resume) {
    const reg = await job.acts.reconciler.registerJob({
      ...input,
      workflowId: workflowInfo().workflowId,
      deadlineAt: job.deadlineAt,
    });
    if (isFinalState(reg.state) && reg.state !== 'tracking_interrupted') {
      // A stale resume (the job finished or was purged meanwhile): nothing to track, no provider call.
      job.adoptFinal(reg.state as JobState, `resume found the job already ${reg.state}; nothing to do`);
      return;
    }
    job.taskKnown(reg.taskId ?? input.resume.taskId);
  } else if (!(await acquireTask(job))) {
    return;
  }
  await trackTask(job);
}
