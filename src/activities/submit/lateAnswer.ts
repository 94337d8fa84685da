/**
 * A task recorded by an answer that came after the reconcile was decided without it: a submit or a
 * replay under our key whose answer arrived once the job already waited in `unknown` for an
 * operator. The store then holds the job's task while its workflow still waits; the `wake` signal
 * makes the waiting workflow reconcile again, and that reconcile adopts the task from the store.
 */
import type { Client } from '@temporalio/client';
import type { JobEventRow, Store } from '../../store/index.js';
import { stateQuery, wakeSignal } from '../../workflows/scrape/messages.js';

/**
 * Whether `timeline` (oldest first) shows a task recorded after the last `reconcile_undecided` with
 * no operator resolution adopted in between (a refused one changes nothing): the workflow was told
 * "undecided" and may not have seen the task. With `sinceMs` (epoch ms) only a decision made at or
 * after it counts (the late call left then). A cheap first test: the workflow's own state decides.
 */
export function taskRecordedAfterUndecided(timeline: readonly JobEventRow[], sinceMs = 0): boolean {
  const undecided = timeline.findLastIndex((e) => e.type === 'reconcile_undecided' && Date.parse(e.at) >= sinceMs);
  if (undecided < 0) return false;
  const after = timeline.slice(undecided + 1);
  const adopted = (e: JobEventRow) =>
    e.type === 'operator_resolve' && (JSON.parse(e.detail ?? '{}') as { outcome?: string }).outcome !== 'refused';
  return after.some((e) => e.type === 'task_recorded') && !after.some(adopted);
}

/**
 * Sends the `wake` signal to workflow `workflowId` of job `jobId` when its timeline shows a task
 * recorded after the reconcile was decided without it ({@link taskRecordedAfterUndecided} from
 * `sinceMs`, epoch ms) and the workflow itself (its `state` query) still waits in `unknown` without
 * a task. Returns whether a wake was sent. Never throws: a workflow that has closed needs no wake,
 * and one the signal does not reach is woken by the next orphan scan.
 */
export async function wakeIfDecidedWithout(
  store: Store,
  temporal: Client | undefined,
  job: { jobId: string; workflowId: string },
  sinceMs = 0,
): Promise<boolean> {
  if (!temporal) return false;
  try {
    if (!taskRecordedAfterUndecided(await store.findings.timeline(job.jobId), sinceMs)) return false;
    const handle = temporal.workflow.getHandle(job.workflowId);
    const view = await handle.query(stateQuery);
    if (view.state !== 'unknown' || view.taskId) return false; // it has moved on: nothing to adopt
    await handle.signal(wakeSignal, { providerStatus: 'task recorded late' });
    return true;
  } catch {
    return false;
  }
}
