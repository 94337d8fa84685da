/**
 * The Temporal Schedules of the maintenance workflows: result purge and orphan scan. Created or
 * updated idempotently (by `scrape setup`, the worker at start, and the demo); overlapping runs
 * are skipped. Schedule IDs carry the task queue, so several deployments can share a namespace.
 *
 * Their runs go to a task queue of their own, `<taskQueue>-maintenance` ({@link maintenanceTaskQueue};
 * the worker polls it beside the jobs' queue), so that an operator's view of the jobs in the Web
 * UI leaves them out: {@link JOBS_VIEW_QUERY} (or `TaskQueue = "scrapes"`) lists jobs only,
 * `TaskQueue = "scrapes-maintenance"` the maintenance runs.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { OrphanScanOptions } from '../activities/maintenance.js';

/** Options of {@link ensureMaintenanceSchedules}. Durations in ms. */
export interface MaintenanceScheduleOptions {
  taskQueue: string;
  /** Interval of the purge of expired results (default 15 min). */
  purgeEveryMs?: number;
  /** Interval of the orphan scan (default 5 min). */
  orphanScanEveryMs?: number;
  orphanScan?: Partial<OrphanScanOptions>;
}

/**
 * The visibility query of an operator's view of the jobs (docs/web-ui.md, "A saved view for jobs"): every
 * version of the scrape workflow (`scrapeWorkflow`, and the types of later versions, which start
 * with the same name), never a maintenance run.
 */
export const JOBS_VIEW_QUERY = 'WorkflowType STARTS_WITH "scrapeWorkflow"';

/** The task queue of the maintenance workflows of the deployment whose jobs run on `taskQueue`. */
export function maintenanceTaskQueue(taskQueue: string): string {
  return `${taskQueue}-maintenance`;
}

/** The schedule IDs for a task queue. */
export function maintenanceScheduleIds(taskQueue: string): { purge: string; orphans: string } {
  return {
    purge: `scrape-maintenance:${taskQueue}:purge-expired-results`,
    orphans: `scrape-maintenance:${taskQueue}:find-orphans`,
  };
}

/**
 * Creates the two schedules, or updates them when they exist (an update also moves runs created
 * before maintenance had its own task queue onto it). Returns their IDs.
 */
export async function ensureMaintenanceSchedules(
  client: Client,
  opts: MaintenanceScheduleOptions,
): Promise<{ purge: string; orphans: string }> {
  const ids = maintenanceScheduleIds(opts.taskQueue);
  const scan: OrphanScanOptions = { stalledAfterMs: 15 * 60_000, errorThreshold: 3, ...opts.orphanScan };
  const specs = [
    {
      scheduleId: ids.purge,
      every: opts.purgeEveryMs ?? 15 * 60_000,
      workflowType: 'purgeExpiredResultsWorkflow',
      args: [] as unknown[],
      summary: 'Purge expired scrape results (evidence kept)',
    },
    {
      scheduleId: ids.orphans,
      every: opts.orphanScanEveryMs ?? 5 * 60_000,
      workflowType: 'findOrphansWorkflow',
      args: [scan] as unknown[],
      summary: 'Find orphan and stalled scrape jobs',
    },
  ];
  for (const s of specs) {
    const action = {
      type: 'startWorkflow' as const,
      workflowType: s.workflowType,
      args: s.args,
      taskQueue: maintenanceTaskQueue(opts.taskQueue),
      workflowId: `${s.scheduleId}:run`,
      staticSummary: s.summary,
    };
    try {
      await client.schedule.create({
        scheduleId: s.scheduleId,
        spec: { intervals: [{ every: s.every }] },
        action,
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1m' },
      });
    } catch (e) {
      if (!(e instanceof ScheduleAlreadyRunning)) throw e;
      await client.schedule.getHandle(s.scheduleId).update((prev) => ({
        ...prev,
        spec: { intervals: [{ every: s.every }] },
        action,
        policies: { ...prev.policies, overlap: ScheduleOverlapPolicy.SKIP },
      }));
    }
  }
  return ids;
}
