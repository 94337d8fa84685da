/**
 * Recording a submit's outcome (for `submitJob`, `submit.ts`): the answer binds the task to the job
 * and grows the key's adaptive limit; a refusal clears the intent and releases the job's budget
 * reservation (nothing was created), lowers the limit after a concurrency refusal, keeps an
 * incident for a permanent one; an ambiguous answer goes to `unknown` with its evidence.
 */
import { ApplicationFailure } from '@temporalio/common';
import { log } from '@temporalio/activity';
import type { JobError, ScrapeWorkflowInput } from '../../model/types.js';
import { EXISTENCE_PROVEN } from '../../model/evidence.js';
import type { Accepted } from '../../providers/adapter.js';
import type { ResolvedProvider } from '../../providers/registry.js';
import { isProviderError, isQuotaExhausted, ProviderError } from '../../providers/shared/errors.js';
import { isConcurrencyRefusal } from '../../providers/shared/limiter.js';
import { acceptedTask, type ActivityKit } from '../context.js';
import type { JobRow } from '../../store/index.js';

/** The job of a submit: its workflow input and workflow ID. */
type Job = ScrapeWorkflowInput & { workflowId: string };

/**
 * Records a submit's answer: binds the task to the job (a collision is reported, never retried)
 * and grows the key's limit when the submit took the last slot under it (`slot`: the key, its
 * active jobs besides this one and its limit, as the reservation counted them). `claim`: the
 * polling generation the submit goes on to check under and its tracking deadline (UTC ISO-8601,
 * computed when the answer is recorded), claimed with the bind. Returns the task, and the job's
 * row as the bind wrote it when it came back with the bind.
 */
export async function recordAnswer(
  kit: ActivityKit,
  job: Job,
  accepted: Accepted,
  resolved: ResolvedProvider,
  trackingDeadlineMs: number,
  slot: { label: string; active: number; limit: number },
  claim?: { generation: number; deadlineAt: () => string },
): Promise<{ taskId: string; providerStatus: string; answered: string; row?: JobRow }> {
  await kit.deps.hooks?.afterSubmitAnswered?.(job.jobId, accepted.taskId);
  const source = accepted.replayed ? 'submit (provider replayed key)' : 'submit';
  const bound = await kit.store.jobs.bindTask({
    jobId: job.jobId,
    taskId: accepted.taskId,
    providerStatus: accepted.providerStatus,
    source,
    trackingDeadlineMs,
    providerAccount: resolved.providerAccount,
    submitAnswer: accepted.submitAnswer,
    ...(claim ? { claim: { generation: claim.generation, deadlineAt: claim.deadlineAt() } } : {}),
  });
  if (bound.kind === 'collision') {
    throw new ProviderError(
      'conflict',
      `the provider answered our submit with task ${accepted.taskId}, which is bound to job ${bound.boundTo}; a task belongs to one job`,
      { code: 'TASK_COLLISION' },
    );
  }
  // Our submit's task, wanted by no one: the job ended while the submit was on its way, or it
  // already tracks another task (a resubmit's). It is asked to cancel, so that it does not bill on.
  const unwanted = async (why: string) => {
    const cancel = await kit
      .call(job.provider, job.account, (p) =>
        p.adapter.cancel(accepted.taskId, { ...kit.taskCall(p, undefined, ''), task: acceptedTask(job, accepted) }),
      )
      .catch((e: unknown) => ({ error: isProviderError(e) ? e.toJobError() : String(e) }));
    await kit.store.findings.appendEvent(job.jobId, 'late_task_cancel', null, { taskId: accepted.taskId, why, cancel });
  };
  if (bound.kind === 'final') {
    await unwanted(`the job ended ${bound.state}`);
    throw ApplicationFailure.create({
      type: 'Submit.jobFinal',
      message: `the provider answered our submit with task ${accepted.taskId} after the job ended ${bound.state}; the task is kept in its timeline (task_after_final) and was asked to cancel`,
      nonRetryable: true,
    });
  }
  // The same task in another spelling (an operator may have typed it in another case) is never cancelled.
  if (bound.taskId.trim().toLowerCase() !== accepted.taskId.trim().toLowerCase())
    await unwanted(`the job tracks task ${bound.taskId}: a second paid job`);
  await kit.store.limits.noteSubmitAccepted(slot.label, slot.active, slot.limit);
  await kit.deps.hooks?.afterTaskRecorded?.(job.jobId, bound.taskId);
  return {
    taskId: bound.taskId,
    providerStatus: accepted.providerStatus,
    answered: accepted.taskId,
    ...(bound.row ? { row: bound.row } : {}),
  };
}

/**
 * Records a submit's failure: an ambiguous answer (or a `409` for our key, which says an earlier
 * submit with it exists) is returned as `ambiguous`; a definite answer clears the intent and
 * releases the job's budget reservation (`holdsCost`; nothing was created), lowers the key's limit after a concurrency refusal, keeps an incident for a
 * permanent one (a quota or credit exhaustion too, with a `quota_exhausted` event naming how long
 * the key's submits are held), and is returned to be thrown.
 */
export async function recordRefusal(
  kit: ActivityKit,
  job: Job,
  e: unknown,
  label: string,
  activeBefore: number,
  holdsCost: boolean,
): Promise<{ kind: 'ambiguous'; error: JobError } | { kind: 'error'; error: unknown }> {
  if (
    isProviderError(e) &&
    (e.kind === 'ambiguous' || (e.kind === 'conflict' && e.details.code !== 'TASK_COLLISION'))
  ) {
    const error = e.toJobError();
    await kit.store.findings.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', {
      error,
      evidence: e.details.evidence,
    });
    // A refusal that can only mean our job exists (a 409 for our key, a duplicate refusal for our
    // reference) is durable evidence: no empty lookup after it makes the job "absent".
    if (e.kind === 'conflict' || e.details.provesExistence)
      await kit.store.findings.appendEvent(job.jobId, EXISTENCE_PROVEN, 'unknown', {
        error,
        evidence: e.details.evidence,
      });
    return { kind: 'ambiguous', error: { ...error, kind: 'ambiguous' } };
  }
  if (!(isProviderError(e) && e.details.code === 'TASK_COLLISION')) {
    await kit.store.jobs.clearSubmitIntent(job.jobId);
    // Nothing was created: what the job held in its budgets is free again (it reserves anew at its next submit).
    if (holdsCost) await kit.store.budgets.release(job.jobId);
  }
  if (isProviderError(e)) {
    await kit.store.findings.appendEvent(job.jobId, 'submit_rejected', null, {
      error: e.toJobError(),
      evidence: e.details.evidence,
    });
    if (isConcurrencyRefusal(e)) {
      const limit = await kit.store.limits.noteSubmitRefused(label, activeBefore, e.details.statedLimit);
      log.info('submit refused for concurrency: key limit lowered', { jobId: job.jobId, label, limit });
    }
    if (e.kind === 'permanent' || e.kind === 'conflict') await kit.recordIncident(job.jobId, 'submit', e);
    if (isQuotaExhausted(e)) {
      // The limiter has put the hold in place (shared through the store): the timeline says for how long.
      const heldForMs = await kit.deps.providers.resolve(job.provider, job.account).limiter.heldForMs('submit');
      await kit.store.findings.appendEvent(job.jobId, 'quota_exhausted', null, {
        providerKey: label,
        submitsHeldForMs: heldForMs,
        error: e.toJobError(),
      });
      log.warn('submit refused: the provider account’s quota or credits are used up; the key’s submits are held', {
        jobId: job.jobId,
        label,
        heldForMs,
      });
    }
  }
  return { kind: 'error', error: e };
}
