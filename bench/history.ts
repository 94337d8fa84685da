/**
 * Benchmark 3 (issue 6): history cost. Workflow history events and Temporal Cloud billable Actions
 * per job (counted from the fetched histories, `lib/history.ts`, after Temporal Cloud's published
 * definition: https://docs.temporal.io/cloud/actions) for jobs lasting 1 s, 30 s and 10 min of
 * provider time, for the two workflows run side by side on one dev server:
 * - `v1`: the frozen `scrapeWorkflow` (`src/legacy/`): a durable timer, then a `checkStatus`
 *   activity, per status check (the before figure);
 * - `v2`: the product (`scrapeWorkflowV2`): one `awaitStatus` activity retried by the server with
 *   `nextRetryDelay` until the task is final, the result written by the final check;
 * - `v2+webhooks`: the product with provider webhooks on (`wake` signals; polls 5× slower).
 * The 10-minute jobs run in simulated time: provider duration AND every poll-policy delay (and the
 * deadline) are scaled by `--time-scale` (default 0.1); the schedule is geometric, so the number
 * of checks — and so of events — is the same as unscaled. Reports whether any job approaches the
 * continue-as-new threshold (4,096 events / 4 MiB) and, from the measured cost per check, how long
 * a job would have to poll before it does.
 *
 *   npm run bench:history -- --jobs 5
 */
import { Command } from 'commander';
import { z } from 'zod';
import { DEFAULT_POLL_POLICY } from '../src/model/types.js';
import { historyCost, HISTORY_LIMITS, type HistoryCost } from './lib/history.js';
import { round, sampleForeignCpu } from './lib/proc.js';
import { finishReport, machine, mean, runAsScript, sampleLoad, table, waitForQuietMachine } from './lib/report.js';
import { nominalDelayMs, scaleSchedule } from './lib/schedule.js';
import { startScenarios, waitFinal, type Scenario } from './lib/scenarios.js';
import { startStack } from './lib/stack.js';

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  timeScale: z.coerce.number().positive().max(1),
  webhooks: z.boolean().default(true),
  maxLoad: z.coerce.number().positive(),
  waitLoadMin: z.coerce.number().min(0),
  keepDir: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

const LENGTHS = [
  { name: '1 s', key: '1s', ms: 1_000 },
  { name: '30 s', key: '30s', ms: 30_000 },
  { name: '10 min', key: '10m', ms: 600_000 },
] as const;

const DESIGNS = [
  { name: 'v1', key: 'v1', design: 'v1', provider: 'reference' },
  { name: 'v2', key: 'v2', design: 'v2', provider: 'reference' },
  { name: 'v2+webhooks', key: 'wh', design: 'v2', provider: 'reference_wh' },
] as const;

/** Least-squares fit y = a + b·x. */
function fit(xs: number[], ys: number[]): { a: number; b: number } {
  const mx = mean(xs);
  const my = mean(ys);
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < xs.length; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  const b = sxx === 0 ? 0 : sxy / sxx;
  return { a: my - b * mx, b };
}

/** Nominal time (ms) at which the default schedule (× `slowdown` with webhooks) makes its `k`-th check. */
function timeOfCheck(k: number, slowdown = 1): number {
  let t = 0;
  for (let i = 0; i < k; i++) t += nominalDelayMs({ ...DEFAULT_POLL_POLICY, slowdown }, i);
  return t;
}

/** Runs the benchmark; returns the JSON written. */
export async function runHistory(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietMachine({ maxLoad: o.maxLoad, timeoutMs: o.waitLoadMin * 60_000, log });
  const load = sampleLoad();
  const designs = DESIGNS.filter((d) => o.webhooks || d.provider === 'reference');
  const scenarios: (Scenario & { length: string; designName: string })[] = [];
  for (const len of LENGTHS) {
    const scale = len.key === '10m' ? o.timeScale : 1;
    for (const d of designs) {
      scenarios.push({
        label: `${len.name} · ${d.name}`,
        length: len.name,
        designName: d.name,
        account: `h-${len.key}-${d.key}`,
        design: d.design,
        provider: d.provider,
        policy: scale === 1 ? {} : scaleSchedule({ initialDelayMs: DEFAULT_POLL_POLICY.initialDelayMs, maxDelayMs: DEFAULT_POLL_POLICY.maxDelayMs, deadlineMs: DEFAULT_POLL_POLICY.deadlineMs }, scale),
        jobs: o.jobs,
        timeScale: scale,
        providerMs: len.ms,
      });
    }
  }
  const stack = await startStack({
    name: 'history',
    accounts: scenarios.map((s) => ({ name: s.account, profile: { concurrency: 10_000, minRunMs: Math.round(s.providerMs * s.timeScale) } })),
    webhooks: o.webhooks,
    designs: ['v1', 'v2'],
    log,
    keepDir: o.keepDir,
  });
  try {
    const foreign = sampleForeignCpu(() => stack.ownProcesses());
    await stack.startWorker('v1');
    await stack.startWorker('v2');
    const t0 = Date.now();
    const jobs = await startScenarios(stack, scenarios);
    const all = Object.values(jobs).flat();
    log(`history: ${all.length} jobs started`);
    const fin = await waitFinal(stack, all, 15 * 60_000, log);
    log(`history: ${fin.final}/${all.length} final after ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    const perScenario = [];
    const byDesign: Record<string, { checks: number[]; events: number[]; actions: number[] }> = {};
    for (const s of scenarios) {
      const ids = jobs[s.label]!;
      const rows = await stack.store.db.selectFrom('jobs').select(['id', 'state', 'status_checks']).where('id', 'in', ids).execute();
      const costs: (HistoryCost & { checks: number; state: string })[] = [];
      for (const r of rows) costs.push({ ...(await historyCost(stack.temporalClient, r.id)), checks: r.status_checks, state: r.state });
      const d = (byDesign[s.designName] ??= { checks: [], events: [], actions: [] });
      for (const c of costs) {
        d.checks.push(c.checks);
        d.events.push(c.events);
        d.actions.push(c.actions);
      }
      const kinds = [...new Set(costs.flatMap((c) => Object.keys(c.actionsByKind)))];
      const types = [...new Set(costs.flatMap((c) => Object.keys(c.byType)))].sort();
      perScenario.push({
        label: s.label,
        length: s.length,
        design: s.designName,
        timeScale: s.timeScale,
        jobs: costs.length,
        states: Object.fromEntries([...new Set(costs.map((c) => c.state))].map((st) => [st, costs.filter((c) => c.state === st).length])),
        statusChecksPerJob: round(mean(costs.map((c) => c.checks)), 1),
        statusActivityAttemptsPerJob: round(mean(costs.map((c) => c.statusActivities.attempts)), 1),
        eventsPerJob: { mean: round(mean(costs.map((c) => c.events)), 1), min: Math.min(...costs.map((c) => c.events)), max: Math.max(...costs.map((c) => c.events)) },
        actionsPerJob: { mean: round(mean(costs.map((c) => c.actions)), 1), min: Math.min(...costs.map((c) => c.actions)), max: Math.max(...costs.map((c) => c.actions)) },
        actionsByKindPerJob: Object.fromEntries(kinds.map((k) => [k, round(mean(costs.map((c) => c.actionsByKind[k] ?? 0)), 1)])),
        eventsByTypePerJob: Object.fromEntries(types.map((k) => [k, round(mean(costs.map((c) => c.byType[k] ?? 0)), 1)])),
        historyKiB: { mean: round(mean(costs.map((c) => c.historyBytes)) / 1024, 1), max: round(Math.max(...costs.map((c) => c.historyBytes)) / 1024, 1) },
        maxRunEvents: Math.max(...costs.map((c) => c.maxRunEvents)),
        runs: Math.max(...costs.map((c) => c.runs)),
        shareOfContinueAsNewThreshold: round(Math.max(...costs.map((c) => c.maxRunEvents)) / HISTORY_LIMITS.suggestEvents, 3),
      });
    }
    const marginal = Object.fromEntries(
      Object.entries(byDesign).map(([name, d]) => {
        const slow = name.includes('webhooks') ? DEFAULT_POLL_POLICY.webhookSlowdown : 1;
        const e = fit(d.checks, d.events);
        const a = fit(d.checks, d.actions);
        // Checks until the run reaches the continue-as-new suggestion, and the polling time that takes (default schedule).
        // Fewer than one event per check: the history does not grow with polling (the few extra
        // events of a reconciled submit are not a per-check cost).
        const checksToCan = e.b >= 0.5 ? Math.ceil((HISTORY_LIMITS.suggestEvents - e.a) / e.b) : Number.POSITIVE_INFINITY;
        const hoursToCan = Number.isFinite(checksToCan) ? round(timeOfCheck(checksToCan, slow) / 3_600_000, 1) : null;
        const checksAtDeadline = (() => {
          let k = 0;
          while (timeOfCheck(k + 1, slow) <= DEFAULT_POLL_POLICY.deadlineMs) k++;
          return k;
        })();
        return [name, { eventsFixed: round(e.a, 1), eventsPerCheck: round(e.b, 2), actionsFixed: round(a.a, 1), actionsPerCheck: round(a.b, 2), checksAtDefaultDeadline: checksAtDeadline, eventsAtDefaultDeadline: Math.round(e.a + e.b * checksAtDeadline), checksToContinueAsNew: Number.isFinite(checksToCan) ? checksToCan : null, pollingHoursToContinueAsNew: hoursToCan }];
      }),
    );
    const out = {
      benchmark: 'history',
      options: o,
      machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, load: load.stop(), foreign: foreign.stop() },
      /** Worker log (WARN+): failed activity attempts, SQLite store errors. */
      workerLog: stack.workerLogCounts(),
      definition: 'Temporal Cloud Actions, https://docs.temporal.io/cloud/actions (history event types per action); queries and heartbeats are not in history and not counted',
      limits: HISTORY_LIMITS,
      scenarios: perScenario,
      perDesign: marginal,
    };
    console.log(
      table(
        ['job length', 'design', 'checks/job', 'events/job', 'actions/job', 'history KiB', 'max events in a run (of 4,096)'],
        perScenario.map((s) => [s.length + (s.timeScale !== 1 ? ` (×${s.timeScale} time)` : ''), s.design, s.statusChecksPerJob, `${s.eventsPerJob.mean} (${s.eventsPerJob.min}–${s.eventsPerJob.max})`, `${s.actionsPerJob.mean} (${s.actionsPerJob.min}–${s.actionsPerJob.max})`, s.historyKiB.mean, `${s.maxRunEvents} (${round(s.shareOfContinueAsNewThreshold * 100, 1)} %)`]),
      ),
    );
    console.log(
      table(
        ['design', 'events = a + b·checks', 'actions = a + b·checks', 'events at the 30 min deadline', 'polling time until continue-as-new is suggested'],
        Object.entries(marginal).map(([k, m]) => [k, `${m.eventsFixed} + ${m.eventsPerCheck}·checks`, `${m.actionsFixed} + ${m.actionsPerCheck}·checks`, `${m.eventsAtDefaultDeadline} (${m.checksAtDefaultDeadline} checks)`, m.pollingHoursToContinueAsNew === null ? 'never (history does not grow with checks)' : `${m.pollingHoursToContinueAsNew} h (${m.checksToContinueAsNew} checks)`]),
      ),
    );
    finishReport('history', out, `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${out.machine.foreign.foreignCores} cores (the benchmark's own ${out.machine.foreign.ownCores})`);
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'history.ts',
  new Command('bench:history')
    .option('-n, --jobs <n>', 'jobs per (length, design)', '5')
    .option('--time-scale <x>', 'simulated-time factor for the 10-minute jobs', '0.1')
    .option('--no-webhooks', 'skip the v2+webhooks design')
    .option('--max-load <x>', 'start only when the 1-minute load average is below this', '1.5')
    .option('--wait-load-min <min>', 'wait at most this long for the load to drop', '30')
    .option('--keep-dir', 'keep the temp directory'),
  (opts) => runHistory(OptionsSchema.parse(opts)),
);
