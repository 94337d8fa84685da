/**
 * All I/O of the scrape workflow: provider calls and result-store writes. Built from injected
 * dependencies so that unit tests can give fakes and the worker gives the real store and
 * provider registry.
 *
 * Every activity is safe to retry: writes are idempotent (keyed by job ID or by
 * (provider, task ID)), and the submit activity records its intent and its answer in the store so
 * that a retried attempt adopts an earlier answer instead of submitting again.
 */
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { deterministicUuid } from '../lib/hash.js';
import { sanitizeBody } from '../lib/sanitize.js';
import { isFinalState, type JobState } from '../model/states.js';
import type { CancelReport, JobError, ScrapeWorkflowInput } from '../model/types.js';
import { isProviderError, ProviderError } from '../providers/errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { DEFAULT_RESULT_LIMITS, type Accepted, type CancelAnswer, type StatusObservation } from '../providers/types.js';
import { Store } from '../store/index.js';
import { rethrow, toFailure } from './failures.js';

/** Dependencies of {@link createActivities}. */
export interface ActivityDeps {
  store: Store;
  providers: ProviderRegistry;
  /** How long result payloads are kept, ms (null: forever). */
  resultRetentionMs: number | null;
  /** Cool-down applied after a 429 that names no wait, ms (default 5000). */
  defaultCoolDownMs?: number;
  /**
   * Test hooks at crash-relevant points (used by the failure tests to SIGKILL a worker at an
   * exact moment). Never set in production.
   */
  hooks?: {
    afterSubmitAnswered?: (jobId: string, taskId: string) => void | Promise<void>;
    afterTaskRecorded?: (jobId: string, taskId: string) => void | Promise<void>;
    afterResultWritten?: (jobId: string, resultId: string) => void | Promise<void>;
    /** Called after the result was read from the provider and before the store write (tests hold it here). */
    beforeResultWrite?: (jobId: string, taskId: string) => void | Promise<void>;
  };
}

/** Reference to the job and its provider task, passed to most activities. */
export interface TaskRef {
  jobId: string;
  provider: string;
  account: string;
  taskId: string;
}

/** Input of `submitScrape` and `reconcileSubmit`. */
export interface SubmitInput {
  jobId: string;
  provider: string;
  account: string;
  key: string;
  request: ScrapeWorkflowInput['request'];
  /**
   * Set when reconciliation proved that no task exists (or an operator asked to resubmit): an
   * earlier unanswered intent then does not make this attempt ambiguous.
   */
  afterReconcile?: boolean;
  /** Tracking deadline (ms) recorded on the job when its task ID becomes known. */
  trackingDeadlineMs?: number;
}

/** Outcome of `submitScrape`. Ambiguous outcomes are returned, not thrown, so the workflow can move to `unknown`. */
export type SubmitOutcome =
  | { kind: 'accepted'; taskId: string; providerStatus: string; adopted: boolean }
  | { kind: 'ambiguous'; error: JobError };

/** Outcome of `reconcileSubmit`. */
export type ReconcileOutcome =
  | { kind: 'found'; taskId: string; via: 'store' | 'idempotent-replay' | 'list' }
  | { kind: 'absent'; via: 'list' }
  | { kind: 'unresolvable'; reason: string };

/** Outcome of `checkStatus`: an observation, or the provider's `404` for the task. */
export type StatusOutcome = ({ kind: 'status' } & StatusObservation) | { kind: 'not_found'; error: JobError };

/** What `saveResult` wrote (a summary; the payload stays in the store, not in history). */
export interface SavedResult {
  resultId: string;
  inserted: boolean;
  title: string | null;
  httpStatus: number | null;
  finalUrl: string | null;
}

/** Outcome of `cancelTask`. */
export type CancelCallOutcome = ({ kind: 'answered' } & CancelAnswer) | { kind: 'unsupported'; error: JobError; reachedProvider: boolean };

/** Idempotency key and client reference sent to the provider for (account, key). */
export function providerKeys(account: string, key: string): { idempotencyKey: string; clientRef: string } {
  const idempotencyKey = deterministicUuid('scrape-idempotency', account, key);
  return { idempotencyKey, clientRef: idempotencyKey };
}

/** Builds the activity functions over `deps`. */
export function createActivities(deps: ActivityDeps) {
  const { store, providers } = deps;
  const coolDefault = deps.defaultCoolDownMs ?? 5_000;
  const secrets = () => providers.allSecrets();

  async function call<T>(provider: string, account: string, fn: (r: ReturnType<ProviderRegistry['resolve']>) => Promise<T>): Promise<T> {
    const resolved = providers.resolve(provider, account);
    // Short shared cool-downs are waited out inside the attempt (up to a third of its timeout,
    // at most 10 s); longer ones end the attempt with the provider's wait as the retry delay.
    let maxWaitMs = 0;
    try {
      maxWaitMs = Math.min(10_000, Math.floor(Context.current().info.startToCloseTimeoutMs / 3));
    } catch {
      maxWaitMs = 0; // not inside an activity (tests calling directly)
    }
    return resolved.limiter.run(() => fn(resolved), coolDefault, maxWaitMs);
  }

  function signal(): AbortSignal | undefined {
    try {
      return Context.current().cancellationSignal;
    } catch {
      return undefined;
    }
  }

  async function recordIncident(jobId: string, phase: string, e: ProviderError): Promise<void> {
    const ev = e.details.evidence;
    await store.recordIncident({ jobId, phase, kind: e.kind, message: e.message, code: e.details.code, endpoint: ev?.endpoint, httpStatus: e.details.httpStatus ?? ev?.httpStatus, request: ev?.request, response: ev?.body, headers: ev?.headers, at: ev?.at });
  }

  function attempt(): number {
    try {
      return Context.current().info.attempt;
    } catch {
      return 1;
    }
  }

  return {
    /**
     * Persists the job row before anything else (rule 1) and returns what the store already
     * knows: an earlier task ID (a retried or resumed run adopts it) and the stored state.
     * Throws a non-retryable `Provider.conflict` failure when the key exists with other parameters.
     */
    async registerJob(input: ScrapeWorkflowInput & { workflowId: string; deadlineAt?: string }): Promise<{ taskId: string | null; state: string }> {
      try {
        const row = await store.registerJob(
          Store.jobRow({ ...input, workflowId: input.workflowId, taskId: input.resume?.taskId, deadlineAt: input.deadlineAt }, secrets()),
        );
        if (input.resume && row.task_id && row.task_id !== input.resume.taskId) {
          throw new ProviderError('conflict', `resume asked for task ${input.resume.taskId} but job ${input.jobId} holds task ${row.task_id}`, { code: 'TASK_MISMATCH' });
        }
        if (input.resume) {
          // A resume that lost a race (another resume already finished the job, or the job was
          // purged meanwhile) must not reopen a finished job: only an interrupted or non-final
          // row goes back to `pending`; the workflow ends at once on the state it gets back.
          if (isFinalState(row.state) && row.state !== 'tracking_interrupted') return { taskId: row.task_id, state: row.state };
          await store.transition(input.jobId, 'pending', { force: true, detail: { resumed: true, taskId: row.task_id } });
        } else {
          await store.appendEvent(input.jobId, 'registered', row.state, { workflowId: input.workflowId, url: input.request.url });
        }
        return { taskId: row.task_id, state: row.state };
      } catch (e) {
        if (e instanceof Error && e.name === 'IdempotencyConflictStoreError') {
          rethrow(new ProviderError('conflict', e.message, { code: 'IDEMPOTENCY_CONFLICT' }));
        }
        rethrow(e);
      }
    },

    /**
     * Submits the scrape under the job's idempotency key, recording the intent before the call
     * and the answer (task ID) right after it. A retried attempt that finds an earlier answer
     * adopts it; one that finds an earlier intent without an answer returns `ambiguous`, as does a
     * call whose outcome is unknown (reset, timeout after sending, 5xx). Definite rejections throw:
     * permanent (400/401/403) non-retryable, cool-down with the provider's wait, transient with backoff.
     */
    async submitScrape(input: SubmitInput): Promise<SubmitOutcome> {
      const before = await store.recordSubmitIntent(input.jobId);
      if (!before) throw new Error(`job ${input.jobId} is not registered`);
      if (before.task_id) {
        log.info('submit: adopting task recorded by an earlier attempt', { jobId: input.jobId, taskId: before.task_id });
        return { kind: 'accepted', taskId: before.task_id, providerStatus: before.provider_status ?? 'unknown', adopted: true };
      }
      if (before.submit_intent_at && !input.afterReconcile) {
        const error: JobError = {
          kind: 'ambiguous',
          code: 'UNANSWERED_INTENT',
          message: `an earlier submit attempt (intent recorded at ${before.submit_intent_at}, attempt ${attempt()}) ended without a recorded answer; the provider may have created the task`,
          at: new Date().toISOString(),
        };
        await store.appendEvent(input.jobId, 'submit_ambiguous', 'unknown', error);
        return { kind: 'ambiguous', error };
      }
      const keys = providerKeys(input.account, input.key);
      let accepted: Accepted;
      try {
        accepted = await call(input.provider, input.account, (r) => r.adapter.submit(input.request, { apiKey: r.apiKey, secrets: secrets(), signal: signal(), ...keys }));
      } catch (e) {
        if (isProviderError(e) && e.kind === 'ambiguous') {
          const error = e.toJobError();
          await store.appendEvent(input.jobId, 'submit_ambiguous', 'unknown', { error, evidence: e.details.evidence });
          return { kind: 'ambiguous', error };
        }
        // A definite answer: nothing was created, so the intent is cleared.
        await store.clearSubmitIntent(input.jobId);
        if (isProviderError(e)) {
          await store.appendEvent(input.jobId, 'submit_rejected', null, { error: e.toJobError(), evidence: e.details.evidence });
          if (e.kind === 'permanent' || e.kind === 'conflict') await recordIncident(input.jobId, 'submit', e);
        }
        rethrow(e);
      }
      await deps.hooks?.afterSubmitAnswered?.(input.jobId, accepted.taskId);
      const taskId = await store.recordTaskId(input.jobId, accepted.taskId, accepted.providerStatus, accepted.replayed ? 'submit (provider replayed key)' : 'submit', input.trackingDeadlineMs);
      await deps.hooks?.afterTaskRecorded?.(input.jobId, taskId);
      return { kind: 'accepted', taskId, providerStatus: accepted.providerStatus, adopted: taskId !== accepted.taskId };
    },

    /**
     * Reconciles an ambiguous submit before any new submission (rule 3): the store first, then a
     * replay under the same idempotency key where the provider honours one, then a lookup by our
     * client reference where the provider can list. `absent` means the list proved no task exists
     * (the workflow may resubmit under the same key); `unresolvable` means neither mechanism
     * exists and an operator must decide. Transient failures throw (retried).
     */
    async reconcileSubmit(input: SubmitInput): Promise<ReconcileOutcome> {
      const row = await store.getJob(input.jobId);
      if (row?.task_id) return { kind: 'found', taskId: row.task_id, via: 'store' };
      const keys = providerKeys(input.account, input.key);
      const { adapter } = providers.resolve(input.provider, input.account);
      if (adapter.capabilities.idempotency) {
        try {
          const acc = await call(input.provider, input.account, (r) => r.adapter.submit(input.request, { apiKey: r.apiKey, secrets: secrets(), signal: signal(), ...keys }));
          const taskId = await store.recordTaskId(input.jobId, acc.taskId, acc.providerStatus, 'reconcile: idempotent replay', input.trackingDeadlineMs);
          return { kind: 'found', taskId, via: 'idempotent-replay' };
        } catch (e) {
          // Firecrawl-style providers answer a reused key with 409 and no job ID: fall through to listing.
          if (!(isProviderError(e) && e.kind === 'conflict' && adapter.capabilities.list)) {
            if (isProviderError(e) && e.kind === 'ambiguous') rethrow(new ProviderError('transient', e.message, e.details));
            rethrow(e);
          }
        }
      }
      if (adapter.capabilities.list) {
        try {
          const found = await call(input.provider, input.account, (r) => r.adapter.findSubmitted({ apiKey: r.apiKey, secrets: secrets(), signal: signal(), clientRef: keys.clientRef, request: input.request, submittedAfter: row?.created_at ?? new Date(0).toISOString() }));
          if (found) {
            const taskId = await store.recordTaskId(input.jobId, found.taskId, found.providerStatus, 'reconcile: found by client reference', input.trackingDeadlineMs);
            return { kind: 'found', taskId, via: 'list' };
          }
          await store.appendEvent(input.jobId, 'reconcile_absent', 'unknown', { clientRef: keys.clientRef });
          return { kind: 'absent', via: 'list' };
        } catch (e) {
          rethrow(e);
        }
      }
      const reason = `provider "${input.provider}" has no idempotency key and no list endpoint: whether the submit created a task cannot be checked automatically`;
      await store.appendEvent(input.jobId, 'reconcile_unresolvable', 'unknown', { reason });
      return { kind: 'unresolvable', reason };
    },

    /**
     * Adopts a task ID given by an operator for a job in `unknown`. Returns the stored task ID
     * (an earlier recorded one wins).
     */
    async adoptTask(input: { jobId: string; taskId: string; by: string; trackingDeadlineMs?: number }): Promise<string> {
      return store.recordTaskId(input.jobId, input.taskId, null, `operator: ${input.by}`, input.trackingDeadlineMs);
    },

    /**
     * One status check. Never submits. Transient failures and cool-downs throw (retried within
     * the policy's budget); the provider's `404` is returned as `not_found` so the workflow can
     * count consecutive ones; permanent failures (401/403) throw non-retryable.
     */
    async checkStatus(ref: TaskRef): Promise<StatusOutcome> {
      try {
        const { evidence, ...obs } = await call(ref.provider, ref.account, (r) => r.adapter.status(ref.taskId, { apiKey: r.apiKey, secrets: secrets(), signal: signal() }));
        await store.recordStatusCheck(ref.jobId, obs.providerStatus);
        if (obs.state === 'failed') {
          // A terminal failure at the provider: keep its code and the complete sanitised response.
          await store.recordIncident({
            jobId: ref.jobId,
            phase: 'status',
            kind: 'provider_failed',
            message: obs.error?.message ?? 'provider reported failure',
            code: obs.error?.code,
            endpoint: evidence?.endpoint,
            httpStatus: evidence?.httpStatus,
            response: evidence?.body,
            headers: evidence?.headers,
            request: { taskId: ref.taskId },
            at: evidence?.at,
          });
        }
        return { kind: 'status', ...obs };
      } catch (e) {
        if (isProviderError(e) && e.kind === 'not_found') {
          await store.appendEvent(ref.jobId, 'status_not_found', null, { error: e.toJobError() });
          return { kind: 'not_found', error: e.toJobError() };
        }
        if (isProviderError(e) && e.kind === 'permanent') await recordIncident(ref.jobId, 'status', e);
        rethrow(e);
      }
    },

    /**
     * Records that a status check gave up after its retry budget (the task is kept; polling goes
     * on): counts it for orphan detection and keeps the error as the job's last error.
     */
    async recordStatusFailure(input: { jobId: string; error: JobError }): Promise<void> {
      await store.recordStatusError(input.jobId);
      await store.appendEvent(input.jobId, 'status_check_gave_up', 'pending', { error: input.error });
      await store.db.updateTable('jobs').set({ last_error: JSON.stringify(input.error) }).where('id', '=', input.jobId).execute();
    },

    /**
     * Reads the authoritative result and writes it once, keyed by (provider, task ID), in the same
     * transaction as the job's move to `completed` (rule 6). Safe to retry and to run on two
     * workers at once: the second writer inserts nothing.
     */
    async saveResult(ref: TaskRef & { url: string; notFoundLimit?: number }): Promise<SavedResult> {
      let payload;
      try {
        payload = await call(ref.provider, ref.account, (r) => r.adapter.result(ref.taskId, { apiKey: r.apiKey, secrets: secrets(), signal: signal(), url: ref.url, request: { url: ref.url, format: 'markdown', options: {} }, limits: DEFAULT_RESULT_LIMITS }));
      } catch (e) {
        // A task that answered `completed` and then still 404s on the result read at the
        // `notFoundLimit`-th attempt is gone at the provider: stop retrying, let the workflow say so.
        if (isProviderError(e) && e.kind === 'not_found' && ref.notFoundLimit !== undefined && Context.current().info.attempt >= ref.notFoundLimit) {
          const f = toFailure(e);
          throw ApplicationFailure.create({ message: f.message, type: f.type ?? undefined, nonRetryable: true, details: f.details as unknown[] });
        }
        rethrow(e);
      }
      await deps.hooks?.beforeResultWrite?.(ref.jobId, ref.taskId);
      const out = await store.writeResultOnce(ref.jobId, ref.provider, ref.taskId, payload, deps.resultRetentionMs);
      await deps.hooks?.afterResultWritten?.(ref.jobId, out.resultId);
      return { resultId: out.resultId, inserted: out.inserted, title: payload.title, httpStatus: payload.httpStatus, finalUrl: payload.finalUrl };
    },

    /**
     * Records a state transition in the store (idempotent). Returns false when the job was
     * already final and `force` was not set.
     */
    async recordState(input: { jobId: string; state: JobState; error?: JobError | null; detail?: unknown; force?: boolean }): Promise<boolean> {
      return store.transition(input.jobId, input.state, { error: input.error, detail: input.detail === undefined ? undefined : sanitizeBody(input.detail, secrets()), force: input.force });
    },

    /**
     * Records the observed outcome of a cancel in the job's timeline (also when the state did not
     * change: a job that completed first), so that a later cancel can report it.
     */
    async recordCancelOutcome(input: { jobId: string; report: CancelReport }): Promise<void> {
      await store.appendEvent(input.jobId, 'cancel_outcome', null, { cancel: sanitizeBody(input.report, secrets()) });
    },

    /**
     * Asks the provider to cancel the task. Returns the provider's answer, or `unsupported` when it
     * has no cancel endpoint. Transient failures throw (retried).
     */
    async cancelTask(ref: TaskRef & { report?: CancelReport }): Promise<CancelCallOutcome> {
      try {
        const answer = await call(ref.provider, ref.account, (r) => r.adapter.cancel(ref.taskId, { apiKey: r.apiKey, secrets: secrets(), signal: signal() }));
        await store.appendEvent(ref.jobId, 'cancel_requested_at_provider', 'cancelling', answer);
        return { kind: 'answered', ...answer };
      } catch (e) {
        if (isProviderError(e) && e.kind === 'unsupported') {
          await store.appendEvent(ref.jobId, 'cancel_unsupported', 'cancelling', { error: e.toJobError() });
          // `reachedProvider`: the provider itself said so (an HTTP exchange), not the adapter's capabilities.
          return { kind: 'unsupported', error: e.toJobError(), reachedProvider: e.details.evidence !== undefined };
        }
        rethrow(e);
      }
    },
  };
}

/** The activity functions, as the workflow proxies them. */
export type ScrapeActivities = ReturnType<typeof createActivities>;
