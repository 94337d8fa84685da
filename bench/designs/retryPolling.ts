/**
 * Bench-only polling design (issue 6, "history cost"): retry-driven polling. After the submit and
 * one durable timer (the schedule's first delay, as in the product), ONE status activity polls: an
 * attempt that finds the task not final throws a retryable `ApplicationFailure` whose
 * `nextRetryDelay` is the schedule's next delay, so the server — not a workflow timer — waits
 * between checks, and the retries add no history events until the activity completes.
 *
 * Everything else mirrors the product's happy path (`src/workflows/scrape.ts`): the same store
 * activities (`registerJob`, `submitScrape`, `saveResult`), the same search-attribute upserts
 * (start, task ID, `pending`, `completed`), the same retry options of those activities. It handles
 * the happy path (plus reconciling an ambiguous submit, as the product does) and nothing else (no
 * cancel, no deadline state, no `wake`): it exists to measure what the polling design costs in
 * history and actions, not to replace the product's workflow.
 *
 * Registered under the product's type name, `scrapeWorkflow`, in its own bundle and on its own
 * task queue, so that the unchanged `ScrapeClient` starts it exactly like the product's workflow
 * (same store row, memo and start search attributes).
 *
 * Deterministic code only (bundled into the workflow sandbox).
 */
import { ApplicationFailure, proxyActivities, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ScrapeActivities, StatusOutcome } from '../../src/activities/index.js';
import { NON_RETRYABLE_TYPES } from '../../src/activities/failureTypes.js';
import { DEFAULT_POLL_POLICY, type PollPolicy, type ScrapeWorkflowInput } from '../../src/model/types.js';
import { scrapeActivityOptions } from '../../src/workflows/activityOptions.js';
import { ScrapeAccount, ScrapeBatchId, ScrapeHost, ScrapeProvider, ScrapeState, ScrapeTaskId } from '../../src/workflows/searchAttributes.js';
import type { RetryPollActivities } from './retryActivities.js';

/** What the bench workflow returns. */
export interface RetryPollOutcome {
  jobId: string;
  state: 'completed' | 'failed' | 'cancelled' | 'not_found';
  taskId: string;
  /** Attempts of the polling activity (= status checks made). */
  statusChecks: number;
}

/** Retry-driven polling workflow (see the module comment). */
export async function scrapeWorkflow(input: ScrapeWorkflowInput): Promise<RetryPollOutcome> {
  const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, ...(input.policy ?? {}) };
  const info = workflowInfo();
  const deadlineAtMs = Date.now() + policy.deadlineMs;
  const deadlineAt = new Date(deadlineAtMs).toISOString();
  const attemptMs = policy.activityTimeoutMs;
  // The same options as the product's proxies of these activities.
  const options = scrapeActivityOptions(policy);
  const store = proxyActivities<ScrapeActivities>(options.store);
  const submitter = proxyActivities<ScrapeActivities>(options.submitter);
  const reconciler = proxyActivities<ScrapeActivities>(options.reconciler);
  const writer = proxyActivities<ScrapeActivities>(options.writer);

  upsertSearchAttributes([
    { key: ScrapeState, value: 'submitting' },
    { key: ScrapeProvider, value: input.provider },
    { key: ScrapeAccount, value: input.account },
    { key: ScrapeHost, value: hostOf(input.request.url) },
    ...(input.batchId ? [{ key: ScrapeBatchId, value: input.batchId }] : []),
  ]);
  const reg = await store.registerJob({ ...input, workflowId: info.workflowId, deadlineAt });
  let taskId = reg.taskId;
  if (!taskId) {
    const sub = { jobId: input.jobId, provider: input.provider, account: input.account, key: input.key, request: input.request };
    const out = await submitter.submitScrape(sub);
    if (out.kind === 'accepted') taskId = out.taskId;
    else {
      // As the product does: an ambiguous submit is reconciled (idempotent replay / list), never resubmitted blindly.
      await store.recordState({ jobId: input.jobId, state: 'unknown', error: out.error });
      const rec = await reconciler.reconcileSubmit(sub);
      if (rec.kind !== 'found') throw ApplicationFailure.nonRetryable(`bench design: submit was ambiguous and reconciliation found ${rec.kind}`);
      await store.recordState({ jobId: input.jobId, state: 'pending', detail: { note: `reconciled via ${rec.via}` } });
      taskId = rec.taskId;
    }
  }
  // The product's setTask(): one upsert for the task ID, one for the state.
  upsertSearchAttributes([{ key: ScrapeTaskId, value: taskId }]);
  upsertSearchAttributes([{ key: ScrapeState, value: 'pending' }]);

  const slow = input.webhooks ? policy.webhookSlowdown : 1;
  const first = slow * policy.initialDelayMs * (1 - policy.jitter + 2 * policy.jitter * Math.random());
  await sleep(Math.max(1, Math.round(first)));

  const left = Math.max(1_000, deadlineAtMs - Date.now());
  const poller = proxyActivities<RetryPollActivities>({
    startToCloseTimeout: attemptMs,
    // The whole poll, all attempts, ends at the tracking deadline.
    scheduleToCloseTimeout: left,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
  });
  const ref = { jobId: input.jobId, provider: input.provider, account: input.account, taskId };
  const final: StatusOutcome & { attempts: number } = await poller.awaitFinalStatus({
    ...ref,
    schedule: { initialDelayMs: policy.initialDelayMs, maxDelayMs: policy.maxDelayMs, multiplier: policy.multiplier, jitter: policy.jitter, slowdown: slow },
  });
  if (final.kind === 'status' && final.state === 'completed') {
    await writer.saveResult({ ...ref, url: input.request.url });
    upsertSearchAttributes([{ key: ScrapeState, value: 'completed' }]);
    return { jobId: input.jobId, state: 'completed', taskId, statusChecks: final.attempts };
  }
  const state = final.kind === 'not_found' ? 'not_found' : final.state === 'cancelled' ? 'cancelled' : 'failed';
  await store.recordState({ jobId: input.jobId, state: state === 'not_found' ? 'expired' : state });
  upsertSearchAttributes([{ key: ScrapeState, value: state === 'not_found' ? 'expired' : state }]);
  return { jobId: input.jobId, state, taskId, statusChecks: final.attempts };
}

function hostOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#:]+)/i.exec(url);
  return m?.[1]?.toLowerCase() ?? 'unknown';
}
