/**
 * Acquiring the provider task (workflow v2): register the job row, take a slot under the provider
 * key's adaptive limit of active jobs, submit under the job's idempotency key, record the answer;
 * after a lost answer, reconcile (idempotent replay, or the provider's list read twice across its
 * settle window) before anything is submitted again (DESIGN.md rules 1–3).
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { log } from '@temporalio/activity';
import { isFinalState } from '../model/states.js';
import type { JobError, ScrapeWorkflowInput } from '../model/types.js';
import { isProviderError, ProviderError } from '../providers/errors.js';
import { providerKeys } from '../providers/keys.js';
import { isConcurrencyRefusal } from '../providers/registry.js';
import type { Accepted } from '../providers/types.js';
import { Store } from '../store/index.js';
import { noteSubmitAccepted, noteSubmitRefused, reserveSubmit, type Reservation } from '../store/polling.js';
import type { ActivityKit } from './context.js';
import { rethrow } from './failures.js';
import { keyScope, slotReleased } from './slots.js';
import { recordReconcile } from '../observability/metrics.js';

/** Input of `submitJob`: the workflow input (to register the row) plus the submit round's flags. */
export interface SubmitJobInput {
  job: ScrapeWorkflowInput & { workflowId: string };
  /** Set when reconciliation proved that no task exists (or an operator asked to resubmit). */
  afterReconcile?: boolean;
  /** Tracking deadline (ms) recorded on the job when its task ID becomes known. */
  trackingDeadlineMs: number;
}

/** Outcome of `submitJob` (ambiguous outcomes are returned, not thrown, so the workflow moves to `unknown`). */
export type SubmitOutcome =
  | { kind: 'accepted'; taskId: string; providerStatus: string; adopted: boolean }
  | { kind: 'ambiguous'; error: JobError };

/** Outcome of `reconcileJob`. */
export type ReconcileOutcome =
  | { kind: 'found'; taskId: string; via: 'store' | 'idempotent-replay' | 'list' }
  | { kind: 'absent'; via: 'list' }
  | { kind: 'unresolvable'; reason: string };

/** Counts a reconcile outcome (`found_store`, `found_list`, `absent`, `unresolvable`, …) and returns it. */
function reconciled(out: ReconcileOutcome): ReconcileOutcome {
  recordReconcile(out.kind === 'found' ? `found_${out.via.replace('-', '_')}` : out.kind);
  return out;
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

/** Builds `submitJob`, `reconcileJob` and `adoptTask` over `kit`. */
export function submitActivities(kit: ActivityKit) {
  const { store } = kit;

  async function reserve(input: SubmitJobInput): Promise<{ r: Reservation; label: string }> {
    const { job } = input;
    const resolved = kit.deps.providers.resolve(job.provider, job.account);
    const scope = keyScope(kit.deps.providers, job.provider, job.account, resolved.limiter.label);
    const limits = resolved.entry.limits.activeJobs;
    const started = Date.now();
    for (;;) {
      const r = await reserveSubmit(store, job.jobId, scope, limits, input.afterReconcile === true);
      if (r.kind !== 'full' || Date.now() - started >= slotWaitPlan(r, 0).inAttemptMs) return { r, label: scope.label };
      await slotReleased(scope.label, Math.min(1_000, started + SLOT_WAIT_MS - Date.now()), kit.signal());
    }
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
      const { job } = input;
      try {
        const { inserted } = await store.insertJob(Store.jobRow({ ...job, taskId: null }, kit.secrets()));
        if (kit.attempt() === 1 && !input.afterReconcile) await store.appendEvent(job.jobId, 'registered', null, { workflowId: job.workflowId, url: job.request.url, inserted });
      } catch (e) {
        if (e instanceof Error && e.name === 'IdempotencyConflictStoreError') rethrow(new ProviderError('conflict', e.message, { code: 'IDEMPOTENCY_CONFLICT' }));
        throw e;
      }
      const { r, label } = await reserve(input);
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
      let accepted: Accepted;
      try {
        accepted = await kit.call(job.provider, job.account, (p) => p.adapter.submit(job.request, { apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal(), ...keys, ...p.callback(job.jobId) }));
      } catch (e) {
        // A `409` for our idempotency key (ours are derived from the job, so the same key always
        // carries the same request) says an earlier submit with it exists: as ambiguous as a lost
        // answer, and reconciled the same way — never a definite rejection.
        if (isProviderError(e) && (e.kind === 'ambiguous' || e.kind === 'conflict')) {
          const error = e.toJobError();
          await store.appendEvent(job.jobId, 'submit_ambiguous', 'unknown', { error, evidence: e.details.evidence });
          return { kind: 'ambiguous', error: { ...error, kind: 'ambiguous' } };
        }
        await store.clearSubmitIntent(job.jobId); // a definite answer: nothing was created
        if (isProviderError(e)) {
          await store.appendEvent(job.jobId, 'submit_rejected', null, { error: e.toJobError(), evidence: e.details.evidence });
          if (isConcurrencyRefusal(e)) {
            const limit = await noteSubmitRefused(store, label, r.active, e.details.statedLimit);
            log.info('submit refused for concurrency: key limit lowered', { jobId: job.jobId, label, limit });
          }
          if (e.kind === 'permanent') await kit.recordIncident(job.jobId, 'submit', e);
        }
        rethrow(e);
      }
      await kit.deps.hooks?.afterSubmitAnswered?.(job.jobId, accepted.taskId);
      const source = accepted.replayed ? 'submit (provider replayed key)' : 'submit';
      const taskId = await store.recordTaskId(job.jobId, accepted.taskId, accepted.providerStatus, source, input.trackingDeadlineMs);
      await noteSubmitAccepted(store, label, r.active);
      await kit.deps.hooks?.afterTaskRecorded?.(job.jobId, taskId);
      return { kind: 'accepted', taskId, providerStatus: accepted.providerStatus, adopted: taskId !== accepted.taskId };
    },

    /**
     * Reconciles an ambiguous submit before any new submission (rule 3): the store first, then a
     * replay under the same idempotency key where the provider honours one, then the provider's
     * list. Lists can lag (search-backed lists show a new job only after seconds), so absence is
     * proven only by a second empty read `settleMs` after a first one (which follows the last
     * submit); the first empty read ends the attempt with a BENIGN retry of `settleMs`.
     * `unresolvable`: the provider can neither replay nor list.
     */
    async reconcileJob(input: SubmitJobInput): Promise<ReconcileOutcome> {
      const { job } = input;
      const row = await store.getJob(job.jobId);
      if (row?.task_id) return reconciled({ kind: 'found', taskId: row.task_id, via: 'store' });
      const keys = providerKeys(job.account, job.key);
      const resolved = kit.deps.providers.resolve(job.provider, job.account);
      const { adapter } = resolved;
      if (adapter.capabilities.idempotency) {
        try {
          const acc = await kit.call(job.provider, job.account, (p) => p.adapter.submit(job.request, { apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal(), ...keys, ...p.callback(job.jobId) }));
          const taskId = await store.recordTaskId(job.jobId, acc.taskId, acc.providerStatus, 'reconcile: idempotent replay', input.trackingDeadlineMs);
          return reconciled({ kind: 'found', taskId, via: 'idempotent-replay' });
        } catch (e) {
          // Firecrawl-style providers answer a reused key with 409 and no job ID: fall through to listing.
          if (!(isProviderError(e) && e.kind === 'conflict' && adapter.capabilities.list)) {
            if (isProviderError(e) && e.kind === 'ambiguous') rethrow(new ProviderError('transient', e.message, e.details));
            rethrow(e);
          }
        }
      }
      if (!adapter.capabilities.list) {
        const reason = `provider "${job.provider}" has no idempotency key and no list endpoint: whether the submit created a task cannot be checked automatically`;
        await store.appendEvent(job.jobId, 'reconcile_unresolvable', 'unknown', { reason });
        return reconciled({ kind: 'unresolvable', reason });
      }
      let found: Accepted | null;
      try {
        found = await kit.call(job.provider, job.account, (p) =>
          p.adapter.findSubmitted({ apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal(), clientRef: keys.clientRef, request: job.request, submittedAfter: row?.created_at ?? new Date(0).toISOString() }),
        );
      } catch (e) {
        rethrow(e);
      }
      if (found) {
        const taskId = await store.recordTaskId(job.jobId, found.taskId, found.providerStatus, 'reconcile: found by client reference', input.trackingDeadlineMs);
        return reconciled({ kind: 'found', taskId, via: 'list' });
      }
      // Lists can lag: absence counts as proven only when a second read, at least `settleMs` after
      // an earlier empty one (itself after the last submit), still shows nothing. The server keeps
      // that spacing (the retry delay), so no clock is compared here.
      const lastSubmitAt = Date.parse(row?.submit_intent_at ?? row?.updated_at ?? new Date().toISOString());
      const earlierEmpty = (await store.timeline(job.jobId)).some((e) => e.type === 'reconcile_list_empty' && Date.parse(e.at) >= lastSubmitAt);
      await store.appendEvent(job.jobId, 'reconcile_list_empty', 'unknown', { clientRef: keys.clientRef, settleMs: resolved.settleMs, second: earlierEmpty });
      if (!earlierEmpty) {
        recordReconcile('settling');
        throw ApplicationFailure.create({
          type: 'Reconcile.settling',
          message: `the provider's list does not show the job yet; lists can lag, so it is read again in ${resolved.settleMs} ms (the settle window) before absence counts as proven`,
          nextRetryDelay: Math.max(1, resolved.settleMs),
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      await store.appendEvent(job.jobId, 'reconcile_absent', 'unknown', { clientRef: keys.clientRef });
      return reconciled({ kind: 'absent', via: 'list' });
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

    /** Adopts a task ID given by an operator for a job in `unknown`; the stored one wins if a task was recorded meanwhile. */
    async adoptTask(input: { jobId: string; taskId: string; by: string; trackingDeadlineMs?: number }): Promise<string> {
      return store.recordTaskId(input.jobId, input.taskId, null, `operator: ${input.by}`, input.trackingDeadlineMs);
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
