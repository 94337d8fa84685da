/**
 * The scrape workflow's message interface: its type name and signature, the `state` query, the
 * `cancel` signal and Update, the `resolve` Update and the `wake` and `submitNow` signals, with
 * their payloads.
 * Shared by the workflow and the client.
 *
 * A definition is a plain `{ type, name }` object, what the SDK's `defineQuery`/`defineSignal`/
 * `defineUpdate` return; those functions live in `@temporalio/workflow`, which the client package
 * must not load (it is the workflow sandbox's library), so the definitions are written here typed
 * with `@temporalio/common`'s interfaces. Workflow code registers its handlers with these same
 * objects (`setHandler` reads only the name).
 */
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';
import type { CancelReport, JobView, ScrapeWorkflowInput } from './types.js';

/** Workflow type of scrape jobs: the only one a worker serves. */
export const SCRAPE_WORKFLOW_TYPE = 'scrapeWorkflowV6';

/**
 * Workflow types of earlier releases that this worker no longer serves: their open runs must be
 * drained on the release that started them before this one is deployed (`scrape upgrade-check`).
 */
export const RETIRED_WORKFLOW_TYPES = [
  'scrapeWorkflow',
  'scrapeWorkflowV2',
  'scrapeWorkflowV3',
  'scrapeWorkflowV4',
  'scrapeWorkflowV5',
] as const;

/** The signature of the {@link SCRAPE_WORKFLOW_TYPE} workflow: its input, and the final view it returns. */
export type ScrapeWorkflow = (input: ScrapeWorkflowInput) => Promise<JobView>;

/** Payload of the `cancel` signal and Update. */
export interface CancelRequest {
  reason?: string;
  requestedBy?: string;
}

/** Payload of the `resolve` Update for a job in `unknown`: exactly one of the two. */
export type Resolution = { taskId: string; by?: string } | { resubmit: true; by?: string };

/** Hint from a provider webhook (never trusted for the result itself). */
export interface WakeHint {
  /** Provider status the webhook claimed, for the timeline only. */
  providerStatus?: string;
  eventId?: string;
}

const query = <Ret>(name: string) => ({ type: 'query', name }) as QueryDefinition<Ret>;
const signal = <Args extends unknown[]>(name: string) => ({ type: 'signal', name }) as SignalDefinition<Args>;
const update = <Ret, Args extends unknown[]>(name: string) => ({ type: 'update', name }) as UpdateDefinition<Ret, Args>;

/** Query `state`: the live {@link JobView} (state, task ID, checks, deadline, cancel report). */
export const stateQuery = query<JobView>('state');
/** Signal `cancel`: fire-and-forget cancel request; the outcome is recorded, not returned. */
export const cancelSignal = signal<[CancelRequest]>('cancel');
/** Update `cancel`: returns the observed {@link CancelReport}; its validator rejects a job already final. */
export const cancelUpdate = update<CancelReport, [CancelRequest]>('cancel');
/** Update `resolve`: an operator settles a job in `unknown` with a task ID or an explicit resubmit; returns the view after it. */
export const resolveUpdate = update<JobView, [Resolution]>('resolve');
/** Signal `wake`: a webhook hint that makes the next status check happen now (the result is still read from the provider). */
export const wakeSignal = signal<[WakeHint]>('wake');

/** Payload of the `submitNow` signal: why a job waiting to submit should try now. */
interface SubmitNudge {
  /** `slot`: the key's fair queue granted the job a slot; `budget`: a budget of its account was raised or renewed. */
  why: 'slot' | 'budget';
}
/** Signal `submitNow`: a job waiting to submit (for a slot, or held by its budget) tries its submit now instead of at its timer. */
export const submitNowSignal = signal<[SubmitNudge]>('submitNow');

/** Descriptions shown by the Web UI and `temporal workflow metadata` next to each handler. */
export const HANDLER_DESCRIPTIONS = {
  state:
    'The job as the workflow sees it: state, provider status, task ID, checks, deadline, last error, cancel report (JSON).',
  cancel:
    'Cancel the job: {"reason": "…", "requestedBy": "…"}. The provider is asked to stop and the observed outcome is recorded.',
  cancelUpdate:
    'Cancel the job and wait for the outcome observed at the provider (rejected when the job is already final).',
  resolve:
    'Settle a job in `unknown`: {"taskId": "…"} to adopt a task, or {"resubmit": true} to submit again under the same key.',
  wake: 'A provider webhook hint: check the provider now (the result is still read from the provider).',
  submitNow:
    'A job waiting to submit tries now: the provider key’s fair queue granted it a slot ({"why": "slot"}), or its account’s budget was raised ({"why": "budget"}).',
} as const;
