/**
 * Benchmark: politeness. Provider requests per job by kind (submit, status, result,
 * cancel) against the minimum the poll schedule allows, for jobs lasting 1 s, 30 s and 10 min of
 * provider time, with polling only and with webhooks on (the HTTP API receives the simulator's
 * signed events and signals `wake`); and the highest request rate any single job produced.
 *
 * The provider counts requests (`tools/sim` stats, one account per scenario). A status and a result
 * read are the same request (`GET /api/jobs/:id`): status checks are the store's `status_checks`
 * (one per successful status check, `checkOnce`), result reads are the remaining GETs. The
 * minimum: one submit, then the fewest checks any run of the schedule can make before the job is
 * final (every delay at its longest jitter, 1 + jitter), and no separate result read — the final
 * status answer already carries the result. With webhooks the minimum is one submit and one check.
 *
 * The 10-minute jobs run in simulated time: provider duration AND every poll-policy delay (and the
 * deadline) are scaled by `--time-scale` (default 0.1); the schedule is geometric, so request
 * counts are those of the unscaled schedule. Rates are given in unscaled time.
 *
 * `--workload lognormal` instead compares the fixed geometric schedule with the learned one
 * (`lib/lognormal.ts`) on jobs whose durations follow a log-normal spread.
 *
 *   npm run bench:politeness -- --jobs 20
 *   npm run bench:politeness -- --workload lognormal --jobs 100 [--median-s 300 --sigma 0.6 --warmup 30]
 */
import { Command } from 'commander';
import { z } from 'zod';
import { DEFAULT_POLL_POLICY } from '../src/model/types.js';
import { round, sampleForeignCpu } from './lib/proc.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  mean,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietMachine,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import { checksToObserve, scaleSchedule } from './lib/schedule.js';
import { startScenarios, waitFinal, type Scenario } from './lib/scenarios.js';
import { lognormalAccounts, runLognormal } from './lib/lognormal.js';
import { startStack } from './lib/stack.js';

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  timeScale: z.coerce.number().positive().max(1),
  webhooks: z.boolean().default(true),
  ...LOAD_OPTIONS,
  keepDir: z.boolean().default(false),
  workload: z.enum(['lengths', 'lognormal']).default('lengths'),
  medianS: z.coerce.number().positive().default(300),
  sigma: z.coerce.number().min(0).max(3).default(0.6),
  warmup: z.coerce.number().int().min(0).default(30),
});
type Options = z.infer<typeof OptionsSchema>;

const LENGTHS = [
  { name: '1 s', key: '1s', ms: 1_000 },
  { name: '30 s', key: '30s', ms: 30_000 },
  { name: '10 min', key: '10m', ms: 600_000 },
] as const;

/** Most entries of sorted `t` (ms) inside any window of `windowMs`. */
function maxInWindow(t: readonly number[], windowMs: number): number {
  let best = 0;
  for (let a = 0, b = 0; b < t.length; b++) {
    while (t[b]! - t[a]! > windowMs) a++;
    best = Math.max(best, b - a + 1);
  }
  return best;
}

/** Runs the benchmark; returns the JSON written. */
export async function runPoliteness(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  if (o.workload === 'lognormal') return politenessLognormal(o, quiet, load, log);
  const modes = [
    { name: 'polling', key: 'poll', provider: 'reference' as const },
    ...(o.webhooks ? [{ name: 'webhooks', key: 'wh', provider: 'reference_wh' as const }] : []),
  ];
  const scenarios: (Scenario & { length: string; mode: string })[] = [];
  for (const len of LENGTHS) {
    const scale = len.key === '10m' ? o.timeScale : 1;
    for (const m of modes) {
      scenarios.push({
        label: `${len.name} · ${m.name}`,
        length: len.name,
        mode: m.name,
        account: `p-${len.key}-${m.key}`,
        design: 'v4',
        provider: m.provider,
        policy:
          scale === 1
            ? {}
            : scaleSchedule(
                {
                  initialDelayMs: DEFAULT_POLL_POLICY.initialDelayMs,
                  maxDelayMs: DEFAULT_POLL_POLICY.maxDelayMs,
                  deadlineMs: DEFAULT_POLL_POLICY.deadlineMs,
                },
                scale,
              ),
        jobs: o.jobs,
        timeScale: scale,
        providerMs: len.ms,
      });
    }
  }
  const stack = await startStack({
    name: 'politeness',
    accounts: scenarios.map((s) => ({
      name: s.account,
      profile: { concurrency: 10_000, minRunMs: Math.round(s.providerMs * s.timeScale) },
    })),
    webhooks: o.webhooks,
    log,
    keepDir: o.keepDir,
  });
  try {
    const foreign = sampleForeignCpu(() => stack.ownProcesses());
    await stack.startWorker('v4');
    const jobs = await startScenarios(stack, scenarios);
    const all = Object.values(jobs).flat();
    log(`politeness: ${all.length} jobs started`);
    const fin = await waitFinal(stack, all, 15 * 60_000, log);
    log(`politeness: ${fin.final}/${all.length} final`);
    // Let late webhook deliveries land before counting.
    await new Promise((r) => setTimeout(r, 2_000));
    const stats = stack.sim.stats();
    const simJobs = new Map(stats.jobs.map((j) => [j.job_id, j]));
    const results = [];
    for (const s of scenarios) {
      const rows = await stack.store.db
        .selectFrom('jobs')
        .select(['id', 'state', 'task_id', 'status_checks'])
        .where('id', 'in', jobs[s.label]!)
        .execute();
      const acct = stats.requests.byAccount[s.account]!;
      const checks = rows.reduce((n, r) => n + r.status_checks, 0);
      const n = rows.length;
      const perJob = {
        submit: acct.submit / n,
        status: checks / n,
        result: (acct.status - checks) / n,
        cancel: acct.cancel / n,
        list: acct.list / n,
      };
      const total = perJob.submit + perJob.status + perJob.result + perJob.cancel + perJob.list;
      const sched = {
        initialDelayMs: DEFAULT_POLL_POLICY.initialDelayMs,
        maxDelayMs: DEFAULT_POLL_POLICY.maxDelayMs,
        multiplier: DEFAULT_POLL_POLICY.multiplier,
        jitter: DEFAULT_POLL_POLICY.jitter,
      };
      const minChecks = s.mode === 'webhooks' ? 1 : checksToObserve(sched, s.providerMs, 1 + sched.jitter);
      const nominalChecks = s.mode === 'webhooks' ? 1 : checksToObserve(sched, s.providerMs, 1);
      // Per-job request times in unscaled ms: the submit (job creation) and every GET / cancel.
      let max10s = 0;
      let max60s = 0;
      let minGapMs = Number.POSITIVE_INFINITY;
      let minPollGapMs = Number.POSITIVE_INFINITY;
      const providerRunMs: number[] = [];
      for (const r of rows) {
        const j = r.task_id ? simJobs.get(r.task_id) : undefined;
        if (!j) continue;
        const created = Date.parse(j.created_at);
        if (j.finished_at) providerRunMs.push((Date.parse(j.finished_at) - created) / s.timeScale);
        const t = [created, ...j.status_request_times, ...j.cancel_request_times]
          .sort((a, b) => a - b)
          .map((x) => (x - created) / s.timeScale);
        max10s = Math.max(max10s, maxInWindow(t, 10_000));
        max60s = Math.max(max60s, maxInWindow(t, 60_000));
        for (let k = 1; k < t.length; k++) minGapMs = Math.min(minGapMs, t[k]! - t[k - 1]!);
        // Between two status checks (the last GET of a completed job is its result read).
        const polls = [created, ...j.status_request_times]
          .sort((a, b) => a - b)
          .map((x) => (x - created) / s.timeScale);
        if (j.status === 'completed' && polls.length > 2) polls.pop();
        for (let k = 1; k < polls.length; k++) minPollGapMs = Math.min(minPollGapMs, polls[k]! - polls[k - 1]!);
      }
      results.push({
        label: s.label,
        length: s.length,
        mode: s.mode,
        timeScale: s.timeScale,
        jobs: n,
        states: Object.fromEntries(
          [...new Set(rows.map((r) => r.state))].map((st) => [st, rows.filter((r) => r.state === st).length]),
        ),
        providerRunMsMean: Math.round(mean(providerRunMs)),
        requestsPerJob: Object.fromEntries(Object.entries({ ...perJob, total }).map(([k, v]) => [k, round(v, 2)])),
        maxStatusChecksOneJob: Math.max(...rows.map((r) => r.status_checks)),
        minimum: {
          submit: 1,
          status: minChecks,
          result: 0,
          total: 1 + minChecks,
          nominalScheduleChecks: nominalChecks,
        },
        excessOverMinimum: round(total - (1 + minChecks), 2),
        webhooks: s.mode === 'webhooks' ? { eventsForScenario: stats.webhooks.events } : undefined,
        rate: {
          maxRequestsIn10s: max10s,
          maxRequestsIn60s: max60s,
          minGapMs: Math.round(minGapMs),
          minGapBetweenPollsMs: Math.round(minPollGapMs),
        },
      });
    }
    const out = {
      benchmark: 'politeness',
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
      policy: 'DEFAULT_POLL_POLICY: 2 s ×1.5 to 60 s, ±20 % jitter; webhooks: delays ×5 (webhookSlowdown)',
      providerTotals: {
        requests: stats.requests.total,
        byStatus: stats.requests.byStatus,
        webhooks: {
          events: stats.webhooks.events,
          delivered: stats.webhooks.delivered,
          failedAttempts: stats.webhooks.failedAttempts,
        },
      },
      scenarios: results,
      highestRate: {
        maxRequestsIn10sByOneJob: Math.max(...results.map((r) => r.rate.maxRequestsIn10s)),
        maxRequestsIn60sByOneJob: Math.max(...results.map((r) => r.rate.maxRequestsIn60s)),
        minGapBetweenTwoRequestsOfOneJobMs: Math.min(...results.map((r) => r.rate.minGapMs)),
        minGapBetweenTwoPollsOfOneJobMs: Math.min(...results.map((r) => r.rate.minGapBetweenPollsMs)),
      },
    };
    console.log(
      table(
        [
          'job length',
          'mode',
          'submit',
          'status',
          'result',
          'cancel',
          'total/job',
          'schedule minimum (nominal)',
          'most requests by one job in 10 s / 60 s',
          'min gap between polls',
        ],
        results.map((r) => [
          r.length + (r.timeScale !== 1 ? ` (×${r.timeScale} time)` : ''),
          r.mode,
          r.requestsPerJob.submit!,
          r.requestsPerJob.status!,
          r.requestsPerJob.result!,
          r.requestsPerJob.cancel!,
          r.requestsPerJob.total!,
          `${r.minimum.total} (${1 + r.minimum.nominalScheduleChecks})`,
          `${r.rate.maxRequestsIn10s} / ${r.rate.maxRequestsIn60s}`,
          `${r.rate.minGapBetweenPollsMs} ms`,
        ]),
      ),
    );
    console.log(
      `highest rate of any single job: ${out.highestRate.maxRequestsIn10sByOneJob} requests in 10 s, ${out.highestRate.maxRequestsIn60sByOneJob} in 60 s; smallest gap between two requests of one job ${out.highestRate.minGapBetweenTwoRequestsOfOneJobMs} ms (status → result read), between two polls ${out.highestRate.minGapBetweenTwoPollsOfOneJobMs} ms`,
    );
    finishReport(
      'politeness',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${out.machine.foreign.foreignCores} cores (the benchmark's own ${out.machine.foreign.ownCores})`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

/** `--workload lognormal`: the fixed geometric schedule against the learned one on paired log-normal durations. */
async function politenessLognormal(
  o: Options,
  quiet: Awaited<ReturnType<typeof waitForQuietMachine>>,
  load: ReturnType<typeof sampleLoad>,
  log: (l: string) => void,
): Promise<Record<string, unknown>> {
  const workload = {
    jobs: o.jobs,
    warmup: o.warmup,
    medianMs: o.medianS * 1_000,
    sigma: o.sigma,
    timeScale: o.timeScale,
  };
  const stack = await startStack({
    name: 'politeness-lognormal',
    accounts: lognormalAccounts(workload),
    webhooks: false,
    log,
    keepDir: o.keepDir,
  });
  try {
    const foreign = sampleForeignCpu(() => stack.ownProcesses());
    await stack.startWorker('v4');
    const r = await runLognormal(stack, workload, log);
    const out = {
      benchmark: 'politeness-lognormal',
      options: o,
      machine: {
        start: quiet.start,
        end: machine(),
        underLoad: quiet.underLoad,
        load: load.stop(),
        foreign: foreign.stop(),
      },
      workerLog: stack.workerLogCounts(),
      policy: `DEFAULT_POLL_POLICY (2 s ×1.5 to 60 s, ±20 % jitter) against learnSchedule: true, deadline 4 h; times ×${o.timeScale}`,
      ...r,
    };
    console.log(
      table(
        ['schedule', 'jobs', 'status checks / job', 'provider requests / job', 'lateness p50', 'p95', 'max'],
        r.schedules.map((x) => [
          x.schedule,
          x.jobs,
          x.statusChecksPerJob,
          x.providerRequestsPerJob,
          `${(x.latenessMs.p50 / 1000).toFixed(1)} s`,
          `${(x.latenessMs.p95 / 1000).toFixed(1)} s`,
          `${(x.latenessMs.max / 1000).toFixed(1)} s`,
        ]),
      ),
    );
    console.log(
      `learned: ${r.fewerChecksPercent} % fewer status checks than the fixed schedule; p95 lateness ${r.p95LatenessRatio}× the fixed schedule’s (log-normal, median ${o.medianS} s, σ ${o.sigma})`,
    );
    finishReport(
      'politeness-lognormal',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${out.machine.foreign.foreignCores} cores (the benchmark's own ${out.machine.foreign.ownCores})`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'politeness.ts',
  withLoadOptions(new Command('bench:politeness'))
    .option('-n, --jobs <n>', 'jobs per (length, mode)', '20')
    .option('--time-scale <x>', 'simulated-time factor for the 10-minute jobs', '0.1')
    .option('--no-webhooks', 'polling only')
    .option('--keep-dir', 'keep the temp directory')
    .option(
      '--workload <name>',
      'lengths (1 s, 30 s, 10 min; polling and webhooks) or lognormal (fixed against learned schedule)',
      'lengths',
    )
    .option('--median-s <s>', 'lognormal: median provider time, unscaled seconds', '300')
    .option('--sigma <x>', 'lognormal: spread of the log of the provider time', '0.6')
    .option('--warmup <n>', 'lognormal: completed jobs the learned account runs before the measured ones', '30'),
  (opts) => runPoliteness(OptionsSchema.parse(opts)),
);
