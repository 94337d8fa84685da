/**
 * A real stack for integration tests: the reference provider (tools/sim) on loopback, a SQLite
 * store in a temp directory, the typed client, and a worker on a task queue of its own (in this
 * process, or as a child process that a test can SIGKILL). Temporal is the run's shared dev
 * server (see globalSetup). Nothing is mocked.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import type { ActivityDeps } from '../../src/activities/index.js';
import { ScrapeClient } from '../../src/client/index.js';
import { dataConverterFor } from '../../src/codec/config.js';
import { parseConfig, type Config } from '../../src/config.js';
import { workflowClientInterceptors } from '../../src/observability/tracing.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startSim, type Sim, type SimResponseEvent } from '../../tools/sim/index.js';
import type { ProfileInput } from '../../tools/sim/schemas.js';
import { openStore, type Store } from '../../src/store/index.js';
import { createScrapeWorker, installWorkerLogging } from '../../src/worker.js';
import { evidenceLogFile, keepStore, recordSecrets } from './evidence.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '../..');

/** Fast polling for tests (ms). */
export const FAST_POLICY: Partial<PollPolicy> = {
  initialDelayMs: 200,
  maxDelayMs: 1_000,
  multiplier: 1.5,
  jitter: 0.1,
  deadlineMs: 60_000,
  cancelConfirmDeadlineMs: 10_000,
  activityTimeoutMs: 5_000,
};

/** API keys of the provider accounts (fake, loopback only). */
export const KEYS = { acme: 'sk-test-acme-0123456789abcdef', globex: 'sk-test-globex-0123456789abcdef' } as const;

export interface StackOptions {
  /** Sim profile of the provider account used by our account `acme`. */
  profile?: ProfileInput;
  /** Start an in-process worker now (default true). */
  worker?: boolean;
  hooks?: ActivityDeps['hooks'];
  resultRetentionMs?: number | null;
  /** HTTP timeout of status/result/cancel reads of the `reference` entry, ms (default 3000). */
  readTimeoutMs?: number;
  /** Declared highest limit of active provider jobs (`limits.activeJobs.max`), with `activeJobs`. */
  activeJobsMax?: number;
  /** Starting limit of active provider jobs of the `reference` entry (default 1000: effectively unlimited). */
  activeJobs?: number;
  /** Extra provider entries (name → entry) beside `reference`. */
  extraProviders?: Record<string, unknown>;
  /** Result store URL (default: a SQLite file in the stack's temp directory). */
  storeUrl?: string;
  /** Payload encryption on (keys from `SCRAPE_CODEC_KEYS` in this process's environment). */
  codec?: boolean;
  /** The provider entry's submit and read timeouts, ms (default 3000). */
  providerTimeoutMs?: number;
}

export interface Stack {
  dir: string;
  sim: Sim;
  store: Store;
  config: Config;
  configFile: string;
  client: ScrapeClient;
  temporal: Client;
  /** Starts an in-process worker (if none is running). */
  startWorker(hooks?: ActivityDeps['hooks']): Promise<void>;
  /** Stops the in-process worker and waits for it to drain. */
  stopWorker(): Promise<void>;
  /** Starts a worker in a child process (`test/helpers/workerMain.ts`), with extra env. */
  spawnWorker(env?: Record<string, string>): Promise<ChildProcess>;
  /** SIGKILLs every child worker and waits for them to exit. */
  killWorkers(): Promise<void>;
  stop(): Promise<void>;
}

// The in-process workers' log, kept for the secrets scan (test/helpers/evidence.ts).
installWorkerLogging({
  level: 'WARN',
  file: evidenceLogFile('worker', path.join(os.tmpdir(), `scrape-test-worker-${process.pid}.log`)),
});

/** Starts a stack; call `stop()` in `afterAll`. */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const { address, namespace } = inject('temporal');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-test-'));
  const profile = opts.profile ?? {};
  const sim = await startSim({
    host: '127.0.0.1',
    port: 0,
    adminToken: 'admin-test',
    allowFaultHeader: false,
    accounts: [
      { name: 'acme', apiKeys: [KEYS.acme], profile },
      { name: 'globex', apiKeys: [KEYS.globex] },
    ],
    logger: false,
  });
  recordSecrets('stack', [
    ...Object.values(KEYS),
    'admin-test',
    opts.codec ? process.env.SCRAPE_CODEC_KEYS : undefined,
  ]);
  const capabilities = {
    idempotency: profile.idempotency ?? true,
    list: profile.list ?? true,
    cancel: profile.cancel ?? true,
    webhooks: false,
  };
  const config = parseConfig(
    {
      temporal: { address, namespace, taskQueue: `test-${randomUUID()}` },
      storeUrl: opts.storeUrl ?? `sqlite:${path.join(dir, 'store.db')}`,
      codec: { enabled: opts.codec ?? false },
      defaultAccount: 'acme',
      defaultProvider: 'reference',
      resultRetentionMs: opts.resultRetentionMs === undefined ? 7 * 24 * 3_600_000 : opts.resultRetentionMs,
      providers: {
        // A high starting limit of active jobs: tests that need the adaptive limit set their own.
        reference: {
          kind: 'reference',
          baseUrl: sim.url,
          readTimeoutMs: opts.readTimeoutMs ?? opts.providerTimeoutMs ?? 3_000,
          submitTimeoutMs: opts.providerTimeoutMs ?? 3_000,
          capabilities,
          credentials: { default: { apiKey: KEYS.acme }, accounts: { globex: { apiKey: KEYS.globex } } },
          limits: {
            activeJobs:
              opts.activeJobs === undefined ? { initial: 1000 } : { initial: opts.activeJobs, max: opts.activeJobsMax },
          },
          // A new task's 404s count toward expiry after 1 s (the kind declares a minute): a forgotten
          // task ends in seconds.
          notFoundGraceMs: 1_000,
        },
        ...(opts.extraProviders ?? {}),
      },
    },
    {},
  );
  const configFile = path.join(dir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify(config));
  const store = await openStore(config.storeUrl);
  const connection = await Connection.connect({ address });
  const temporal = new Client({
    connection,
    namespace,
    dataConverter: dataConverterFor(config.codec),
    interceptors: { workflow: workflowClientInterceptors() },
  });
  const client = new ScrapeClient({
    temporal,
    store,
    taskQueue: config.temporal.taskQueue,
    defaultProvider: 'reference',
    providers: Object.keys(config.providers),
  });
  let native: NativeConnection | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const children = new Set<ChildProcess>();

  const stack: Stack = {
    dir,
    sim,
    store,
    config,
    configFile,
    client,
    temporal,
    async startWorker(hooks) {
      if (worker) return;
      native ??= await NativeConnection.connect({ address });
      worker = await createScrapeWorker({
        connection: native,
        config,
        store,
        hooks: hooks ?? opts.hooks,
        shutdownGraceTimeMs: 2_000,
      });
      running = worker.run();
    },
    async stopWorker() {
      if (!worker) return;
      worker.shutdown();
      await running;
      worker = undefined;
      running = undefined;
    },
    async spawnWorker(env = {}) {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'workerMain.ts')], {
        cwd: REPO,
        env: {
          ...process.env,
          SCRAPE_CONFIG: configFile,
          WORKER_LOG: evidenceLogFile('worker-child', path.join(dir, 'worker-child.log')),
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      child.on('exit', () => children.delete(child));
      // Resolve once the worker says it is polling.
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const onData = (b: Buffer) => {
          out += b.toString();
          if (out.includes('WORKER_READY')) resolve();
        };
        child.stdout!.on('data', onData);
        child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
        child.once('exit', (code) => reject(new Error(`worker child exited early (${code}): ${out.slice(-2000)}`)));
      });
      return child;
    },
    async killWorkers() {
      await Promise.all(
        [...children].map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) return resolve();
              c.once('exit', () => resolve());
              c.kill('SIGKILL');
            }),
        ),
      );
    },
    async stop() {
      await stack.killWorkers();
      await stack.stopWorker();
      await native?.close();
      await connection.close();
      await sim.close();
      await keepStore(store, 'stack'); // for the secrets scan: the directory goes now
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  if (opts.worker !== false) await stack.startWorker();
  return stack;
}

/** Polls `fn` every 100 ms until it returns a truthy value or `timeoutMs` passes (then throws). */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the job's store row is in one of `states`; returns the row. */
export async function waitForState(store: Store, jobId: string, states: string[], timeoutMs = 30_000) {
  return waitFor(
    async () => {
      const row = await store.jobs.get(jobId);
      return row && states.includes(row.state) ? row : undefined;
    },
    timeoutMs,
    `${jobId} to reach ${states.join('|')}`,
  );
}

/** Records every API response of the sim from now on (time, endpoint, job, status), in order. */
export function recordResponses(stack: Stack): SimResponseEvent[] {
  const seen: SimResponseEvent[] = [];
  stack.sim.events.on('response', (e) => seen.push(e));
  return seen;
}
