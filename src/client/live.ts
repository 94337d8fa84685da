/**
 * The job as its workflow knows it, for the client's reads that ask Temporal: the summary of a job
 * whose store row does not exist yet (from its workflow's search attributes and memo), and the live
 * view (query `state`) brought up to date with what the polling activity recorded since it last
 * reported to the workflow.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import { isFinalState, type JobState } from '../model/states.js';
import type { JobView } from '../model/types.js';
import type { JobRow } from '../store/index.js';
import { ScrapeBatchId, ScrapeProvider, ScrapeState } from '../workflows/searchAttributes.js';
import type { JobSummary } from './views.js';

/**
 * The summary of job `jobId` (of `account`, key `key`) that has no store row yet (the worker has not
 * registered it), from the description `d` of its workflow: provider, state and batch from its
 * search attributes, the URL from its memo, both times its start time (UTC ISO-8601); nothing
 * submitted or checked yet. `execution` is the workflow's execution status.
 */
export function executionSummary(
  d: WorkflowExecutionDescription,
  jobId: string,
  account: string,
  key: string,
  execution: string,
): JobSummary {
  return {
    jobId,
    account,
    key,
    provider: d.typedSearchAttributes.get(ScrapeProvider) ?? 'unknown',
    url: String(d.memo?.url ?? ''),
    state: (d.typedSearchAttributes.get(ScrapeState) as JobState | undefined) ?? 'submitting',
    providerStatus: null,
    taskId: null,
    batchId: d.typedSearchAttributes.get(ScrapeBatchId) ?? null,
    createdAt: d.startTime.toISOString(),
    updatedAt: d.startTime.toISOString(),
    submittedAt: null,
    finishedAt: null,
    deadlineAt: null,
    statusChecks: 0,
    failingChecks: 0,
    lastCheckedAt: null,
    lastError: null,
    waiting: null,
    execution,
  };
}

/**
 * The workflow's view with what its activities recorded since they last reported (the checks run
 * inside one activity, which tells the workflow only the outcome): the task and `pending` when the
 * submit attempt recorded them first, the provider's latest status (raw and normalised), the
 * checks made so far and a failing check's error. Only for a job still being tracked; a final
 * view is the workflow's own.
 */
export function overlayPolling(view: JobView, row: JobRow | undefined): JobView {
  if (!row || isFinalState(view.state) || isFinalState(row.state)) return view;
  const checks = Number(row.status_checks);
  // A submit attempt that went on into its first checks has recorded the task before the
  // workflow hears of it: the store's row is the newer news.
  const learned: Partial<JobView> =
    !view.taskId && row.task_id
      ? {
          taskId: row.task_id,
          ...(view.state === 'submitting' && row.state === 'pending' ? { state: 'pending' as const } : {}),
          ...(row.submitted_at ? { submittedAt: row.submitted_at } : {}),
          ...(row.deadline_at ? { deadlineAt: row.deadline_at } : {}),
        }
      : {};
  if (checks <= view.statusChecks && !row.status_errors && !learned.taskId) return view;
  const out: JobView = { ...view, ...learned, statusChecks: Math.max(view.statusChecks, checks) };
  if (row.provider_status) out.providerStatus = row.provider_status;
  if (row.provider_state) out.providerState = row.provider_state as JobView['providerState'];
  if (row.status_errors && row.last_error) out.lastError = JSON.parse(row.last_error) as JobView['lastError'];
  return out;
}
