/**
 * Acquiring the provider task: take a slot under the provider key's adaptive limit of active jobs,
 * submit under the job's idempotency key, record the answer (or why nothing was sent).
 * A lost answer is reconciled on evidence before anything is submitted again (`reconcile.ts`). A
 * task is bound to one job per provider account.
 */
import { ApplicationFailure } from '@temporalio/common';
import { log } from '@temporalio/activity';
import type { JobError, JobWait, ScrapeWorkflowInput } from '../model/types.js';
import { isProviderError, isQuotaExhausted, ProviderError } from '../providers/shared/errors.js';
import { isConcurrencyRefusal } from '../providers/shared/limiter.js';
import type { ResolvedProvider } from '../providers/registry.js';
import type { Accepted } from '../providers/adapter.js';
import { type Reservation } from '../store/polling.js';
import { attemptBudget, attemptEnds, resubmitScheduledAt, SETTLE_READ_MARGIN_MS, submitAtProvider } from './attempt.js';
import { wakeIfDecidedWithout } from './lateAnswer.js';
import { EXISTENCE_PROVEN } from '../model/evidence.js';
import { acceptedTask, detachCall, type ActivityKit } from './context.js';
import { rethrow } from './failures.js';
import { slotReleased, SLOT_WAIT_MS, slotWaitPlan } from './slots.js';
import { trackActivities } from './track.js';
import type { PollOutcome, PollSchedule } from './pollTypes.js';
import type { FailedReadPolicy } from '../model/schedule.js';

/** Input of `submitJob`: the workflow input (to register the row) plus the submit round's flags. */
export interface SubmitJobInput {
  job: ScrapeWorkflowInput & { workflowId: string };
  /** Set when reconciliation proved that no task exists (or an operator asked to resubmit). */
  afterReconcile?: boolean;
  /** Tracking deadline (ms) recorded on the job when its task ID becomes known. */
  trackingDeadlineMs: number;
  /** How failed provider reads (a reconcile's lookups) are spaced and bounded; absent: the defaults. */
  failedReads?: FailedReadPolicy;
  /**
   * Continue an accepted submit into the first status checks, in this same attempt, for at most
   * `budgetMs` (ms): a job that finishes within it lives its whole life in one activity. Checks
   * follow `schedule` from `firstDelayMs`, claimed for polling `generation`. Absent: submit only.
   */
  track?: {
    generation: number;
    schedule: PollSchedule;
    firstDelayMs: number;
    notFoundLimit: number;
    failedReads: FailedReadPolicy;
    budgetMs: number;
  };
}

/**
 * Outcome of `submitJob` (ambiguous outcomes are returned, not thrown, so the workflow moves to
 * `unknown`): `accepted` (with the checks made so far when it continued into them), or
 * `finished` — the task was submitted and reached a final state within the attempt (the result
 * already written).
 */
export type SubmitOutcome =
  | { kind: 'accepted'; taskId: string; providerStatus: string; adopted: boolean; checks?: number; deadlineAt?: string }
  | { kind: 'finished'; taskId: string; outcome: PollOutcome; deadlineAt: string }
  | { kind: 'ambiguous'; error: JobError }
  /**
   * Nothing was sent, and nothing exists at the provider: the job waits (`wait` says why and is on
   * its row for `status` and the API) and submits again in `retryInMs` (ms) — the workflow's
   * durable timer, so the wait is no failed activity attempt in the Web UI.
   */
  | { kind: 'waiting'; wait: JobWait; retryInMs: number };

/** How long a job whose worker has no credential for it waits before it looks again, ms. */
const CREDENTIAL_RETRY_MS = 20_000;

/** Builds `submitJob` over `kit`. */
export function submitActivities(kit: ActivityKit) {
  const { store } = kit;
  const tracking = trackActivities(kit);

  async function reserve(
    input: SubmitJobInput,
    resolved: ResolvedProvider,
  ): Promise<{ r: Reservation; label: string }> {
    const { job } = input;
    const scope = { label: resolved.providerKey };
    const limits = resolved.entry.limits.activeJobs;
    const started = Date.now();
    for (;;) {
      const r = await store.polling.reserveSubmit(
        job.jobId,
        scope,
        limits,
        input.afterReconcile === true,
        resubmitScheduledAt(),
      );
      if (r.kind !== 'full' || Date.now() - started >= slotWaitPlan(r, 0).inAttemptMs) return { r, label: scope.label };
      await slotReleased(scope.label, Math.min(1_000, started + SLOT_WAIT_MS - Date.now()), kit.signal());
    }
  }

  /** Records a submit's answer: binds the task to the job (a collision is reported, never retried) and grows the key's limit. */
  async function recordAnswer(
    job: SubmitJobInput['job'],
    accepted: Accepted,
    resolved: ResolvedProvider,
    trackingDeadlineMs: number,
    label: string,
    activeBefore: number,
  ): Promise<{ taskId: string; providerStatus: string; answered: string }> {
    await kit.deps.hooks?.afterSubmitAnswered?.(job.jobId, accepted.taskId);
    const source = accepted.replayed ? 'submit (provider replayed key)' : 'submit';
    const bound = await store.jobs.bindTask({
      jobId: job.jobId,
      taskId: accepted.taskId,
      providerStatus: accepted.providerStatus,
      source,
      trackingDeadlineMs,
      providerAccount: resolved.providerAccount,
      submitAnswer: accepted.submitAnswer,
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
      await store.findings.appendEvent(job.jobId, 'late_task_cancel', null, { taskId: accepted.taskId, why, cancel });
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
    await store.polling.noteSubmitAccepted(label, activeBefore);
    await kit.deps.hooks?.afterTaskRecorded?.(job.jobId, bound.taskId);
    return { taskId: bound.taskId, providerStatus: accepted.providerStatus, answered: accepted.taskId };
  }

  /**
   * Records a submit's failure: an ambiguous answer (or a `409` for our key, which says an earlier
   * submit with it exists) is returned as `ambiguous`; a definite answer clears the intent (nothing
   * was created), lowers the key's limit after a concurrency refusal, keeps an incident for a
   * permanent one (a quota or credit exhaustion too, with a `quota_exhausted` event naming how long
   * the key's submits are held), and is returned to be thrown.
   */
  async function recordRefusal(
    job: SubmitJobInput['job'],
    e: unknown,
    label: string,
    activeBefore: number,
  ): Promise<{ kind: 'ambiguous'; error: JobError } | { kind: 'error'; error: unknown }> {
    if (
      isProviderError(e) &&
      (e.kind === 'ambiguous' || (e.kind === 'conflict' && e.details.code !== 'TASK_COLLISION'))
    ) {
      const error = e.toJobError();
      await store.findings.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', {
        error,
        evidence: e.details.evidence,
      });
      // A refusal that can only mean our job exists (a 409 for our key, a duplicate refusal for our
      // reference) is durable evidence: no empty lookup after it makes the job "absent".
      if (e.kind === 'conflict' || e.details.provesExistence)
        await store.findings.appendEvent(job.jobId, EXISTENCE_PROVEN, 'unknown', {
          error,
          evidence: e.details.evidence,
        });
      return { kind: 'ambiguous', error: { ...error, kind: 'ambiguous' } };
    }
    if (!(isProviderError(e) && e.details.code === 'TASK_COLLISION')) await store.jobs.clearSubmitIntent(job.jobId);
    if (isProviderError(e)) {
      await store.findings.appendEvent(job.jobId, 'submit_rejected', null, {
        error: e.toJobError(),
        evidence: e.details.evidence,
      });
      if (isConcurrencyRefusal(e)) {
        const limit = await store.polling.noteSubmitRefused(label, activeBefore, e.details.statedLimit);
        log.info('submit refused for concurrency: key limit lowered', { jobId: job.jobId, label, limit });
      }
      if (e.kind === 'permanent' || e.kind === 'conflict') await kit.recordIncident(job.jobId, 'submit', e);
      if (isQuotaExhausted(e)) {
        // The limiter has put the hold in place (shared through the store): the timeline says for how long.
        const heldForMs = await kit.deps.providers.resolve(job.provider, job.account).limiter.heldForMs('submit');
        await store.findings.appendEvent(job.jobId, 'quota_exhausted', null, {
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

  /** Records why the job waits (its row: `status`, the API) and returns the `waiting` outcome. */
  async function waiting(jobId: string, wait: JobWait, retryInMs: number): Promise<SubmitOutcome> {
    await store.polling.recordWait(jobId, wait);
    return { kind: 'waiting', wait, retryInMs: Math.max(1, Math.round(retryInMs)) };
  }

  return {
    /**
     * Submits under the job's idempotency key once a slot under the provider key's active-jobs
     * limit is free (the job's row was recorded by the client before its workflow started; a job
     * without one throws non-retryable `Submit.notRegistered`). The intent is recorded before the
     * call and the answer right after it: a retried attempt adopts an earlier answer, and one that
     * finds an earlier intent without an answer returns `ambiguous`, as does a call whose outcome
     * is unknown. A submit that sends nothing — no free slot, the key cooling down or held, no
     * credential on this worker — returns `waiting` with the reason (the workflow waits on its
     * timer); a concurrency refusal halves the key's limit (the provider's stated limit becomes
     * its ceiling) and waits the provider's wait; permanent rejections throw non-retryable. A job
     * that ended meanwhile (cancelled while its submit waited) throws non-retryable
     * `Submit.jobFinal` and sends nothing; a task answered after it ended, or beside a task the job
     * already tracks, is asked to cancel.
     */
    async submitJob(input: SubmitJobInput): Promise<SubmitOutcome> {
      const startedAt = Date.now();
      const { job } = input;
      let resolved: ResolvedProvider;
      try {
        resolved = kit.deps.providers.resolve(job.provider, job.account);
      } catch (e) {
        if (!isProviderError(e) || e.details.code !== 'NO_CREDENTIALS') throw e;
        return waiting(job.jobId, { reason: 'credential', message: e.message }, CREDENTIAL_RETRY_MS);
      }
      await store.jobs.setProviderAccount(job.jobId, resolved.providerAccount, resolved.providerKey);
      const { r, label } = await reserve(input, resolved);
      if (r.kind === 'missing')
        throw ApplicationFailure.create({
          type: 'Submit.notRegistered',
          message: `job ${job.jobId} has no row in the store: a job is started through the client (startScrape), which records its row before its workflow starts`,
          nonRetryable: true,
        });
      if (r.kind === 'final')
        throw ApplicationFailure.create({
          type: 'Submit.jobFinal',
          message: `the job is already ${r.state}: nothing is submitted`,
          nonRetryable: true,
        });
      if (r.kind === 'full') {
        const retryInMs = slotWaitPlan(r, Math.random()).retryMs;
        return waiting(
          job.jobId,
          {
            reason: 'slot',
            message: `${r.active} provider jobs of key ${label} are active (its limit, learned from the provider, is ${r.limit}); ${r.waiting} more wait, ${r.ahead} of them registered before this one`,
            until: new Date(Date.now() + retryInMs).toISOString(),
            detail: { providerKey: label, active: r.active, limit: r.limit, waiting: r.waiting, ahead: r.ahead },
          },
          retryInMs,
        );
      }
      if (r.kind === 'known') {
        if (r.before.task_id) {
          log.info('submit: adopting the task recorded by an earlier attempt', {
            jobId: job.jobId,
            taskId: r.before.task_id,
          });
          return {
            kind: 'accepted',
            taskId: r.before.task_id,
            providerStatus: r.before.provider_status ?? 'unknown',
            adopted: true,
          };
        }
        const error: JobError = {
          kind: 'ambiguous',
          code: 'UNANSWERED_INTENT',
          message: `an earlier submit attempt (intent recorded at ${r.before.submit_intent_at}) ended without a recorded answer; the provider may have created the task`,
          at: new Date().toISOString(),
        };
        await store.findings.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', error);
        return { kind: 'ambiguous', error };
      }
      // The call is not aborted when the attempt gives up: an answer that arrives after the
      // attempt's timeout is still recorded (and adopted by the reconciliation that follows), so
      // a late answer never turns into a second submit.
      let active = true;
      const call = submitAtProvider(kit, job, {
        heartbeat: () => active,
        // A submit held back by the key's cool-down or quota hold waits without calling the
        // provider; the timeline says so, so a job sitting in `submitting` shows why.
        onHeld: (waitMs, why) =>
          store.findings.appendEvent(job.jobId, 'submit_held', null, { message: why, waitMs }).then(
            () => undefined,
            () => undefined, // a note the store could not take never holds up the submit
          ),
      });
      const recorded = call
        .then((accepted) => recordAnswer(job, accepted, resolved, input.trackingDeadlineMs, label, r.active))
        .then(
          (a) => ({ kind: 'accepted' as const, ...a }),
          async (e: unknown) => ({ kind: 'error' as const, outcome: await recordRefusal(job, e, label, r.active) }),
        )
        .catch((e: unknown) => ({ kind: 'error' as const, outcome: { kind: 'error' as const, error: e } })); // the store failed: the attempt's error, never an unhandled rejection
      const gaveUp = attemptEnds(startedAt);
      const first = await Promise.race([recorded, gaveUp.promise]);
      active = false;
      gaveUp.cancel();
      if (first === 'gave_up') {
        // A stopping worker waits for the answer before it closes the store. An answer that comes
        // after the reconcile was decided without it wakes the job waiting for an operator.
        const wake = { jobId: job.jobId, workflowId: job.workflowId };
        detachCall(
          recorded.then((a) =>
            a.kind === 'accepted' ? wakeIfDecidedWithout(store, kit.deps.temporal, wake, startedAt) : undefined,
          ),
        );
        const error: JobError = {
          kind: 'ambiguous',
          code: 'ANSWER_PENDING',
          message: `the submit's answer did not arrive within the attempt (${Date.now() - startedAt} ms); the call goes on, and an answer that comes later is recorded and adopted`,
          at: new Date().toISOString(),
        };
        await store.findings.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', error);
        return { kind: 'ambiguous', error };
      }
      if (first.kind === 'error') {
        if (first.outcome.kind === 'ambiguous') return first.outcome;
        const e = first.outcome.error;
        // Held back or refused for a while (the key's cool-down, a quota hold, a 429, a concurrency
        // refusal): nothing was created; the job waits as the provider asked, in the workflow.
        if (isProviderError(e) && e.kind === 'cooldown') {
          const retryInMs = Math.max(1_000, e.details.retryAfterMs ?? kit.deps.defaultCoolDownMs ?? 5_000);
          return waiting(
            job.jobId,
            {
              reason: 'cooldown',
              message: `submits of provider key ${label} are held back: ${e.message}`,
              until: new Date(Date.now() + retryInMs).toISOString(),
              detail: { providerKey: label, ...(e.details.code ? { code: e.details.code } : {}) },
            },
            retryInMs,
          );
        }
        rethrow(e);
      }
      const accepted: Extract<SubmitOutcome, { kind: 'accepted' }> = {
        kind: 'accepted',
        taskId: first.taskId,
        providerStatus: first.providerStatus,
        adopted: first.taskId !== first.answered,
      };
      if (!input.track || first.taskId !== first.answered) return accepted;
      // A fast job's whole life in this attempt: its first checks, and the result written, here.
      const t = input.track;
      // The tracking deadline counts from now, when the task is known (server time, as the workflow's).
      const clock = await kit.serverClock();
      const deadlineAt = new Date(clock() + input.trackingDeadlineMs).toISOString();
      const { outcome, last } = await tracking.pollLoop(
        {
          jobId: job.jobId,
          provider: job.provider,
          account: job.account,
          taskId: first.taskId,
          url: job.request.url,
          request: job.request,
          generation: t.generation,
          schedule: t.schedule,
          firstDelayMs: t.firstDelayMs,
          notFoundLimit: t.notFoundLimit,
          failedReads: t.failedReads,
          mode: 'track',
          deadlineAt,
        },
        Math.max(0, Math.min(t.budgetMs - (Date.now() - startedAt), attemptBudget(startedAt) - SETTLE_READ_MARGIN_MS)),
      );
      // The deadline is the tracking phase's to act on (with its wakes and its deadline policy).
      if (outcome && outcome.kind !== 'deadline')
        return { kind: 'finished', taskId: first.taskId, outcome, deadlineAt };
      return {
        ...accepted,
        providerStatus: last?.providerStatus ?? accepted.providerStatus,
        checks: last?.checks ?? 0,
        deadlineAt,
      };
    },
  };
}
