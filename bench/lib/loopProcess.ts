/**
 * The parameters and IPC messages shared by the two loop processes of the throughput benchmark —
 * the plain loop (`baselineMain.ts`) and BullMQ (`bullmqMain.ts`) — and the driver that runs them
 * (`bench/throughput.ts`). Kept apart from the processes' entry points, which run when imported.
 */
import { z } from 'zod';

/** Parameters of a loop run (the JSON file given with `--params`). */
export const BaselineParamsSchema = z.object({
  /** The configuration (the product's schema), with the loop's own `storeUrl`. */
  config: z.unknown(),
  /** Provider entry of every job. */
  provider: z.string(),
  /** Poll policy overrides (ms), merged over the product's default. */
  policy: z.record(z.string(), z.unknown()),
  /** Jobs inserted and started at once. */
  startConcurrency: z.number().int().positive(),
  jobs: z.array(z.object({ account: z.string(), key: z.string(), url: z.string() })),
});

/**
 * Messages from a loop process to the driver. Times are epoch ms: `ready` before the clock starts;
 * `started` when every job is inserted and started; `written` when a job's result transaction
 * committed; `done` with the count of each final state; `error` when the process fails.
 */
export type LoopMessage =
  | { t: 'ready' }
  | { t: 'written'; jobId: string; at: number }
  | { t: 'started'; at: number }
  | { t: 'done'; at: number; states: Record<string, number> }
  | { t: 'error'; message: string };
