/**
 * The log-normal workload of `bench:politeness --workload lognormal`: does the learned poll
 * schedule (`learnSchedule`, {@link learnedPlan}) make fewer status requests than the fixed
 * geometric schedule for the same p95 lateness?
 *
 * Two accounts of the simulator, one per schedule, whose jobs run for a log-normal time (median
 * `medianMs`, spread `sigma`; the duration comes from a hash of the URL, so both accounts get the
 * same durations for the same URLs: the comparison is paired). The learned account first runs
 * `warmup` jobs of other URLs, so that its provider key has completions to learn from; then both
 * accounts run the same `jobs` URLs at once. Lateness is the provider's `finished_at` to our job
 * row's `finished_at` (the result committed), in unscaled time.
 */
import { DEFAULT_POLL_POLICY } from '../../src/model/types.js';
import { quantile } from '../../src/model/schedule.js';
import { round } from './proc.js';
import { mean } from './report.js';
import { scaleSchedule } from './schedule.js';
import { waitFinal } from './scenarios.js';
import type { Stack } from './stack.js';

/** What the workload is: job counts and the duration spread. Times unscaled, ms. */
export interface LognormalWorkload {
  jobs: number;
  warmup: number;
  medianMs: number;
  sigma: number;
  timeScale: number;
}

/** Simulator accounts of the workload, with their profiles (scaled median, spread). */
export function lognormalAccounts(w: LognormalWorkload): { name: string; profile: Record<string, number> }[] {
  const profile = { concurrency: 10_000, minRunMs: Math.round(w.medianMs * w.timeScale), runLogSigma: w.sigma };
  return [
    { name: 'ln-fixed', profile },
    { name: 'ln-learned', profile },
  ];
}

/** One schedule's figures on the measured jobs. */
export interface ScheduleFigures {
  schedule: 'fixed geometric' | 'learned';
  jobs: number;
  states: Record<string, number>;
  statusChecksPerJob: number;
  providerRequestsPerJob: number;
  /** Unscaled ms, provider finished → result committed. */
  latenessMs: { p50: number; p95: number; max: number; mean: number };
}

/** Runs the workload on `stack` (its worker already started); returns both schedules' figures and the reduction. */
export async function runLognormal(
  stack: Stack,
  w: LognormalWorkload,
  log: (l: string) => void,
): Promise<{
  workload: LognormalWorkload;
  schedules: ScheduleFigures[];
  fewerChecksPercent: number;
  p95LatenessRatio: number;
}> {
  const base = scaleSchedule(
    {
      initialDelayMs: DEFAULT_POLL_POLICY.initialDelayMs,
      maxDelayMs: DEFAULT_POLL_POLICY.maxDelayMs,
      deadlineMs: 4 * 3_600_000,
    },
    w.timeScale,
  );
  const start = async (account: string, i: number, learn: boolean) =>
    (
      await stack.clients.v4.startScrape({
        account,
        provider: 'reference',
        url: stack.pageUrl(i),
        key: `${account}-${i}`,
        policy: { ...base, learnSchedule: learn },
      })
    ).jobId;
  // Warm-up: completions for the learned account's provider key to learn from (URLs not measured).
  const warm = await Promise.all(Array.from({ length: w.warmup }, (_, i) => start('ln-learned', 100_000 + i, true)));
  const wf = await waitFinal(stack, warm, 30 * 60_000, log);
  log(`lognormal: warm-up ${wf.final}/${warm.length} final ${JSON.stringify(wf.states)}`);
  const stats0 = stack.sim.stats().requests.byAccount;
  const ids: Record<'ln-fixed' | 'ln-learned', string[]> = { 'ln-fixed': [], 'ln-learned': [] };
  for (let i = 0; i < w.jobs; i++) {
    ids['ln-fixed'].push(await start('ln-fixed', i, false));
    ids['ln-learned'].push(await start('ln-learned', i, true));
  }
  const fin = await waitFinal(stack, [...ids['ln-fixed'], ...ids['ln-learned']], 60 * 60_000, log);
  log(`lognormal: ${fin.final}/${2 * w.jobs} final ${JSON.stringify(fin.states)}`);
  const stats = stack.sim.stats();
  const simJobs = new Map(stats.jobs.map((j) => [j.job_id, j]));
  const schedules: ScheduleFigures[] = [];
  for (const account of ['ln-fixed', 'ln-learned'] as const) {
    const rows = await stack.store.db
      .selectFrom('jobs')
      .select(['id', 'state', 'task_id', 'status_checks', 'finished_at'])
      .where('id', 'in', ids[account])
      .execute();
    const late: number[] = [];
    for (const r of rows) {
      const j = r.task_id ? simJobs.get(r.task_id) : undefined;
      if (r.state !== 'completed' || !j?.finished_at || !r.finished_at) continue;
      late.push(Math.max(0, (Date.parse(r.finished_at) - Date.parse(j.finished_at)) / w.timeScale));
    }
    const before = stats0[account];
    const after = stats.requests.byAccount[account]!;
    const requests =
      after.submit +
      after.status +
      after.cancel +
      after.list -
      (before ? before.submit + before.status + before.cancel + before.list : 0);
    schedules.push({
      schedule: account === 'ln-fixed' ? 'fixed geometric' : 'learned',
      jobs: rows.length,
      states: Object.fromEntries(
        [...new Set(rows.map((r) => r.state))].map((st) => [st, rows.filter((r) => r.state === st).length]),
      ),
      statusChecksPerJob: round(rows.reduce((n, r) => n + r.status_checks, 0) / rows.length, 2),
      providerRequestsPerJob: round(requests / rows.length, 2),
      latenessMs: late.length
        ? {
            p50: Math.round(quantile(late, 0.5)),
            p95: Math.round(quantile(late, 0.95)),
            max: Math.round(Math.max(...late)),
            mean: Math.round(mean(late)),
          }
        : { p50: NaN, p95: NaN, max: NaN, mean: NaN },
    });
  }
  const [fixed, learned] = schedules as [ScheduleFigures, ScheduleFigures];
  return {
    workload: w,
    schedules,
    fewerChecksPercent: round(100 * (1 - learned.statusChecksPerJob / fixed.statusChecksPerJob), 1),
    p95LatenessRatio: round(learned.latenessMs.p95 / fixed.latenessMs.p95, 2),
  };
}
