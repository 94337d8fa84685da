/**
 * The operator's way out of `unknown` for the client: a job waiting there (its provider can neither
 * replay a key nor list jobs) is settled with a task ID the operator found, or by resubmitting under
 * the same key, through the workflow's `resolve` Update, after the checks the store can make first.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { JobView } from '../model/types.js';
import { resolveUpdate, type Resolution } from '../model/messages.js';
import { JobNotFoundError, ScrapeError } from './errors.js';
import type { StartContext } from './start.js';
import { ownedRow } from './views.js';

/**
 * Resolves job `jobId` of `account`, waiting in `unknown`, with `resolution` (see
 * `ScrapeClient.resolve`); returns the workflow's view afterwards. Throws {@link JobNotFoundError}
 * (missing or another account's job) and {@link ScrapeError} `conflict` when the job is not in
 * `unknown` (or `pending` with `resolution.taskId` the task a late answer recorded), the task ID already belongs to another job (that refusal is audited in the job's
 * timeline as `operator_resolve`, outcome `refused`), or the workflow refused the resolution.
 */
export async function resolveJob(
  ctx: Pick<StartContext, 'store' | 'temporal'>,
  account: string,
  jobId: string,
  resolution: Resolution,
): Promise<JobView> {
  const row = await ownedRow(ctx.store, account, jobId);
  // An answer that came after the job went to an operator records its task (the row moves to
  // `pending`) while the workflow still waits in `unknown`: resolving with that task is allowed.
  const recordedLate =
    row.state === 'pending' && row.task_id !== null && 'taskId' in resolution && resolution.taskId === row.task_id;
  if (row.state !== 'unknown' && !recordedLate) {
    throw new ScrapeError(
      'conflict',
      `cannot resolve job ${jobId}: it is ${row.state}; only a job waiting in unknown can be resolved`,
      { state: row.state },
    );
  }
  if ('taskId' in resolution) {
    // A task belongs to one job across every entry reaching the same provider account (the row
    // names it once the worker submitted); the worker checks again, with the job's credential.
    const owners = await ctx.store.jobs.tasksBoundElsewhere({
      providerAccount: row.provider_account ?? '',
      provider: row.provider,
      taskIds: [resolution.taskId],
      exceptJobId: jobId,
    });
    if (owners.size > 0) {
      // Refused before the workflow is asked, and audited like the worker's own refusals.
      await ctx.store.findings.appendEvent(jobId, 'operator_resolve', row.state, {
        by: resolution.by ?? 'operator',
        at: new Date().toISOString(),
        taskId: resolution.taskId,
        outcome: 'refused',
        evidence: { boundTo: owners.get(resolution.taskId) },
      });
      throw new ScrapeError(
        'conflict',
        `cannot resolve job ${jobId}: task ${resolution.taskId} already belongs to another job`,
        { state: row.state },
      );
    }
  }
  try {
    return await ctx.temporal.workflow.getHandle(jobId).executeUpdate(resolveUpdate, { args: [resolution] });
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
    if (e instanceof WorkflowUpdateFailedError)
      throw new ScrapeError('conflict', `cannot resolve job ${jobId}: ${e.cause?.message ?? e.message}`);
    throw e;
  }
}
