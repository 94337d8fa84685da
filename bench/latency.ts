/**
 * Benchmark: latency from the moment the provider marks a job complete to the moment
 * its result row is committed, p50 / p99 / max, with polling only and with webhooks (the two run
 * side by side on one worker).
 *
 * - Provider side: every job is held `running` by the simulator (`hold` fault) and released after a
 *   duration drawn uniformly from [`--min-s`, `--max-s`]; the simulator's `job` event gives the
 *   epoch ms it marked the job `completed`.
 * - Our side: the product's `afterResultWritten` activity hook (set by the bench worker, no product
 *   change) reports the epoch ms right after the result transaction committed. `results.written_at`
 *   is also reported; it is taken inside the transaction, before the commit.
 * Both clocks are this machine's. Starts are spread over `--start-over-s` so that the dev server is
 * not saturated (that is the throughput benchmark's subject).
 *
 *   npm run bench:latency -- --jobs 150
 */
import { Command } from 'commander';
import { z } from 'zod';
import type { JobTransition } from '../tools/sim/index.js';
import { round, sampleForeignCpu } from './lib/proc.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  mean,
  percentile,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import { waitFinal, type Scenario } from './lib/scenarios.js';
import { startStack } from './lib/stack.js';

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  minS: z.coerce.number().min(0),
  maxS: z.coerce.number().positive(),
  startOverS: z.coerce.number().min(0),
  webhooks: z.boolean().default(true),
  ...LOAD_OPTIONS,
  keepDir: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

function summary(xs: number[]): {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  min: number;
} {
  return {
    n: xs.length,
    p50: percentile(xs, 50),
    p90: percentile(xs, 90),
    p99: percentile(xs, 99),
    max: Math.max(...xs),
    mean: Math.round(mean(xs)),
    min: Math.min(...xs),
  };
}

/** Runs the benchmark; returns the JSON written. */
export async function runLatency(o: Options): Promise<Record<string, unknown>> {
  if (o.maxS < o.minS) throw new Error('--max-s must be ≥ --min-s');
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  const modes = [
    { name: 'polling', account: 'lat-poll', provider: 'reference' as const },
    ...(o.webhooks ? [{ name: 'webhooks', account: 'lat-wh', provider: 'reference_wh' as const }] : []),
  ];
  const scenarios: Scenario[] = modes.map((m) => ({
    label: m.name,
    account: m.account,
    design: 'v4',
    provider: m.provider,
    policy: {},
    jobs: o.jobs,
    timeScale: 1,
    providerMs: Number.NaN,
  }));
  const stack = await startStack({
    name: 'latency',
    accounts: modes.map((m) => ({ name: m.account, profile: { concurrency: 100_000 } })),
    webhooks: o.webhooks,
    log,
    keepDir: o.keepDir,
  });
  try {
    const foreign = sampleForeignCpu(() => stack.ownProcesses());
    const accounts = new Set(modes.map((m) => m.account));
    for (const a of accounts)
      stack.sim.faults.add({ account: a, endpoint: 'submit', action: 'hold', holdIn: 'running' });
    const completedAt = new Map<string, number>();
    const runningAt = new Map<string, number>();
    const durations = new Map<string, number>();
    const timers: NodeJS.Timeout[] = [];
    stack.sim.events.on('job', (t: JobTransition) => {
      if (!accounts.has(t.account)) return;
      if (t.to === 'running') {
        runningAt.set(t.job_id, t.at);
        const d = Math.round((o.minS + Math.random() * (o.maxS - o.minS)) * 1000);
        durations.set(t.job_id, d);
        timers.push(setTimeout(() => stack.sim.release(t.job_id), d));
      } else if (t.to === 'completed') completedAt.set(t.job_id, t.at);
    });
    const worker = await stack.startWorker('v4');
    // Starts spread evenly over --start-over-s, so that the server is not saturated and the figure
    // is the design's latency, not a backlog's.
    const jobs: Record<string, string[]> = Object.fromEntries(scenarios.map((s) => [s.label, [] as string[]]));
    const t0 = Date.now();
    const starting: Promise<void>[] = [];
    for (let i = 0; i < o.jobs; i++) {
      const at = t0 + (i / o.jobs) * o.startOverS * 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
      for (const s of scenarios) {
        starting.push(
          stack.clients[s.design]
            .startScrape({
              account: s.account,
              provider: s.provider,
              url: stack.pageUrl(i),
              key: `${s.account}-${i}`,
              policy: s.policy,
            })
            .then((ref) => {
              jobs[s.label]!.push(ref.jobId);
            }),
        );
      }
    }
    await Promise.all(starting);
    const all = Object.values(jobs).flat();
    log(`latency: ${all.length} jobs started`);
    const fin = await waitFinal(stack, all, (o.maxS + 900) * 1000, log);
    for (const t of timers) clearTimeout(t);
    await new Promise((r) => setTimeout(r, 500));
    const results: Record<string, unknown>[] = [];
    for (const s of scenarios) {
      const rows = await stack.store.db
        .selectFrom('jobs')
        .leftJoin('results', 'results.job_id', 'jobs.id')
        .select([
          'jobs.id as id',
          'jobs.state as state',
          'jobs.task_id as taskId',
          'jobs.status_checks as checks',
          'results.written_at as writtenAt',
        ])
        .where('jobs.id', 'in', jobs[s.label]!)
        .execute();
      const hook: number[] = [];
      const writtenAt: number[] = [];
      const provider: number[] = [];
      for (const r of rows) {
        const done = r.taskId ? completedAt.get(r.taskId) : undefined;
        const committed = worker.written.get(r.id);
        if (done === undefined || committed === undefined) continue;
        hook.push(committed - done);
        if (r.writtenAt) writtenAt.push(Date.parse(r.writtenAt) - done);
        const run = runningAt.get(r.taskId!);
        if (run !== undefined) provider.push(done - run);
      }
      results.push({
        mode: s.label,
        jobs: rows.length,
        completed: rows.filter((r) => r.state === 'completed').length,
        statusChecksPerJob: round(mean(rows.map((r) => r.checks)), 2),
        providerDurationMs: summary(provider),
        latencyMs: summary(hook),
        latencyToWrittenAtMs: summary(writtenAt),
      });
    }
    const out = {
      benchmark: 'latency',
      options: o,
      machine: {
        start: quiet.start,
        end: machine(),
        underLoad: quiet.underLoad,
        load: load.stop(),
        foreign: foreign.stop(),
      },
      /** Worker log (WARN+): failed activity attempts, SQLite store errors. */
      workerLog: stack.workerLogCounts(),
      policy: 'DEFAULT_POLL_POLICY: 2 s ×1.5 to 60 s, ±20 % jitter; webhooks: delays ×5 and a wake signal per event',
      final: fin,
      webhooks: stack.sim.stats().webhooks.delivered,
      results,
    };
    console.log(
      table(
        [
          'mode',
          'jobs',
          'provider time (s)',
          'checks/job',
          'p50 ms',
          'p90 ms',
          'p99 ms',
          'max ms',
          'p50 to written_at',
        ],
        results.map((r) => {
          const l = r.latencyMs as ReturnType<typeof summary>;
          const p = r.providerDurationMs as ReturnType<typeof summary>;
          return [
            r.mode as string,
            `${r.completed}/${r.jobs}`,
            `${(p.min / 1000).toFixed(1)}–${(p.max / 1000).toFixed(1)}`,
            r.statusChecksPerJob as number,
            l.p50,
            l.p90,
            l.p99,
            l.max,
            (r.latencyToWrittenAtMs as ReturnType<typeof summary>).p50,
          ];
        }),
      ),
    );
    finishReport(
      'latency',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${out.machine.foreign.foreignCores} cores (the benchmark's own ${out.machine.foreign.ownCores})`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'latency.ts',
  withLoadOptions(new Command('bench:latency'))
    .option('-n, --jobs <n>', 'jobs per mode', '150')
    .option('--min-s <s>', 'shortest provider job (s)', '1')
    .option('--max-s <s>', 'longest provider job (s)', '60')
    .option('--start-over-s <s>', 'spread the starts evenly over this many seconds', '150')
    .option('--no-webhooks', 'polling only')
    .option('--keep-dir', 'keep the temp directory'),
  (opts) => runLatency(OptionsSchema.parse(opts)),
);
