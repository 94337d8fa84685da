/**
 * The Temporal floor of the throughput benchmark: the cheapest workflows a job could be, to price
 * what Temporal itself costs per job apart from anything the product does. Built into their own
 * bundle (`index.ts`) and run by `workerMain.ts` with the product worker's capacity options.
 *
 * - `floorOneActivity`: one no-op activity, then complete (a start, two workflow tasks, one activity);
 * - `floorTwoActivities`: two no-op activities one after the other;
 * - `floorOneActivityVisible`: `floorOneActivity` with what the product's Web UI contract and its
 *   payloads cost Temporal: started with the product's start options (its input, memo, search
 *   attributes, summary and details; `throughput.ts` builds them with the product's
 *   `startOptions`), its activity given an input of the product's submit activity's shape and
 *   answering with the product's answer's size, one upsert of `ScrapeState` and `ScrapeTaskId`
 *   with the completion, and a result of the size of the product's `JobView`, as a product job
 *   that finishes within its first activity records. What it costs over `floorOneActivity` is
 *   the price of listing, filtering and reading jobs in the Web UI and of their evidence in
 *   history, which no design of the product can drop.
 *
 * The last activity of a run reports the job done to the benchmark (`FloorActivities.noop`).
 */
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { ScrapeState, ScrapeTaskId } from '../../src/workflows/searchAttributes.js';

/** The floor's one activity. */
export interface FloorActivities {
  /**
   * Does nothing; when `last`, tells the benchmark the job's work is done (the moment a product
   * job's result is written). `_input` is carried, not read; with `answerBytes`, answers with a
   * string of that many bytes.
   */
  noop(last: boolean, _input?: unknown, answerBytes?: number): Promise<string | void>;
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

/** Bytes of the product's answers for one page, measured on a fast job's history: its submit's answer and its `JobView`. */
const PRODUCT_ANSWER_BYTES = 430;
const PRODUCT_VIEW_BYTES = 630;

/**
 * One no-op activity given `input` (the product's workflow input) inside an input of the product's
 * submit shape, then the upsert a fast product job makes with its completion; returns a string of
 * the product's `JobView` size.
 */
export async function floorOneActivityVisible(input: Record<string, unknown>): Promise<string> {
  const submitShaped = {
    job: { ...input, workflowId: input.jobId },
    afterReconcile: false,
    trackingDeadlineMs: 1_800_000,
    track: {
      generation: Date.now(),
      schedule: { initialDelayMs: 2_000, maxDelayMs: 60_000, multiplier: 1.5, jitter: 0.2, slowdown: 1 },
      firstDelayMs: 2_000,
      notFoundLimit: 3,
      budgetMs: 20_000,
    },
  };
  await noop(true, submitShaped, PRODUCT_ANSWER_BYTES);
  upsertSearchAttributes([
    { key: ScrapeState, value: 'completed' },
    { key: ScrapeTaskId, value: 'floor-task' },
  ]);
  return 'x'.repeat(PRODUCT_VIEW_BYTES);
}
