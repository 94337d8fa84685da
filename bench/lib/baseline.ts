/**
 * The plain loop of the throughput benchmark: an in-process `async` poll loop, no Temporal, no
 * queue — insert, submit, then `setTimeout` until the next check on the product's schedule, then
 * write once. Its provider and store calls are those of `loopJob.ts` (the same as the product's,
 * call for call); a crash loses every job in flight.
 */
import type { PollPolicy } from '../../src/model/types.js';
import type { ProviderRegistry } from '../../src/providers/registry.js';
import type { Config } from '../../src/config.js';
import type { Store } from '../../src/store/index.js';
import { loopJob, type LoopJobInput } from './loopJob.js';

/** One baseline job. */
export type BaselineJob = LoopJobInput;

/** Dependencies of {@link startBaselineJob}. */
export interface BaselineDeps {
  store: Store;
  providers: ProviderRegistry;
  config: Config;
  provider: string;
  policy: Partial<PollPolicy>;
  /** Called when the result transaction committed (epoch ms). */
  onWritten?: (jobId: string, at: number) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Inserts the job row (the "start"), then returns the promise of the rest of the job: submit,
 * poll on the product's schedule, write the result once. Resolves with the final state.
 */
export async function startBaselineJob(
  deps: BaselineDeps,
  job: BaselineJob,
): Promise<{ jobId: string; done: Promise<string> }> {
  const steps = loopJob(deps, job);
  await steps.insert();
  const run = async (): Promise<string> => {
    const { taskId, delayMs } = await steps.submit();
    let wait = delayMs;
    for (let n = 0; ; n++) {
      await sleep(wait);
      const out = await steps.check(taskId, n);
      if (out.kind === 'final') {
        if (out.state === 'completed') deps.onWritten?.(steps.jobId, Date.now());
        return out.state;
      }
      wait = out.delayMs;
    }
  };
  return { jobId: steps.jobId, done: run() };
}
