/**
 * Scrape workflow v2: one logical scrape request, from submit to a result written once.
 *
 * This file only wires the message handlers and runs the phases; the job's state and transitions
 * are in `machine.ts`, the phases in `acquire.ts` (submit, reconcile, resolve), `poll.ts`
 * (retry-driven polling, wakes, deadline) and `cancel.ts` (the one cancellation path).
 *
 * Deterministic code only (DESIGN.md): `Date.now()`, `new Date()` and `Math.random()` here are the
 * SDK's deterministic versions; all I/O is in activities.
 *
 * Every cancelled job closes with the Temporal status `Canceled`, whichever door asked (signal,
 * Update, the Web UI's button, `temporal workflow cancel`, the deadline policy) — unless the
 * provider finished first, when the job is `completed` and the run closes `Completed`.
 */
import { ApplicationFailure, CancellationScope, CancelledFailure, allHandlersFinished, condition, isCancellation, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import { isFinalState, type JobState } from '../../model/states.js';
import type { JobView, ScrapeWorkflowInput } from '../../model/types.js';
import { acquireTask } from './acquire.js';
import { cancelJob, settleLateCancel } from './cancel.js';
import { ScrapeJob } from './machine.js';
import { HANDLER_DESCRIPTIONS, cancelSignal, cancelUpdate, resolveUpdate, stateQuery, wakeSignal } from './messages.js';
import { PATCH_NATIVE_CANCEL_ON_ARRIVAL } from './patches.js';
import { trackTask } from './poll.js';

/** Input carried across continue-as-new (absolute deadline, check count). */
export interface Carry {
  deadlineAt: string;
  statusChecks: number;
}

/**
 * Runs one scrape (workflow type `scrapeWorkflowV2`). Returns the final {@link JobView}; a job
 * whose cancel request did not end in `completed` closes `Canceled` instead.
 */
export async function scrapeWorkflowV2(input: ScrapeWorkflowInput & { carry?: Carry }): Promise<JobView> {
  const job = new ScrapeJob(input);
  wireHandlers(job);
  job.announce();
  // A native cancellation is recorded the moment it arrives, like a signal or an Update: a submit
  // refused while it was on its way must not turn it into a `Completed` run with no cancel report.
  CancellationScope.current().cancelRequested.catch(() => {
    if (!job.cancel && !job.final && patched(PATCH_NATIVE_CANCEL_ON_ARRIVAL)) job.requestCancel({ reason: 'workflow cancellation requested', requestedBy: 'temporal' }, 'native');
  });
  // A resumed job that was `cancelling` when its previous run stopped finishes that cancel first.
  if (input.pendingCancel) job.requestCancel({ reason: input.pendingCancel.reason ?? 'cancel under way before resume', requestedBy: input.pendingCancel.requestedBy ?? 'unknown' }, 'signal');

  try {
    if (!job.cancel) await job.interruptible(() => runPhases(job));
  } catch (e) {
    if (!isCancellation(e)) throw e;
    if (CancellationScope.current().consideredCancelled) job.requestCancel({ reason: 'workflow cancellation requested', requestedBy: 'temporal' }, 'native');
  }
  await CancellationScope.nonCancellable(async () => {
    await job.writeInterruptedFinal();
    if (job.cancel && !job.final) await cancelJob(job);
    // A native cancellation that arrived while a shielded step finished the job is recorded too.
    if (CancellationScope.current().parent?.consideredCancelled && !job.cancel) job.requestCancel({ reason: 'workflow cancellation requested', requestedBy: 'temporal' }, 'native');
    await settleLateCancel(job);
    await condition(allHandlersFinished);
  });
  return close(job);
}

/** Registers the query, signals and Updates (see `messages.ts`). */
function wireHandlers(job: ScrapeJob): void {
  setHandler(stateQuery, () => job.view, { description: HANDLER_DESCRIPTIONS.state });
  setHandler(cancelSignal, (req) => job.requestCancel(req ?? {}, 'signal'), { description: HANDLER_DESCRIPTIONS.cancel });
  setHandler(
    cancelUpdate,
    async (req) => {
      job.requestCancel(req ?? {}, 'update');
      // Shielded: a native cancellation arriving meanwhile joins the same path; it must not fail
      // this Update with "workflow cancelled".
      await CancellationScope.nonCancellable(() => condition(() => job.cancel?.outcome !== undefined));
      return job.cancel!;
    },
    {
      description: HANDLER_DESCRIPTIONS.cancelUpdate,
      validator: (_req) => {
        if (job.final && !job.cancel) throw new Error(`job is already ${job.state}; cancelling changes nothing`);
      },
    },
  );
  setHandler(
    resolveUpdate,
    async (r) => {
      job.offerResolution(r);
      const refused = await job.resolutionSettled(r);
      if (refused !== undefined) throw ApplicationFailure.create({ type: 'Resolve.refused', message: refused, nonRetryable: true });
      return job.view;
    },
    {
      description: HANDLER_DESCRIPTIONS.resolve,
      validator: (r) => {
        if (job.state !== 'unknown') throw new Error(`job is ${job.state}, not unknown; nothing to resolve`);
        if (job.resolving()) throw new Error('a resolution is already being applied');
        const hasTask = 'taskId' in r && typeof r.taskId === 'string' && r.taskId.length > 0;
        const resubmit = 'resubmit' in r && r.resubmit === true;
        if (hasTask === resubmit) throw new Error('give exactly one of taskId or resubmit: true');
      },
    },
  );
  setHandler(wakeSignal, () => void job.wakes++, { description: HANDLER_DESCRIPTIONS.wake });
}

/** Acquire a task (or adopt the resumed one), then track it to a final state. */
async function runPhases(job: ScrapeJob): Promise<void> {
  const { input } = job;
  if (input.resume) {
    const reg = await job.acts.reconciler.registerJob({ ...input, workflowId: workflowInfo().workflowId, deadlineAt: job.deadlineAt });
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

/**
 * Ends the run: the view, or — for a job whose cancel request did not end in `completed` — the
 * `Canceled` status. A cancel by signal or Update asks Temporal to cancel this run (an activity:
 * workflow code cannot cancel itself) and then ends on that cancellation.
 */
async function close(job: ScrapeJob): Promise<JobView> {
  if (!job.cancel || job.state === 'completed') return job.view;
  if (!CancellationScope.current().consideredCancelled) {
    try {
      await job.acts.closer.closeAsCancelled({ workflowId: workflowInfo().workflowId, runId: workflowInfo().runId });
      await condition(() => false); // ends with the cancellation just requested
    } catch (e) {
      if (!isCancellation(e)) return job.view; // Temporal refused: the job's state still says it
    }
  }
  throw new CancelledFailure(`job ${job.state}: ${job.cancel.detail ?? job.cancel.reason}`);
}
