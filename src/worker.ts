/**
 * The Temporal worker entry point: registers the scrape workflows and the activities built from
 * the configured store and providers, on the configured task queue.
 *
 * Run: `SCRAPE_CONFIG=config.json npm run worker` (see README). Stops cleanly on SIGINT/SIGTERM:
 * running activities get the shutdown grace time, and anything unfinished is retried by the
 * server on another worker (the workflows keep their state in Temporal).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ConnectionOptions } from '@temporalio/client';
import { createMaintenanceActivities } from './activities/maintenance.js';
import { ensureMaintenanceSchedules, maintenanceTaskQueue } from './client/schedules.js';
import { NativeConnection, Runtime, Worker, bundleWorkflowCode, type LogLevel, type NativeConnectionOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities/index.js';
import { dataConverterFor, failureConverterPath } from './codec/config.js';
import { loadConfigFile, type Config } from './config.js';
import { freePort } from './lib/ports.js';
import { installWorkerRuntime, sdkLogLevel } from './observability/logging.js';
import { setKnownProviders } from './observability/metrics.js';
import { countJobsFrom, startMetricsServer } from './observability/metricsServer.js';
import { currentTracing, installTracing, workflowClientInterceptors } from './observability/tracing.js';
import { activityInterceptors, workflowInterceptorModule, workflowSpanSinks } from './observability/worker.js';
import { ProviderRegistry } from './providers/registry.js';
import { openStore, type Store } from './store/index.js';
import { temporalConnectionOptions } from './runtime.js';

/** Absolute path of the workflows module (TypeScript source under tsx, compiled JS under dist/). */
export function workflowsPath(): string {
  const ts = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));
  return fs.existsSync(ts) ? ts : fileURLToPath(new URL('./workflows/index.js', import.meta.url));
}

const bundles = new Map<string, Promise<WorkflowBundleWithSourceMap>>();

/** What the workflow bundle includes beyond the workflows (each combination is its own bundle). */
export interface BundleVariant {
  /** The OpenTelemetry workflow interceptors (`src/workflows/otelInterceptors.ts`); they double the bundle, so only with tracing on. */
  tracing?: boolean;
  /** The failure converter that moves error messages into encrypted payloads (`src/codec/failureConverter.ts`), with payload encryption on. */
  encryptFailures?: boolean;
}

/**
 * The workflow bundle of `variant`. A prebuilt file named by `SCRAPE_WORKFLOW_BUNDLE` (see
 * {@link writeWorkflowBundle}; a worker then starts in well under a second) is used for the plain
 * variant; otherwise the code is bundled once per process and variant (webpack, a few seconds of
 * CPU; twice that with tracing) and reused.
 */
export function workflowBundle(variant: BundleVariant = {}): Promise<WorkflowBundleWithSourceMap | { codePath: string }> {
  const plain = !variant.tracing && !variant.encryptFailures;
  const prebuilt = process.env.SCRAPE_WORKFLOW_BUNDLE;
  if (prebuilt && plain) {
    if (!fs.existsSync(prebuilt)) return Promise.reject(new Error(`SCRAPE_WORKFLOW_BUNDLE=${prebuilt} does not exist (build it with \`npm run build:bundle\`)`));
    return Promise.resolve({ codePath: prebuilt });
  }
  const key = `${variant.tracing ? 'tracing' : ''}|${variant.encryptFailures ? 'encrypted-failures' : ''}`;
  let b = bundles.get(key);
  if (!b) {
    b = bundleWorkflowCode(bundleOptions(variant));
    bundles.set(key, b);
  }
  return b;
}

function bundleOptions(variant: BundleVariant) {
  return {
    workflowsPath: workflowsPath(),
    ...(variant.tracing ? { workflowInterceptorModules: [workflowInterceptorModule()] } : {}),
    ...(variant.encryptFailures ? { failureConverterPath: failureConverterPath() } : {}),
    logger: quietBundlerLogger,
  };
}

/** Bundles the workflow code (plain variant) into `file` (for `SCRAPE_WORKFLOW_BUNDLE`). Returns its size in bytes. */
export async function writeWorkflowBundle(file: string): Promise<number> {
  const { code } = await bundleWorkflowCode(bundleOptions({}));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, code);
  return Buffer.byteLength(code);
}

const quietBundlerLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn(message: string, meta?: Record<string, unknown>) {
    console.warn(message, meta ?? '');
  },
  error(message: string, meta?: Record<string, unknown>) {
    console.error(message, meta ?? '');
  },
};

/**
 * Installs the SDK runtime's logger once per process (before any worker or native connection is
 * created): entries at `level` or above, as JSON lines appended to `file`, or to stderr when no
 * file is given, without activity task tokens and with credentials redacted
 * (`src/observability/logging.ts`). A worker with `/metrics` calls `installWorkerRuntime` instead.
 */
export function installWorkerLogging(opts: { level?: LogLevel; file?: string } = {}): void {
  installWorkerRuntime(opts);
}

/** Options of {@link createScrapeWorker}. */
export interface ScrapeWorkerOptions {
  connection: NativeConnection;
  config: Config;
  store: Store;
  providers?: ProviderRegistry;
  /** Test hooks (see {@link ActivityDeps.hooks}). */
  hooks?: ActivityDeps['hooks'];
  /**
   * Max concurrent activity executions (default 500). Activities are async I/O (a status check, a
   * short first wait), so a slot costs little memory; the server waits between checks, not a slot.
   */
  maxConcurrentActivityTaskExecutions?: number;
  /**
   * Workflows kept in the worker's cache (default 1000). Waiting jobs need no workflow task (the
   * server retries their polling activity), so a small cache keeps memory flat at any number of
   * waiting jobs; an evicted job replays its short history on its next task.
   */
  maxCachedWorkflows?: number;
  /** Time running activities get to finish on shutdown, ms (default 10000). */
  shutdownGraceTimeMs?: number;
  /** Identity shown in the Web UI's worker list. */
  identity?: string;
}

/** Creates (does not run) a worker for the scrape task queue. */
export async function createScrapeWorker(opts: ScrapeWorkerOptions): Promise<Worker> {
  const providers = opts.providers ?? new ProviderRegistry(opts.config, process.env, {}, opts.store);
  const dataConverter = dataConverterFor(opts.config.codec);
  const tracing = currentTracing() !== undefined; // installTracing() before creating the worker
  setKnownProviders(Object.keys(opts.config.providers));
  const temporal = new Client({ connection: opts.connection, namespace: opts.config.temporal.namespace, dataConverter, interceptors: { workflow: workflowClientInterceptors() } });
  const activities = {
    ...createActivities({ store: opts.store, providers, resultRetentionMs: opts.config.resultRetentionMs, hooks: opts.hooks, temporal }),
    // Also here for maintenance runs started on this queue before maintenance had its own (createMaintenanceWorker).
    ...createMaintenanceActivities({ store: opts.store, temporal }),
  };
  return Worker.create({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    taskQueue: opts.config.temporal.taskQueue,
    workflowBundle: await workflowBundle({ tracing, encryptFailures: dataConverter !== undefined }),
    activities,
    ...(dataConverter ? { dataConverter } : {}),
    interceptors: { activity: activityInterceptors({ tracing }) },
    ...(tracing ? { sinks: workflowSpanSinks() } : {}),
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions ?? 500,
    maxCachedWorkflows: opts.maxCachedWorkflows ?? 1000,
    shutdownGraceTime: opts.shutdownGraceTimeMs ?? 10_000,
    ...(opts.identity ? { identity: opts.identity } : {}),
  });
}

/**
 * Creates (does not run) the worker of the maintenance task queue (`<taskQueue>-maintenance`, see
 * `client/schedules.ts`): the Schedules' purge and orphan-scan workflows and their activities,
 * kept off the jobs' task queue so that operators' job views leave them out.
 */
export async function createMaintenanceWorker(opts: Pick<ScrapeWorkerOptions, 'connection' | 'config' | 'store' | 'identity'>): Promise<Worker> {
  const dataConverter = dataConverterFor(opts.config.codec);
  const temporal = new Client({ connection: opts.connection, namespace: opts.config.temporal.namespace, dataConverter });
  return Worker.create({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    taskQueue: maintenanceTaskQueue(opts.config.temporal.taskQueue),
    workflowBundle: await workflowBundle({ tracing: false, encryptFailures: dataConverter !== undefined }),
    ...(dataConverter ? { dataConverter } : {}),
    activities: createMaintenanceActivities({ store: opts.store, temporal }),
    maxConcurrentActivityTaskExecutions: 2,
    maxCachedWorkflows: 10,
    ...(opts.identity ? { identity: opts.identity } : {}),
  });
}

/** Converts client `ConnectionOptions` (address, TLS, API key) into `NativeConnection` options. */
export function nativeConnectionOptions(opts: ConnectionOptions): NativeConnectionOptions {
  const { address, tls, apiKey } = opts;
  return { address, tls, apiKey: typeof apiKey === 'function' ? apiKey() : apiKey };
}

/** Connects the worker to the configured cluster (TLS / API key from env, as for the client). */
export async function connectWorker(config: Config): Promise<NativeConnection> {
  return NativeConnection.connect(nativeConnectionOptions(temporalConnectionOptions(config)));
}

/**
 * Runs a worker from `$SCRAPE_CONFIG` until SIGINT/SIGTERM: JSON-line logs on stderr, `/metrics`
 * on `observability.metrics.workerPort` when set (our series + the SDK runtime's), traces over
 * OTLP when configured.
 */
export async function runWorkerMain(): Promise<void> {
  const config = loadConfigFile();
  const obs = config.observability;
  const sdkPort = obs.metrics.workerPort === null ? undefined : await freePort('127.0.0.1');
  installWorkerRuntime({ level: sdkLogLevel(obs.logs.level), sdkMetricsAddress: sdkPort ? `127.0.0.1:${sdkPort}` : undefined });
  const log = Runtime.instance().logger;
  const tracing = installTracing(obs.traces, 'worker');
  const store = await openStore(config.storeUrl);
  const connection = await connectWorker(config);
  const worker = await createScrapeWorker({ connection, config, store });
  const maintenance = await createMaintenanceWorker({ connection, config, store });
  await ensureMaintenanceSchedules(new Client({ connection, namespace: config.temporal.namespace, dataConverter: dataConverterFor(config.codec) }), { taskQueue: config.temporal.taskQueue });
  let metrics;
  if (obs.metrics.workerPort !== null) {
    countJobsFrom(store);
    metrics = await startMetricsServer({ host: obs.metrics.host, port: obs.metrics.workerPort, sdkMetricsUrl: `http://127.0.0.1:${sdkPort}/metrics` });
  }
  log.info('worker polling', {
    pid: process.pid,
    taskQueue: config.temporal.taskQueue,
    maintenanceTaskQueue: maintenanceTaskQueue(config.temporal.taskQueue),
    address: config.temporal.address,
    namespace: config.temporal.namespace,
    store: config.storeUrl.replace(/\/\/[^@/]*@/, '//[REDACTED]@'),
    encryption: config.codec.enabled,
    metrics: metrics ? `${metrics.url}/metrics` : null,
    tracing: tracing ? (obs.traces.otlpEndpoint ?? 'on') : null,
  });
  await Promise.all([worker.run(), maintenance.run()]);
  await metrics?.close();
  await tracing?.shutdown();
  await connection.close();
  await store.close();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const bundleTo = process.argv.indexOf('--write-bundle');
  (bundleTo > 0
    ? writeWorkflowBundle(process.argv[bundleTo + 1] ?? 'dist/workflow-bundle.js').then((n) => console.log(`workflow bundle written (${n} bytes)`))
    : runWorkerMain()
  ).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
