/**
 * The Temporal worker entry point: registers the scrape workflows and the activities built from
 * the configured store and providers, on the configured task queue.
 *
 * Run: `SCRAPE_CONFIG=config.json npm run worker` (docs/operations.md). Stops cleanly on SIGINT/SIGTERM:
 * it stops polling, running activities get the shutdown grace time to finish and report, then are
 * cancelled (a submit still waiting for its answer reports `ambiguous`, and the process records
 * that answer when it comes, before it closes the store); the server retries anything unfinished
 * on another worker at once (the workflows keep their state in Temporal).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ConnectionOptions } from '@temporalio/client';
import { createMaintenanceActivities } from './activities/maintenance.js';
import { ensureMaintenanceSchedules, maintenanceTaskQueue } from './client/schedules.js';
import {
  NativeConnection,
  Runtime,
  Worker,
  bundleWorkflowCode,
  type LogLevel,
  type NativeConnectionOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { mapProviderErrors } from './activities/failures.js';
import { createActivities, DetachedTracker, handOffPolling, type ActivityDeps } from './activities/index.js';
import { HEARTBEAT_THROTTLE_MS, ScrapeWorker } from './scrapeWorker.js';
import { settleDetachedCalls } from './activities/context.js';
import { dataConverterFor, failureConverterPath } from './codec/config.js';
import { configuredAccounts } from './accounts.js';
import { loadConfigFile, type Config } from './config.js';
import { freePort } from './lib/ports.js';
import { installWorkerRuntime, sdkLogLevel } from './observability/logging.js';
import { setKnownProviders, storeMetrics } from './observability/metrics.js';
import { countJobsFrom, startMetricsServer } from './observability/metricsServer.js';
import { currentTracing, installTracing, workflowClientInterceptors } from './observability/tracing.js';
import { activityInterceptors, workflowInterceptorModule, workflowSpanSinks } from './observability/worker.js';
import { ProviderRegistry } from './providers/registry.js';
import { openStore, type Store } from './store/index.js';
import { temporalConnectionOptions } from './runtime.js';
import { checkSearchAttributes } from './namespace.js';
import { openRetiredRuns } from './client/upgrade.js';
import { credentialProblems } from './providers/shared/credentials.js';
import { needsCredential } from './providers/kinds.js';

export { settleDetachedCalls };
export { HEARTBEAT_THROTTLE_MS, ScrapeWorker };
export { checkSearchAttributes, MissingSearchAttributesError, type SearchAttributeProblem } from './namespace.js';

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
export function workflowBundle(
  variant: BundleVariant = {},
): Promise<WorkflowBundleWithSourceMap | { codePath: string }> {
  const plain = !variant.tracing && !variant.encryptFailures;
  const prebuilt = process.env.SCRAPE_WORKFLOW_BUNDLE;
  if (prebuilt && plain) {
    if (!fs.existsSync(prebuilt))
      return Promise.reject(
        new Error(`SCRAPE_WORKFLOW_BUNDLE=${prebuilt} does not exist (build it with \`npm run build:bundle\`)`),
      );
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
   * Max concurrent activity executions (default 2,000): submits (including a fast job's first
   * checks), reconciles, cancels. A job in its tracking phase holds no slot: its polling loop runs
   * detached ({@link maxTrackedJobs}); with `detachTracking: false` it holds one for its whole
   * wait, and the default is 20,000.
   */
  maxConcurrentActivityTaskExecutions?: number;
  /**
   * Most jobs this worker tracks at once in detached polling loops (default 50,000); a further
   * tracking activity is retried 10 s later by whichever worker takes it. A waiting job costs the
   * worker a timer and a few KiB between checks (`bench/README.md`); on 2 cores one worker keeps
   * the schedule of about 10,000-25,000 waiting jobs: size this to the worker's cores.
   */
  maxTrackedJobs?: number;
  /**
   * Whether the tracking phase's polling loops run detached from their activities (default true:
   * the activity completes asynchronously, see `src/worker/tracker.ts`). `false` runs each
   * loop inside its activity, holding an activity slot and the SDK's per-activity state for the
   * whole wait (the design before detached loops; the benchmarks measure both).
   */
  detachTracking?: boolean;
  /**
   * Workflows kept in the worker's cache (default 1000). Waiting jobs need no workflow task (the
   * server retries their polling activity), so a small cache keeps memory flat at any number of
   * waiting jobs; an evicted job replays its short history on its next task.
   */
  maxCachedWorkflows?: number;
  /**
   * Time running activities get to finish and report on shutdown, ms (default 10000); then they are
   * cancelled and report at once (a submit still awaiting its answer reports `ambiguous`; call
   * {@link settleDetachedCalls} before closing the store so that the answer is still recorded).
   */
  shutdownGraceTimeMs?: number;
  /** Identity shown in the Web UI's worker list. */
  identity?: string;
}

/**
 * Creates (does not run) a worker for the scrape task queue. First checks the namespace's search
 * attributes ({@link checkSearchAttributes}): a namespace that is not set up is refused with
 * {@link MissingSearchAttributesError} before anything polls.
 */
export async function createScrapeWorker(opts: ScrapeWorkerOptions): Promise<ScrapeWorker> {
  await checkSearchAttributes(opts.connection, opts.config.temporal.namespace);
  const providers = opts.providers ?? new ProviderRegistry(opts.config, process.env, {}, opts.store.providerKeys);
  const dataConverter = dataConverterFor(opts.config.codec);
  const tracing = currentTracing() !== undefined; // installTracing() before creating the worker
  setKnownProviders(Object.keys(opts.config.providers));
  const temporal = new Client({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    dataConverter,
    interceptors: { workflow: workflowClientInterceptors() },
  });
  await warnOfRetiredRuns(temporal);
  for (const [name, entry] of Object.entries(opts.config.providers))
    for (const c of needsCredential(entry) ? credentialProblems(entry, name) : [])
      Runtime.instance().logger.warn(`credential missing: ${c.problem}`, { provider: name, account: c.account });
  const tracker =
    opts.detachTracking === false
      ? undefined
      : new DetachedTracker({
          client: temporal.activity,
          heartbeatThrottleMs: HEARTBEAT_THROTTLE_MS,
          maxLoops: opts.maxTrackedJobs,
          graceMs: opts.shutdownGraceTimeMs ?? 10_000,
          warn: (message, meta) => Runtime.instance().logger.warn(message, meta),
        });
  const accounts = configuredAccounts(opts.config);
  await opts.store.budgets.seed(accounts.budgets, accounts.policies);
  const lifetime = new AbortController();
  const activities = {
    ...createActivities({
      store: opts.store,
      providers,
      resultRetentionMs: opts.config.resultRetentionMs,
      hooks: opts.hooks,
      temporal,
      tracker,
      weights: accounts.weights,
      stopped: lifetime.signal,
    }),
    // Also here for maintenance runs started on this queue before maintenance had its own (createMaintenanceWorker).
    ...createMaintenanceActivities({ store: opts.store, temporal }),
  };
  const worker = (await ScrapeWorker.create({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    taskQueue: opts.config.temporal.taskQueue,
    workflowBundle: await workflowBundle({ tracing, encryptFailures: dataConverter !== undefined }),
    activities,
    ...(dataConverter ? { dataConverter } : {}),
    // Provider errors become their failures innermost, so that metrics and traces see the failure.
    interceptors: { activity: [...activityInterceptors({ tracing }), mapProviderErrors] },
    ...(tracing ? { sinks: workflowSpanSinks() } : {}),
    // Without detached loops every tracked job holds a slot for its whole wait.
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions ?? (tracker ? 2_000 : 20_000),
    // The SDK sends an activity's heartbeats (a submit's first checks) at most once per this
    // interval; detached loops are throttled the same by their tracker.
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE_MS,
    // A workflow task offered to a stopping worker's sticky queue goes to the shared queue after this.
    stickyQueueScheduleToStartTimeout: '3s',
    maxCachedWorkflows: opts.maxCachedWorkflows ?? 1000,
    shutdownGraceTime: opts.shutdownGraceTimeMs ?? 10_000,
    ...(opts.identity ? { identity: opts.identity } : {}),
  })) as ScrapeWorker;
  worker.tracker = tracker;
  worker.lifetime = lifetime;
  return worker;
}

/**
 * Warns (the SDK runtime's logger) when runs of workflow types this release no longer serves are
 * still open: they need a worker of the release that started them (`scrape upgrade-check`).
 * A server that cannot count them is not a reason to stop the worker: the warning says so.
 */
async function warnOfRetiredRuns(temporal: Client): Promise<void> {
  const log = Runtime.instance().logger;
  try {
    const found = await openRetiredRuns(temporal, 5);
    if (found.count > 0)
      log.warn(
        'runs of retired workflow types are open: this worker does not serve them; keep a worker of the release that started them until they end (scrape upgrade-check)',
        { count: found.count, first: found.runs.map((r) => `${r.type} ${r.workflowId}`), query: found.query },
      );
  } catch (e) {
    log.warn('could not count open runs of retired workflow types', { error: (e as Error).message });
  }
}

/**
 * Creates (does not run) the worker of the maintenance task queue (`<taskQueue>-maintenance`, see
 * `client/schedules.ts`): the Schedules' purge and orphan-scan workflows and their activities,
 * kept off the jobs' task queue so that operators' job views leave them out.
 */
export async function createMaintenanceWorker(
  opts: Pick<ScrapeWorkerOptions, 'connection' | 'config' | 'store' | 'identity'>,
): Promise<Worker> {
  const dataConverter = dataConverterFor(opts.config.codec);
  const temporal = new Client({
    connection: opts.connection,
    namespace: opts.config.temporal.namespace,
    dataConverter,
  });
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
 * After the workers stopped, waits for the submits whose answer was still awaited when their
 * attempt ended (a shutdown's cancellation after the grace time, or the attempt's own timeout) and
 * records those answers, before the store is closed: the job, already moved to `unknown` and
 * reconciled by another worker, adopts the recorded answer instead of waiting for an operator. The
 * wait is bounded by the longest `submitTimeoutMs` of the configured entries (each call's own HTTP
 * timeout) plus 5 s. Embedders of {@link createScrapeWorker} call {@link settleDetachedCalls}
 * the same way before closing their store.
 */
async function settleSubmitsInFlight(
  config: Config,
  log: { info(m: string, meta?: Record<string, unknown>): void; warn(m: string, meta?: Record<string, unknown>): void },
): Promise<void> {
  const longest = Math.max(
    30_000,
    ...Object.values(config.providers).map((e) => Number((e as { submitTimeoutMs?: unknown }).submitTimeoutMs) || 0),
  );
  const t0 = Date.now();
  const { pending, settled } = await settleDetachedCalls(longest + 5_000);
  if (!pending) return;
  if (settled)
    log.info('submit answers that outlived their attempts are recorded', { pending, waitedMs: Date.now() - t0 });
  else
    log.warn('submit answers still awaited when the worker stopped waiting: reconciliation decides those jobs', {
      pending,
      waitedMs: Date.now() - t0,
    });
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
  installWorkerRuntime({
    level: sdkLogLevel(obs.logs.level),
    sdkMetricsAddress: sdkPort ? `127.0.0.1:${sdkPort}` : undefined,
  });
  const log = Runtime.instance().logger;
  const tracing = installTracing(obs.traces, 'worker');
  const store = await openStore(config.storeUrl, { metrics: storeMetrics });
  const connection = await connectWorker(config);
  const worker = await createScrapeWorker({ connection, config, store });
  const maintenance = await createMaintenanceWorker({ connection, config, store });
  await ensureMaintenanceSchedules(
    new Client({ connection, namespace: config.temporal.namespace, dataConverter: dataConverterFor(config.codec) }),
    {
      taskQueue: config.temporal.taskQueue,
    },
  );
  let metrics;
  if (obs.metrics.workerPort !== null) {
    countJobsFrom(store.jobs, store.budgets);
    metrics = await startMetricsServer({
      host: obs.metrics.host,
      port: obs.metrics.workerPort,
      sdkMetricsUrl: `http://127.0.0.1:${sdkPort}/metrics`,
    });
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
  // The first shutdown signal hands every in-process polling loop over to another worker at once
  // (the SDK's own handler then stops the workers; the grace time covers calls in flight).
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, handOffPolling);
  await Promise.all([worker.run(), maintenance.run()]);
  await settleSubmitsInFlight(config, log);
  await metrics?.close();
  await tracing?.shutdown();
  await connection.close();
  await store.close();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const bundleTo = process.argv.indexOf('--write-bundle');
  (bundleTo > 0
    ? writeWorkflowBundle(process.argv[bundleTo + 1] ?? 'dist/workflow-bundle.js').then((n) =>
        console.log(`workflow bundle written (${n} bytes)`),
      )
    : runWorkerMain()
  ).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
