/**
 * Benchmark 1: throughput and the cost of a job, side by side on one dev server
 * in one invocation. N jobs (default 1,000) per phase, the phases one after another, never
 * overlapping, the same job count and provider run time (`--run-ms`) for every phase that calls
 * the provider:
 *
 * 1. `loop` — the plain in-process poll loop (`lib/baseline.ts`) in its own process;
 * 2. `floor1` — the one-activity Temporal floor (`floor/`: a workflow whose only step is one no-op
 *    activity), its own bundle, its own worker process with the product worker's capacity options;
 * 3. `floor1v` — the one-activity floor with what a product job that finishes within its first
 *    activity records (`floor/workflows.ts`): the product's start options (input, memo, search
 *    attributes, summary), its submit's activity options and payload sizes, one search-attribute
 *    upsert with the completion;
 * 4. `floor2` — the two-activity floor;
 * 5. `inActivity` — the product's workflow on a worker started with `detachTracking: false` (each
 *    tracking loop inside its activity), one worker process;
 * 6. `product` — the product (`scrapeWorkflowV6`, tracking loops detached), one worker process;
 * 7. `bullmq` — the same loop as `loop` driven by BullMQ on Redis (`lib/bullmqMain.ts`; Debian's
 *    `redis-server`, started here on a free loopback port without persistence, stopped after).
 *
 * For each it reports jobs per second and CPU ms per job from the OS for the worker (the loop
 * process, the Temporal worker, the BullMQ process), the server (the Temporal dev server, Redis)
 * and the driver (this process: simulator, page site, starting client) apart; server operations
 * per job (Temporal: persistence operations of the jobs' namespace; Redis: commands); the result
 * store's statements per job (the product's phases: the worker's and the starting client's); and
 * every ratio to the one-activity floor and to the loop. After the table it prints, per round, the
 * product's worker + server CPU per job over the one-activity floor's of the same round and its
 * store statements per job, beside the goals of issue 37 (≤ 1.15×, ≤ 15 statements).
 *
 *   npm run bench:throughput -- --jobs 1000
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Command } from 'commander';
import PQueue from 'p-queue';
import { z } from 'zod';
import { openStore } from '../src/store/index.js';
import { startOptions } from '../src/client/start.js';
import { fingerprint } from '../src/lib/hash.js';
import { effectivePolicy } from '../src/providers/shared/policy.js';
import { FLOOR_WORKER_MAIN, FLOORS, writeFloorBundle, type Floor } from './floor/index.js';
import type { LoopMessage } from './lib/loopProcess.js';
import { cpuDelta, cpuSnapshot, mib, round, sampleForeignCpu, sampleMemory, type Measured } from './lib/proc.js';
import { startRedis, type RedisServer } from './lib/redis.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  REPO,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import {
  heartbeatsDelta,
  persistenceDelta,
  serverActionsDelta,
  serviceRequestsDelta,
  settledServerSnapshot,
  type PersistenceFigures,
} from './lib/serverMetrics.js';
import { historyCost } from './lib/history.js';
import { waitClosed } from './lib/scenarios.js';
import { startStack, type BenchWorker, type Stack } from './lib/stack.js';

const PHASES = ['loop', 'floor1', 'floor1v', 'floor2', 'inActivity', 'product', 'bullmq'] as const;
type PhaseKey = (typeof PHASES)[number];

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  runMs: z.coerce.number().int().min(0),
  startConcurrency: z.coerce.number().int().positive(),
  timeoutS: z.coerce.number().positive(),
  ...LOAD_OPTIONS,
  /** Phases to run, in this order (default all). */
  phases: z
    .string()
    .default(PHASES.join(','))
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(PHASES)).min(1)),
  /** Leaves out the loop (kept for older command lines; same as leaving `loop` out of `--phases`). */
  skipBaseline: z.boolean().default(false),
  /** Jobs a BullMQ worker runs at once (default 500: the product worker's activity slots). */
  bullmqConcurrency: z.coerce.number().int().positive(),
  keepDir: z.boolean().default(false),
  /** Dev server persistence: the SQLite `file` (default, as in the demo) or `memory` (to show what the file costs). */
  db: z.enum(['file', 'memory']).default('file'),
  /** Dev server dynamic config `KEY=JSON` pairs (e.g. `system.enableActivityEagerExecution=true`). */
  dynamicConfig: z.array(z.string().regex(/^[A-Za-z0-9_.]+=.+$/)).default([]),
  /**
   * Rounds of every phase (default 1). Round k runs the phases rotated by k (each phase takes each
   * place in turn, so warm-up and the dev server's growing files fall on all of them); the table
   * shows each phase's median round by worker + server CPU, and every round's figure beside it.
   */
  rounds: z.coerce.number().int().min(1).default(1),
  /** Write a V8 CPU profile of each product worker's main thread under this folder (`<phase>-r<round>/`). */
  workerCpuProf: z.string().min(1).optional(),
});
type Options = z.infer<typeof OptionsSchema>;

/** Figures of one phase. Durations in ms, CPU in s (`cpuS`) or ms per job, memory in MiB. */
export interface PhaseFigures {
  key: PhaseKey;
  label: string;
  /** The round it was measured in (0-based). */
  round?: number;
  /** Why the phase did not run (BullMQ without a Redis server). */
  unavailable?: string;
  jobs: number;
  /** Jobs that reached `completed` (product, loops: the store's rows; floors: closed `Completed`). */
  completed: number;
  /** First start call → last job's work done (result committed; a floor's last activity) (ms). */
  wallMs: number;
  /** First start call → last start returned (ms). */
  startMs: number;
  /** Last job done → every workflow of the phase closed, as visibility counts them (Temporal phases; ms), or null when they had not closed within 60 s. */
  closeMs?: number | null;
  jobsPerSecond: number;
  /** CPU seconds per process over the phase: `worker`, `server`, `bench` (the driver). */
  cpuS: Record<string, number>;
  /** CPU milliseconds per job per process, and `workerPlusServer`, `all` (the three together). */
  cpuMsPerJob: Record<string, number>;
  maxRssMiB: Record<string, number>;
  /**
   * Server operations per job: for Temporal phases the persistence operations of the jobs'
   * namespace except task-queue bookkeeping (`serverMetrics.ts`), with their latency and all
   * operations; for BullMQ the commands Redis processed (`total_commands_processed`) and the calls
   * by command, Lua scripts' inner calls included.
   */
  serverOperationsPerJob?: {
    kind: 'persistence' | 'redis commands';
    operations: number;
    detail: Record<string, number>;
  } | null;
  /** Temporal phases: activity heartbeats that reached the server, per job. */
  heartbeatsPerJob?: number | null;
  /**
   * Temporal phases: the history of one of the phase's jobs (the first the server lists), its
   * events and its size in bytes as the server measures it (`historySizeBytes`): what each job
   * makes the server persist, payloads included.
   */
  historySample?: { workflowId: string; events: number; bytes: number } | null;
  /** Temporal phases: the frontend's gRPC requests per job (empty polls included), by operation. */
  serverRequestsPerJob?: { total: number; byOperation: Record<string, number> } | null;
  /** Temporal phases: the server's own `action` counter per job, by action type. */
  serverActionsPerJob?: { total: number; byType: Record<string, number> } | null;
  /**
   * The product's phases: statements the result store ran per job (SQLite, `BEGIN`/`COMMIT`
   * included): the worker process's, the starting client's (this process), and both; null on
   * PostgreSQL or when the worker did not answer.
   */
  storeStatementsPerJob?: {
    worker: number;
    client: number;
    total: number;
    /** The statements counted over the phase's jobs (the warm-up job's excluded). */
    counted: { worker: number; client: number; jobs: number };
  } | null;
  /** Successful status checks per job (the store's `status_checks`; phases that call the provider). */
  statusChecksPerJob?: number;
  /** CPU the idle Temporal dev server used during a phase that does not use it (loop, BullMQ), ms per job; not in any total. */
  idleDevServerCpuMsPerJob?: number;
  /** Temporal phases: the worker's compiled capacity options (tuner, cache, pollers, throttles). */
  workerCapacity?: Record<string, unknown>;
  /** CPU used by other processes on the machine during the phase (cores), and by the benchmark's own. */
  foreign: { foreignCores: number; ownCores: number; wallS: number };
}

function perJob(cpu: Record<string, number>, n: number): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(
    Object.entries(cpu).map(([k, v]) => [k, round((v * 1000) / n, 2)]),
  );
  out.workerPlusServer = round((((cpu.worker ?? 0) + (cpu.server ?? 0)) * 1000) / n, 2);
  out.all = round((((cpu.worker ?? 0) + (cpu.server ?? 0) + (cpu.bench ?? 0)) * 1000) / n, 2);
  return out;
}

function rss(m: { maxRssBytes: Record<string, number> }): Record<string, number> {
  return Object.fromEntries(Object.entries(m.maxRssBytes).map(([k, v]) => [k, mib(v)]));
}

async function waitUntil(
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Average `status_checks` of the rows of a store (a loop's own SQLite file, or the product's for one account). */
async function checksPerJob(storeUrl: string, account: string): Promise<number> {
  const store = await openStore(storeUrl);
  try {
    const r = await store.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.avg<number>('status_checks').as('c'))
      .where('account', '=', account)
      .executeTakeFirstOrThrow();
    return round(Number(r.c), 2);
  } finally {
    await store.close();
  }
}

/** Persistence figures per job (see {@link PhaseFigures.serverOperationsPerJob}). */
function persistencePerJob(p: PersistenceFigures | undefined, n: number): PhaseFigures['serverOperationsPerJob'] {
  if (!p) return null;
  const detail: Record<string, number> = {
    operationMs: round((p.totalS * 1000) / n, 1),
    allOperations: round(p.allOperations / n, 2),
    bookkeeping: round(p.bookkeeping / n, 2),
    shardTaskOperations: round((p.shardTaskOperations ?? 0) / n, 2),
  };
  for (const [op, v] of Object.entries(p.byOp)) if (!v.bookkeeping) detail[op] = round(v.count / n, 2);
  return { kind: 'persistence', operations: round(p.operations / n, 2), detail };
}

/** A loop phase: the plain loop or BullMQ, each a child process speaking {@link LoopMessage}. */
async function loopPhase(
  stack: Stack,
  o: Options,
  log: (l: string) => void,
  spec: {
    key: 'loop' | 'bullmq';
    label: string;
    script: string;
    account: string;
    /** Names this round's files (0-based). */
    round: number;
    extra?: Record<string, unknown>;
    server?: Measured;
    redis?: RedisServer;
  },
): Promise<PhaseFigures> {
  const paramsFile = path.join(stack.dir, `${spec.key}-r${spec.round}-params.json`);
  const storeUrl = `sqlite:${path.join(stack.dir, `${spec.key}-r${spec.round}-store.db`)}`;
  const config = { ...stack.config, storeUrl };
  fs.writeFileSync(
    paramsFile,
    JSON.stringify({
      config,
      provider: 'reference',
      policy: {},
      startConcurrency: o.startConcurrency,
      jobs: Array.from({ length: o.jobs }, (_, i) => ({
        account: spec.account,
        key: `${spec.key}-${i}`,
        url: stack.pageUrl(i),
      })),
      ...spec.extra,
    }),
  );
  const logFile = path.join(stack.dir, `${spec.key}-r${spec.round}.log`);
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', spec.script, '--params', paramsFile], {
    cwd: REPO,
    stdio: ['ignore', fd, fd, 'ipc'],
  });
  fs.closeSync(fd);
  stack.addOwnProcess({ name: spec.key, pid: child.pid! });
  if (spec.server) stack.addOwnProcess({ name: `${spec.key}-server`, pid: spec.server.pid });
  const procs: Measured[] = [
    { name: 'worker', pid: child.pid! },
    ...(spec.server ? [{ ...spec.server, name: 'server' }] : []),
    { name: 'bench', pid: process.pid },
  ];
  const devServer = stack
    .processes()
    .filter((p) => p.name === 'server')
    .map((p) => ({ ...p, name: 'idleDevServer' }));
  let started = 0;
  const written: number[] = [];
  let ready: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const done = new Promise<Extract<LoopMessage, { t: 'done' }>>((resolve, reject) => {
    child.on('message', (m: LoopMessage) => {
      if (m.t === 'ready') ready();
      else if (m.t === 'written') written.push(m.at);
      else if (m.t === 'started') started = m.at;
      else if (m.t === 'done') resolve(m);
      else if (m.t === 'error') reject(new Error(m.message));
    });
    child.once('exit', (c) =>
      reject(new Error(`${spec.key} exited ${c}: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`)),
    );
  });
  await Promise.race([isReady, done]);
  await new Promise((r) => setTimeout(r, 1_000)); // let the process settle before measuring
  const ops0 = await spec.redis?.commands();
  const t0 = Date.now();
  const cpu0 = cpuSnapshot([...procs, ...devServer]);
  const mem = sampleMemory(procs);
  const foreign = sampleForeignCpu(() => stack.ownProcesses());
  child.send({ t: 'go' });
  const timeout = setTimeout(() => child.kill('SIGKILL'), o.timeoutS * 1000);
  const d = await done;
  clearTimeout(timeout);
  const cpuAll = cpuDelta(cpu0, cpuSnapshot([...procs, ...devServer]));
  const ops1 = await spec.redis?.commands();
  const foreignCpu = foreign.stop();
  const m = mem.stop();
  child.send({ t: 'exit' });
  await new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
  log(`${spec.key}: ${JSON.stringify(d.states)}`);
  const { idleDevServer, ...cpu } = cpuAll;
  const end = Math.max(...written, t0);
  const wallMs = end - t0;
  let serverOperationsPerJob: PhaseFigures['serverOperationsPerJob'];
  if (ops0 && ops1) {
    const byCommand = Object.fromEntries(
      Object.entries(ops1.byCommand)
        .map(([k, v]) => [k, round((v - (ops0.byCommand[k] ?? 0)) / o.jobs, 2)] as const)
        .filter(([, v]) => v > 0)
        .sort((x, y) => y[1] - x[1]),
    );
    // Redis 7 counts the commands a Lua script runs in `total_commands_processed` too: BullMQ's steps are scripts (`evalsha`).
    const scripts = (byCommand.evalsha ?? 0) + (byCommand.eval ?? 0) + (byCommand.fcall ?? 0);
    serverOperationsPerJob = {
      kind: 'redis commands',
      operations: round((ops1.total - ops0.total) / o.jobs, 2),
      detail: { scripts: round(scripts, 2), ...byCommand },
    };
  }
  return {
    key: spec.key,
    label: spec.label,
    jobs: o.jobs,
    completed: d.states.completed ?? 0,
    wallMs,
    startMs: started - t0,
    jobsPerSecond: round((written.length / wallMs) * 1000, 1),
    cpuS: cpu,
    cpuMsPerJob: perJob(cpu, o.jobs),
    maxRssMiB: rss(m),
    serverOperationsPerJob,
    statusChecksPerJob: await checksPerJob(storeUrl, spec.account),
    ...(idleDevServer !== undefined ? { idleDevServerCpuMsPerJob: round((idleDevServer * 1000) / o.jobs, 2) } : {}),
    foreign: foreignCpu,
  };
}

/** Completed jobs of a Temporal phase so far: its account's rows in the store, or its task queue's closed runs. */
async function completedJobs(stack: Stack, spec: { taskQueue: string; account?: string }): Promise<number> {
  if (spec.account) {
    const c = await stack.store.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account', '=', spec.account)
      .where('state', '=', 'completed')
      .executeTakeFirstOrThrow();
    return Number(c.n);
  }
  const svc = stack.temporalClient.connection.workflowService;
  const { count } = await svc.countWorkflowExecutions({
    namespace: stack.temporal.namespace,
    query: `TaskQueue = "${spec.taskQueue}" AND ExecutionStatus = "Completed"`,
  });
  return Number(count ?? 0);
}

/** A Temporal phase: a floor or the product, one worker process, jobs started from this process. */
async function temporalPhase(
  stack: Stack,
  o: Options,
  log: (l: string) => void,
  spec: {
    key: 'floor1' | 'floor1v' | 'floor2' | 'inActivity' | 'product';
    label: string;
    worker: () => Promise<BenchWorker>;
    taskQueue: string;
    start: (i: number) => Promise<unknown>;
    account?: string;
  },
): Promise<PhaseFigures> {
  const worker = await spec.worker();
  await new Promise((r) => setTimeout(r, 2_000)); // let the worker settle before measuring
  // One job run to its end before measuring, in every Temporal phase: what happens once per worker
  // process or provider key (code compiled on first use, the key's limit row made at its first
  // submit) is not a cost per job.
  await spec.start(o.jobs);
  await waitUntil(() => worker.written.size >= 1, o.timeoutS * 1000, `the ${spec.key} phase's warm-up job`);
  const warmed = worker.written.size;
  // A floor's job reports its work before its run closes: the warm-up run must be closed before counting.
  await waitClosed(stack, spec.taskQueue, 60_000);
  const completedBefore = await completedJobs(stack, spec);
  const ns = stack.temporal.namespace;
  const procs: Measured[] = [{ name: 'worker', pid: worker.pid }, ...stack.processes()];
  const s0 = await settledServerSnapshot(stack, ns);
  // The product's phases: the store statements of the worker and of the starting client, from here.
  const clientStatements = () =>
    stack.store.sqliteStatements
      ? stack.store.sqliteStatements.prepared + stack.store.sqliteStatements.reused
      : undefined;
  const st0 = spec.account ? { worker: await worker.storeStatements(), client: clientStatements() } : undefined;
  const t0 = Date.now();
  const cpu0 = cpuSnapshot(procs);
  const mem = sampleMemory(procs);
  const foreign = sampleForeignCpu(() => stack.ownProcesses());
  const queue = new PQueue({ concurrency: o.startConcurrency });
  await Promise.all(Array.from({ length: o.jobs }, (_, i) => queue.add(() => spec.start(i))));
  const startMs = Date.now() - t0;
  log(`${spec.key}: ${o.jobs} started in ${(startMs / 1000).toFixed(1)} s`);
  let last = 0;
  await waitUntil(
    () => {
      if (Date.now() - last > 10_000) {
        last = Date.now();
        log(`${spec.key}: ${worker.written.size - warmed}/${o.jobs} done`);
      }
      return worker.written.size >= warmed + o.jobs;
    },
    o.timeoutS * 1000,
    `the ${spec.key} phase`,
  );
  const end = Math.max(...worker.written.values());
  // A job's last workflow task (its completion) comes after its work: counted in, once every run has closed.
  const closeMs = await waitClosed(stack, spec.taskQueue, 60_000);
  if (closeMs === null) log(`${spec.key}: workflows still running 60 s after the last job's work was done`);
  const cpu = cpuDelta(cpu0, cpuSnapshot(procs));
  const st1 = st0 ? { worker: await worker.storeStatements(), client: clientStatements() } : undefined;
  const storeStatementsPerJob =
    st0?.worker !== undefined && st0.client !== undefined && st1?.worker !== undefined && st1.client !== undefined
      ? {
          worker: round((st1.worker - st0.worker) / o.jobs, 2),
          client: round((st1.client - st0.client) / o.jobs, 2),
          total: round((st1.worker - st0.worker + st1.client - st0.client) / o.jobs, 2),
          counted: { worker: st1.worker - st0.worker, client: st1.client - st0.client, jobs: o.jobs },
        }
      : st0
        ? null
        : undefined;
  const m = mem.stop();
  const foreignCpu = foreign.stop();
  const s1 = await settledServerSnapshot(stack, ns);
  const wallMs = end - t0;
  const completed = (await completedJobs(stack, spec)) - completedBefore;
  const statusChecksPerJob = spec.account ? await checksPerJob(stack.config.storeUrl, spec.account) : undefined;
  await worker.stop();
  const historySample = await sampleHistory(stack, spec.taskQueue, t0, log);
  const hb = heartbeatsDelta(s0, s1, ns);
  const actions = serverActionsDelta(s0, s1, ns);
  const requests = serviceRequestsDelta(s0, s1, ns);
  return {
    key: spec.key,
    label: spec.label,
    jobs: o.jobs,
    completed,
    wallMs,
    startMs,
    closeMs,
    jobsPerSecond: round(((worker.written.size - warmed) / wallMs) * 1000, 1),
    cpuS: cpu,
    cpuMsPerJob: perJob(cpu, o.jobs),
    maxRssMiB: rss(m),
    serverOperationsPerJob: persistencePerJob(persistenceDelta(s0, s1, ns), o.jobs),
    heartbeatsPerJob: hb === undefined ? null : round(hb / o.jobs, 2),
    historySample,
    serverRequestsPerJob: requests
      ? {
          total: round(requests.total / o.jobs, 2),
          byOperation: Object.fromEntries(
            Object.entries(requests.byOperation).map(([k, v]) => [k, round(v / o.jobs, 2)]),
          ),
        }
      : null,
    serverActionsPerJob: actions
      ? {
          total: round(actions.total / o.jobs, 2),
          byType: Object.fromEntries(Object.entries(actions.byType).map(([k, v]) => [k, round(v / o.jobs, 2)])),
        }
      : null,
    storeStatementsPerJob,
    statusChecksPerJob,
    workerCapacity: worker.capacity,
    foreign: foreignCpu,
  };
}

/**
 * The history cost of one workflow of `taskQueue` closed `Completed` and started at `sinceMs` or
 * later (one of this phase's jobs: a queue may serve several rounds), or null when none is listed
 * or its history cannot be read (logged; the phase's other figures stand).
 */
async function sampleHistory(
  stack: Stack,
  taskQueue: string,
  sinceMs: number,
  log: (l: string) => void,
): Promise<PhaseFigures['historySample']> {
  try {
    const listed = await stack.temporalClient.connection.workflowService.listWorkflowExecutions({
      namespace: stack.temporal.namespace,
      query: `TaskQueue = "${taskQueue}" AND ExecutionStatus = "Completed" AND StartTime >= "${new Date(sinceMs - 1_000).toISOString()}"`,
      pageSize: 1,
    });
    const workflowId = listed.executions?.[0]?.execution?.workflowId;
    if (!workflowId) return null;
    const cost = await historyCost(stack.temporalClient, workflowId);
    return { workflowId, events: cost.events, bytes: cost.historyBytes };
  } catch (e) {
    log(`history sample of ${taskQueue}: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
}

function unavailablePhase(key: PhaseKey, label: string, why: string, o: Options): PhaseFigures {
  return {
    key,
    label,
    unavailable: why,
    jobs: o.jobs,
    completed: 0,
    wallMs: 0,
    startMs: 0,
    jobsPerSecond: Number.NaN,
    cpuS: {},
    cpuMsPerJob: {},
    maxRssMiB: {},
    foreign: { foreignCores: 0, ownCores: 0, wallS: 0 },
  };
}

/** The round of median worker + server CPU among one phase's rounds (the lower middle of an even count). */
function medianRound(rounds: PhaseFigures[]): PhaseFigures {
  const ran = rounds.filter((x) => !x.unavailable);
  if (!ran.length) return rounds[0]!;
  const sorted = [...ran].sort((a, b) => a.cpuMsPerJob.workerPlusServer! - b.cpuMsPerJob.workerPlusServer!);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** Issue 37's goal: the product's worker + server CPU per 1-s job at most this many times the one-activity floor's. */
const CPU_GOAL = 1.15;
/** Issue 37's goal: at most this many result-store statements per fast job (worker and client). */
const STATEMENTS_GOAL = 15;

/** One round's figures against issue 37's goals (see `perRound` in {@link runThroughput}). */
interface RoundFigures {
  round: number;
  product: { cpuMsPerJob: number; worker: number | null; server: number | null } | null;
  floor1: { cpuMsPerJob: number; worker: number | null; server: number | null } | null;
  cpuVsFloor1: number | null;
  /**
   * The floor carrying a fast product job's records (`floor1v`) plus the plain loop's worker CPU
   * (its provider calls and store writes), worker + server ms per job: the least a product doing
   * that work on Temporal could spend; null unless both ran in the round.
   */
  floorWithWork: { cpuMsPerJob: number; vsFloor1: number | null; productAbove: number | null } | null;
  storeStatementsPerJob: PhaseFigures['storeStatementsPerJob'];
  foreignCores: { product: number | null; floor1: number | null };
}

/** The lines printed after the table: per round, the CPU ratio and the store statements beside their goals. */
function perRoundLines(perRound: readonly RoundFigures[], runMs: number): string[] {
  const cpu = (f: RoundFigures['product']) =>
    f ? `${f.cpuMsPerJob} ms (worker ${f.worker} + server ${f.server})` : '—';
  const lines = [
    `Per round, the product against the goals of issue 37 (its CPU per ${runMs / 1000}-s job ≤ ${CPU_GOAL}× the one-activity floor measured in the same round; ≤ ${STATEMENTS_GOAL} store statements per fast job):`,
  ];
  for (const r of perRound) {
    if (!r.product) {
      lines.push(`  round ${r.round}: the product phase did not run`);
      continue;
    }
    const ratioText =
      r.cpuVsFloor1 === null
        ? 'no floor1 in this round (add it to --phases)'
        : `${r.cpuVsFloor1}× (goal ≤ ${CPU_GOAL}×: ${r.cpuVsFloor1 <= CPU_GOAL ? 'within' : 'above'})`;
    const st = r.storeStatementsPerJob;
    const statements = st
      ? `${st.total} (worker ${st.worker} + client ${st.client}: ${st.counted.worker} + ${st.counted.client} for ${st.counted.jobs} jobs; goal ≤ ${STATEMENTS_GOAL}: ${st.total <= STATEMENTS_GOAL ? 'within' : 'above'})`
      : 'not counted (a store on PostgreSQL, or the worker did not answer)';
    lines.push(
      `  round ${r.round}: CPU per job: product ${cpu(r.product)} / floor1 ${cpu(r.floor1)} = ${ratioText}; store statements per job: ${statements}; other processes used ${r.foreignCores.product ?? '—'} / ${r.foreignCores.floor1 ?? '—'} cores`,
    );
    const w = r.floorWithWork;
    if (w)
      lines.push(
        `    floor1v + loop (the floor with a fast job's records, plus the loop's provider calls and store writes) = ${w.cpuMsPerJob} ms = ${w.vsFloor1 ?? '—'}× floor1; the product spends ${w.productAbove ?? '—'} ms per job above it`,
      );
  }
  return lines;
}

/** {@link RoundFigures.floorWithWork} of one round's phases. */
function floorWithWork(
  visible: PhaseFigures | undefined,
  loop: PhaseFigures | undefined,
  floor: PhaseFigures | undefined,
  product: PhaseFigures | undefined,
): RoundFigures['floorWithWork'] {
  const v = visible?.cpuMsPerJob.workerPlusServer;
  const l = loop?.cpuMsPerJob.workerPlusServer;
  if (v === undefined || l === undefined) return null;
  const least = round(v + l, 2);
  const p = product?.cpuMsPerJob.workerPlusServer;
  return {
    cpuMsPerJob: least,
    vsFloor1: ratio(least, floor?.cpuMsPerJob.workerPlusServer),
    productAbove: p === undefined ? null : round(p - least, 2),
  };
}

/** `a / b` rounded, or null when either is missing. */
function ratio(a: number | undefined, b: number | undefined, digits = 2): number | null {
  return a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0
    ? null
    : round(a / b, digits);
}

/** Runs the benchmark; returns the JSON written. */
export async function runThroughput(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const phases = o.phases.filter((p) => !(o.skipBaseline && p === 'loop'));
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  const profile = { concurrency: o.jobs + 10, minRunMs: o.runMs };
  const base = {
    loop: 'tp-baseline',
    inActivity: 'tp-in-activity',
    product: 'tp-temporal',
    bullmq: 'tp-bullmq',
  } as const;
  /** The provider account of a phase in round `r` (0-based): each round's jobs are counted apart. */
  const account = (k: keyof typeof base, r: number) => (r === 0 ? base[k] : `${base[k]}-r${r}`);
  const rounds = Array.from({ length: o.rounds }, (_, r) => r);
  const stack = await startStack({
    name: 'throughput',
    accounts: rounds.flatMap((r) =>
      (Object.keys(base) as (keyof typeof base)[]).map((k) => ({ name: account(k, r), profile })),
    ),
    log,
    keepDir: o.keepDir,
    inMemory: o.db === 'memory',
    designs: phases.includes('inActivity') ? ['v4', 'inActivity'] : ['v4'],
    dynamicConfig: Object.fromEntries(
      o.dynamicConfig.map((kv) => [kv.slice(0, kv.indexOf('=')), JSON.parse(kv.slice(kv.indexOf('=') + 1))]),
    ),
  });
  try {
    const productQueue = stack.taskQueue('v4');
    const floorBundle = path.join(stack.dir, 'floor-bundle.js');
    if (phases.some((p) => p.startsWith('floor'))) await writeFloorBundle(floorBundle);
    const floorPhase = (key: 'floor1' | 'floor1v' | 'floor2', floor: Floor, r: number) => {
      const taskQueue = `${productQueue}-floor-${floor}-r${r}`;
      return temporalPhase(stack, o, log, {
        key,
        label: FLOORS[floor].label,
        taskQueue,
        worker: () =>
          stack.startCustomWorker(`floor-${floor}`, FLOOR_WORKER_MAIN, [
            '--config',
            stack.configFile('v4'),
            '--task-queue',
            taskQueue,
            '--bundle',
            floorBundle,
            '--product-bundle',
            stack.bundle,
          ]),
        start: (i) => {
          const workflowId = `floor-${floor}-r${r}-${i}`;
          if (floor !== 'visible')
            return stack.temporalClient.workflow.start(FLOORS[floor].workflowType, { taskQueue, workflowId });
          // The product's start options for the same page (`startOptions`, as `startScrape` builds
          // them), under the floor's workflow type, ID and task queue.
          const request = { url: stack.pageUrl(i), format: 'markdown' as const, options: {} };
          const input = {
            jobId: workflowId,
            account: account('product', r),
            key: `t-${r}-${i}`,
            provider: 'reference',
            requestHash: fingerprint({ provider: 'reference', request }),
            request,
            policy: effectivePolicy(stack.config, 'reference', {}),
          };
          return stack.temporalClient.workflow.start(FLOORS[floor].workflowType, {
            ...startOptions(input, { taskQueue, state: 'submitting' }),
            workflowId,
          });
        },
      });
    };
    /** Runs phase `p` of round `r`. */
    const runPhase = async (p: PhaseKey, r: number): Promise<PhaseFigures> => {
      if (p === 'loop')
        return loopPhase(stack, o, log, {
          key: 'loop',
          label: 'plain loop',
          script: path.join(REPO, 'bench', 'lib', 'baselineMain.ts'),
          account: account('loop', r),
          round: r,
        });
      if (p === 'floor1') return floorPhase('floor1', 'one', r);
      if (p === 'floor1v') return floorPhase('floor1v', 'visible', r);
      if (p === 'floor2') return floorPhase('floor2', 'two', r);
      if (p === 'product' || p === 'inActivity') {
        const design = p === 'product' ? 'v4' : 'inActivity';
        return temporalPhase(stack, o, log, {
          key: p,
          label: p === 'product' ? 'product (v4)' : 'product, tracking loops inside activities',
          taskQueue: stack.taskQueue(design),
          account: account(p, r),
          worker: () =>
            stack.startWorker(design, {
              cpuProfileDir: o.workerCpuProf ? path.resolve(o.workerCpuProf, `${p}-r${r}`) : undefined,
            }),
          start: (i) =>
            stack.clients[design].startScrape({ account: account(p, r), url: stack.pageUrl(i), key: `t-${r}-${i}` }),
        });
      }
      const redis = await startRedis(stack.dir);
      if ('unavailable' in redis) {
        log(`bullmq: ${redis.unavailable}`);
        return unavailablePhase('bullmq', 'BullMQ on Redis', redis.unavailable, o);
      }
      try {
        return await loopPhase(stack, o, log, {
          key: 'bullmq',
          label: `BullMQ on Redis (${redis.version.replace(/^Redis server v=(\S+).*$/, '$1')})`,
          script: path.join(REPO, 'bench', 'lib', 'bullmqMain.ts'),
          account: account('bullmq', r),
          round: r,
          extra: { redis: { host: redis.host, port: redis.port }, concurrency: o.bullmqConcurrency },
          server: { name: 'server', pid: redis.pid },
          redis,
        });
      } finally {
        await redis.stop();
      }
    };
    const all: PhaseFigures[] = [];
    for (const r of rounds) {
      const order = [...phases.slice(r % phases.length), ...phases.slice(0, r % phases.length)];
      for (const p of order) {
        log(`round ${r + 1} of ${o.rounds}: phase ${p}`);
        all.push({ ...(await runPhase(p, r)), round: r });
      }
    }
    // Each phase's round of median worker + server CPU stands for it in the table and the ratios.
    const results = phases.map((p) => medianRound(all.filter((x) => x.key === p)));
    const by = Object.fromEntries(results.map((r) => [r.key, r])) as Partial<Record<PhaseKey, PhaseFigures>>;
    const floor1 = by.floor1?.unavailable ? undefined : by.floor1;
    const loop = by.loop;
    const ratios = Object.fromEntries(
      results
        .filter((r) => !r.unavailable)
        .map((r) => [
          r.key,
          {
            /** (worker + server CPU) / the same of the one-activity floor. */
            cpuVsFloor1: ratio(r.cpuMsPerJob.workerPlusServer, floor1?.cpuMsPerJob.workerPlusServer),
            /** (worker + server + driver CPU) / the same of the one-activity floor. */
            allCpuVsFloor1: ratio(r.cpuMsPerJob.all, floor1?.cpuMsPerJob.all),
            /** (worker + server CPU) / the loop process's CPU. */
            cpuVsLoop: ratio(r.cpuMsPerJob.workerPlusServer, loop?.cpuMsPerJob.workerPlusServer),
            jobsPerSecondVsFloor1: ratio(r.jobsPerSecond, floor1?.jobsPerSecond),
            jobsPerSecondVsLoop: ratio(r.jobsPerSecond, loop?.jobsPerSecond),
            /** Server operations per job / the one-activity floor's (persistence operations; Redis commands are not comparable and give null). */
            serverOperationsVsFloor1:
              r.serverOperationsPerJob?.kind === 'persistence'
                ? ratio(r.serverOperationsPerJob.operations, floor1?.serverOperationsPerJob?.operations)
                : null,
          },
        ]),
    );
    // Issue 37's goals, round by round: the product's CPU per job over that of the one-activity floor
    // measured in the same round (the rounds differ more than the phases of one round), and the
    // product's store statements per job.
    const perRound = rounds.map((r) => {
      const of = (k: PhaseKey) => all.find((x) => x.round === r && x.key === k && !x.unavailable);
      const product = of('product');
      const floor = of('floor1');
      return {
        round: r + 1,
        /** The product's worker + server CPU per job, ms, and each apart. */
        product: product
          ? {
              cpuMsPerJob: product.cpuMsPerJob.workerPlusServer!,
              worker: product.cpuMsPerJob.worker ?? null,
              server: product.cpuMsPerJob.server ?? null,
            }
          : null,
        /** The one-activity floor's, the same figures. */
        floor1: floor
          ? {
              cpuMsPerJob: floor.cpuMsPerJob.workerPlusServer!,
              worker: floor.cpuMsPerJob.worker ?? null,
              server: floor.cpuMsPerJob.server ?? null,
            }
          : null,
        /** product / floor1 (worker + server CPU per job); goal ≤ {@link CPU_GOAL}. */
        cpuVsFloor1: ratio(product?.cpuMsPerJob.workerPlusServer, floor?.cpuMsPerJob.workerPlusServer),
        floorWithWork: floorWithWork(of('floor1v'), of('loop'), floor, product),
        /** The product's store statements per job; goal ≤ {@link STATEMENTS_GOAL} in all. */
        storeStatementsPerJob: product?.storeStatementsPerJob ?? null,
        /** Cores other processes used during the product's phase and the floor's. */
        foreignCores: { product: product?.foreign.foreignCores ?? null, floor1: floor?.foreign.foreignCores ?? null },
      };
    });
    // The floors are only a floor if their workers have the product's capacity: compared here.
    const productCapacity = by.product?.workerCapacity;
    const capacityCheck = Object.fromEntries(
      (['floor1', 'floor1v', 'floor2'] as const)
        .filter((k) => by[k]?.workerCapacity && productCapacity)
        .map((k) => {
          const f = by[k]!.workerCapacity!;
          const differ = [...new Set([...Object.keys(f), ...Object.keys(productCapacity!)])].filter(
            (x) => JSON.stringify(f[x]) !== JSON.stringify(productCapacity![x]),
          );
          return [k, differ.length ? { same: false, differ } : { same: true }];
        }),
    );
    const stats = stack.sim.stats();
    const out = {
      benchmark: 'throughput',
      options: { ...o, phases },
      machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, load: load.stop() },
      /** Worker log (WARN+): failed activity attempts, SQLite store errors. */
      workerLog: stack.workerLogCounts(),
      policy: 'DEFAULT_POLL_POLICY (2 s initial delay ×1.5, ±20 % jitter)',
      provider: {
        profile,
        requestsByAccount: Object.fromEntries(
          Object.entries(stats.requests.byAccount).map(([k, v]) => [
            k,
            { submit: v.submit, status: v.status, byStatus: v.byStatus },
          ]),
        ),
      },
      phases: results,
      /** Every round of every phase, in the order run (with `--rounds 1` the same as `phases`). */
      rounds: all,
      ratios,
      /** Per round: the product's CPU per job over the one-activity floor's of that round, and its store statements per job (issue 37's goals). */
      perRound,
      goals: { cpuVsFloor1: CPU_GOAL, storeStatementsPerJob: STATEMENTS_GOAL },
      /** Per floor: whether its worker's compiled capacity options equal the product worker's (and which differ). */
      floorCapacityMatchesProduct: capacityCheck,
    };
    const cols = results;
    const cell = (r: PhaseFigures, f: (r: PhaseFigures) => string | number | null | undefined) =>
      r.unavailable ? '—' : (f(r) ?? '—');
    const ms = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '—' : v);
    const rows: (string | number)[][] = [
      [
        'jobs completed',
        ...cols.map((r) => (r.unavailable ? `not run: ${r.unavailable}` : `${r.completed}/${r.jobs}`)),
      ],
      ['status checks per job (store)', ...cols.map((r) => cell(r, (x) => x.statusChecksPerJob))],
      [
        'wall time, first start → last job done',
        ...cols.map((r) => cell(r, (x) => `${(x.wallMs / 1000).toFixed(1)} s`)),
      ],
      ['time to start all', ...cols.map((r) => cell(r, (x) => `${(x.startMs / 1000).toFixed(1)} s`))],
      ['jobs per second', ...cols.map((r) => cell(r, (x) => x.jobsPerSecond))],
      [
        'CPU ms/job: worker (loop process, Temporal worker, BullMQ process)',
        ...cols.map((r) => cell(r, (x) => ms(x.cpuMsPerJob.worker))),
      ],
      [
        'CPU ms/job: server (Temporal dev server, Redis)',
        ...cols.map((r) => cell(r, (x) => (x.cpuS.server === undefined ? '— (none)' : ms(x.cpuMsPerJob.server)))),
      ],
      [
        'CPU ms/job: driver (simulator, page site, client)',
        ...cols.map((r) => cell(r, (x) => ms(x.cpuMsPerJob.bench))),
      ],
      ['CPU ms/job: worker + server', ...cols.map((r) => cell(r, (x) => ms(x.cpuMsPerJob.workerPlusServer)))],
      ...(o.rounds > 1
        ? [
            [
              '  each round, in the order run (the median shown above)',
              ...cols.map((r) =>
                all
                  .filter((x) => x.key === r.key && !x.unavailable)
                  .map((x) => x.cpuMsPerJob.workerPlusServer)
                  .join(' / '),
              ),
            ],
          ]
        : []),
      ['  × 1-activity floor (worker + server)', ...cols.map((r) => cell(r, (x) => ratios[x.key]?.cpuVsFloor1))],
      ['  × loop (worker + server)', ...cols.map((r) => cell(r, (x) => ratios[x.key]?.cpuVsLoop))],
      ['CPU ms/job: worker + server + driver', ...cols.map((r) => cell(r, (x) => ms(x.cpuMsPerJob.all)))],
      ['  × 1-activity floor (all three)', ...cols.map((r) => cell(r, (x) => ratios[x.key]?.allCpuVsFloor1))],
      [
        'jobs per second × 1-activity floor | × loop',
        ...cols.map((r) =>
          cell(
            r,
            (x) => `${ratios[x.key]?.jobsPerSecondVsFloor1 ?? '—'} | ${ratios[x.key]?.jobsPerSecondVsLoop ?? '—'}`,
          ),
        ),
      ],
      [
        'server operations per job (Temporal: persistence operations; Redis: commands)',
        ...cols.map((r) =>
          cell(r, (x) =>
            x.serverOperationsPerJob
              ? `${x.serverOperationsPerJob.operations}${x.serverOperationsPerJob.kind === 'persistence' ? ` (${x.serverOperationsPerJob.detail.operationMs} op-ms; shard task queues +${x.serverOperationsPerJob.detail.shardTaskOperations})` : ` commands, in ${x.serverOperationsPerJob.detail.scripts} scripts`}`
              : x.cpuS.server === undefined
                ? '— (none)'
                : '—',
          ),
        ),
      ],
      [
        '  × 1-activity floor (persistence ops)',
        ...cols.map((r) => cell(r, (x) => ratios[x.key]?.serverOperationsVsFloor1)),
      ],
      [
        'store statements per job: worker + client = all',
        ...cols.map((r) =>
          cell(r, (x) =>
            x.storeStatementsPerJob
              ? `${x.storeStatementsPerJob.worker} + ${x.storeStatementsPerJob.client} = ${x.storeStatementsPerJob.total}`
              : x.storeStatementsPerJob === null
                ? '— (not counted)'
                : undefined,
          ),
        ),
      ],
      ['heartbeats that reached the server, per job', ...cols.map((r) => cell(r, (x) => x.heartbeatsPerJob))],
      ["server's own action counter per job", ...cols.map((r) => cell(r, (x) => x.serverActionsPerJob?.total))],
      [
        'server gRPC requests per job (polls: activity; workflow)',
        ...cols.map((r) =>
          cell(r, (x) =>
            x.serverRequestsPerJob
              ? `${x.serverRequestsPerJob.total} (${x.serverRequestsPerJob.byOperation.PollActivityTaskQueue ?? 0}; ${x.serverRequestsPerJob.byOperation.PollWorkflowTaskQueue ?? 0})`
              : undefined,
          ),
        ),
      ],
      [
        'history of one job: events; bytes',
        ...cols.map((r) =>
          cell(r, (x) => (x.historySample ? `${x.historySample.events}; ${x.historySample.bytes}` : undefined)),
        ),
      ],
      [
        'max RSS MiB: worker; server',
        ...cols.map((r) => cell(r, (x) => `${x.maxRssMiB.worker ?? '—'}; ${x.maxRssMiB.server ?? '—'}`)),
      ],
      ['CPU of other processes during the phase (cores)', ...cols.map((r) => cell(r, (x) => x.foreign.foreignCores))],
    ];
    console.log(table(['figure', ...cols.map((r) => r.label)], rows));
    console.log(perRoundLines(perRound, o.runMs).join('\n'));
    const mismatch = Object.entries(capacityCheck).filter(([, v]) => !v.same);
    if (mismatch.length)
      console.log(
        `WARNING: floor worker options differ from the product worker's: ${JSON.stringify(Object.fromEntries(mismatch))}`,
      );
    finishReport(
      'throughput',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes per phase: ${results.map((r) => `${r.key} ${r.foreign.foreignCores}`).join(', ')} cores`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'throughput.ts',
  withLoadOptions(new Command('bench:throughput'))
    .option('-n, --jobs <n>', 'jobs per phase', '1000')
    .option('--run-ms <ms>', 'provider time of each job (minRunMs)', '1000')
    .option('--start-concurrency <n>', 'concurrent start calls', '32')
    .option('--timeout-s <s>', 'give up a phase after this long', '900')
    .option('--phases <list>', `phases to run, in order (comma-separated: ${PHASES.join(',')})`, PHASES.join(','))
    .option('--skip-baseline', 'leave out the plain loop')
    .option(
      '--bullmq-concurrency <n>',
      'jobs a BullMQ worker runs at once (the product worker has 500 activity slots)',
      '500',
    )
    .option('--keep-dir', 'keep the temp directory')
    .option('--rounds <n>', 'rounds of every phase, rotated; the table shows medians', '1')
    .option('--worker-cpu-prof <dir>', "write a V8 CPU profile of each product worker's main thread under this folder")
    .option('--db <file|memory>', 'dev server persistence', 'file')
    .option(
      '--dynamic-config <key=json...>',
      'dev server dynamic config, e.g. system.enableActivityEagerExecution=true',
    ),
  (opts) => runThroughput(OptionsSchema.parse(opts)),
);
