/**
 * What every bench worker process (the product's, `workerMain.ts`, and the Temporal floors',
 * `bench/floor/workerMain.ts`) sets up the same way: the SDK runtime with the product's JSON logger
 * and Core's Prometheus exporter on a free loopback port (task slots, pollers, sticky cache,
 * schedule-to-start as the SDK sees it), an event-loop monitor, and the worker options that decide
 * its capacity — read back from the created worker, so that the floors can be shown to run with
 * the product's.
 */
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { freePort } from '../../src/lib/ports.js';
import { installWorkerRuntime } from '../../src/observability/logging.js';
import { round } from './proc.js';

/** The event loop of a worker process over one reporting interval. Times in ms. */
export interface LoopFigures {
  /** Length of the interval, ms. */
  windowMs: number;
  /** Share of the interval the loop was busy running JavaScript or native callbacks (0..1, `performance.eventLoopUtilization`). */
  utilization: number;
  /** Delay of a 10-ms timer beyond its 10 ms (`monitorEventLoopDelay`): how long a ready callback waited for the loop. */
  lagMs: { p50: number; p99: number; max: number; mean: number; samples: number };
}

/** Resolution of the event-loop delay monitor, ms (the delay it reports includes it; subtracted). */
const LOOP_RESOLUTION_MS = 10;

/**
 * Installs the SDK runtime (WARN logs as JSON lines on stderr, Core metrics on a free loopback
 * port) and starts the event-loop monitor. Call once, before any native connection exists.
 * Returns the metrics URL and `loop()`, which reports the interval since its previous call.
 */
export async function startWorkerRuntime(): Promise<{ metricsUrl: string; loop(): LoopFigures }> {
  const port = await freePort();
  installWorkerRuntime({ level: 'WARN', sdkMetricsAddress: `127.0.0.1:${port}` });
  const delay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  delay.enable();
  let elu: EventLoopUtilization = performance.eventLoopUtilization();
  let since = performance.now();
  const ms = (ns: number) => round(Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS), 1);
  return {
    metricsUrl: `http://127.0.0.1:${port}/metrics`,
    loop() {
      const now = performance.now();
      const d = performance.eventLoopUtilization(elu);
      elu = performance.eventLoopUtilization();
      const out: LoopFigures = {
        windowMs: Math.round(now - since),
        utilization: round(d.utilization, 3),
        lagMs:
          delay.count > 0
            ? {
                p50: ms(delay.percentile(50)),
                p99: ms(delay.percentile(99)),
                max: ms(delay.max),
                mean: ms(delay.mean),
                samples: delay.count,
              }
            : { p50: 0, p99: 0, max: 0, mean: 0, samples: 0 },
      };
      delay.reset();
      since = now;
      return out;
    },
  };
}

/**
 * The compiled worker options that decide a worker's capacity and its traffic to the server: the
 * slot tuner (workflow-task, activity and local-activity slots), pollers, sticky cache and its
 * timeout, heartbeat throttling, rate limits, eager activities, shutdown grace. JSON-safe.
 */
export function capacityOptions(worker: Worker): Record<string, unknown> {
  const o = worker.options as unknown as Record<string, unknown>;
  const keys = [
    'tuner',
    'maxCachedWorkflows',
    'workflowTaskPollerBehavior',
    'activityTaskPollerBehavior',
    'nonStickyToStickyPollRatio',
    'stickyQueueScheduleToStartTimeoutMs',
    'maxHeartbeatThrottleIntervalMs',
    'defaultHeartbeatThrottleIntervalMs',
    'maxActivitiesPerSecond',
    'maxTaskQueueActivitiesPerSecond',
    'enableNonLocalActivities',
    'maxEagerActivityReservationsPerWorkflowTask',
    'workflowThreadPoolSize',
    'reuseV8Context',
    'isolateExecutionTimeoutMs',
    'shutdownGraceTimeMs',
  ];
  const safe = (v: unknown): unknown =>
    JSON.parse(
      JSON.stringify(v, (_k, x: unknown) =>
        typeof x === 'bigint' ? Number(x) : typeof x === 'function' ? '[function]' : x,
      ) ?? 'null',
    );
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, safe(o[k])]));
}

/** Keys of the product's worker options that name what it runs, not how: the floors replace or drop them. */
const NOT_CAPACITY: readonly (keyof WorkerOptions)[] = [
  'connection',
  'taskQueue',
  'activities',
  'workflowsPath',
  'workflowBundle',
  'interceptors',
  'sinks',
  'identity',
  'dataConverter',
  'plugins',
  'nexusServices',
  'bundlerOptions',
];

/** Thrown by the capturing `Worker.create` of {@link captureWorkerOptions} to stop the product's worker from being built. */
class Captured extends Error {}

/**
 * The options `build` passes to `Worker.create` for `taskQueue` (the product's
 * `createScrapeWorker`, whose options are not exported), without creating that worker, minus
 * {@link NOT_CAPACITY}: what a floor worker spreads into its own options to have the product's
 * capacity (cache, slots, pollers, throttles) whatever they are today.
 * @throws Error when `build` never calls `Worker.create` for `taskQueue`, or fails before it.
 */
export async function captureWorkerOptions(
  taskQueue: string,
  build: () => Promise<unknown>,
): Promise<Partial<WorkerOptions>> {
  const original = Worker.create.bind(Worker);
  let captured: WorkerOptions | undefined;
  Worker.create = (async (options: WorkerOptions) => {
    if (options.taskQueue !== taskQueue) return original(options);
    captured = options;
    throw new Captured();
  }) as typeof Worker.create;
  try {
    await build();
  } catch (e) {
    if (!(e instanceof Captured)) throw e;
  } finally {
    Worker.create = original;
  }
  if (!captured) throw new Error(`the product's worker factory did not create a worker for task queue ${taskQueue}`);
  const out: Partial<WorkerOptions> = { ...captured };
  for (const k of NOT_CAPACITY) delete out[k];
  return out;
}
