/**
 * Benchmark 1 (issue 6): throughput and overhead. N jobs (default 1,000) through the real stack —
 * dev server, one worker process, the reference provider finishing each job `--run-ms` after it
 * starts, the SQLite store — against a baseline in the same run: a plain in-process async poll
 * loop over the same provider with the same poll schedule and the same store writes
 * (`lib/baseline.ts`), in its own process. Reports jobs per second, CPU seconds per job from the OS
 * (worker, Temporal server, baseline process and this process — simulator + page site + driver —
 * separately) and the ratios to the baseline. The baseline runs first, then the Temporal phase;
 * they never overlap.
 *
 *   npm run bench:throughput -- --jobs 1000
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Command } from 'commander';
import PQueue from 'p-queue';
import { z } from 'zod';
import type { BaselineMessage } from './lib/baselineMain.js';
import { cpuDelta, cpuSnapshot, mib, round, sampleForeignCpu, sampleMemory, type Measured } from './lib/proc.js';
import { finishReport, machine, REPO, runAsScript, sampleLoad, table, waitForQuietMachine } from './lib/report.js';
import { persistenceDelta, persistenceSnapshot } from './lib/serverMetrics.js';
import { startStack, type Stack } from './lib/stack.js';

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  runMs: z.coerce.number().int().min(0),
  startConcurrency: z.coerce.number().int().positive(),
  timeoutS: z.coerce.number().positive(),
  maxLoad: z.coerce.number().positive(),
  waitLoadMin: z.coerce.number().min(0),
  skipBaseline: z.boolean().default(false),
  keepDir: z.boolean().default(false),
  /** Dev server persistence: the SQLite `file` (default, as in the demo) or `memory` (to show what the file costs). */
  db: z.enum(['file', 'memory']).default('file'),
  /** Workflow of the Temporal phase: the product's (`v2`) or the frozen v1 (`v1`, the before figure). */
  design: z.enum(['v1', 'v2']).default('v2'),
  /** Dev server dynamic config `KEY=JSON` pairs (e.g. `system.enableActivityEagerExecution=true`). */
  dynamicConfig: z.array(z.string().regex(/^[A-Za-z0-9_.]+=.+$/)).default([]),
});
type Options = z.infer<typeof OptionsSchema>;

/** Figures of one phase. Durations in ms, CPU in s, memory in MiB. */
export interface PhaseFigures {
  jobs: number;
  completed: number;
  /** First start call → last result committed (ms). */
  wallMs: number;
  /** First start call → last start returned (ms). */
  startMs: number;
  jobsPerSecond: number;
  /** CPU seconds per process over the phase. */
  cpuS: Record<string, number>;
  /** CPU milliseconds per job per process. */
  cpuMsPerJob: Record<string, number>;
  maxRssMiB: Record<string, number>;
  /** Temporal server persistence (its SQLite) per job: operations and operation-milliseconds. */
  serverPersistencePerJob?: { operations: number; ms: number; updateWorkflowExecution: number; updateMeanMs: number } | null;
  /** CPU used by other processes on the machine during the phase (cores), and by the benchmark's own. */
  foreign: { foreignCores: number; ownCores: number; wallS: number };
  /** Successful status checks per job (the store's `status_checks`), Temporal phase only. */
  statusChecksPerJob?: number;
}

function perJob(cpu: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round((v * 1000) / n, 2)]));
}

async function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function baselinePhase(stack: Stack, o: Options, log: (l: string) => void): Promise<PhaseFigures> {
  const account = 'tp-baseline';
  const paramsFile = path.join(stack.dir, 'baseline-params.json');
  const config = { ...stack.config, storeUrl: `sqlite:${path.join(stack.dir, 'baseline-store.db')}` };
  fs.writeFileSync(paramsFile, JSON.stringify({ config, provider: 'reference', policy: {}, startConcurrency: o.startConcurrency, jobs: Array.from({ length: o.jobs }, (_, i) => ({ account, key: `b-${i}`, url: stack.pageUrl(i) })) }));
  const logFile = path.join(stack.dir, 'baseline.log');
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'bench', 'lib', 'baselineMain.ts'), '--params', paramsFile], { cwd: REPO, stdio: ['ignore', fd, fd, 'ipc'] });
  fs.closeSync(fd);
  const procs: Measured[] = [{ name: 'baseline', pid: child.pid! }, ...stack.processes()];
  stack.addOwnProcess({ name: 'baseline', pid: child.pid! });
  let started = 0;
  const written: number[] = [];
  let ready: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const done = new Promise<Extract<BaselineMessage, { t: 'done' }>>((resolve, reject) => {
    child.on('message', (m: BaselineMessage) => {
      if (m.t === 'ready') ready();
      else if (m.t === 'written') written.push(m.at);
      else if (m.t === 'started') started = m.at;
      else if (m.t === 'done') resolve(m);
      else if (m.t === 'error') reject(new Error(m.message));
    });
    child.once('exit', (c) => reject(new Error(`baseline exited ${c}: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`)));
  });
  await Promise.race([isReady, done]);
  await new Promise((r) => setTimeout(r, 1_000));
  const t0 = Date.now();
  const cpu0 = cpuSnapshot(procs);
  const mem = sampleMemory(procs);
  const foreign = sampleForeignCpu(() => stack.ownProcesses());
  child.send({ t: 'go' });
  const timeout = setTimeout(() => child.kill('SIGKILL'), o.timeoutS * 1000);
  const d = await done;
  clearTimeout(timeout);
  const cpu = cpuDelta(cpu0, cpuSnapshot(procs));
  const foreignCpu = foreign.stop();
  const m = mem.stop();
  child.send({ t: 'exit' });
  log(`baseline: ${JSON.stringify(d.states)}`);
  const end = Math.max(...written, t0);
  const wallMs = end - t0;
  return {
    jobs: o.jobs,
    completed: d.states.completed ?? 0,
    wallMs,
    startMs: started - t0,
    jobsPerSecond: round((written.length / wallMs) * 1000, 1),
    cpuS: cpu,
    cpuMsPerJob: perJob(cpu, o.jobs),
    maxRssMiB: Object.fromEntries(Object.entries(m.maxRssBytes).map(([k, v]) => [k, mib(v)])),
    foreign: foreignCpu,
  };
}

async function temporalPhase(stack: Stack, o: Options, log: (l: string) => void): Promise<PhaseFigures> {
  const account = 'tp-temporal';
  const worker = await stack.startWorker(o.design);
  await new Promise((r) => setTimeout(r, 2_000)); // let the worker settle before measuring
  const procs: Measured[] = [{ name: 'worker', pid: worker.pid }, ...stack.processes()];
  const p0 = await persistenceSnapshot(stack);
  const t0 = Date.now();
  const cpu0 = cpuSnapshot(procs);
  const mem = sampleMemory(procs);
  const foreign = sampleForeignCpu(() => stack.ownProcesses());
  const queue = new PQueue({ concurrency: o.startConcurrency });
  await Promise.all(
    Array.from({ length: o.jobs }, (_, i) => queue.add(() => stack.clients[o.design].startScrape({ account, url: stack.pageUrl(i), key: `t-${i}` }))),
  );
  const startMs = Date.now() - t0;
  log(`temporal: ${o.jobs} started in ${(startMs / 1000).toFixed(1)} s`);
  let last = 0;
  await waitUntil(() => {
    if (Date.now() - last > 10_000) {
      last = Date.now();
      log(`temporal: ${worker.written.size}/${o.jobs} written`);
    }
    return worker.written.size >= o.jobs;
  }, o.timeoutS * 1000, 'the Temporal phase');
  const cpu = cpuDelta(cpu0, cpuSnapshot(procs));
  const m = mem.stop();
  const foreignCpu = foreign.stop();
  const pers = persistenceDelta(p0, await persistenceSnapshot(stack));
  const end = Math.max(...worker.written.values());
  const wallMs = end - t0;
  const completed = await stack.store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('account', '=', account).where('state', '=', 'completed').executeTakeFirstOrThrow();
  const checks = await stack.store.db.selectFrom('jobs').select((eb) => eb.fn.avg<number>('status_checks').as('c')).where('account', '=', account).executeTakeFirstOrThrow();
  await worker.stop();
  return {
    jobs: o.jobs,
    completed: Number(completed.n),
    wallMs,
    startMs,
    jobsPerSecond: round((worker.written.size / wallMs) * 1000, 1),
    cpuS: cpu,
    cpuMsPerJob: perJob(cpu, o.jobs),
    maxRssMiB: Object.fromEntries(Object.entries(m.maxRssBytes).map(([k, v]) => [k, mib(v)])),
    serverPersistencePerJob: pers
      ? { operations: round(pers.operations / o.jobs, 1), ms: round((pers.totalS * 1000) / o.jobs, 1), updateWorkflowExecution: round((pers.byOp.UpdateWorkflowExecution?.count ?? 0) / o.jobs, 1), updateMeanMs: pers.byOp.UpdateWorkflowExecution?.meanMs ?? 0 }
      : null,
    foreign: foreignCpu,
    statusChecksPerJob: round(Number(checks.c), 2),
  };
}

/** Runs the benchmark; returns the JSON written. */
export async function runThroughput(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietMachine({ maxLoad: o.maxLoad, timeoutMs: o.waitLoadMin * 60_000, log });
  const load = sampleLoad();
  const profile = { concurrency: o.jobs + 10, minRunMs: o.runMs };
  const stack = await startStack({ name: 'throughput', accounts: [{ name: 'tp-baseline', profile }, { name: 'tp-temporal', profile }], log, keepDir: o.keepDir, inMemory: o.db === 'memory', designs: [o.design], dynamicConfig: Object.fromEntries(o.dynamicConfig.map((kv) => [kv.slice(0, kv.indexOf('=')), JSON.parse(kv.slice(kv.indexOf('=') + 1))])) });
  try {
    const baseline = o.skipBaseline ? undefined : await baselinePhase(stack, o, log);
    const temporal = await temporalPhase(stack, o, log);
    const stats = stack.sim.stats();
    const temporalCpu = (temporal.cpuS.worker ?? 0) + (temporal.cpuS.server ?? 0);
    const baselineCpu = baseline?.cpuS.baseline ?? Number.NaN;
    const out = {
      benchmark: 'throughput',
      options: o,
      machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, load: load.stop() },
      /** Worker log (WARN+): failed activity attempts, SQLite store errors. */
      workerLog: stack.workerLogCounts(),
      policy: 'DEFAULT_POLL_POLICY (2 s initial delay ×1.5, ±20 % jitter)',
      provider: { profile, requestsByAccount: Object.fromEntries(Object.entries(stats.requests.byAccount).map(([k, v]) => [k, { submit: v.submit, status: v.status, byStatus: v.byStatus }])) },
      baseline,
      temporal,
      ratios: {
        jobsPerSecond: baseline ? round(temporal.jobsPerSecond / baseline.jobsPerSecond, 2) : null,
        /** (worker + server CPU) / baseline process CPU. */
        cpu: baseline ? round(temporalCpu / baselineCpu, 1) : null,
        /** CPU ms per job added by Temporal: worker + server − baseline. */
        addedCpuMsPerJob: baseline ? round(((temporalCpu - baselineCpu) * 1000) / o.jobs, 1) : null,
      },
    };
    const rows: (string | number)[][] = [
      ['jobs completed', `${temporal.completed}/${o.jobs}`, baseline ? `${baseline.completed}/${o.jobs}` : '—', ''],
      ['status checks per job', temporal.statusChecksPerJob ?? '—', '(same schedule)', ''],
      ['wall time (first start → last result)', `${(temporal.wallMs / 1000).toFixed(1)} s`, baseline ? `${(baseline.wallMs / 1000).toFixed(1)} s` : '—', ''],
      ['time to start all', `${(temporal.startMs / 1000).toFixed(1)} s`, baseline ? `${(baseline.startMs / 1000).toFixed(1)} s` : '—', ''],
      ['jobs per second', temporal.jobsPerSecond, baseline?.jobsPerSecond ?? '—', out.ratios.jobsPerSecond ?? ''],
      ['CPU ms/job: worker | baseline process', temporal.cpuMsPerJob.worker ?? '—', baseline?.cpuMsPerJob.baseline ?? '—', ''],
      ['CPU ms/job: Temporal server', temporal.cpuMsPerJob.server ?? '—', baseline?.cpuMsPerJob.server ?? '—', ''],
      ['CPU ms/job: worker + server vs baseline', round(((temporal.cpuS.worker ?? 0) + (temporal.cpuS.server ?? 0)) * 1000 / o.jobs, 2), baseline?.cpuMsPerJob.baseline ?? '—', out.ratios.cpu ?? ''],
      ['CPU ms/job: bench process (sim + site + driver)', temporal.cpuMsPerJob.bench ?? '—', baseline?.cpuMsPerJob.bench ?? '—', ''],
      ['server persistence per job: operations (op-ms)', temporal.serverPersistencePerJob ? `${temporal.serverPersistencePerJob.operations} (${temporal.serverPersistencePerJob.ms} ms; ${temporal.serverPersistencePerJob.updateWorkflowExecution} workflow updates of ${temporal.serverPersistencePerJob.updateMeanMs} ms)` : '—', '—', ''],
      ['max RSS MiB: worker | baseline; server', `${temporal.maxRssMiB.worker}; ${temporal.maxRssMiB.server ?? '—'}`, baseline ? `${baseline.maxRssMiB.baseline}; ${baseline.maxRssMiB.server ?? '—'}` : '—', ''],
    ];
    console.log(table(['figure', `Temporal (1 worker, ${o.design})`, 'baseline loop', 'ratio'], rows));
    finishReport('throughput', out, `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the phases: baseline ${baseline?.foreign.foreignCores ?? '—'} cores, Temporal ${temporal.foreign.foreignCores} cores`);
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'throughput.ts',
  new Command('bench:throughput')
    .option('-n, --jobs <n>', 'jobs per phase', '1000')
    .option('--run-ms <ms>', 'provider time of each job (minRunMs)', '1000')
    .option('--start-concurrency <n>', 'concurrent start calls', '32')
    .option('--timeout-s <s>', 'give up a phase after this long', '900')
    .option('--max-load <x>', 'start only when the 1-minute load average is below this', '1.5')
    .option('--wait-load-min <min>', 'wait at most this long for the load to drop', '30')
    .option('--skip-baseline', 'run the Temporal phase only')
    .option('--keep-dir', 'keep the temp directory')
    .option('--db <file|memory>', 'dev server persistence', 'file')
    .option('--design <v1|v2>', 'workflow of the Temporal phase (v1: the frozen earlier workflow, for before figures)', 'v2')
    .option('--dynamic-config <key=json...>', 'dev server dynamic config, e.g. system.enableActivityEagerExecution=true'),
  (opts) => runThroughput(OptionsSchema.parse(opts)),
);
