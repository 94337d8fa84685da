/**
 * What users would pick instead of Temporal: the same scrape loop driven by BullMQ on Redis, in
 * its own process (like `baselineMain.ts`), so that its CPU is read from the OS apart from Redis
 * (the phase's "server") and the benchmark process (simulator, page site, driver).
 *
 * One BullMQ job per scrape, processed in steps as BullMQ documents it ("Process Step Jobs"): the
 * first run submits (`loopJob.ts`: the real `ReferenceAdapter`, the same store calls as the
 * product), saves the next step and the task ID in the job's data and moves the job to the delayed
 * set until the first check (`job.moveToDelayed` + `DelayedError`); each later run is one status
 * check, re-delayed on the product's schedule (`scheduleDelay`), until the final answer, whose
 * result is written once with the product's `store.results.writeOnce` into this process's own SQLite
 * store. A failed step is retried by BullMQ (5 attempts, exponential backoff from 1 s) from the
 * step saved. Completed jobs are removed from Redis, as a user keeping Redis small would.
 *
 * Parameters come from a JSON file (`--params`: {@link BullmqParamsSchema}). Over IPC it reports
 * `ready`, then on `go` inserts and enqueues every job (`started`), reports `written` {jobId, at}
 * per result committed and `done` with the final states, then waits for `exit`.
 */
import { Queue, Worker, DelayedError, type Job } from 'bullmq';
import PQueue from 'p-queue';
import { z } from 'zod';
import { BaselineParamsSchema, driverMessages, sendToDriver, startLoopProcess } from './loopProcess.js';
import { loopJob, type LoopJobInput } from './loopJob.js';

/** Parameters of a BullMQ run: those of the baseline, plus the Redis server and the worker's concurrency. */
export const BullmqParamsSchema = BaselineParamsSchema.extend({
  redis: z.object({ host: z.string(), port: z.number().int().positive() }),
  /** Jobs a BullMQ worker runs at once (the product worker's activity slots, 500, by default). */
  concurrency: z.number().int().positive(),
});

/** Data of one BullMQ job: the scrape, the next step, the task ID once known, the checks made. */
interface StepData extends LoopJobInput {
  step: 'submit' | 'check';
  taskId?: string;
  checks: number;
}

const QUEUE = 'scrapes';

const send = sendToDriver;

async function main(): Promise<void> {
  const { params: p, config, store, providers } = await startLoopProcess('bench-bullmq', BullmqParamsSchema);
  const deps = { store, providers, config, provider: p.provider, policy: p.policy };
  const connection = { host: p.redis.host, port: p.redis.port };
  const queue = new Queue<StepData, string>(QUEUE, {
    connection,
    defaultJobOptions: {
      attempts: 5,
      backoff: { type: 'exponential', delay: 1_000 },
      removeOnComplete: true,
      removeOnFail: 1_000,
    },
  });
  const states: Record<string, number> = {};
  let final = 0;
  let doneSent = false;
  const settle = (state: string) => {
    states[state] = (states[state] ?? 0) + 1;
    final++;
    if (final >= p.jobs.length && !doneSent) {
      doneSent = true;
      send({ t: 'done', at: Date.now(), states });
    }
  };
  const processor = async (job: Job<StepData, string>, token?: string): Promise<string> => {
    const steps = loopJob(deps, job.data);
    if (job.data.step === 'submit') {
      const { taskId, delayMs } = await steps.submit();
      await job.updateData({ ...job.data, step: 'check', taskId, checks: 0 });
      await job.moveToDelayed(Date.now() + delayMs, token);
      throw new DelayedError();
    }
    const out = await steps.check(job.data.taskId!, job.data.checks);
    if (out.kind === 'final') {
      if (out.state === 'completed') send({ t: 'written', jobId: steps.jobId, at: Date.now() });
      return out.state;
    }
    await job.updateData({ ...job.data, checks: job.data.checks + 1 });
    await job.moveToDelayed(Date.now() + out.delayMs, token);
    throw new DelayedError();
  };
  const worker = new Worker<StepData, string>(QUEUE, processor, { connection, concurrency: p.concurrency });
  worker.on('completed', (_job, state) => settle(state));
  worker.on('failed', (job, err) => {
    // A step that threw is retried until its attempts are spent; only then is the scrape lost.
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) settle(`error: ${err.message.slice(0, 200)}`);
  });
  worker.on('error', (e) => console.error(e));

  const message = driverMessages();
  await queue.waitUntilReady();
  await worker.waitUntilReady();
  // Warm the provider client before the clock starts, as the baseline does.
  providers.resolve(p.provider, p.jobs[0]?.account ?? '');
  send({ t: 'ready' });
  await message('go');
  const producer = new PQueue({ concurrency: p.startConcurrency });
  await Promise.all(
    p.jobs.map((j) =>
      producer.add(async () => {
        await loopJob(deps, j).insert();
        // The key as BullMQ's job ID: adding the same scrape twice is one job, as a workflow ID is.
        await queue.add('scrape', { ...j, step: 'submit', checks: 0 }, { jobId: j.key });
      }),
    ),
  );
  send({ t: 'started', at: Date.now() });
  await message('exit');
  await worker.close();
  await queue.close();
  await store.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    send({ t: 'error', message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    process.exit(1);
  },
);
