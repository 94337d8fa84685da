/**
 * Maintenance activities run by the Temporal Schedules in `src/client/schedules.ts`: purging
 * expired result payloads, and finding orphan and stalled jobs.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Store } from '../store/index.js';
import { WEBHOOK_RETENTION_MS } from '../store/webhooks.js';
import { wakeIfDecidedWithout } from './submit/lateAnswer.js';

/** Dependencies of {@link createMaintenanceActivities}. */
export interface MaintenanceDeps {
  store: Store;
  /** Client over the worker's connection, to see whether a job's workflow still runs. */
  temporal: Client;
}

/** Options of `scanOrphans`. Durations in ms. */
export interface OrphanScanOptions {
  /** A non-final job whose row has not changed for this long is examined (default 15 min). */
  stalledAfterMs: number;
  /** Failed status checks in a row that make a job "repeatedly erroring" (default 3). */
  errorThreshold: number;
}

/** What one orphan scan found. */
export interface OrphanScanReport {
  scanned: number;
  stalled: number;
  noWorkflow: number;
  repeatedErrors: number;
  resolved: number;
}

/**
 * Purges result payloads past their retention and marks their jobs `expired`, keeping the
 * evidence that they ran (title, task ID, times); deletes webhook delivery and quarantine rows
 * older than `webhookRetentionMs` (default 30 days). Returns counts.
 */
export async function purgeExpiredResults(
  { store }: MaintenanceDeps,
  input: { limit?: number; webhookRetentionMs?: number } = {},
): Promise<{ purged: number; jobsExpired: number; webhookRows: number }> {
  let total = { purged: 0, jobsExpired: 0 };
  for (;;) {
    const r = await store.results.purgeExpired(new Date(), input.limit ?? 500);
    total = { purged: total.purged + r.purged, jobsExpired: total.jobsExpired + r.jobsExpired };
    if (r.purged < (input.limit ?? 500)) break;
  }
  const w = await store.webhooks.purge(new Date(Date.now() - (input.webhookRetentionMs ?? WEBHOOK_RETENTION_MS)));
  return { ...total, webhookRows: w.deliveries + w.quarantined };
}

/**
 * Finds non-final jobs without progress past `stalledAfterMs` (and tells apart a workflow
 * that still waits from a store row whose workflow no longer runs), and jobs whose status
 * checks keep failing. Records each finding with a suggested recovery; findings no longer
 * seen are marked resolved.
 */
export async function scanOrphans(
  { store, temporal }: MaintenanceDeps,
  opts: OrphanScanOptions,
): Promise<OrphanScanReport> {
  const scanStart = new Date();
  const report: OrphanScanReport = { scanned: 0, stalled: 0, noWorkflow: 0, repeatedErrors: 0, resolved: 0 };
  const stale = await store.jobs.stale(new Date(Date.now() - opts.stalledAfterMs).toISOString());
  for (const job of stale) {
    report.scanned++;
    let status: string | undefined;
    try {
      status = (await temporal.workflow.getHandle(job.workflow_id).describe()).status.name;
    } catch (e) {
      if (!(e instanceof WorkflowNotFoundError)) throw e;
    }
    const idle = `no progress since ${job.updated_at} (state ${job.state}${job.task_id ? `, task ${job.task_id}` : ''})`;
    if (status === 'RUNNING') {
      report.stalled++;
      // A task recorded by an answer that came after the reconcile was decided without it: the
      // workflow still waits for an operator; a wake makes it reconcile and adopt the task.
      const woken =
        job.task_id !== null &&
        (await wakeIfDecidedWithout(store, temporal, { jobId: job.id, workflowId: job.workflow_id }));
      const suggestion = woken
        ? `task ${job.task_id} was recorded after the reconcile was decided without it; the waiting workflow was woken to adopt it (if the job stays here, \`scrape resolve ${job.id} --task-id ${job.task_id}\`)`
        : job.state === 'unknown'
          ? `submit outcome unknown and the provider cannot be reconciled automatically: check the provider for this job, then \`scrape resolve ${job.id} --task-id <id>\` or \`--resubmit\``
          : `the workflow is running but the store has not moved: inspect it in the Web UI (query \`state\`), check the worker and the provider; cancel with \`scrape cancel ${job.id}\` if it should stop`;
      await store.findings.upsertOrphan(job.id, 'stalled', idle, suggestion, scanStart);
    } else {
      report.noWorkflow++;
      const suggestion =
        job.state === 'cancelling'
          ? `the run stopped in the middle of a cancel: \`scrape resume ${job.id}\` finishes that cancel at the provider and reports the observed outcome`
          : job.task_id
            ? `no running workflow tracks provider task ${job.task_id}: \`scrape resume ${job.id}\` continues polling it (never resubmits)`
            : `no running workflow and no task ID: \`scrape resume ${job.id}\` starts a run that reconciles with the provider before any new submission`;
      await store.findings.upsertOrphan(
        job.id,
        'no_workflow',
        `${idle}; workflow ${status ?? 'not found'}`,
        suggestion,
        scanStart,
      );
    }
  }
  for (const job of await store.jobs.erroring(opts.errorThreshold)) {
    report.repeatedErrors++;
    await store.findings.upsertOrphan(
      job.id,
      'repeated_errors',
      `${job.status_errors} status checks in a row gave up (last error: ${job.last_error ? (JSON.parse(job.last_error) as { message: string }).message : 'unknown'})`,
      `check the provider's availability and the worker's credentials; the job keeps its task ID and keeps polling until its deadline (\`scrape incident ${job.id}\` shows the evidence)`,
      scanStart,
    );
  }
  report.resolved = await store.findings.resolveOrphansNotSeenSince(scanStart);
  return report;
}

/** Builds the maintenance activities over `deps`, each bound by name. */
export function createMaintenanceActivities(deps: MaintenanceDeps) {
  return {
    purgeExpiredResults: (input?: Parameters<typeof purgeExpiredResults>[1]) => purgeExpiredResults(deps, input),
    scanOrphans: (opts: OrphanScanOptions) => scanOrphans(deps, opts),
  };
}

/** The maintenance activity functions, as workflows proxy them. */
export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
