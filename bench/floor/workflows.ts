/**
 * The Temporal floor of the throughput benchmark: the cheapest workflows a job could be, to price
 * what Temporal itself costs per job apart from anything the product does. Built into their own
 * bundle (`index.ts`) and run by `workerMain.ts` with the product worker's capacity options.
 *
 * - `floorOneActivity`: one no-op activity, then complete (a start, two workflow tasks, one activity);
 * - `floorTwoActivities`: two no-op activities one after the other;
 * - `floorOneActivityVisible`: `floorOneActivity` with what a product job that finishes within its
 *   first activity records: started with the product's start options (its input, memo, search
 *   attributes, summary and details; `throughput.ts` builds them with the product's
 *   `startOptions`), its activity scheduled with the product's submit options and given an input
 *   of that submit's shape, answering with the product's answer's size, one upsert of
 *   `ScrapeState` and `ScrapeTaskId` with the completion, and a result of the size of the
 *   product's `JobView`. What it costs over `floorOneActivity` is the price of the product's
 *   Web UI contract (start options, upsert), which no design of the product can drop, and of
 *   the payloads and activity options it chose, which a design could trim (an activity given
 *   only the job ID, say).
 *
 * The last activity of a run reports the job done to the benchmark (`FloorActivities.noop`).
 */
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { DEFAULT_POLL_POLICY, type ScrapeWorkflowInput } from '../../src/model/types.js';
import { scrapeProxies } from '../../src/workflows/scrape/options.js';
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

/**
 * Bytes of the product's answers for one page, read off the history of a fast job (a one-page
 * `completed` job of the demo, CLI 1.9.1): its submit's answer (`SubmitOutcome` of kind
 * `finished`) and its `JobView`. Fixed here, so they drift if those types grow.
 */
const PRODUCT_ANSWER_BYTES = 430;
const PRODUCT_VIEW_BYTES = 630;

/**
 * One no-op activity scheduled as the product schedules a fast job's submit (the proxy of
 * `scrapeProxies(policy).submitter`: its timeouts, retry policy and cancellation type) and given
 * an input of that submit's shape around `input` (the product's workflow input), then the upsert a
 * fast product job makes with its completion; returns a string of the product's `JobView` size.
 */
export async function floorOneActivityVisible(input: ScrapeWorkflowInput): Promise<string> {
  const policy = { ...DEFAULT_POLL_POLICY, ...input.policy };
  const submitShaped = {
    job: { ...input, workflowId: input.jobId },
    afterReconcile: false,
    trackingDeadlineMs: policy.deadlineMs,
    track: {
      generation: Date.now(),
      schedule: {
        initialDelayMs: policy.initialDelayMs,
        maxDelayMs: policy.maxDelayMs,
        multiplier: policy.multiplier,
        jitter: policy.jitter,
        slowdown: 1,
      },
      firstDelayMs: policy.initialDelayMs,
      notFoundLimit: policy.notFoundLimit,
      budgetMs: policy.fastPathMs,
    },
  };
  // The product's proxy builds an activity of whatever name is called on it: `noop` here.
  const submitter = scrapeProxies(policy).submitter as unknown as FloorActivities;
  await submitter.noop(true, submitShaped, PRODUCT_ANSWER_BYTES);
  upsertSearchAttributes([
    { key: ScrapeState, value: 'completed' },
    { key: ScrapeTaskId, value: 'floor-task' },
  ]);
  return 'x'.repeat(PRODUCT_VIEW_BYTES);
}
