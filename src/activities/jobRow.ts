/**
 * The activities that read or reopen a job's row for its workflow, beside the submit:
 * `registerJob` (the row of a resumed run, moved back to `pending`) and `findRecordedTask` (what a
 * cancel that interrupted the acquisition needs to know of the submits).
 */
import { isFinalState } from '../model/states.js';
import type { ScrapeWorkflowInput } from '../model/types.js';
import { ProviderError } from '../providers/shared/errors.js';
import { Store } from '../store/index.js';
import type { ActivityKit } from './context.js';

/**
 * What the store knows of the job's submits, for a cancel that interrupted the acquisition: the
 * recorded task ID, and whether a submit attempt's intent is still unanswered (then a task may
 * exist and the cancel path reconciles first).
 */
export async function findRecordedTask(
  kit: ActivityKit,
  input: { jobId: string },
): Promise<{ taskId: string | null; intentOpen: boolean }> {
  const row = await kit.store.jobs.get(input.jobId);
  return { taskId: row?.task_id ?? null, intentOpen: !row?.task_id && row?.submit_intent_at != null };
}

/**
 * Registers the row of a resumed job and moves it back to `pending` unless it finished
 * meanwhile (a stale resume must not reopen a finished job). Returns the stored task ID and
 * state. Throws a non-retryable `Provider.conflict` when the row holds another task.
 */
export async function registerJob(
  kit: ActivityKit,
  input: ScrapeWorkflowInput & { workflowId: string; deadlineAt?: string },
): Promise<{ taskId: string | null; state: string }> {
  const { store } = kit;
  try {
    const row = await store.jobs.register(
      Store.jobRow({ ...input, taskId: input.resume?.taskId, deadlineAt: input.deadlineAt }, kit.secrets()),
    );
    if (input.resume && row.task_id && row.task_id !== input.resume.taskId) {
      throw new ProviderError(
        'conflict',
        `resume asked for task ${input.resume.taskId} but job ${input.jobId} holds task ${row.task_id}`,
        {
          code: 'TASK_MISMATCH',
        },
      );
    }
    if (input.resume) {
      if (isFinalState(row.state) && row.state !== 'tracking_interrupted')
        return { taskId: row.task_id, state: row.state };
      await store.jobs.resume(input.jobId, { resumed: true, taskId: row.task_id });
    } else {
      await store.findings.appendEvent(input.jobId, 'registered', row.state, {
        workflowId: input.workflowId,
        url: input.request.url,
      });
    }
    return { taskId: row.task_id, state: row.state };
  } catch (e) {
    if (e instanceof Error && e.name === 'IdempotencyConflictStoreError')
      throw new ProviderError('conflict', e.message, { code: 'IDEMPOTENCY_CONFLICT' });
    throw e;
  }
}
