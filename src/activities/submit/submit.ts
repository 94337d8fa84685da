/**
 * Acquiring the provider task: take a slot under the provider key's adaptive limit of active jobs
 * (given by the key's fair queue between accounts) with the job's estimated cost reserved in its
 * account's budgets, submit under the job's idempotency key, record the answer or why nothing was
 * sent (`submitRecord.ts`). A lost answer is reconciled on evidence before anything is submitted
 * again (`reconcile.ts`). A task is bound to one job per provider account.
 */
import { ApplicationFailure } from '@temporalio/common';
import { log } from '@temporalio/activity';
import type { JobError, JobWait, ScrapeWorkflowInput } from '../../model/types.js';
import { isProviderError } from '../../providers/shared/errors.js';
import type { ResolvedProvider } from '../../providers/registry.js';
import { type Reservation } from '../../store/index.js';
import { attemptBudget, attemptEnds, resubmitScheduledAt, SETTLE_READ_MARGIN_MS, submitAtProvider } from './attempt.js';
import { wakeIfDecidedWithout } from './lateAnswer.js';
import { detachCall, type ActivityKit } from '../context.js';
import { sharesOf } from '../shares.js';
import { slotReleased, SLOT_WAIT_MS, slotWaitPlan } from '../slots.js';
import { recordAnswer, recordRefusal } from './submitRecord.js';
import { pollLoop } from '../tracking/track.js';
import type { PollOutcome, PollSchedule } from '../tracking/pollTypes.js';
import { cooldownWaitMs, HELD_LOCALLY, type FailedReadPolicy } from '../../model/schedule.js';

/**
 * How long after its reservation (which records the intent) a submit may leave before its intent
 * is moved to the moment it leaves, ms: less is nothing beside the provider's lags (seconds).
 */
const INTENT_DRIFT_MS = 250;

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
   * The job's submits held back by a cool-down so far: a cool-down met now is the next, and the
   * row's wait says the grown wait the workflow keeps (`cooldownWaitMs`). Absent: none.
   */
  cooldowns?: number;
  /** When the job's submit time ends (epoch ms), which cuts a grown cool-down's wait. Absent: no cut. */
  submitBy?: number;
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
    /** As `TrackStatusInput.recordsOutcome` (absent from a `scrapeWorkflowV4` run). */
    recordsOutcome?: boolean;
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

/**
 * Reserves the job's slot (with its estimated cost) under the provider key's active-jobs limit,
 * waiting in the attempt for a release while the slot-wait plan allows; returns the store's answer
 * and the key's label.
 */
async function reserve(
  kit: ActivityKit,
  input: SubmitJobInput,
  resolved: ResolvedProvider,
): Promise<{ r: Reservation; label: string }> {
  const { job } = input;
  const scope = { label: resolved.providerKey };
  const limits = resolved.entry.limits.activeJobs;
  const started = Date.now();
  const cost = resolved.cost;
  const opts = {
    cost: { unit: cost.unit, estimate: cost.estimate(job.request), failedFree: cost.failedFree },
    ...(resolved.fairShares ? { fair: { weights: kit.deps.weights } } : {}),
    provider: { account: resolved.providerAccount, key: resolved.providerKey },
    cooldowns: [resolved.limiter.label, resolved.limiter.submitLabel],
  };
  for (;;) {
    const r = await kit.store.slots.reserveSubmit(
      job.jobId,
      scope,
      limits,
      input.afterReconcile === true,
      resubmitScheduledAt(),
      opts,
    );
    if (r.kind === 'full' || r.kind === 'reserved') sharesOf(kit).notify(r.grants);
    if (r.kind === 'full' && resolved.fairShares) sharesOf(kit).contended(scope.label);
    if (r.kind !== 'full' || Date.now() - started >= slotWaitPlan(r, 0).inAttemptMs) return { r, label: scope.label };
    await slotReleased(scope.label, Math.min(1_000, started + SLOT_WAIT_MS - Date.now()), kit.signal());
  }
}

/** Records why the job waits (its row: `status`, the API) and returns the `waiting` outcome. */
async function waiting(kit: ActivityKit, jobId: string, wait: JobWait, retryInMs: number): Promise<SubmitOutcome> {
  await kit.store.polling.recordWait(jobId, wait);
  return { kind: 'waiting', wait, retryInMs: Math.max(1, Math.round(retryInMs)) };
}

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
export async function submitJob(kit: ActivityKit, input: SubmitJobInput): Promise<SubmitOutcome> {
  const startedAt = Date.now();
  const { job } = input;
  let resolved: ResolvedProvider;
  try {
    resolved = kit.deps.providers.resolve(job.provider, job.account);
  } catch (e) {
    if (!isProviderError(e) || e.details.code !== 'NO_CREDENTIALS') throw e;
    return waiting(kit, job.jobId, { reason: 'credential', message: e.message }, CREDENTIAL_RETRY_MS);
  }
  const { r, label } = await reserve(kit, input, resolved);
  const reservedAt = Date.now(); // the intent is recorded with the reservation
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
  if (r.kind === 'over_budget') {
    const held = await sharesOf(kit).overBudget(job.jobId, r.refusal);
    return waiting(kit, job.jobId, held.wait, held.retryInMs);
  }
  if (r.kind === 'full') {
    const retryInMs = slotWaitPlan(r, Math.random()).retryMs;
    const turn = r.turnOf ? `; the free slot went to account ${r.turnOf} by the key's fair share` : '';
    return waiting(
      kit,
      job.jobId,
      {
        reason: 'slot',
        message: `${r.active} provider jobs of key ${label} are active (its limit, learned from the provider, is ${r.limit}); ${r.waiting} more wait, ${r.ahead} of them registered before this one${turn}`,
        until: new Date(Date.now() + retryInMs).toISOString(),
        detail: {
          providerKey: label,
          active: r.active,
          limit: r.limit,
          waiting: r.waiting,
          ahead: r.ahead,
          ...(r.turnOf ? { turnOf: r.turnOf } : {}),
        },
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
    await kit.store.findings.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', error);
    return { kind: 'ambiguous', error };
  }
  // The call is not aborted when the attempt gives up: an answer that arrives after the
  // attempt's timeout is still recorded (and adopted by the reconciliation that follows), so
  // a late answer never turns into a second submit.
  // A submit that goes on into its first checks claims their polling generation with the bind,
  // and the tracking deadline counts from then, when the task is known (server time, as the workflow's).
  const clock = input.track ? await kit.serverClock() : undefined;
  const claim =
    input.track && clock
      ? {
          generation: input.track.generation,
          deadlineAt: () => new Date(clock() + input.trackingDeadlineMs).toISOString(),
        }
      : undefined;
  let active = true;
  let held = false;
  const call = submitAtProvider(kit, job, {
    heartbeat: () => active,
    // The key's cool-downs, read with the reservation a moment ago (when it made it in one statement).
    seen: r.seen,
    // A submit held back by the key's cool-down or quota hold waits without calling the
    // provider; the timeline says so, so a job sitting in `submitting` shows why.
    onHeld: (waitMs, why) => {
      held = true;
      return kit.store.findings.appendEvent(job.jobId, 'submit_held', null, { message: why, waitMs }).then(
        () => undefined,
        () => undefined, // a note the store could not take never holds up the submit
      );
    },
    // The intent recorded with the reservation may be seconds before the submit leaves (held by
    // the key's cool-down, queued for its spacing or a concurrent call): the provider's lags (a
    // reconcile's proof of absence) count from when it leaves.
    onSend: () =>
      held || Date.now() - reservedAt > INTENT_DRIFT_MS ? kit.store.slots.intentSent(job.jobId) : Promise.resolve(),
  });
  const recorded = call
    .then((accepted) =>
      recordAnswer(
        kit,
        job,
        accepted,
        resolved,
        input.trackingDeadlineMs,
        { label, active: r.active, limit: r.limit },
        claim,
      ),
    )
    .then(
      (a) => ({ kind: 'accepted' as const, ...a }),
      async (e: unknown) => ({
        kind: 'error' as const,
        outcome: await recordRefusal(kit, job, e, label, r.active, r.holdsCost),
      }),
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
        a.kind === 'accepted' ? wakeIfDecidedWithout(kit.store, kit.deps.temporal, wake, startedAt) : undefined,
      ),
    );
    const error: JobError = {
      kind: 'ambiguous',
      code: 'ANSWER_PENDING',
      message: `the submit's answer did not arrive within the attempt (${Date.now() - startedAt} ms); the call goes on, and an answer that comes later is recorded and adopted`,
      at: new Date().toISOString(),
    };
    await kit.store.findings.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', error);
    return { kind: 'ambiguous', error };
  }
  if (first.kind === 'error') {
    if (first.outcome.kind === 'ambiguous') return first.outcome;
    const e = first.outcome.error;
    // Held back or refused for a while (the key's cool-down, a quota hold, a 429, a concurrency
    // refusal): nothing was created; the job waits as the provider asked, in the workflow.
    if (isProviderError(e) && e.kind === 'cooldown') {
      const retryInMs = Math.max(1_000, e.details.retryAfterMs ?? kit.deps.defaultCoolDownMs ?? 5_000);
      // The workflow waits at least the grown wait of this cool-down: the row says so.
      const waitsMs = cooldownWaitMs(
        retryInMs,
        e.details.code === HELD_LOCALLY ? 0 : (input.cooldowns ?? 0) + 1,
        input.submitBy === undefined ? 0 : input.submitBy - Date.now(),
      );
      return waiting(
        kit,
        job.jobId,
        {
          reason: 'cooldown',
          message: `submits of provider key ${label} are held back: ${e.message}`,
          until: new Date(Date.now() + waitsMs).toISOString(),
          detail: { providerKey: label, ...(e.details.code ? { code: e.details.code } : {}) },
        },
        retryInMs,
      );
    }
    throw e;
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
  // The deadline the bind recorded with its claim; else from now, when the task is known.
  const deadlineAt = first.row?.deadline_at ?? new Date(clock!() + input.trackingDeadlineMs).toISOString();
  const { outcome, last } = await pollLoop(
    kit,
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
      ...(t.recordsOutcome ? { recordsOutcome: true } : {}),
      deadlineAt,
    },
    Math.max(0, Math.min(t.budgetMs - (Date.now() - startedAt), attemptBudget(startedAt) - SETTLE_READ_MARGIN_MS)),
    first.row,
  );
  // The deadline is the tracking phase's to act on (with its wakes and its deadline policy).
  if (outcome && outcome.kind !== 'deadline') return { kind: 'finished', taskId: first.taskId, outcome, deadlineAt };
  return {
    ...accepted,
    providerStatus: last?.providerStatus ?? accepted.providerStatus,
    checks: last?.checks ?? 0,
    deadlineAt,
  };
}
