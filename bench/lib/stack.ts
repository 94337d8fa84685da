/**
 * The real stack the benchmarks run on: a Temporal dev server (SQLite file, its own temp
 * directory; or `TEMPORAL_ADDRESS`), the reference provider (`tools/sim`, a real HTTP server) with one
 * account per scenario, a small page site it really fetches, the SQLite result store, workers in
 * child processes (`workerMain.ts`), the typed client and, with `webhooks`, the HTTP API
 * (`src/api`) receiving the provider's signed webhooks.
 *
 * Two provider entries point at the same simulator: `reference` (polling only) and, with
 * `webhooks`, `reference_wh` (the worker sends our webhook URL and secret with each submit; the
 * client starts its jobs with `webhooks: true`). Both carry every account's API key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildApi } from '../../src/api/app.js';
import { hashApiKey } from '../../src/api/auth.js';
import { ScrapeClient } from '../../src/client/index.js';
import { parseConfig, webhookProviderNames, type Config } from '../../src/config.js';
import { connectOrStartTemporal, type TemporalTarget } from '../../tools/devserver/connectOrStart.js';
import { startSim, type ProfileInput, type Sim, type SimOptions } from '../../tools/sim/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { writeWorkflowBundle } from '../../src/worker.js';
import type { Measured } from './proc.js';
import { REPO } from './report.js';
import type { WorkerMessage } from './workerMain.js';
import type { LoopFigures } from './workerRuntime.js';

/**
 * What is measured: the product's one workflow type (`scrapeWorkflowV6`) on one of two workers:
 * `v4`, the product as it runs (tracking loops detached from their activities), or `inActivity`,
 * the same workflow on a worker started with `detachTracking: false` (each tracking loop runs
 * inside its activity and holds its slot for the job's whole wait). Each has its own task queue.
 */
export type Design = 'v4' | 'inActivity';

/** Every {@link Design}, in the order the benchmarks list them. */
export const DESIGNS: readonly Design[] = ['v4', 'inActivity'];

/** One simulator account (and our account of the same name). */
export interface BenchAccount {
  name: string;
  profile?: ProfileInput;
}

/** Options of one product worker process of a benchmark. */
export interface BenchWorkerOptions {
  /** How often the worker reports `getStatus()` and its event loop, ms (default 1000). */
  statusEveryMs?: number;
  /** Max concurrent activity executions (default: the product's). */
  maxActivities?: number;
  /** Workflows kept in the sticky cache (default: the product's). */
  maxCachedWorkflows?: number;
  /**
   * Write a V8 CPU profile of the worker's main thread here when it is told to stop (sampled every
   * 2 ms from its ready message; open the `.cpuprofile` in Chrome DevTools): what its one
   * JavaScript thread spends its time on.
   */
  cpuProfileDir?: string;
  /** Node options for the worker process (e.g. `--max-old-space-size=640`), before its script. */
  nodeArgs?: string[];
  /** Environment added to the worker process's (e.g. `MALLOC_ARENA_MAX=2`). */
  env?: Record<string, string>;
}

/** Options of {@link startStack}. */
export interface StackOptions {
  /** Short name used in task queue names and the temp directory. */
  name: string;
  accounts: BenchAccount[];
  /** Also configure `reference_wh` with webhooks and start the HTTP API that receives them. */
  webhooks?: boolean;
  /** Start the dev server with its Web UI (default headless). */
  ui?: boolean;
  /** Designs to run (default `v4` only). */
  designs?: Design[];
  /** Concurrent provider calls per provider key on a worker (default 50). */
  maxConcurrent?: number;
  /** HTTP timeout of the provider entries' reads, ms (default: the kind's, 10 s). */
  readTimeoutMs?: number;
  /** Extra simulator options (e.g. webhook retry delays). */
  sim?: Partial<Pick<SimOptions, 'webhookRetryDelaysMs' | 'webhookTimeoutMs'>>;
  /** Dev server dynamic config (e.g. visibility limits). */
  dynamicConfig?: Record<string, unknown>;
  /** Dev server state in memory instead of its SQLite file (default: the file, as the demo runs). */
  inMemory?: boolean;
  log?: (line: string) => void;
  keepDir?: boolean;
}

/** A worker child process. */
export interface BenchWorker {
  /** Label in logs and file names (`v4`, `floor-one`, …). */
  label: string;
  /** The product design it runs; undefined for another worker (a Temporal floor). */
  design?: Design;
  pid: number;
  /** Its SDK runtime's Prometheus endpoint (task slots, pollers, schedule-to-start as the SDK sees them). */
  metricsUrl?: string;
  /** Its compiled capacity options (tuner, cache, pollers, throttles; `capacityOptions` of `workerRuntime.ts`). */
  capacity?: Record<string, unknown>;
  /** Job ID → epoch ms when its result transaction had committed (the `afterResultWritten` hook). */
  written: Map<string, number>;
  /** Every `worker.getStatus()` report, in order. */
  statuses: {
    at: number;
    status: Extract<WorkerMessage, { t: 'status' }>['status'];
    loop?: LoopFigures;
    memory?: NodeJS.MemoryUsage;
    tracked?: number;
  }[];
  /**
   * Statements the worker's result store has run since it opened (SQLite: prepared + reused, each
   * `BEGIN`/`COMMIT` included; `statementCache.ts`), asked over IPC; undefined for a worker that does
   * not answer within 5 s (a floor's) or a store on PostgreSQL.
   */
  storeStatements(): Promise<number | undefined>;
  /** Asks the worker to shut down (SIGKILL after 15 s); resolves when it exited. */
  stop(): Promise<void>;
}

/** The running stack. */
export interface Stack {
  dir: string;
  temporal: TemporalTarget;
  /** PID of the Temporal server process (undefined for an external cluster). */
  serverPid: number | undefined;
  /** The dev server's Prometheus endpoint as it printed it at start (`Metrics: <url>`); undefined for an external cluster. */
  serverMetricsUrl: string | undefined;
  sim: Sim;
  store: Store;
  config: Config;
  /** The client of each design (each starts the product's workflow on its design's task queue). */
  clients: Record<Design, ScrapeClient>;
  temporalClient: Client;
  /** The HTTP API base URL, with `webhooks`. */
  apiUrl?: string;
  /** A page URL the simulator fetches (unique per `i`). */
  pageUrl(i: number): string;
  startWorker(design: Design, opts?: BenchWorkerOptions): Promise<BenchWorker>;
  /**
   * Starts another worker process (`script`, run with tsx, `args` after it) that speaks the bench
   * worker's IPC messages (`WorkerMessage`): e.g. a Temporal floor. Measured and stopped like the
   * product's workers.
   */
  startCustomWorker(label: string, script: string, args: readonly string[]): Promise<BenchWorker>;
  /** The product's prebuilt workflow bundle. */
  bundle: string;
  /** The configuration file of a prepared design (its task queue), for a worker or the CLI. */
  configFile(design: Design): string;
  /** The task queue of a design's jobs. */
  taskQueue(design: Design): string;
  /** Processes to measure: `server` (Temporal), `bench` (this process: simulator, page site, driver, API). */
  processes(): Measured[];
  /** Every process of the benchmark: {@link processes} plus every worker started (and `extra`). */
  ownProcesses(): Measured[];
  /** Adds a process (e.g. the baseline) to {@link ownProcesses}. */
  addOwnProcess(p: Measured): void;
  /**
   * What the workers logged (WARN and above) so far, counted: failed activity attempts by activity
   * type, and SQLite store errors (`SQLITE_BUSY_SNAPSHOT`, `database is locked`).
   */
  workerLogCounts(): {
    activityFailures: Record<string, number>;
    sqliteBusySnapshot: number;
    databaseLocked: number;
    workflowFailures: number;
  };
  close(): Promise<void>;
}

/** Starts the stack (see the module comment). */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `scrape-bench-${opts.name}-`));
  const cleanups: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    cleanups.length = 0;
    if (opts.keepDir) log(`kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const temporal = await connectOrStartTemporal({
      devServer: {
        ...(opts.inMemory ? {} : { dbFile: path.join(dir, 'temporal.db') }),
        headless: !opts.ui,
        dynamicConfig: opts.dynamicConfig ?? {},
      },
      logger: () => undefined,
    });
    cleanups.push(() => temporal.stop());
    // Read now: the server's output is kept as a short tail, which its later log lines push this out of.
    const serverMetricsUrl = /Metrics:\s+(http:\/\/\S+)/.exec(temporal.devServer?.outputTail() ?? '')?.[1];

    const site: FastifyInstance = Fastify({ logger: false });
    await site.register(fastifyStatic, { root: path.join(REPO, 'sample-site') });
    const siteUrl = (await site.listen({ host: '127.0.0.1', port: 0 })).replace(/\/$/, '');
    cleanups.push(() => site.close());
    const pages = fs.readdirSync(path.join(REPO, 'sample-site', 'articles')).map((f) => `articles/${f}`);

    const keys = Object.fromEntries(
      opts.accounts.map((a) => [a.name, `sk-bench-${a.name}-${randomBytes(8).toString('hex')}`]),
    );
    const sim = await startSim({
      host: '127.0.0.1',
      port: 0,
      accounts: opts.accounts.map((a) => ({ name: a.name, apiKeys: [keys[a.name]!], profile: a.profile })),
      logger: false,
      ...(opts.sim ?? {}),
    });
    cleanups.push(() => sim.close());

    const secretEnv = 'BENCH_WEBHOOK_SECRET';
    if (opts.webhooks) process.env[secretEnv] = randomBytes(24).toString('hex');
    const credentials = { accounts: Object.fromEntries(opts.accounts.map((a) => [a.name, { apiKey: keys[a.name]! }])) };
    // The bench accounts allow far more active jobs than any run starts: declared, so that the
    // figures measure steady-state costs, not the adaptive limit's ramp-up.
    const limits = { maxConcurrent: opts.maxConcurrent ?? 50, minIntervalMs: 0, activeJobs: { initial: 100_000 } };
    const queues: Record<Design, string> = {
      v4: `bench-${opts.name}-v4-${process.pid}`,
      inActivity: `bench-${opts.name}-in-activity-${process.pid}`,
    };
    const config = parseConfig(
      {
        temporal: { address: temporal.address, namespace: temporal.namespace, taskQueue: queues.v4 },
        // SCRAPE_BENCH_STORE_URL: e.g. the cluster's PostgreSQL (`npm run cluster` prints it).
        storeUrl: process.env.SCRAPE_BENCH_STORE_URL ?? `sqlite:${path.join(dir, 'store.db')}`,
        defaultProvider: 'reference',
        providers: {
          reference: {
            kind: 'reference',
            baseUrl: sim.url,
            credentials,
            limits,
            ...(opts.readTimeoutMs ? { readTimeoutMs: opts.readTimeoutMs } : {}),
          },
          ...(opts.webhooks
            ? {
                reference_wh: {
                  kind: 'reference',
                  baseUrl: sim.url,
                  credentials,
                  limits,
                  webhook: { url: 'http://127.0.0.1:9/placeholder', secretEnv },
                },
              }
            : {}),
        },
      },
      {},
    );
    const store = await openStore(config.storeUrl);
    cleanups.push(() => store.close());
    const connection = await Connection.connect(temporal.connectionOptions);
    cleanups.push(() => connection.close());
    const temporalClient = new Client({ connection, namespace: temporal.namespace });
    const webhookProviders = webhookProviderNames(config);
    // One workflow type: the designs differ in their workers only, so each client starts the
    // product's workflow on its design's task queue.
    const clients = Object.fromEntries(
      DESIGNS.map((d) => [
        d,
        new ScrapeClient({
          temporal: temporalClient,
          store,
          taskQueue: queues[d],
          defaultProvider: 'reference',
          webhookProviders,
        }),
      ]),
    ) as Record<Design, ScrapeClient>;

    let apiUrl: string | undefined;
    if (opts.webhooks) {
      const app = await buildApi({
        client: clients.v4,
        store,
        config,
        keys: [{ account: opts.accounts[0]!.name, sha256: hashApiKey(randomBytes(32).toString('hex')), name: 'bench' }],
      });
      apiUrl = (await app.listen({ host: '127.0.0.1', port: 0 })).replace(/\/$/, '');
      cleanups.push(() => app.close());
      config.providers.reference_wh!.webhook!.url = `${apiUrl}/v1/webhooks/reference_wh`;
    }

    const configFiles = {} as Record<Design, string>;
    const bundle = path.join(dir, 'bundle.js');
    await writeWorkflowBundle(bundle); // the product's bundle
    for (const d of opts.designs ?? ['v4']) {
      configFiles[d] = path.join(dir, `config-${d}.json`);
      fs.writeFileSync(
        configFiles[d],
        JSON.stringify({ ...config, temporal: { ...config.temporal, taskQueue: queues[d] } }),
      );
    }

    const workers: BenchWorker[] = [];
    const spawnWorker = async (
      label: string,
      script: string,
      args: readonly string[],
      design?: Design,
      proc: Pick<BenchWorkerOptions, 'nodeArgs' | 'env'> = {},
    ): Promise<BenchWorker> => {
      const logFile = path.join(dir, `worker-${label}-${workers.length}.log`);
      const fd = fs.openSync(logFile, 'a');
      const child: ChildProcess = spawn(
        process.execPath,
        [...(proc.nodeArgs ?? []), '--import', 'tsx', script, ...args],
        {
          cwd: REPO,
          env: { ...process.env, ...proc.env },
          stdio: ['ignore', fd, fd, 'ipc'],
        },
      );
      fs.closeSync(fd);
      const statementWaiters: ((n: number | undefined) => void)[] = [];
      const w: BenchWorker = {
        label,
        design,
        pid: child.pid!,
        written: new Map(),
        statuses: [],
        storeStatements: () =>
          new Promise<number | undefined>((resolve) => {
            if (!child.connected) return resolve(undefined);
            const done = (n: number | undefined) => {
              clearTimeout(timer);
              const i = statementWaiters.indexOf(done);
              if (i >= 0) statementWaiters.splice(i, 1);
              resolve(n);
            };
            const timer = setTimeout(() => done(undefined), 5_000);
            statementWaiters.push(done);
            child.send({ t: 'statements' });
          }),
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const done = new Promise<void>((r) => child.once('exit', () => r()));
          if (child.connected) child.send({ t: 'stop' });
          else child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await done;
          clearTimeout(t);
        },
      };
      const ready = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`worker ${label} not ready after 60 s; log: ${tail(logFile)}`)),
          60_000,
        );
        child.on('message', (m: WorkerMessage) => {
          if (m.t === 'written') w.written.set(m.jobId, m.at);
          else if (m.t === 'status')
            w.statuses.push({
              at: m.at,
              status: m.status,
              loop: m.loop,
              memory: m.memory,
              tracked: m.tracked,
            });
          else if (m.t === 'ready') {
            w.metricsUrl = m.metricsUrl;
            w.capacity = m.capacity;
            clearTimeout(timer);
            resolve();
          } else if (m.t === 'statements') statementWaiters.shift()?.(m.statements);
          else if (m.t === 'error') log(`worker ${label}: ${m.message}`);
        });
        child.once('exit', (code, sig) => {
          clearTimeout(timer);
          reject(new Error(`worker ${label} exited (${code ?? sig}); log: ${tail(logFile)}`));
        });
      });
      workers.push(w);
      cleanups.push(() => w.stop());
      await ready;
      return w;
    };
    const startWorker = async (design: Design, wopts: BenchWorkerOptions = {}): Promise<BenchWorker> => {
      if (!configFiles[design]) throw new Error(`design ${design} was not prepared (pass designs: ['${design}'])`);
      const args = [
        '--config',
        configFiles[design],
        '--design',
        design,
        '--bundle',
        bundle,
        '--status-every-ms',
        String(wopts.statusEveryMs ?? 1_000),
        ...(wopts.maxActivities ? ['--max-activities', String(wopts.maxActivities)] : []),
        ...(wopts.maxCachedWorkflows !== undefined ? ['--max-cached-workflows', String(wopts.maxCachedWorkflows)] : []),
        ...(wopts.cpuProfileDir ? ['--cpu-profile-dir', wopts.cpuProfileDir] : []),
      ];
      return spawnWorker(design, path.join(REPO, 'bench', 'lib', 'workerMain.ts'), args, design, wopts);
    };

    const extra: Measured[] = [];
    const processes = (): Measured[] => [
      ...(temporal.devServer ? [{ name: 'server', pid: temporal.devServer.pid }] : externalServer()),
      { name: 'bench', pid: process.pid },
    ];
    return {
      dir,
      temporal,
      serverPid: temporal.devServer?.pid,
      serverMetricsUrl,
      sim,
      store,
      config,
      clients,
      temporalClient,
      apiUrl,
      pageUrl: (i) => `${siteUrl}/${pages[i % pages.length]}?job=${i}`,
      startWorker,
      startCustomWorker: (label, script, args) => spawnWorker(label, script, args),
      bundle,
      taskQueue: (d) => queues[d],
      configFile: (d) => {
        if (!configFiles[d]) throw new Error(`design ${d} was not prepared`);
        return configFiles[d];
      },
      processes,
      ownProcesses: () => [...processes(), ...workers.map((w, i) => ({ name: `worker-${i}`, pid: w.pid })), ...extra],
      addOwnProcess: (p) => extra.push(p),
      workerLogCounts: () => {
        const out = {
          activityFailures: {} as Record<string, number>,
          sqliteBusySnapshot: 0,
          databaseLocked: 0,
          workflowFailures: 0,
        };
        for (const f of fs.readdirSync(dir).filter((n) => /^worker-.*\.log$/.test(n))) {
          // The worker logs JSON lines (src/observability/logging.ts).
          const text = fs.readFileSync(path.join(dir, f), 'utf8');
          out.sqliteBusySnapshot += text.split('SQLITE_BUSY_SNAPSHOT').length - 1;
          out.databaseLocked += text.split('database is locked').length - 1;
          for (const line of text.split('\n')) {
            if (!line.startsWith('{')) continue;
            let rec: { level?: string; message?: string; activityType?: string };
            try {
              rec = JSON.parse(line) as typeof rec;
            } catch {
              continue;
            }
            if (rec.level === 'WARN' && rec.message === 'Workflow failed') out.workflowFailures++;
            if (rec.level === 'WARN' && rec.message === 'Activity failed' && rec.activityType)
              out.activityFailures[rec.activityType] = (out.activityFailures[rec.activityType] ?? 0) + 1;
          }
        }
        return out;
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

function tail(file: string, n = 2_000): string {
  try {
    const s = fs.readFileSync(file, 'utf8');
    return s.slice(-n);
  } catch {
    return '(no log)';
  }
}

/**
 * The external cluster's processes, measured as one `server`: `SCRAPE_BENCH_SERVER_ROOTS`, PIDs
 * whose process trees are the cluster (comma-separated; e.g. `npm run cluster`'s pid from
 * `.data/cluster/cluster.pid` — its Temporal services and Web UI — and PostgreSQL's postmaster from
 * `<data-dir>/pg/data/postmaster.pid`, which also serves the result store). None when unset.
 */
function externalServer(): Measured[] {
  const roots = (process.env.SCRAPE_BENCH_SERVER_ROOTS ?? '')
    .split(',')
    .map((v) => Number(v.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
  return roots.length ? [{ name: 'server', pid: roots[0]!, roots }] : [];
}
