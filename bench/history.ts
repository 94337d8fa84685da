/**
 * Benchmark 3: what a job costs Temporal as it grows longer. For jobs lasting
 * 1 s, 30 s, 10 min and 2 h of provider time, per design (`lib/stack.ts`):
 * - `v4`: the product as it is (`scrapeWorkflowV6`; tracking loops detached from their activities);
 * - `inActivity`: the same workflow on a worker started with `detachTracking: false` (each
 *   tracking loop inside its activity: what the activity's heartbeats and attempts then cost);
 * - `v4+webhooks`: the product with provider webhooks on (`wake` signals; slower polling).
 * it reports history events and billable Actions counted from the fetched histories
 * (`lib/history.ts`, after Temporal Cloud's published definition:
 * https://docs.temporal.io/cloud/actions), **plus the activity heartbeats that reached the
 * server** (Temporal Cloud bills each as an Action; they are not in history: counted from the dev
 * server's metrics), the server's persistence operations, and from these the cost **per status
 * check**: the slope of a least-squares fit over the lengths, and each length against the 1-s job.
 *
 * Each (length, design) is its own phase, one after another, so that the server's counters
 * (which know namespaces, not jobs) belong to that phase's jobs alone. The 10-minute and 2-hour
 * jobs run in simulated time: provider duration AND every poll-policy delay (and the deadline) are
 * scaled by `--time-scale` (default 0.1); the schedule is geometric, so the number of checks — and
 * so of events — is the same as unscaled. Heartbeats are throttled by the SDK in real time, so a
 * scaled job sends at most as many as the unscaled one would (a lower bound). Reports whether any
 * job approaches the continue-as-new threshold (4,096 events / 4 MiB).
 *
 *   npm run bench:history -- --jobs 5
 */
import { Command } from 'commander';
import { z } from 'zod';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../src/model/types.js';
import { historyCost, HISTORY_LIMITS, type HistoryCost } from './lib/history.js';
import { round, sampleForeignCpu } from './lib/proc.js';
import { total } from './lib/prometheus.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  mean,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import { nominalDelayMs, scaleSchedule } from './lib/schedule.js';
import { startScenarios, waitClosed, waitFinal, type Scenario } from './lib/scenarios.js';
import { heartbeatsDelta, persistenceDelta, serverActionsDelta, settledServerSnapshot } from './lib/serverMetrics.js';
import { startStack, type BenchWorker } from './lib/stack.js';
import { workerSnapshot, type WorkerSnapshot } from './lib/workerMetrics.js';

const LENGTHS = [
  { name: '1 s', key: '1s', ms: 1_000, scaled: false },
  { name: '30 s', key: '30s', ms: 30_000, scaled: false },
  { name: '10 min', key: '10m', ms: 600_000, scaled: true },
  { name: '2 h', key: '2h', ms: 7_200_000, scaled: true },
] as const;

const DESIGNS = [
  { name: 'v4', key: 'v4', design: 'v4', provider: 'reference' },
  { name: 'inActivity', key: 'inActivity', design: 'inActivity', provider: 'reference' },
  { name: 'v4+webhooks', key: 'wh', design: 'v4', provider: 'reference_wh' },
] as const;

const list = <T extends string>(all: readonly T[]) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(all as unknown as [T, ...T[]])).min(1));

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  timeScale: z.coerce.number().positive().max(1),
  webhooks: z.boolean().default(true),
  /** Designs to run (keys: v4, inActivity, wh), in this order. */
  designs: list(DESIGNS.map((d) => d.key)),
  /** Job lengths to run (keys: 1s, 30s, 10m, 2h). */
  lengths: list(LENGTHS.map((l) => l.key)),
  ...LOAD_OPTIONS,
  keepDir: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

/** Least-squares fit y = a + b·x (b = 0 when every x is the same). */
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

/** The poll policy of a length: the default, with a deadline long enough for the job (twice its length, at least the default), scaled when the length runs in simulated time. */
function policyFor(lengthMs: number, scale: number): Partial<PollPolicy> {
  const deadlineMs = Math.max(DEFAULT_POLL_POLICY.deadlineMs, 2 * lengthMs);
  if (scale === 1) return deadlineMs === DEFAULT_POLL_POLICY.deadlineMs ? {} : { deadlineMs };
  return scaleSchedule(
    { initialDelayMs: DEFAULT_POLL_POLICY.initialDelayMs, maxDelayMs: DEFAULT_POLL_POLICY.maxDelayMs, deadlineMs },
    scale,
  );
}

/** Heartbeats the SDK sent (`temporal_request{operation="RecordActivityTaskHeartbeat"}`), summed over the workers' snapshots. */
function sdkHeartbeats(snaps: readonly WorkerSnapshot[]): number | undefined {
  if (snaps.some((s) => !s)) return undefined;
  let n = 0;
  for (const s of snaps) {
    const name = s!.some((x) => x.name === 'temporal_request_total') ? 'temporal_request_total' : 'temporal_request';
    n += total(s, name, { operation: 'RecordActivityTaskHeartbeat' });
  }
  return n;
}

/** Runs the benchmark; returns the JSON written. */
export async function runHistory(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  const designs = DESIGNS.filter((d) => o.designs.includes(d.key) && (o.webhooks || d.provider === 'reference'));
  const lengths = LENGTHS.filter((l) => o.lengths.includes(l.key));
  const scenarios: (Scenario & { length: string; lengthMs: number; designName: string })[] = [];
  for (const len of lengths) {
    const scale = len.scaled ? o.timeScale : 1;
    for (const d of designs) {
      scenarios.push({
        label: `${len.name} · ${d.name}`,
        length: len.name,
        lengthMs: len.ms,
        designName: d.name,
        account: `h-${len.key}-${d.key}`,
        design: d.design,
        provider: d.provider,
        policy: policyFor(len.ms, scale),
        jobs: o.jobs,
        timeScale: scale,
        providerMs: len.ms,
      });
    }
  }
  const stack = await startStack({
    name: 'history',
    accounts: scenarios.map((s) => ({
      name: s.account,
      profile: { concurrency: 10_000, minRunMs: Math.round(s.providerMs * s.timeScale) },
    })),
    webhooks: designs.some((d) => d.provider === 'reference_wh'),
    designs: [...new Set(designs.map((d) => d.design))],
    log,
    keepDir: o.keepDir,
  });
  try {
    const foreign = sampleForeignCpu(() => stack.ownProcesses());
    const workers: BenchWorker[] = [];
    for (const d of new Set(designs.map((x) => x.design))) workers.push(await stack.startWorker(d));
    const ns = stack.temporal.namespace;
    const t0 = Date.now();
    const perScenario = [];
    const byDesign: Record<
      string,
      {
        checks: number[];
        events: number[];
        actions: number[];
        actionsWithHeartbeats: number[];
        phases: { length: string; checks: number; actionsWithHeartbeats: number; operations: number | null }[];
      }
    > = {};
    for (const s of scenarios) {
      // One phase: its jobs alone on the server, from the first start until every run has closed.
      const s0 = await settledServerSnapshot(stack, ns);
      const k0 = await Promise.all(workers.map((w) => workerSnapshot(w.metricsUrl)));
      const p0 = Date.now();
      const ids = (await startScenarios(stack, [s]))[s.label]!;
      const fin = await waitFinal(stack, ids, Math.round(s.lengthMs * s.timeScale) * 2 + 10 * 60_000, log);
      const closeMs = await waitClosed(stack, stack.taskQueue(s.design), 60_000);
      const s1 = await settledServerSnapshot(stack, ns);
      const k1 = await Promise.all(workers.map((w) => workerSnapshot(w.metricsUrl)));
      const phaseS = (Date.now() - p0) / 1000;
      log(
        `history: ${s.label}: ${fin.final}/${ids.length} final in ${phaseS.toFixed(0)} s (${JSON.stringify(fin.states)})${closeMs === null ? '; some workflows still running' : ''}`,
      );

      const rows = await stack.store.db
        .selectFrom('jobs')
        .select(['id', 'state', 'status_checks'])
        .where('id', 'in', ids)
        .execute();
      const costs: (HistoryCost & { checks: number; state: string })[] = [];
      for (const r of rows)
        costs.push({ ...(await historyCost(stack.temporalClient, r.id)), checks: r.status_checks, state: r.state });
      const n = costs.length;
      const hb = heartbeatsDelta(s0, s1, ns);
      const hbSdkBefore = sdkHeartbeats(k0);
      const hbSdkAfter = sdkHeartbeats(k1);
      const heartbeatsPerJob = hb === undefined ? null : round(hb / n, 2);
      const pers = persistenceDelta(s0, s1, ns);
      const serverActions = serverActionsDelta(s0, s1, ns);
      const checksPerJob = mean(costs.map((c) => c.checks));
      const actionsPerJob = mean(costs.map((c) => c.actions));
      const d = (byDesign[s.designName] ??= {
        checks: [],
        events: [],
        actions: [],
        actionsWithHeartbeats: [],
        phases: [],
      });
      for (const c of costs) {
        d.checks.push(c.checks);
        d.events.push(c.events);
        d.actions.push(c.actions);
        d.actionsWithHeartbeats.push(c.actions + (heartbeatsPerJob ?? 0));
      }
      d.phases.push({
        length: s.length,
        checks: checksPerJob,
        actionsWithHeartbeats: actionsPerJob + (heartbeatsPerJob ?? 0),
        operations: pers ? pers.operations / n : null,
      });
      const kinds = [...new Set(costs.flatMap((c) => Object.keys(c.actionsByKind)))];
      const types = [...new Set(costs.flatMap((c) => Object.keys(c.byType)))].sort();
      perScenario.push({
        label: s.label,
        length: s.length,
        design: s.designName,
        timeScale: s.timeScale,
        policy: s.policy,
        jobs: n,
        phaseS: round(phaseS, 1),
        states: Object.fromEntries(
          [...new Set(costs.map((c) => c.state))].map((st) => [st, costs.filter((c) => c.state === st).length]),
        ),
        statusChecksPerJob: round(checksPerJob, 1),
        statusActivityAttemptsPerJob: round(mean(costs.map((c) => c.statusActivities.attempts)), 1),
        eventsPerJob: {
          mean: round(mean(costs.map((c) => c.events)), 1),
          min: Math.min(...costs.map((c) => c.events)),
          max: Math.max(...costs.map((c) => c.events)),
        },
        /** Actions counted from history (no heartbeats). */
        actionsPerJob: {
          mean: round(actionsPerJob, 1),
          min: Math.min(...costs.map((c) => c.actions)),
          max: Math.max(...costs.map((c) => c.actions)),
        },
        actionsByKindPerJob: Object.fromEntries(
          kinds.map((k) => [k, round(mean(costs.map((c) => c.actionsByKind[k] ?? 0)), 1)]),
        ),
        /** Heartbeats that reached the server (its frontend's `RecordActivityTaskHeartbeat` requests in the namespace), per job. */
        heartbeatsPerJob,
        /** The same as the SDK workers counted the requests they sent (a cross-check). */
        sdkHeartbeatsPerJob:
          hbSdkBefore === undefined || hbSdkAfter === undefined ? null : round((hbSdkAfter - hbSdkBefore) / n, 2),
        /** Actions from history + heartbeats that reached the server: what Temporal Cloud would bill. */
        actionsWithHeartbeatsPerJob: heartbeatsPerJob === null ? null : round(actionsPerJob + heartbeatsPerJob, 1),
        /** The open-source server's own `action` counter per job, by type (a cross-check; not Cloud's bill). */
        serverActionsPerJob: serverActions
          ? {
              total: round(serverActions.total / n, 1),
              byType: Object.fromEntries(Object.entries(serverActions.byType).map(([k, v]) => [k, round(v / n, 1)])),
            }
          : null,
        /** Persistence operations of the namespace per job, task-queue bookkeeping left out (`serverMetrics.ts`); shard task-queue operations apart. */
        persistencePerJob: pers
          ? {
              operations: round(pers.operations / n, 1),
              operationMs: round((pers.totalS * 1000) / n, 1),
              bookkeeping: round(pers.bookkeeping / n, 1),
              shardTaskOperations: round((pers.shardTaskOperations ?? 0) / n, 1),
              byOp: Object.fromEntries(Object.entries(pers.byOp).map(([k, v]) => [k, round(v.count / n, 1)])),
            }
          : null,
        eventsByTypePerJob: Object.fromEntries(
          types.map((k) => [k, round(mean(costs.map((c) => c.byType[k] ?? 0)), 1)]),
        ),
        historyKiB: {
          mean: round(mean(costs.map((c) => c.historyBytes)) / 1024, 1),
          max: round(Math.max(...costs.map((c) => c.historyBytes)) / 1024, 1),
        },
        maxRunEvents: Math.max(...costs.map((c) => c.maxRunEvents)),
        runs: Math.max(...costs.map((c) => c.runs)),
        shareOfContinueAsNewThreshold: round(
          Math.max(...costs.map((c) => c.maxRunEvents)) / HISTORY_LIMITS.suggestEvents,
          3,
        ),
      });
    }
    log(`history: ${scenarios.length} phases in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const marginal = Object.fromEntries(
      Object.entries(byDesign).map(([name, d]) => {
        const slow = name.includes('webhooks') ? DEFAULT_POLL_POLICY.webhookSlowdown : 1;
        const e = fit(d.checks, d.events);
        const a = fit(d.checks, d.actions);
        const ah = fit(d.checks, d.actionsWithHeartbeats);
        const withOps = d.phases.filter((p) => p.operations !== null);
        const ops =
          withOps.length >= 2
            ? fit(
                withOps.map((p) => p.checks),
                withOps.map((p) => p.operations!),
              )
            : null;
        // Each length against the 1-s job: (cost − the 1-s job's) / (checks − the 1-s job's).
        const first = d.phases.find((p) => p.length === '1 s');
        const vsOneSecond = first
          ? Object.fromEntries(
              d.phases
                .filter((p) => p !== first && p.checks > first.checks)
                .map((p) => [
                  p.length,
                  {
                    extraChecks: round(p.checks - first.checks, 1),
                    actionsWithHeartbeatsPerCheck: round(
                      (p.actionsWithHeartbeats - first.actionsWithHeartbeats) / (p.checks - first.checks),
                      3,
                    ),
                    operationsPerCheck:
                      p.operations !== null && first.operations !== null
                        ? round((p.operations - first.operations) / (p.checks - first.checks), 3)
                        : null,
                  },
                ]),
            )
          : {};
        // Checks until the run reaches the continue-as-new suggestion, and the polling time that takes (default schedule).
        // Fewer than one event per check: the history does not grow with polling (the few extra
        // events of a reconciled submit are not a per-check cost).
        const checksToCan =
          e.b >= 0.5 ? Math.ceil((HISTORY_LIMITS.suggestEvents - e.a) / e.b) : Number.POSITIVE_INFINITY;
        const hoursToCan = Number.isFinite(checksToCan) ? round(timeOfCheck(checksToCan, slow) / 3_600_000, 1) : null;
        const checksAtDeadline = (() => {
          let k = 0;
          while (timeOfCheck(k + 1, slow) <= DEFAULT_POLL_POLICY.deadlineMs) k++;
          return k;
        })();
        return [
          name,
          {
            eventsFixed: round(e.a, 1),
            eventsPerCheck: round(e.b, 2),
            actionsFixed: round(a.a, 1),
            actionsPerCheck: round(a.b, 2),
            /** Actions with heartbeats = a + b·checks, fitted over every job of every length. */
            actionsWithHeartbeatsFixed: round(ah.a, 1),
            actionsWithHeartbeatsPerCheck: round(ah.b, 3),
            /** Persistence operations = a + b·checks, fitted over the lengths' means. */
            operationsFixed: ops ? round(ops.a, 1) : null,
            operationsPerCheck: ops ? round(ops.b, 3) : null,
            vsOneSecondJob: vsOneSecond,
            checksAtDefaultDeadline: checksAtDeadline,
            eventsAtDefaultDeadline: Math.round(e.a + e.b * checksAtDeadline),
            checksToContinueAsNew: Number.isFinite(checksToCan) ? checksToCan : null,
            pollingHoursToContinueAsNew: hoursToCan,
          },
        ];
      }),
    );
    const out = {
      benchmark: 'history',
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
      definition:
        'Temporal Cloud Actions, https://docs.temporal.io/cloud/actions: counted from history by event type (queries are not billed and not counted); plus activity heartbeats that reached the server (billed, not in history), from the dev server metrics; in simulated time heartbeats are a lower bound',
      limits: HISTORY_LIMITS,
      scenarios: perScenario,
      perDesign: marginal,
    };
    const scaledNote = (s: { timeScale: number }) => (s.timeScale !== 1 ? ` (×${s.timeScale} time)` : '');
    console.log(
      table(
        [
          'job length',
          'design',
          'checks/job',
          'events/job',
          'Actions/job: history + heartbeats that reached the server = total',
          "server's action counter/job",
          'persistence ops/job (op-ms; shard task queues)',
          'history KiB',
          'max events in a run (of 4,096)',
        ],
        perScenario.map((s) => [
          s.length + scaledNote(s),
          s.design,
          s.statusChecksPerJob,
          `${s.eventsPerJob.mean} (${s.eventsPerJob.min}–${s.eventsPerJob.max})`,
          `${s.actionsPerJob.mean} + ${s.heartbeatsPerJob ?? '—'} = ${s.actionsWithHeartbeatsPerJob ?? '—'}`,
          s.serverActionsPerJob?.total ?? '—',
          s.persistencePerJob
            ? `${s.persistencePerJob.operations} (${s.persistencePerJob.operationMs} ms; +${s.persistencePerJob.shardTaskOperations})`
            : '—',
          s.historyKiB.mean,
          `${s.maxRunEvents} (${round(s.shareOfContinueAsNewThreshold * 100, 1)} %)`,
        ]),
      ),
    );
    console.log(
      table(
        [
          'design',
          'events = a + b·checks',
          'Actions incl. heartbeats = a + b·checks',
          'persistence ops = a + b·checks (fit over lengths)',
          'per status check vs the 1-s job: Actions incl. heartbeats; persistence ops',
          'events at the 30 min deadline',
          'polling time until continue-as-new is suggested',
        ],
        Object.entries(marginal).map(([k, m]) => [
          k,
          `${m.eventsFixed} + ${m.eventsPerCheck}·checks`,
          `${m.actionsWithHeartbeatsFixed} + ${m.actionsWithHeartbeatsPerCheck}·checks`,
          m.operationsPerCheck === null ? '—' : `${m.operationsFixed} + ${m.operationsPerCheck}·checks`,
          Object.entries(m.vsOneSecondJob)
            .map(([len, v]) => `${len}: ${v.actionsWithHeartbeatsPerCheck}; ${v.operationsPerCheck ?? '—'}`)
            .join(', ') || '—',
          `${m.eventsAtDefaultDeadline} (${m.checksAtDefaultDeadline} checks)`,
          m.pollingHoursToContinueAsNew === null
            ? 'never (history does not grow with checks)'
            : `${m.pollingHoursToContinueAsNew} h (${m.checksToContinueAsNew} checks)`,
        ]),
      ),
    );
    if (perScenario.some((s) => s.timeScale !== 1))
      console.log(
        `Lengths marked ×${o.timeScale} ran in simulated time: checks and events are those of the unscaled job; heartbeats are throttled in real time, so theirs are a lower bound (run with --time-scale 1 for the real count).`,
      );
    finishReport(
      'history',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${out.machine.foreign.foreignCores} cores (the benchmark's own ${out.machine.foreign.ownCores})`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'history.ts',
  withLoadOptions(new Command('bench:history'))
    .option('-n, --jobs <n>', 'jobs per (length, design)', '5')
    .option('--time-scale <x>', 'simulated-time factor for the 10-minute and 2-hour jobs', '0.1')
    .option('--no-webhooks', 'skip the v4+webhooks design')
    .option('--designs <list>', 'designs to run, comma-separated: v4, inActivity, wh (v4+webhooks)', 'v4,inActivity,wh')
    .option('--lengths <list>', 'job lengths to run, comma-separated: 1s, 30s, 10m, 2h', '1s,30s,10m,2h')
    .option('--keep-dir', 'keep the temp directory'),
  (opts) => runHistory(OptionsSchema.parse(opts)),
);
