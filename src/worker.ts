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
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type LogLevel, type NativeConnectionOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities/index.js';
import { loadConfigFile, type Config } from './config.js';
import { ProviderRegistry } from './providers/registry.js';
import { openStore, type Store } from './store/index.js';
import { temporalConnectionOptions } from './runtime.js';

/** Absolute path of the workflows module (TypeScript source under tsx, compiled JS under dist/). */
export function workflowsPath(): string {
  const ts = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));
  return fs.existsSync(ts) ? ts : fileURLToPath(new URL('./workflows/index.js', import.meta.url));
}

let bundlePromise: Promise<WorkflowBundleWithSourceMap> | undefined;

/**
 * The workflow bundle: a prebuilt file named by `SCRAPE_WORKFLOW_BUNDLE` (see
 * {@link writeWorkflowBundle}; a worker then starts in well under a second), else bundled once per
 * process from source (webpack, a few seconds of CPU) and reused.
 */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap | { codePath: string }> {
  const prebuilt = process.env.SCRAPE_WORKFLOW_BUNDLE;
  if (prebuilt) {
    if (!fs.existsSync(prebuilt)) return Promise.reject(new Error(`SCRAPE_WORKFLOW_BUNDLE=${prebuilt} does not exist (build it with \`npm run build:bundle\`)`));
    return Promise.resolve({ codePath: prebuilt });
  }
  bundlePromise ??= bundleWorkflowCode({ workflowsPath: workflowsPath(), logger: quietBundlerLogger });
  return bundlePromise;
}

/** Bundles the workflow code into `file` (for `SCRAPE_WORKFLOW_BUNDLE`). Returns its size in bytes. */
export async function writeWorkflowBundle(file: string): Promise<number> {
  const { code } = await bundleWorkflowCode({ workflowsPath: workflowsPath(), logger: quietBundlerLogger });
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

let loggingInstalled = false;

/**
 * Installs the SDK runtime's logger once per process (before any worker or native connection is
 * created): entries at `level` or above, as JSON lines appended to `file`, or to stderr when no
 * file is given. Messages are already sanitised by the activities (no credentials).
 */
export function installWorkerLogging(opts: { level?: LogLevel; file?: string } = {}): void {
  if (loggingInstalled) return;
  loggingInstalled = true;
  const file = opts.file;
  const logger = new DefaultLogger(opts.level ?? 'INFO', file
    ? (entry) => {
        fs.appendFileSync(file, `${JSON.stringify({ at: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(), level: entry.level, message: entry.message, ...entry.meta })}\n`);
      }
    : undefined);
  Runtime.install({ logger });
}

/** Options of {@link createScrapeWorker}. */
export interface ScrapeWorkerOptions {
  connection: NativeConnection;
  config: Config;
  store: Store;
  providers?: ProviderRegistry;
  /** Test hooks (see {@link ActivityDeps.hooks}). */
  hooks?: ActivityDeps['hooks'];
  /** Max concurrent activity executions (default 100). */
  maxConcurrentActivityTaskExecutions?: number;
  /** Time running activities get to finish on shutdown, ms (default 10000). */
  shutdownGraceTimeMs?: number;
  /** Identity shown in the Web UI's worker list. */
  identity?: string;
}

/** Creates (does not run) a worker for the scrape task queue. */
export async function createScrapeWorker(opts: ScrapeWorkerOptions): Promise<Worker> {
  const providers = opts.providers ?? new ProviderRegistry(opts.config, process.env, {}, opts.store);
  const temporal = new Client({ connection: opts.connection, namespace: opts.config.temporal.namespace });
  const activities = {
    ...createActivities({ store: opts.store, providers, resultRetentionMs: opts.config.resultRetentionMs, hooks: opts.hooks }),
    // Also here for maintenance runs started on this queue before maintenance had its own (createMaintenanceWorker).
    ...createMaintenanceActivities({ store: opts.store, temporal }),
  };
  return Worker.create({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    taskQueue: opts.config.temporal.taskQueue,
    workflowBundle: await workflowBundle(),
    activities,
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions ?? 100,
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
  const temporal = new Client({ connection: opts.connection, namespace: opts.config.temporal.namespace });
  return Worker.create({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    taskQueue: maintenanceTaskQueue(opts.config.temporal.taskQueue),
    workflowBundle: await workflowBundle(),
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

/** Runs a worker from `$SCRAPE_CONFIG` until SIGINT/SIGTERM. */
export async function runWorkerMain(): Promise<void> {
  const config = loadConfigFile();
  const store = await openStore(config.storeUrl);
  const connection = await connectWorker(config);
  const worker = await createScrapeWorker({ connection, config, store });
  const maintenance = await createMaintenanceWorker({ connection, config, store });
  await ensureMaintenanceSchedules(new Client({ connection, namespace: config.temporal.namespace }), { taskQueue: config.temporal.taskQueue });
  console.log(`worker (pid ${process.pid}) polling task queues "${config.temporal.taskQueue}" and "${maintenanceTaskQueue(config.temporal.taskQueue)}" on ${config.temporal.address} (namespace ${config.temporal.namespace}); store ${config.storeUrl.replace(/\/\/[^@/]*@/, '//[REDACTED]@')}`);
  await Promise.all([worker.run(), maintenance.run()]);
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
