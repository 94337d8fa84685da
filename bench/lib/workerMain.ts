/**
 * A worker in its own process for the benchmarks, so that its CPU and memory are read from the OS
 * apart from the Temporal server and the benchmark process. It runs the product's worker
 * (`createScrapeWorker`: the product's workflow bundle and activities) on the task queue of its
 * design (see `bench/lib/stack.ts`): `v4` as the product runs it, `inActivity` with
 * `detachTracking: false` (each tracking loop inside its activity). *
 * It reports to the parent over IPC: `ready` {pid, metricsUrl, capacity} (the SDK's Prometheus
 * endpoint of this process and the worker's compiled capacity options, `workerRuntime.ts`);
 * `written` {jobId, at} from the product's `afterResultWritten` activity hook (epoch ms taken
 * right after the result transaction committed); `status` {at, status, loop, memory} every
 * `--status-every-ms` ms: `worker.getStatus()` (activity slots in use, cached workflows, ...) and
 * the event loop over the interval (utilization, lag p50/p99/max — better-sqlite3 is synchronous,
 * so a store write waiting for SQLite's lock stalls every task of the worker) and
 * `process.memoryUsage()` (`rss` is the whole process; the heap figures and `external` are this
 * main thread's isolate only, the workflow thread and the SDK's native core are in the rest);
 * `statements` {statements} in answer to a `statements` message: the statements its result store
 * ran since it opened (SQLite's prepared + reused, `statementCache.ts`; undefined on PostgreSQL). It
 * stops on a `stop` message, SIGTERM or the parent's disconnect; with `--cpu-profile-dir DIR` it
 * writes a CPU profile of its main thread (`worker-<pid>.cpuprofile`) before it stops. The
 * maintenance schedules are not installed (their cost is per schedule tick, not per job).
 */
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';
import { Command } from 'commander';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { loadConfigFile } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { connectWorker, createScrapeWorker } from '../../src/worker.js';
import { capacityOptions, startWorkerRuntime, type LoopFigures } from './workerRuntime.js';

/** Messages a bench worker (this one or a floor's) sends to its parent. Times are epoch ms. */
export type WorkerMessage =
  | { t: 'ready'; pid: number; metricsUrl?: string; capacity?: Record<string, unknown> }
  | { t: 'written'; jobId: string; at: number }
  | {
      t: 'status';
      at: number;
      status: ReturnType<Worker['getStatus']>;
      loop?: LoopFigures;
      /** `process.memoryUsage()` of this process, bytes (`rss` whole process; heap and `external` of the main thread only). */
      memory?: NodeJS.MemoryUsage;
      /** Jobs the worker tracks in detached polling loops (0 for a design whose loops run inside activities). */
      tracked?: number;
    }
  | {
      t: 'statements';
      /** Statements the worker's store ran since it opened (prepared + reused); undefined on PostgreSQL. */
      statements?: number;
    }
  | { t: 'error'; message: string };

const OptionsSchema = z.object({
  config: z.string().min(1),
  design: z.enum(['v4', 'inActivity']),
  bundle: z.string().min(1),
  statusEveryMs: z.coerce.number().int().min(50).default(1_000),
  maxActivities: z.coerce.number().int().positive().optional(),
  maxCachedWorkflows: z.coerce.number().int().min(0).optional(),
  /** Directory for a CPU profile of this thread, written on stop; absent: no profiling. */
  cpuProfileDir: z.string().min(1).optional(),
});

/**
 * Starts sampling this thread's CPU (every 2 ms) through the inspector; the returned function
 * stops it and writes `worker-<pid>.cpuprofile` into `dir` (once; later calls do nothing). The
 * profile is taken before shutdown, so it shows the steady state, not the hand-over.
 */
async function startCpuProfile(dir: string): Promise<() => Promise<void>> {
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))),
    );
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 2_000 });
  await post('Profiler.start');
  let done = false;
  return async () => {
    if (done) return;
    done = true;
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `worker-${process.pid}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}

function send(m: WorkerMessage): void {
  if (process.send) process.send(m);
}

async function main(): Promise<void> {
  const program = new Command('bench-worker')
    .requiredOption('--config <file>', 'worker configuration (JSON)')
    .requiredOption(
      '--design <v4|inActivity>',
      'which worker is measured: the product (v4) or the product with each tracking loop inside its activity (inActivity)',
    )
    .requiredOption('--bundle <file>', 'prebuilt workflow bundle')
    .option('--status-every-ms <ms>', 'worker status report interval', '1000')
    .option('--max-activities <n>', 'max concurrent activity executions (default: the product default)')
    .option('--max-cached-workflows <n>', 'workflows kept in the sticky cache (default: the product default)')
    .option('--cpu-profile-dir <dir>', 'write a V8 CPU profile of this thread here when told to stop')
    .parse();
  const o = OptionsSchema.parse(program.opts());
  const runtime = await startWorkerRuntime();
  const config = loadConfigFile(o.config);
  const store = await openStore(config.storeUrl);
  const connection = await connectWorker(config);
  const hooks = { afterResultWritten: (jobId: string) => send({ t: 'written', jobId, at: Date.now() }) };
  process.env.SCRAPE_WORKFLOW_BUNDLE = o.bundle;
  const worker = await createScrapeWorker({
    connection,
    config,
    store,
    hooks,
    maxConcurrentActivityTaskExecutions: o.maxActivities,
    maxCachedWorkflows: o.maxCachedWorkflows,
    detachTracking: o.design !== 'inActivity',
  });
  const timer = setInterval(
    () =>
      send({
        t: 'status',
        at: Date.now(),
        status: worker.getStatus(),
        loop: runtime.loop(),
        memory: process.memoryUsage(),
        tracked: worker.tracker?.size ?? 0,
      }),
    o.statusEveryMs,
  );
  const profiler = o.cpuProfileDir ? await startCpuProfile(o.cpuProfileDir) : undefined;
  // The SDK's runtime also shuts the worker down on SIGTERM/SIGINT, and a stop may come twice: a
  // second shutdown throws "Not running", which must not crash the drain. A profile that cannot be
  // written is reported to the parent, and the worker still stops.
  const stop = async () => {
    try {
      await profiler?.();
    } catch (e) {
      send({ t: 'error', message: `CPU profile not written: ${e instanceof Error ? e.message : String(e)}` });
    }
    try {
      worker.shutdown();
    } catch {
      // already stopping
    }
  };
  const statements = () =>
    store.sqliteStatements ? store.sqliteStatements.prepared + store.sqliteStatements.reused : undefined;
  process.on('message', (m: unknown) => {
    const t = m && typeof m === 'object' ? (m as { t?: unknown }).t : undefined;
    if (t === 'stop') void stop();
    else if (t === 'statements') send({ t: 'statements', statements: statements() });
  });
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => {
    void profiler?.().catch(() => undefined);
    try {
      worker.shutdown();
    } catch {
      // already stopping
    }
  });
  runtime.loop(); // the intervals reported start now, after the worker's start-up
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
