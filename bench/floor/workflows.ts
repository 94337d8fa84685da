/**
 * The Temporal floor of the throughput benchmark: the cheapest workflows a job could be, to price
 * what Temporal itself costs per job apart from anything the product does. Built into their own
 * bundle (`index.ts`) and run by `workerMain.ts` with the product worker's capacity options.
 *
 * - `floorOneActivity`: one no-op activity, then complete (a start, two workflow tasks, one activity);
 * - `floorTwoActivities`: two no-op activities one after the other.
 *
 * The last activity of a run reports the job done to the benchmark (`FloorActivities.noop`).
 */
import { proxyActivities } from '@temporalio/workflow';

/** The floor's one activity. */
export interface FloorActivities {
  /** Does nothing; when `last`, tells the benchmark the job's work is done (the moment a product job's result is written). */
  noop(last: boolean): Promise<void>;
}

const { noop } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

/** One no-op activity. */
export async function floorOneActivity(): Promise<void> {
  await noop(true);
}

/** Two no-op activities, in sequence. */
export async function floorTwoActivities(): Promise<void> {
  await noop(false);
  await noop(true);
}
