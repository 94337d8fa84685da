/**
 * Activities of the v1 scrape workflow (`scrapeWorkflow`, `scrapeWorkflowV1.ts` here), kept
 * unchanged so that runs started before workflow v2 finish on the code they started with. New runs
 * use `src/activities/{submit,poll,track,cancel,record}.ts`. Delete this folder (and its one line in
 * `src/workflows/index.ts` and `src/activities/index.ts`) once no v1 run is open: `temporal workflow count --query 'WorkflowType="scrapeWorkflow" AND ExecutionStatus="Running"'`.
 */
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { CancelReport, JobError, ScrapeWorkflowInput } from '../model/types.js';
import { isProviderError } from '../providers/shared/errors.js';
import { withBinaryText } from '../providers/shared/binaryText.js';
import { providerKeys } from '../providers/shared/keys.js';
import type { Accepted, CancelAnswer, StatusObservation } from '../providers/adapter.js';
import { reconcileActivities } from '../activities/reconcile.js';
import type { ActivityKit, TaskRef } from '../activities/context.js';
import { rethrow, toFailure } from '../activities/failures.js';
import { LegacyJobsRepository } from './store.js';

/** Input of `submitScrape` and `reconcileSubmit` (v1). */
export interface SubmitInput {
  jobId: string;
  provider: string;
  account: string;
  key: string;
  request: ScrapeWorkflowInput['request'];
  /** Set when reconciliation proved that no task exists (or an operator asked to resubmit). */
  afterReconcile?: boolean;
  /** Tracking deadline (ms) recorded on the job when its task ID becomes known. */
  trackingDeadlineMs?: number;
}

/** Outcome of `submitScrape` (v1). */
export type LegacySubmitOutcome =
  | { kind: 'accepted'; taskId: string; providerStatus: string; adopted: boolean }
  | { kind: 'ambiguous'; error: JobError };

/** Outcome of `reconcileSubmit` (v1). */
export type LegacyReconcileOutcome =
  | { kind: 'found'; taskId: string; via: 'store' | 'idempotent-replay' | 'list' }
  | { kind: 'absent'; via: 'list' }
  | { kind: 'unresolvable'; reason: string };

/** Outcome of `checkStatus` (v1): an observation, or the provider's `404` for the task. */
export type StatusOutcome = ({ kind: 'status' } & StatusObservation) | { kind: 'not_found'; error: JobError };

/** What `saveResult` (v1) wrote. */
export interface LegacySavedResult {
  resultId: string;
  inserted: boolean;
  title: string | null;
  httpStatus: number | null;
  finalUrl: string | null;
}

/** Outcome of `cancelTask` (v1). */
export type LegacyCancelCallOutcome =
  ({ kind: 'answered' } & CancelAnswer) | { kind: 'unsupported'; error: JobError; reachedProvider: boolean };

/** Builds the v1-only activities over `kit`. */
export function legacyActivities(kit: ActivityKit) {
  const { store } = kit;
  const v1 = new LegacyJobsRepository(store);
  const v2 = reconcileActivities(kit);
  return {
    /**
     * Submits the scrape under the job's idempotency key, recording the intent before the call
     * and the answer (task ID) right after it. A retried attempt that finds an earlier answer
     * adopts it; one that finds an earlier intent without an answer returns `ambiguous`, as does a
     * call whose outcome is unknown (reset, timeout after sending, 5xx). Definite rejections throw:
     * permanent (400/401/403) non-retryable, cool-down with the provider's wait, transient with backoff.
     */
    async submitScrape(input: SubmitInput): Promise<LegacySubmitOutcome> {
      const before = await v1.recordSubmitIntent(input.jobId);
      if (!before) throw new Error(`job ${input.jobId} is not registered`);
      if (before.task_id) {
        log.info('submit: adopting task recorded by an earlier attempt', {
          jobId: input.jobId,
          taskId: before.task_id,
        });
        return {
          kind: 'accepted',
          taskId: before.task_id,
          providerStatus: before.provider_status ?? 'unknown',
          adopted: true,
        };
      }
      if (before.submit_intent_at && !input.afterReconcile) {
        const error: JobError = {
          kind: 'ambiguous',
          code: 'UNANSWERED_INTENT',
          message: `an earlier submit attempt (intent recorded at ${before.submit_intent_at}, attempt ${kit.attempt()}) ended without a recorded answer; the provider may have created the task`,
          at: new Date().toISOString(),
        };
        await store.findings.appendEvent(input.jobId, 'submit_ambiguous', 'unknown', error);
        return { kind: 'ambiguous', error };
      }
      const keys = providerKeys(input.account, input.key);
      let accepted: Accepted;
      try {
        // The submit phase: held by the key's quota hold like v2's submits, so a spent credential costs no request.
        accepted = await kit.call(
          input.provider,
          input.account,
          (r) =>
            r.adapter.submit(input.request, {
              apiKey: r.apiKey,
              secrets: kit.secrets(),
              signal: kit.signal(),
              ...keys,
            }),
          { phase: 'submit' },
        );
      } catch (e) {
        if (isProviderError(e) && e.kind === 'ambiguous') {
          const error = e.toJobError();
          await store.findings.appendEvent(input.jobId, 'submit_ambiguous', 'unknown', {
            error,
            evidence: e.details.evidence,
          });
          return { kind: 'ambiguous', error };
        }
        // A definite answer: nothing was created, so the intent is cleared.
        await store.jobs.clearSubmitIntent(input.jobId);
        if (isProviderError(e)) {
          await store.findings.appendEvent(input.jobId, 'submit_rejected', null, {
            error: e.toJobError(),
            evidence: e.details.evidence,
          });
          if (e.kind === 'permanent' || e.kind === 'conflict') await kit.recordIncident(input.jobId, 'submit', e);
        }
        rethrow(e);
      }
      await kit.deps.hooks?.afterSubmitAnswered?.(input.jobId, accepted.taskId);
      const taskId = await store.jobs.recordTaskId(
        input.jobId,
        accepted.taskId,
        accepted.providerStatus,
        accepted.replayed ? 'submit (provider replayed key)' : 'submit',
        input.trackingDeadlineMs,
      );
      await kit.deps.hooks?.afterTaskRecorded?.(input.jobId, taskId);
      return { kind: 'accepted', taskId, providerStatus: accepted.providerStatus, adopted: taskId !== accepted.taskId };
    },

    /**
     * Reconciles an ambiguous submit before any new submission, with workflow v2's evidence model
     * (`reconcileJob`): `found` (adopted), `absent` (proven: the workflow may resubmit under the
     * same key) or `unresolvable` (an operator decides). Waits and transient failures throw
     * (retried).
     */
    async reconcileSubmit(input: SubmitInput): Promise<LegacyReconcileOutcome> {
      const job = {
        jobId: input.jobId,
        workflowId: input.jobId,
        account: input.account,
        key: input.key,
        provider: input.provider,
        request: input.request,
        requestHash: '',
      };
      return v2.reconcileJob({ job, trackingDeadlineMs: input.trackingDeadlineMs ?? 30 * 60_000 });
    },

    /**
     * One status check. Never submits. Transient failures and cool-downs throw (retried within
     * the policy's budget); the provider's `404` is returned as `not_found` so the workflow can
     * count consecutive ones; permanent failures (401/403) throw non-retryable.
     */
    async checkStatus(ref: TaskRef): Promise<StatusOutcome> {
      try {
        const { evidence, ...obs } = await kit.call(ref.provider, ref.account, (r) =>
          r.adapter.status(ref.taskId, { apiKey: r.apiKey, secrets: kit.secrets(), signal: kit.signal() }),
        );
        await v1.recordStatusCheck(ref.jobId, obs.providerStatus);
        if (obs.state === 'failed') {
          // A terminal failure at the provider: keep its code and the complete sanitised response.
          await store.findings.recordIncident({
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
          await store.findings.appendEvent(ref.jobId, 'status_not_found', null, { error: e.toJobError() });
          return { kind: 'not_found', error: e.toJobError() };
        }
        if (isProviderError(e) && e.kind === 'permanent') await kit.recordIncident(ref.jobId, 'status', e);
        rethrow(e);
      }
    },

    /**
     * Records that a status check gave up after its retry budget (the task is kept; polling goes
     * on): counts it for orphan detection and keeps the error as the job's last error.
     */
    async recordStatusFailure(input: { jobId: string; error: JobError }): Promise<void> {
      await v1.recordStatusError(input.jobId, input.error);
      await store.findings.appendEvent(input.jobId, 'status_check_gave_up', 'pending', { error: input.error });
    },

    /**
     * Reads the authoritative result and writes it once, keyed by (provider, task ID), in the same
     * transaction as the job's move to `completed` (a result is written once). Safe to retry and to
     * run on two workers at once: the second writer inserts nothing.
     */
    async saveResult(ref: TaskRef & { url: string; notFoundLimit?: number }): Promise<LegacySavedResult> {
      let payload;
      try {
        payload = await withBinaryText(
          await kit.call(ref.provider, ref.account, (r) =>
            r.adapter.result(ref.taskId, {
              apiKey: r.apiKey,
              secrets: kit.secrets(),
              signal: kit.signal(),
              url: ref.url,
              request: { url: ref.url, format: 'markdown', options: {} },
              limits: r.resultLimits,
            }),
          ),
        );
      } catch (e) {
        // A task that answered `completed` and then still 404s on the result read at the
        // `notFoundLimit`-th attempt is gone at the provider: stop retrying, let the workflow say so.
        if (
          isProviderError(e) &&
          e.kind === 'not_found' &&
          ref.notFoundLimit !== undefined &&
          Context.current().info.attempt >= ref.notFoundLimit
        ) {
          const f = toFailure(e);
          throw ApplicationFailure.create({
            message: f.message,
            type: f.type ?? undefined,
            nonRetryable: true,
            details: f.details as unknown[],
          });
        }
        rethrow(e);
      }
      await kit.deps.hooks?.beforeResultWrite?.(ref.jobId, ref.taskId);
      const out = await store.results.writeOnce(
        ref.jobId,
        ref.provider,
        ref.taskId,
        payload,
        kit.deps.resultRetentionMs,
      );
      await kit.deps.hooks?.afterResultWritten?.(ref.jobId, out.resultId);
      return {
        resultId: out.resultId,
        inserted: out.inserted,
        title: payload.title,
        httpStatus: payload.httpStatus,
        finalUrl: payload.finalUrl,
      };
    },

    /**
     * Asks the provider to cancel the task. Returns the provider's answer, or `unsupported` when it
     * has no cancel endpoint. Transient failures throw (retried).
     */
    async cancelTask(ref: TaskRef & { report?: CancelReport }): Promise<LegacyCancelCallOutcome> {
      try {
        const answer = await kit.call(ref.provider, ref.account, (r) =>
          r.adapter.cancel(ref.taskId, { apiKey: r.apiKey, secrets: kit.secrets(), signal: kit.signal() }),
        );
        await store.findings.appendEvent(ref.jobId, 'cancel_requested_at_provider', 'cancelling', answer);
        return { kind: 'answered', ...answer };
      } catch (e) {
        if (isProviderError(e) && e.kind === 'unsupported') {
          await store.findings.appendEvent(ref.jobId, 'cancel_unsupported', 'cancelling', { error: e.toJobError() });
          // `reachedProvider`: the provider itself said so (an HTTP exchange), not the adapter's capabilities.
          return { kind: 'unsupported', error: e.toJobError(), reachedProvider: e.details.evidence !== undefined };
        }
        rethrow(e);
      }
    },
  };
}
