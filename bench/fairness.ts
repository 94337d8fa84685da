/**
 * Benchmark: fair shares of one provider key's slots (docs/design.md, "Fair shares and budgets"). Three
 * accounts with weights 1 : 1 : 2 each start a large batch on one key of the reference provider,
 * which runs 8 jobs at once per credential and answers `429 CONCURRENCY_LIMIT` past it; while they
 * all have work, a fourth account submits single jobs, one at a time, each after the other accounts'
 * jobs took two rounds of the key's slots (so each is the single job of an idle account). Two
 * worker processes. The same run
 * is made with the key's fair queue on (`limits.fairShares: true`, the default) and off (first come,
 * first served: whichever waiting job's timer fires first), each on a fresh stack.
 *
 * Printed per run: each account's share of the slots submitted while all three had work (the
 * window from the moment every batch job was in the key's queue and each account had one submitted
 * to the moment the first of them had no job left waiting), against its weight's share (goal:
 * within ±10 % of it); the fourth account's wait in slot turnovers (slots given to other jobs
 * between its entry into the key's queue — its first submit attempt — and the moment its own slot
 * was given — the `submitNow` grant, or the attempt that took a free slot itself; goal p95 ≤ 1),
 * the same from its start, the other jobs submitted before its submit (a turnover counted at the
 * provider: it adds each grant's way to its submit, a signal, a workflow task and an activity task)
 * and the waits in seconds; the provider's 429s; jobs completed and the run's length. The times
 * come from the workflows' histories. Writes `bench/results/fairness-<time>.json`. A measurement,
 * not a test: it asserts nothing.
 *
 *   npm run bench:fairness -- [--jobs 100] [--probes 20] [--run-ms 2000] [--modes on,off]
 */
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { Command } from 'commander';
import PQueue from 'p-queue';
import { z } from 'zod';
import { isFinalState } from '../src/model/states.js';
import type { PollPolicy } from '../src/model/types.js';
import { startAccountsStack } from './lib/accountsStack.js';
import { round } from './lib/proc.js';
import { machine, percentile, runAsScript, sampleLoad, table, writeResult } from './lib/report.js';

const OptionsSchema = z.object({
  keepDir: z.boolean().default(false),
  jobs: z.coerce.number().int().positive().default(100),
  probes: z.coerce.number().int().positive().default(20),
  runMs: z.coerce.number().int().min(0).default(2_000),
  modes: z
    .string()
    .default('on,off')
    .transform((s) => s.split(',').map((x) => x.trim()))
    .pipe(z.array(z.enum(['on', 'off'])).min(1)),
  timeoutS: z.coerce.number().positive().default(1_800),
});
type Options = z.infer<typeof OptionsSchema>;

const WEIGHTS = { a: 1, b: 1, c: 2 } as const;
const BATCH = Object.keys(WEIGHTS) as (keyof typeof WEIGHTS)[];
const PROBE = 'd';
const PROVIDER_CONCURRENCY = 8;
const POLICY: Partial<PollPolicy> = { initialDelayMs: 500, maxDelayMs: 2_000, jitter: 0.2, deadlineMs: 30 * 60_000 };

/** p50, p95 and the largest of a set of figures. */
interface Spread {
  p50: number;
  p95: number;
  max: number;
}

/** `p50 / p95 / max` of `s`, each followed by `unit`. */
function fmt(s: Spread, unit = ''): string {
  return `${s.p50}${unit} / ${s.p95}${unit} / ${s.max}${unit}`;
}

/** {@link Spread} of `xs`, rounded to `digits` decimals. */
function spread(xs: readonly number[], digits = 0): Spread {
  return {
    p50: round(percentile(xs, 50), digits),
    p95: round(percentile(xs, 95), digits),
    max: round(Math.max(...xs), digits),
  };
}

/** The figures of one run. */
interface RunFigures {
  fairShares: boolean;
  window: { startedAt: string; endedAt: string; seconds: number; slots: number };
  shares: Record<string, { slots: number; share: number; weightShare: number; deviation: number }>;
  probe: {
    jobs: number;
    /** Slots given to other jobs between the probe's entry into the key's queue (its first submit attempt) and its own slot. */
    turnovers: Spread & { all: number[] };
    /** The same from the probe's start (its workflow's start and first task included). */
    turnoversFromStart: Spread;
    /** Other jobs submitted to the provider between the probe's entry into the key's queue and its own submit. */
    submitsBefore: Spread;
    /** From its start to its submit, s. */
    waitS: Spread;
    /** From its entry into the key's queue to its submit, s. */
    queuedS: Spread;
    /** From its entry into the key's queue to its slot (granted, or taken), s. */
    givenS: Spread;
    /** Each probe: s from its start to its first submit attempt, its slot and its submit; its turnovers and the submits before it. */
    each: { askedS: number; givenS: number; submittedS: number; turnovers: number; submitsBefore: number }[];
  };
  provider: { submits: number; rateLimited429: number; byStatus: Record<string, number> };
  /** Slots the key's fair queue gave each account while several waited, and its pass at the end. */
  fairQueue: { account: string; granted: number; pass: number }[];
  completed: number;
  jobs: number;
  runS: number;
}

async function runMode(o: Options, fair: boolean, log: (l: string) => void): Promise<RunFigures> {
  const t0 = Date.now();
  const apiKey = 'sk-fair-0123456789abcdef';
  const stack = await startAccountsStack({
    name: `fairness-${fair ? 'on' : 'off'}`,
    simAccounts: [
      {
        name: 'shared',
        apiKeys: [apiKey],
        profile: { concurrency: PROVIDER_CONCURRENCY, retryAfterSeconds: 1, minRunMs: o.runMs },
      },
    ],
    providers: (url) => ({
      reference: {
        kind: 'reference',
        baseUrl: url,
        submitTimeoutMs: 5_000,
        readTimeoutMs: 5_000,
        credentials: { default: { apiKey } },
        limits: { maxConcurrent: 16, activeJobs: { initial: PROVIDER_CONCURRENCY }, fairShares: fair },
      },
    }),
    accounts: Object.fromEntries(Object.entries(WEIGHTS).map(([a, weight]) => [a, { weight }])),
    workers: 2,
    log,
  });
  try {
    const client = stack.runtime.client;
    const store = stack.runtime.store;
    const queue = new PQueue({ concurrency: 16 });
    let i = 0;
    // The three batches, interleaved, so that no account starts ahead of the others.
    await Promise.all(
      Array.from({ length: o.jobs }, (_, k) =>
        BATCH.map((account) =>
          queue.add(() =>
            client.startScrape({ account, url: stack.pageUrl(i++), key: `${account}-${k}`, policy: POLICY }),
          ),
        ),
      ).flat(),
    );
    log(
      `fairness ${fair ? 'on' : 'off'}: ${o.jobs * BATCH.length} jobs started in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    // The fourth account, once the queue has formed: one job at a time, the next once this one is submitted.
    await new Promise((r) => setTimeout(r, 5_000));
    const total = o.jobs * BATCH.length + o.probes;
    for (let k = 0; k < o.probes; k++) {
      const ref = await client.startScrape({
        account: PROBE,
        url: stack.pageUrl(i++),
        key: `${PROBE}-${k}`,
        policy: POLICY,
      });
      const until = Date.now() + 600_000;
      for (;;) {
        const row = await store.jobs.get(ref.jobId);
        if (row?.submitted_at || (row && isFinalState(row.state)) || Date.now() > until) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      log(`fairness ${fair ? 'on' : 'off'}: probe ${k + 1}/${o.probes} submitted`);
      // The next probe is a single job of an account that has been idle: it starts once the other
      // accounts' jobs have taken two rounds of the key's slots since this one (or nothing waits).
      const since = (await store.jobs.get(ref.jobId))?.submitted_at ?? new Date().toISOString();
      for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
        const batch = (await store.jobs.list({ limit: total + 10 })).filter((r) => r.account !== PROBE);
        if (batch.filter((r) => (r.submitted_at ?? '') > since).length >= 2 * PROVIDER_CONCURRENCY) break;
        if (!batch.some((r) => r.state === 'submitting')) break;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    for (let last = 0; ;) {
      const rows = await store.jobs.list({ limit: total + 10 });
      const open = rows.filter((r) => !isFinalState(r.state)).length;
      if (open === 0 || Date.now() - t0 > o.timeoutS * 1000) break;
      if (Date.now() - last > 15_000) {
        last = Date.now();
        log(`fairness ${fair ? 'on' : 'off'}: ${total - open}/${total} final`);
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const rows = await store.jobs.list({ limit: total + 10 });
    // When each job entered the key's queue: its first submit attempt started (the activity
    // records the job's provider key, so the key's fair queue sees it from then on).
    const temporal = new Client({ connection: stack.runtime.connection, namespace: stack.config.temporal.namespace });
    const times = new Map<string, SlotTimes>();
    const reads = new PQueue({ concurrency: 8 });
    await Promise.all(
      rows
        .filter((r) => r.submitted_at)
        .map((r) =>
          reads.add(async () => {
            const t = await slotTimes(temporal, r.workflow_id).catch(() => undefined);
            const at = Date.parse(r.submitted_at!);
            times.set(r.id, t ?? { asked: Date.parse(r.created_at), given: at });
          }),
        ),
    );
    const submitted = rows
      .filter((r) => r.submitted_at)
      .map((r) => ({ account: r.account, at: Date.parse(r.submitted_at!), ...times.get(r.id)! }));
    const ofAccount = (a: string) => submitted.filter((s) => s.account === a);
    // While all have work: from the moment every batch job had entered the key's queue (and each
    // batch account had a job submitted) to the moment the first account had no job left waiting.
    const start = Math.max(
      ...BATCH.map((a) => Math.max(...ofAccount(a).map((s) => s.asked))),
      ...BATCH.map((a) => Math.min(...ofAccount(a).map((s) => s.at))),
    );
    const end = Math.min(...BATCH.map((a) => Math.max(...ofAccount(a).map((s) => s.at))));
    const inWindow = submitted.filter((s) => (BATCH as string[]).includes(s.account) && s.at >= start && s.at <= end);
    const weightSum = BATCH.reduce((s, a) => s + WEIGHTS[a], 0);
    const shares = Object.fromEntries(
      BATCH.map((a) => {
        const slots = inWindow.filter((s) => s.account === a).length;
        const share = slots / Math.max(1, inWindow.length);
        const weightShare = WEIGHTS[a] / weightSum;
        return [
          a,
          {
            slots,
            share: round(share, 3),
            weightShare: round(weightShare, 3),
            deviation: round(share / weightShare - 1, 3),
          },
        ];
      }),
    );
    const probes = rows
      .filter((r) => r.account === PROBE && r.submitted_at)
      .map((r) => ({
        created: Date.parse(r.created_at),
        queued: times.get(r.id)!.asked,
        given: times.get(r.id)!.given,
        at: Date.parse(r.submitted_at!),
      }))
      .sort((x, y) => x.created - y.created);
    const others = submitted.filter((s) => s.account !== PROBE);
    // Slots given to other jobs while the probe waited in the key's queue (its wait in turnovers),
    // and other jobs submitted meanwhile (which adds the grants' way to their submits: a signal,
    // a workflow task and an activity task each).
    const turnovers = probes.map((p) => others.filter((s) => s.given > p.queued && s.given < p.given).length);
    const submitsBefore = probes.map((p) => others.filter((s) => s.at > p.queued && s.at < p.at).length);
    const fromStart = probes.map((p) => others.filter((s) => s.given > p.created && s.given < p.given).length);
    const granted = await store.db.selectFrom('fair_shares').select(['account', 'granted', 'pass']).execute();
    const waits = probes.map((p) => (p.at - p.created) / 1000);
    const queuedWaits = probes.map((p) => (p.at - p.queued) / 1000);
    const givenWaits = probes.map((p) => (p.given - p.queued) / 1000);
    const stats = stack.sim.stats();
    return {
      fairShares: fair,
      window: {
        startedAt: new Date(start).toISOString(),
        endedAt: new Date(end).toISOString(),
        seconds: round((end - start) / 1000, 1),
        slots: inWindow.length,
      },
      shares,
      probe: {
        jobs: probes.length,
        turnovers: { ...spread(turnovers), all: turnovers },
        turnoversFromStart: spread(fromStart),
        submitsBefore: spread(submitsBefore),
        waitS: spread(waits, 2),
        queuedS: spread(queuedWaits, 2),
        givenS: spread(givenWaits, 2),
        each: probes.map((p, k) => ({
          askedS: round((p.queued - p.created) / 1000, 2),
          givenS: round((p.given - p.created) / 1000, 2),
          submittedS: round((p.at - p.created) / 1000, 2),
          turnovers: turnovers[k]!,
          submitsBefore: submitsBefore[k]!,
        })),
      },
      provider: {
        submits: stats.jobsCreated.byAccount.shared ?? 0,
        rateLimited429: stats.requests.byStatus['429'] ?? 0,
        byStatus: stats.requests.byStatus,
      },
      fairQueue: granted.map((g) => ({
        account: g.account,
        granted: Number(g.granted),
        pass: round(Number(g.pass), 3),
      })),
      completed: rows.filter((r) => r.state === 'completed').length,
      jobs: total,
      runS: round((Date.now() - t0) / 1000, 1),
    };
  } finally {
    await stack.stop(o.keepDir);
  }
}

/** Runs the benchmark; returns what it wrote. */
export async function runFairness(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const load = sampleLoad();
  const before = machine();
  const runs: RunFigures[] = [];
  for (const m of o.modes) runs.push(await runMode(o, m === 'on', log));
  const cell = (r: RunFigures, a: string) => {
    const s = r.shares[a]!;
    return `${(s.share * 100).toFixed(1)} % (${s.slots}; weight ${(s.weightShare * 100).toFixed(0)} %, ${s.deviation >= 0 ? '+' : ''}${(s.deviation * 100).toFixed(1)} %)`;
  };
  const head = ['', ...runs.map((r) => `fair shares ${r.fairShares ? 'on' : 'off'}`)];
  const rows: (string | number)[][] = [
    ...BATCH.map((a) => [`account ${a} (weight ${WEIGHTS[a]}): share of slots`, ...runs.map((r) => cell(r, a))]),
    ['window: all three with work', ...runs.map((r) => `${r.window.seconds} s, ${r.window.slots} slots`)],
    [
      `account ${PROBE}: wait in slot turnovers p50 / p95 / max (goal p95 ≤ 1)`,
      ...runs.map((r) => `${fmt(r.probe.turnovers)} (${r.probe.jobs} jobs)`),
    ],
    [`account ${PROBE}: the same from its start`, ...runs.map((r) => fmt(r.probe.turnoversFromStart))],
    [`account ${PROBE}: other jobs submitted before its submit`, ...runs.map((r) => fmt(r.probe.submitsBefore))],
    [`account ${PROBE}: from the key's queue to its slot`, ...runs.map((r) => fmt(r.probe.givenS, ' s'))],
    [`account ${PROBE}: from the key's queue to its submit`, ...runs.map((r) => fmt(r.probe.queuedS, ' s'))],
    [`account ${PROBE}: from its start to its submit`, ...runs.map((r) => fmt(r.probe.waitS, ' s'))],
    ['provider 429s (of submits created)', ...runs.map((r) => `${r.provider.rateLimited429} (${r.provider.submits})`)],
    [
      'slots the fair queue gave while several waited',
      ...runs.map((r) => r.fairQueue.map((g) => `${g.account} ${g.granted}`).join(', ') || '—'),
    ],
    ['jobs completed', ...runs.map((r) => `${r.completed}/${r.jobs}`)],
    ['run time', ...runs.map((r) => `${r.runS} s`)],
  ];
  console.log(table(head, rows));
  const l = load.stop();
  const out = { options: o, machine: { before, load: l }, runs };
  console.log(
    `machine: ${before.cores} cores, ${before.memTotalGiB} GiB, Node ${process.versions.node}; load (1 min) at start ${before.loadavg[0]}, during the runs max ${l.max1m}, mean ${l.mean1m}`,
  );
  console.log(`written ${writeResult('fairness', out)}`);
  return out;
}

runAsScript(
  'fairness.ts',
  new Command('fairness')
    .option('--jobs <n>', 'jobs per batch account', '100')
    .option('--probes <n>', 'single jobs of the fourth account, one at a time', '20')
    .option('--run-ms <ms>', 'how long each job runs at the provider', '2000')
    .option('--modes <list>', 'runs: on (fair shares), off (first come, first served)', 'on,off')
    .option('--timeout-s <s>', 'give up waiting for a run after this long', '1800')
    .option('--keep-dir', "keep each run's store and configuration for inspection"),
  (opts) => runFairness(OptionsSchema.parse(opts)),
);

/** When a job asked the key's fair queue for a slot and when it was given one (epoch ms). */
interface SlotTimes {
  /** Its first `submitJob` attempt started (the activity records the job's provider key: the fair queue sees it from then on). */
  asked: number;
  /**
   * Its slot was given: the first `submitNow` signal (a grant) after the attempt before the one
   * that submitted started, else the submitting attempt's start (it took a free slot itself).
   */
  given: number;
}

/**
 * {@link SlotTimes} of workflow `workflowId`, from its history (`ActivityTaskStarted` of its
 * `submitJob` attempts, `WorkflowExecutionSignaled` `submitNow`); undefined when it has no
 * started `submitJob`.
 */
async function slotTimes(client: Client, workflowId: string): Promise<SlotTimes | undefined> {
  const ET = proto.temporal.api.enums.v1.EventType;
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const submits = new Set<string>();
  const starts: number[] = [];
  const grants: number[] = [];
  for (const e of history.events ?? []) {
    const at = e.eventTime ? Number(e.eventTime.seconds ?? 0) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : 0;
    if (
      e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitJob'
    )
      submits.add(String(e.eventId));
    else if (
      e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
      submits.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId))
    )
      starts.push(at);
    else if (
      e.eventType === ET.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
      e.workflowExecutionSignaledEventAttributes?.signalName === 'submitNow'
    )
      grants.push(at);
  }
  const asked = starts[0];
  const last = starts.at(-1);
  if (asked === undefined || last === undefined) return undefined;
  const before = starts.length > 1 ? starts.at(-2)! : Number.NEGATIVE_INFINITY;
  return { asked, given: grants.find((g) => g > before && g <= last) ?? last };
}
