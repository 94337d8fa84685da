/**
 * Acquiring the provider task (workflow v2): register the job row, take a slot under the provider
 * key's adaptive limit of active jobs, submit under the job's idempotency key, record the answer;
 * after a lost answer, reconcile on evidence (`src/model/evidence.ts`: the replays and lookups the
 * provider kind declares, read after their lag) before anything is submitted again. A task is bound
 * to one job per provider account; an operator's task ID is verified before it is adopted.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { Context, log } from '@temporalio/activity';
import { decideReconcile, type Candidate, type LookupEvidence, type LookupReading, type ReconcileEvidence, type ReconcileEvidenceRecord, type ReplayReading } from '../model/evidence.js';
import { isFinalState } from '../model/states.js';
import type { JobError, ScrapeWorkflowInput } from '../model/types.js';
import { isProviderError, isQuotaExhausted, ProviderError } from '../providers/shared/errors.js';
import { providerKeys } from '../providers/shared/keys.js';
import { isConcurrencyRefusal } from '../providers/shared/limiter.js';
import type { ResolvedProvider } from '../providers/registry.js';
import type { Accepted } from '../providers/adapter.js';
import { Store, type JobRow } from '../store/index.js';
import { noteSubmitAccepted, noteSubmitRefused, reserveSubmit, type Reservation } from '../store/polling.js';
import { detachCall, type ActivityKit } from './context.js';
import { rethrow } from './failures.js';
import { slotReleased } from './slots.js';
import { trackActivities } from './track.js';
import type { PollOutcome, PollSchedule } from './poll.js';
import { listDeliveries } from '../store/webhooks.js';
import { recordReconcile } from '../observability/metrics.js';

/** Input of `submitJob`: the workflow input (to register the row) plus the submit round's flags. */
export interface SubmitJobInput {
  job: ScrapeWorkflowInput & { workflowId: string };
  /** Set when reconciliation proved that no task exists (or an operator asked to resubmit). */
  afterReconcile?: boolean;
  /** Tracking deadline (ms) recorded on the job when its task ID becomes known. */
  trackingDeadlineMs: number;
  /**
   * Continue an accepted submit into the first status checks, in this same attempt, for at most
   * `budgetMs` (ms): a job that finishes within it lives its whole life in one activity. Checks
   * follow `schedule` from `firstDelayMs`, claimed for polling `generation`. Absent: submit only.
   */
  track?: { generation: number; schedule: PollSchedule; firstDelayMs: number; notFoundLimit: number; budgetMs: number };
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
  | { kind: 'ambiguous'; error: JobError };

/**
 * Outcome of `reconcileJob`: `found` (adopt the task), `absent` (proven: submit again under the
 * same key) or `unresolvable` (the evidence cannot decide: the job waits in `unknown` for an
 * operator, with `evidence` showing what was read).
 */
export type ReconcileOutcome =
  | { kind: 'found'; taskId: string; via: 'store' | 'idempotent-replay' | 'list'; lookup?: string }
  | { kind: 'absent'; via: 'list' }
  | { kind: 'unresolvable'; reason: string; evidence?: ReconcileEvidenceRecord };

/** Outcome of `adoptTask`: the task bound to the job, or why an operator's task ID was refused (nothing changed). */
export type AdoptOutcome = string | { refused: string };

/** Counts a reconcile outcome (`found_store`, `found_list`, `absent`, `unresolvable`, …) and returns it. */
function reconciled(out: ReconcileOutcome): ReconcileOutcome {
  recordReconcile(out.kind === 'found' ? `found_${out.via.replace('-', '_')}` : out.kind);
  return out;
}

/**
 * The job's own webhook deliveries as a lookup: a delivery the receiver verified for this job (its
 * signature and our echoed reference, or the per-job token) that names a task is a strong match.
 * Deliveries come only on the provider's events, so they never prove absence.
 */
const DELIVERIES_LOOKUP: LookupEvidence = { name: 'webhook deliveries of this job', shows: [], finishedForMs: null, lagMs: 0, match: 'strong' };

/** `evidence` with the job's webhook deliveries as a lookup when the entry has webhooks. */
function withDeliveries(evidence: ReconcileEvidence, webhooks: boolean): ReconcileEvidence {
  return webhooks ? { ...evidence, lookups: [...evidence.lookups, DELIVERIES_LOOKUP] } : evidence;
}

/** The HTTP timeout of one submit of `resolved`'s entry (its `submitTimeoutMs`, else 30 s), ms: until it has passed, a submit's answer may still come. */
function submitTimeoutOf(resolved: ResolvedProvider): number {
  const t = (resolved.entry as { submitTimeoutMs?: unknown }).submitTimeoutMs;
  return typeof t === 'number' && t > 0 ? t : 30_000;
}

/** Whether two URLs are the same once serialised (WHATWG); unparsable ones compare as written. */
function sameUrl(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      return new URL(u).href;
    } catch {
      return u;
    }
  };
  return norm(a) === norm(b);
}

/** Longest in-attempt wait for a free slot under the key's active-jobs limit, ms; then the attempt is retried later. */
const SLOT_WAIT_MS = 5_000;

/**
 * When a submit finds no free slot: how long it may wait inside the attempt (ms; woken at once when
 * a job of the key ends in this process) and, failing that, the server-side retry delay (ms).
 *
 * A waiting attempt holds one of the worker's activity slots, and every attempt is an activity
 * task the server dispatches. With a few waiters (≤ the key's limit) an in-attempt wait gives the
 * freed slot to a waiter within milliseconds. With thousands (a 10,000-row batch against a
 * provider that runs 20 jobs at a time) in-attempt waits would fill the worker's activity slots
 * and starve the status checks of the very jobs holding the provider's slots, and short retries
 * would flood the server; so a crowded key returns at once and retries after a delay that grows
 * with the queue: `waiting / limit × 2 s`, within 3 s … 5 min, jittered ×0.5–1.5 (`random` in
 * [0, 1)). The retry rate per key then stays near `limit / 2 s` however long the queue is.
 */
export function slotWaitPlan(full: { limit: number; waiting: number }, random: number): { inAttemptMs: number; retryMs: number } {
  const crowded = full.waiting > full.limit;
  const base = Math.min(300_000, Math.max(3_000, (full.waiting / Math.max(1, full.limit)) * 2_000));
  return { inAttemptMs: crowded ? 0 : SLOT_WAIT_MS, retryMs: Math.round(base * (0.5 + random)) };
}

/** How long before its start-to-close timeout an attempt stops waiting for a submit's answer, ms. */
const GIVE_UP_MARGIN_MS = 1_000;

/** Time a reconcile attempt keeps, after a wait in it, to read the lookups once more and answer, ms. */
const SETTLE_READ_MARGIN_MS = 5_000;

/** How often a waiting reconcile re-reads the job row for a late answer, ms. */
const STORE_WATCH_MS = 500;

/** What is left of the current activity attempt's start-to-close time, ms (Infinity outside an activity). */
function attemptBudget(startedAt: number): number {
  try {
    const ms = Context.current().info.startToCloseTimeoutMs;
    return ms > 0 ? startedAt + ms - Date.now() : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * Resolves with `gave_up` shortly before the current activity attempt's start-to-close timeout
 * (counted from `startedAt`, epoch ms, when the attempt began),
 * or when the attempt is cancelled (never outside an activity). `cancel()` clears the timer.
 */
function attemptEnds(startedAt: number): { promise: Promise<'gave_up'>; cancel(): void } {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    return { promise: new Promise<'gave_up'>(() => undefined), cancel: () => undefined };
  }
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<'gave_up'>((resolve) => {
    const ms = ctx.info.startToCloseTimeoutMs;
    if (ms > 0) timer = setTimeout(() => resolve('gave_up'), Math.max(1, startedAt + ms - GIVE_UP_MARGIN_MS - Date.now()));
    ctx.cancellationSignal.addEventListener('abort', () => resolve('gave_up'), { once: true });
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** Builds `submitJob`, `reconcileJob` and `adoptTask` over `kit`. */
export function submitActivities(kit: ActivityKit) {
  const { store } = kit;
  const tracking = trackActivities(kit);

  async function reserve(input: SubmitJobInput, resolved: ResolvedProvider): Promise<{ r: Reservation; label: string }> {
    const { job } = input;
    const scope = { label: resolved.providerKey };
    const limits = resolved.entry.limits.activeJobs;
    const started = Date.now();
    for (;;) {
      const r = await reserveSubmit(store, job.jobId, scope, limits, input.afterReconcile === true);
      if (r.kind !== 'full' || Date.now() - started >= slotWaitPlan(r, 0).inAttemptMs) return { r, label: scope.label };
      await slotReleased(scope.label, Math.min(1_000, started + SLOT_WAIT_MS - Date.now()), kit.signal());
    }
  }

  /**
   * What this submit round already knows from replays: a probe an earlier attempt of the round
   * made (`reconcile_replay`), else a refusal of the round's own submit as a reused key (a
   * `409` for our idempotency key: a job with it exists). Undefined when neither.
   */
  async function replaySoFar(jobId: string, lastIntent: number): Promise<ReplayReading | undefined> {
    const round = (await store.timeline(jobId)).filter((e) => Date.parse(e.at) >= lastIntent);
    const probe = round.filter((e) => e.type === 'reconcile_replay').at(-1);
    if (probe?.detail) return JSON.parse(probe.detail) as ReplayReading;
    for (const e of round) {
      if (e.type !== 'submit_ambiguous' || !e.detail) continue;
      const d = JSON.parse(e.detail) as { error?: JobError } & Partial<JobError>;
      const error = d.error ?? (d as JobError);
      if (error.kind === 'conflict') return { kind: 'conflict', detail: `${error.httpStatus ?? ''} ${error.message}`.trim() };
    }
    return undefined;
  }

  /**
   * Sends one replay under the same key (kinds whose key returns the same task: a probe that
   * costs no second job) and records it (`reconcile_replay`). A lost replay is retried (transient).
   */
  async function probeReplay(job: SubmitJobInput['job'], row: JobRow, budgetMs: number): Promise<ReplayReading | undefined> {
    const keys = providerKeys(job.account, job.key);
    const call = kit
      .call(job.provider, job.account, (p) => p.adapter.submit(job.request, { apiKey: p.apiKey, secrets: kit.secrets(), ...keys, ...p.callback(job.jobId) }), { phase: 'submit' })
      .then(
        (acc): ReplayReading => ({ kind: 'same-task', taskId: acc.taskId, providerStatus: acc.providerStatus }),
        (e: unknown): ReplayReading | Error => {
          if (isProviderError(e) && e.kind === 'conflict') return { kind: 'conflict', detail: `${e.details.httpStatus ?? ''} ${e.message}`.trim() };
          return e instanceof Error ? e : new Error(String(e));
        },
      );
    // The replay is not aborted when the attempt runs short: its answer (the same task) is still
    // recorded when it comes, and this attempt goes on with what the lookups showed.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(1, budgetMs - SETTLE_READ_MARGIN_MS))));
    const first = await Promise.race([call, late]);
    clearTimeout(timer);
    if (first === 'late') {
      detachCall(call.then((r) => (r instanceof Error || r.kind !== 'same-task' ? undefined : store.bindTask({ jobId: job.jobId, taskId: r.taskId, providerStatus: r.providerStatus, source: 'reconcile: idempotent replay under our key (answered late)', providerAccount: kit.deps.providers.resolve(job.provider, job.account).providerAccount }))));
      return undefined;
    }
    if (first instanceof Error) {
      if (isProviderError(first) && first.kind === 'ambiguous') rethrow(new ProviderError('transient', `the replay's answer was lost too: ${first.message}`, first.details));
      rethrow(first);
    }
    await store.appendEvent(job.jobId, 'reconcile_replay', row.state, first);
    return first;
  }

  /** Watches the store for `waitMs` (ms) for a task recorded on the job (a late submit answer); returns it, or undefined. */
  async function watchForTask(jobId: string, waitMs: number): Promise<string | undefined> {
    const until = Date.now() + waitMs;
    for (;;) {
      const row = await store.getJob(jobId);
      if (row?.task_id) return row.task_id;
      const left = until - Date.now();
      if (left <= 0 || kit.signal()?.aborted) return undefined;
      await new Promise((r) => setTimeout(r, Math.min(STORE_WATCH_MS, left)));
    }
  }

  /** What the verified webhook deliveries of this job say: each task they name is a strong candidate. */
  async function deliveriesReading(jobId: string): Promise<LookupReading> {
    const rows = await listDeliveries(store, { jobId, limit: 50 });
    const candidates = [...new Map(rows.filter((d) => d.task_id).map((d) => [d.task_id!, d])).values()].map(
      (d): Candidate => ({ taskId: d.task_id!, providerStatus: d.provider_status ?? 'delivered', match: 'strong', why: `a webhook delivery verified for this job (${d.event_type}) names it` }),
    );
    return { lookup: DELIVERIES_LOOKUP.name, available: true, complete: true, candidates, at: new Date().toISOString() };
  }

  /** Records a submit's answer: binds the task to the job (a collision is reported, never retried) and grows the key's limit. */
  async function recordAnswer(job: SubmitJobInput['job'], accepted: Accepted, resolved: ResolvedProvider, trackingDeadlineMs: number, label: string, activeBefore: number): Promise<{ taskId: string; providerStatus: string; answered: string }> {
    await kit.deps.hooks?.afterSubmitAnswered?.(job.jobId, accepted.taskId);
    const source = accepted.replayed ? 'submit (provider replayed key)' : 'submit';
    const bound = await store.bindTask({ jobId: job.jobId, taskId: accepted.taskId, providerStatus: accepted.providerStatus, source, trackingDeadlineMs, providerAccount: resolved.providerAccount });
    if (bound.kind === 'collision') {
      throw new ProviderError('conflict', `the provider answered our submit with task ${accepted.taskId}, which is bound to job ${bound.boundTo}; a task belongs to one job`, { code: 'TASK_COLLISION' });
    }
    await noteSubmitAccepted(store, label, activeBefore);
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
  async function recordRefusal(job: SubmitJobInput['job'], e: unknown, label: string, activeBefore: number): Promise<{ kind: 'ambiguous'; error: JobError } | { kind: 'error'; error: unknown }> {
    if (isProviderError(e) && (e.kind === 'ambiguous' || (e.kind === 'conflict' && e.details.code !== 'TASK_COLLISION'))) {
      const error = e.toJobError();
      await store.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', { error, evidence: e.details.evidence });
      return { kind: 'ambiguous', error: { ...error, kind: 'ambiguous' } };
    }
    if (!(isProviderError(e) && e.details.code === 'TASK_COLLISION')) await store.clearSubmitIntent(job.jobId);
    if (isProviderError(e)) {
      await store.appendEvent(job.jobId, 'submit_rejected', null, { error: e.toJobError(), evidence: e.details.evidence });
      if (isConcurrencyRefusal(e)) {
        const limit = await noteSubmitRefused(store, label, activeBefore, e.details.statedLimit);
        log.info('submit refused for concurrency: key limit lowered', { jobId: job.jobId, label, limit });
      }
      if (e.kind === 'permanent' || e.kind === 'conflict') await kit.recordIncident(job.jobId, 'submit', e);
      if (isQuotaExhausted(e)) {
        // The limiter has put the hold in place (shared through the store): the timeline says for how long.
        const heldForMs = await kit.deps.providers.resolve(job.provider, job.account).limiter.heldForMs('submit');
        await store.appendEvent(job.jobId, 'quota_exhausted', null, { providerKey: label, submitsHeldForMs: heldForMs, error: e.toJobError() });
        log.warn('submit refused: the provider account’s quota or credits are used up; the key’s submits are held', { jobId: job.jobId, label, heldForMs });
      }
    }
    return { kind: 'error', error: e };
  }

  return {
    /**
     * Registers the job row (rule 1; a repeat inserts nothing, another fingerprint under the same
     * key throws a non-retryable `Provider.conflict`), then submits under the job's idempotency
     * key once a slot under the provider key's active-jobs limit is free. The intent is recorded
     * before the call and the answer right after it: a retried attempt adopts an earlier answer,
     * and one that finds an earlier intent without an answer returns `ambiguous`, as does a call
     * whose outcome is unknown. A concurrency refusal halves the key's limit (the provider's stated
     * limit becomes its ceiling) and retries after the provider's wait; permanent rejections throw
     * non-retryable; no free slot ends the attempt with a BENIGN retry.
     */
    async submitJob(input: SubmitJobInput): Promise<SubmitOutcome> {
      const startedAt = Date.now();
      const { job } = input;
      try {
        const { inserted } = await store.insertJob(Store.jobRow({ ...job, taskId: null }, kit.secrets()));
        if (kit.attempt() === 1 && !input.afterReconcile) await store.appendEvent(job.jobId, 'registered', null, { workflowId: job.workflowId, url: job.request.url, inserted });
      } catch (e) {
        if (e instanceof Error && e.name === 'IdempotencyConflictStoreError') rethrow(new ProviderError('conflict', e.message, { code: 'IDEMPOTENCY_CONFLICT' }));
        throw e;
      }
      const resolved = kit.deps.providers.resolve(job.provider, job.account);
      await store.setProviderAccount(job.jobId, resolved.providerAccount, resolved.providerKey);
      const { r, label } = await reserve(input, resolved);
      if (r.kind === 'missing') throw new Error(`job ${job.jobId} is not registered`);
      if (r.kind === 'full') {
        throw ApplicationFailure.create({
          type: 'Submit.waitingForSlot',
          message: `${r.active} provider jobs of key ${label} are active (learned limit ${r.limit}) and ${r.waiting} more wait; waiting for one to finish`,
          nextRetryDelay: slotWaitPlan(r, Math.random()).retryMs,
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      if (r.kind === 'known') {
        if (r.before.task_id) {
          log.info('submit: adopting the task recorded by an earlier attempt', { jobId: job.jobId, taskId: r.before.task_id });
          return { kind: 'accepted', taskId: r.before.task_id, providerStatus: r.before.provider_status ?? 'unknown', adopted: true };
        }
        const error: JobError = {
          kind: 'ambiguous',
          code: 'UNANSWERED_INTENT',
          message: `an earlier submit attempt (intent recorded at ${r.before.submit_intent_at}) ended without a recorded answer; the provider may have created the task`,
          at: new Date().toISOString(),
        };
        await store.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', error);
        return { kind: 'ambiguous', error };
      }
      const keys = providerKeys(job.account, job.key);
      // The call is not aborted when the attempt gives up: an answer that arrives after the
      // attempt's timeout is still recorded (and adopted by the reconciliation that follows), so
      // a late answer never turns into a second submit.
      let active = true;
      const call = kit.call(
        job.provider,
        job.account,
        (p) => p.adapter.submit(job.request, { apiKey: p.apiKey, secrets: kit.secrets(), ...keys, ...p.callback(job.jobId) }),
        { heartbeat: () => active, phase: 'submit' },
      );
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
        detachCall(recorded); // a stopping worker waits for the answer before it closes the store
        const error: JobError = {
          kind: 'ambiguous',
          code: 'ANSWER_PENDING',
          message: `the submit's answer did not arrive within the attempt (${Date.now() - startedAt} ms); the call goes on, and an answer that comes later is recorded and adopted`,
          at: new Date().toISOString(),
        };
        await store.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', error);
        return { kind: 'ambiguous', error };
      }
      if (first.kind === 'error') {
        if (first.outcome.kind === 'ambiguous') return first.outcome;
        rethrow(first.outcome.error);
      }
      const accepted: Extract<SubmitOutcome, { kind: 'accepted' }> = { kind: 'accepted', taskId: first.taskId, providerStatus: first.providerStatus, adopted: first.taskId !== first.answered };
      if (!input.track || first.taskId !== first.answered) return accepted;
      // A fast job's whole life in this attempt: its first checks, and the result written, here.
      const t = input.track;
      // The tracking deadline counts from now, when the task is known (server time, as the workflow's).
      const clock = await kit.serverClock();
      const deadlineAt = new Date(clock() + input.trackingDeadlineMs).toISOString();
      const { outcome, last } = await tracking.pollLoop(
        {
          jobId: job.jobId, provider: job.provider, account: job.account, taskId: first.taskId, url: job.request.url, request: job.request,
          generation: t.generation, schedule: t.schedule, firstDelayMs: t.firstDelayMs, notFoundLimit: t.notFoundLimit, mode: 'track', deadlineAt,
        },
        Math.max(0, Math.min(t.budgetMs - (Date.now() - startedAt), attemptBudget(startedAt) - SETTLE_READ_MARGIN_MS)),
      );
      // The deadline is the tracking phase's to act on (with its wakes and its deadline policy).
      if (outcome && outcome.kind !== 'deadline') return { kind: 'finished', taskId: first.taskId, outcome, deadlineAt };
      return { ...accepted, providerStatus: last?.providerStatus ?? accepted.providerStatus, checks: last?.checks ?? 0, deadlineAt };
    },

    /**
     * Reconciles an ambiguous submit before any new submission, on evidence only: the store first
     * (an answer recorded by an earlier attempt, however late), then — where the kind declares a
     * replay that answers — one replay under the same key per submit round, then every lookup the
     * kind declares; {@link decideReconcile} decides. `found` binds the task (a task bound to
     * another job of the same provider account is never adopted: that candidate is not ours, and
     * the collision is in the timeline); `absent` only when lookups able to show the job in every
     * state it could be in were read after their lag; a decision that a later read could still
     * change ends the attempt with a BENIGN retry at that time (the lag, or the submit's own
     * timeout, so that a late answer is seen first); anything else is `unresolvable` with the
     * evidence, for an operator. Every reading is in the timeline (`reconcile_*` events).
     */
    async reconcileJob(input: SubmitJobInput): Promise<ReconcileOutcome> {
      const startedAt = Date.now();
      const { job } = input;
      const row = await store.getJob(job.jobId);
      if (row?.task_id) return reconciled({ kind: 'found', taskId: row.task_id, via: 'store' });
      if (!row) throw new Error(`job ${job.jobId} is not registered`);
      const keys = providerKeys(job.account, job.key);
      const resolved = kit.deps.providers.resolve(job.provider, job.account);
      await store.setProviderAccount(job.jobId, resolved.providerAccount, resolved.providerKey);
      const evidence = withDeliveries(resolved.adapter.evidence, resolved.entry.webhook !== undefined);
      const lastIntent = Date.parse(row.submit_intent_at ?? row.created_at);
      const createdBy = lastIntent + submitTimeoutOf(resolved);
      let replay = await replaySoFar(job.jobId, lastIntent);
      for (;;) {
        const readings: LookupReading[] = resolved.adapter.evidence.lookups.length
          ? await kit.call(job.provider, job.account, (p) => p.adapter.findSubmitted({ apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal(), clientRef: keys.clientRef, request: job.request, submittedAfter: row.created_at }))
          : [];
        if (evidence !== resolved.adapter.evidence) readings.push(await deliveriesReading(job.jobId));
        const again = await store.getJob(job.jobId); // an answer may have landed while we read
        if (again?.task_id) return reconciled({ kind: 'found', taskId: again.task_id, via: 'store' });
        const now = Date.now();
        // This round already waited out the lags (in this attempt, or an earlier one whose retry delay the server kept).
        const settled = (await store.timeline(job.jobId)).some((e) => e.type === 'reconcile_settling' && Date.parse(e.at) >= lastIntent);
        const decide = async () => {
          const taskIds = [...readings.flatMap((r) => r.candidates.map((c) => c.taskId)), ...(replay && replay.kind !== 'conflict' ? [replay.taskId] : [])];
          const boundElsewhere = await store.tasksBoundElsewhere({ providerAccount: resolved.providerAccount, provider: job.provider, taskIds, exceptJobId: job.jobId });
          return decideReconcile({ evidence, lagOverrideMs: resolved.entry.reconcile?.settleMs, readings, replay, createdBy, firstSubmitAt: Date.parse(row.created_at), now, boundElsewhere, settled });
        };
        let d = await decide();
        // Lookups first; a replay only where the kind's key returns the same task (a probe that can
        // create nothing) and the lookups could not decide. A key that only refuses (`409`) is never
        // probed: a provider that misses it (a replica lag) would start a second paid job.
        if (evidence.replay === 'same-task' && !replay && d.kind !== 'found' && d.kind !== 'absent') {
          replay = await probeReplay(job, row, attemptBudget(startedAt));
          if (replay) d = await decide();
        }
        // Until the submit's own timeout has passed its answer may still come: nothing but a found
        // task is concluded before then.
        if (d.kind !== 'found' && !settled && now < createdBy) d = { kind: 'settling', readAt: Math.max(createdBy, d.kind === 'settling' ? d.readAt : 0), evidence: d.evidence };
        if (d.evidence.collisions.length) await store.appendEvent(job.jobId, 'task_collision', 'unknown', { collisions: d.evidence.collisions });
        switch (d.kind) {
          case 'found': {
            const bound = await store.bindTask({ jobId: job.jobId, taskId: d.taskId, providerStatus: d.providerStatus, source: `reconcile: ${d.via === 'replay' ? 'idempotent replay under our key' : `found by client reference in ${d.lookup}`}`, trackingDeadlineMs: input.trackingDeadlineMs, providerAccount: resolved.providerAccount });
            if (bound.kind === 'collision') {
              const reason = `the task found (${d.taskId}) was bound to job ${bound.boundTo} meanwhile; it is not this job's`;
              await store.appendEvent(job.jobId, 'reconcile_undecided', 'unknown', { reason, evidence: d.evidence });
              return reconciled({ kind: 'unresolvable', reason, evidence: d.evidence });
            }
            await store.appendEvent(job.jobId, 'reconcile_found', 'pending', { taskId: bound.taskId, via: d.via, lookup: d.lookup, note: d.note, evidence: d.evidence });
            return reconciled({ kind: 'found', taskId: bound.taskId, via: d.via === 'replay' ? 'idempotent-replay' : 'list', lookup: d.lookup });
          }
          case 'absent':
            await store.appendEvent(job.jobId, 'reconcile_absent', 'unknown', { clientRef: keys.clientRef, evidence: d.evidence });
            return reconciled({ kind: 'absent', via: 'list' });
          case 'settling': {
            const waitMs = Math.max(1_000, d.readAt - now);
            await store.appendEvent(job.jobId, 'reconcile_settling', 'unknown', { readAgainInMs: waitMs, evidence: d.evidence });
            recordReconcile('settling');
            // A wait that fits in this attempt is spent here watching the store, so that a late
            // answer recorded meanwhile is adopted at once; a longer one is the server's retry delay.
            if (waitMs <= Math.min(kit.deps.inlineSettleMs ?? Number.POSITIVE_INFINITY, attemptBudget(startedAt) - SETTLE_READ_MARGIN_MS)) {
              const recorded = await watchForTask(job.jobId, waitMs);
              if (recorded) return reconciled({ kind: 'found', taskId: recorded, via: 'store' });
              continue;
            }
            throw ApplicationFailure.create({
              type: 'Reconcile.settling',
              message: `nothing found yet; the provider's lookups can lag and the submit may still be answered, so they are read again in ${waitMs} ms before anything is concluded`,
              nextRetryDelay: waitMs,
              category: ApplicationFailureCategory.BENIGN,
            });
          }
          case 'undecided':
            await store.appendEvent(job.jobId, 'reconcile_undecided', 'unknown', { reason: d.reason, evidence: d.evidence });
            return reconciled({ kind: 'unresolvable', reason: d.reason, evidence: d.evidence });
        }
      }
    },

    /**
     * What the store knows of the job's submits, for a cancel that interrupted the acquisition: the
     * recorded task ID, and whether a submit attempt's intent is still unanswered (then a task may
     * exist and the cancel path reconciles first).
     */
    async findRecordedTask(input: { jobId: string }): Promise<{ taskId: string | null; intentOpen: boolean }> {
      const row = await store.getJob(input.jobId);
      return { taskId: row?.task_id ?? null, intentOpen: !row?.task_id && row?.submit_intent_at != null };
    },

    /**
     * Adopts a task ID an operator gave for a job in `unknown` (`resolve`), after checking it:
     * the task is not bound to another job of the same provider account (any entry reaching it);
     * the job's own credential can read it where the provider checks credentials (a refusal or a
     * `404` refuses it); and where the provider's record says what the task is for, that is this
     * job (our reference, or the URL). Returns the bound task ID (the stored one when a task was
     * recorded meanwhile) or `{refused}` with the reason; either way the attempt is in the
     * timeline (`operator_resolve`: who, when, the task and the evidence).
     */
    async adoptTask(input: { jobId: string; taskId: string; by: string; trackingDeadlineMs?: number }): Promise<AdoptOutcome> {
      const row = await store.getJob(input.jobId);
      if (!row) throw new Error(`job ${input.jobId} is not registered`);
      if (row.task_id) return row.task_id;
      const resolved = kit.deps.providers.resolve(row.provider, row.account);
      const audit = (outcome: string, evidence: Record<string, unknown>) => store.appendEvent(input.jobId, 'operator_resolve', row.state, { by: input.by, at: new Date().toISOString(), taskId: input.taskId, outcome, evidence });
      const bound = await store.tasksBoundElsewhere({ providerAccount: resolved.providerAccount, provider: row.provider, taskIds: [input.taskId], exceptJobId: input.jobId });
      const other = bound.get(input.taskId);
      if (other) {
        const refused = `task ${input.taskId} is bound to another job (provider account ${resolved.providerAccount}); a task belongs to one job`;
        await audit('refused', { boundTo: other });
        return { refused };
      }
      let seen;
      try {
        seen = await kit.call(row.provider, row.account, (p) => p.adapter.status(input.taskId, { apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal() }));
      } catch (e) {
        if (!isProviderError(e) || !['not_found', 'permanent', 'expired', 'conflict'].includes(e.kind)) rethrow(e);
        const refused = `the job's own credential cannot read task ${input.taskId} (${e.message})`;
        await audit('refused', { statusRead: e.toJobError() });
        return { refused };
      }
      const ref = providerKeys(row.account, row.idem_key).clientRef;
      const subject = seen.subject;
      // `clientRef: null`: the provider echoes our reference and this task carries none of ours.
      const mismatch =
        subject?.clientRef !== undefined && subject.clientRef !== ref
          ? `the provider's record of task ${input.taskId} carries ${subject.clientRef === null ? 'no client reference of ours' : 'another client reference'}, not this job's`
          : subject?.url && !sameUrl(subject.url, row.url)
            ? `task ${input.taskId} is for ${subject.url}, not this job's ${row.url}`
            : undefined;
      const evidence = { statusRead: { providerStatus: seen.providerStatus, state: seen.state }, subject: subject ?? null, providerAccount: resolved.providerAccount };
      if (mismatch) {
        await audit('refused', evidence);
        return { refused: mismatch };
      }
      const out = await store.bindTask({ jobId: input.jobId, taskId: input.taskId, providerStatus: seen.providerStatus, source: `operator: ${input.by}`, trackingDeadlineMs: input.trackingDeadlineMs, providerAccount: resolved.providerAccount });
      if (out.kind === 'collision') {
        await audit('refused', { ...evidence, boundTo: out.boundTo });
        return { refused: `task ${input.taskId} was bound to job ${out.boundTo} meanwhile; a task belongs to one job` };
      }
      await audit('adopted', evidence);
      return out.taskId;
    },

    /**
     * Registers the row of a resumed job and moves it back to `pending` unless it finished
     * meanwhile (a stale resume must not reopen a finished job). Returns the stored task ID and
     * state. Throws a non-retryable `Provider.conflict` when the row holds another task.
     */
    async registerJob(input: ScrapeWorkflowInput & { workflowId: string; deadlineAt?: string }): Promise<{ taskId: string | null; state: string }> {
      try {
        const row = await store.registerJob(Store.jobRow({ ...input, taskId: input.resume?.taskId, deadlineAt: input.deadlineAt }, kit.secrets()));
        if (input.resume && row.task_id && row.task_id !== input.resume.taskId) {
          throw new ProviderError('conflict', `resume asked for task ${input.resume.taskId} but job ${input.jobId} holds task ${row.task_id}`, { code: 'TASK_MISMATCH' });
        }
        if (input.resume) {
          if (isFinalState(row.state) && row.state !== 'tracking_interrupted') return { taskId: row.task_id, state: row.state };
          await store.transition(input.jobId, 'pending', { force: true, detail: { resumed: true, taskId: row.task_id } });
        } else {
          await store.appendEvent(input.jobId, 'registered', row.state, { workflowId: input.workflowId, url: input.request.url });
        }
        return { taskId: row.task_id, state: row.state };
      } catch (e) {
        if (e instanceof Error && e.name === 'IdempotencyConflictStoreError') rethrow(new ProviderError('conflict', e.message, { code: 'IDEMPOTENCY_CONFLICT' }));
        rethrow(e);
      }
    },
  };
}
