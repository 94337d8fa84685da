/**
 * The worker of a Temporal floor (`workflows.ts`), in its own process like the product's bench
 * worker (`bench/lib/workerMain.ts`), with the same runtime set-up and IPC messages
 * (`WorkerMessage`), and with the product worker's capacity options: the options
 * `createScrapeWorker` passes to `Worker.create` are captured without creating that worker
 * (`captureWorkerOptions`) and spread into this worker's, so cache size, slots, pollers and
 * throttles follow the product's as they change. Only what the worker runs differs: the floor's
 * bundle, its no-op activity, its own task queue, no interceptors.
 *
 * The no-op activity of a run's last step sends `written` {jobId: workflow ID, at}. It stops on a
 * `stop` message or SIGTERM.
 */
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { Command } from 'commander';
import { z } from 'zod';
import { loadConfigFile } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { connectWorker, createScrapeWorker } from '../../src/worker.js';
import type { WorkerMessage } from '../lib/workerMain.js';
import { capacityOptions, captureWorkerOptions, startWorkerRuntime } from '../lib/workerRuntime.js';
import type { FloorActivities } from './workflows.js';

const OptionsSchema = z.object({
  config: z.string().min(1),
  taskQueue: z.string().min(1),
  bundle: z.string().min(1),
  productBundle: z.string().min(1),
  statusEveryMs: z.coerce.number().int().min(50).default(1_000),
});

function send(m: WorkerMessage): void {
  if (process.send) process.send(m);
}

async function main(): Promise<void> {
  const program = new Command('bench-floor-worker')
    .requiredOption(
      '--config <file>',
      "the product worker's configuration (JSON): connection, namespace, its task queue",
    )
    .requiredOption('--task-queue <name>', "the floor's task queue")
    .requiredOption('--bundle <file>', "the floor's workflow bundle")
    .requiredOption(
      '--product-bundle <file>',
      "the product's workflow bundle (read while capturing its worker options, so that nothing is bundled)",
    )
    .option('--status-every-ms <ms>', 'worker status report interval', '1000')
    .parse();
  const o = OptionsSchema.parse(program.opts());
  const runtime = await startWorkerRuntime();
  const config = loadConfigFile(o.config);
  const connection = await connectWorker(config);
  // The product's factory also builds its providers over the store; kept open until exit.
  const store = await openStore(config.storeUrl);
  process.env.SCRAPE_WORKFLOW_BUNDLE = o.productBundle;
  const capacity = await captureWorkerOptions(config.temporal.taskQueue, () =>
    createScrapeWorker({ connection, config, store }),
  );
  const activities: FloorActivities = {
    async noop(last: boolean, _input?: unknown, answerBytes?: number) {
      const info = Context.current().info;
      if (last) send({ t: 'written', jobId: info.workflowExecution?.workflowId ?? info.activityId, at: Date.now() });
      return answerBytes ? 'x'.repeat(answerBytes) : undefined;
    },
  };
  const worker = await Worker.create({
    ...capacity,
    connection,
    namespace: config.temporal.namespace,
    taskQueue: o.taskQueue,
    workflowBundle: { codePath: o.bundle },
    activities,
  });
  const timer = setInterval(
    () => send({ t: 'status', at: Date.now(), status: worker.getStatus(), loop: runtime.loop() }),
    o.statusEveryMs,
  );
  const stop = () => {
    try {
      worker.shutdown();
    } catch {
      // already stopping
    }
  };
  process.on('message', (m: unknown) => {
    if (m && typeof m === 'object' && (m as { t?: unknown }).t === 'stop') stop();
  });
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
  runtime.loop();
  send({ t: 'ready', pid: process.pid, metricsUrl: runtime.metricsUrl, capacity: capacityOptions(worker) });
  await worker.run();
  clearInterval(timer);
  await connection.close();
  await store.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    send({ t: 'error', message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    console.error(e);
    process.exit(1);
  },
);
