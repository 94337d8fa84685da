/**
 * Maintenance workflows, started by Temporal Schedules (see `src/client/schedules.ts`).
 * Deterministic code only.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities, OrphanScanOptions, OrphanScanReport } from '../activities/maintenance.js';

const acts = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '5m',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 10 },
});

/** Purges expired result payloads and marks their jobs `expired` (evidence kept); deletes webhook records past their retention. */
export async function purgeExpiredResultsWorkflow(): Promise<{
  purged: number;
  jobsExpired: number;
  webhookRows: number;
}> {
  return acts.purgeExpiredResults({});
}

/** Records orphan and stalled jobs with a suggested recovery. */
export async function findOrphansWorkflow(opts: OrphanScanOptions): Promise<OrphanScanReport> {
  return acts.scanOrphans(opts);
}
