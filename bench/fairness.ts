/**
 * Benchmark: fair shares of one provider key's slots (docs/design.md, "Fair shares"). Three
 * accounts with weights 1 : 1 : 2 each start a large batch on one key of the reference provider,
 * which runs 8 jobs at once per credential and answers `429 CONCURRENCY_LIMIT` past it; while they
 * all have work, a fourth account submits single jobs, one at a time, each after the other accounts'
 * jobs took two rounds of the key's slots (so each is the single job of an idle account). Two
 * worker processes. The same run
 * is made with the key's fair queue on (`limits.fairShares: true`, the default) and off (first come,
 * first served: whichever waiting job's timer fires first), each on a fresh stack.
 *
 * Printed per run: each account's share of the slots granted while all three had work (the window
 * from the moment all three had a job submitted to the moment the first of them had no job left
 * waiting), against its weight's share (goal: within ±10 % of it); the fourth account's wait,
 * in slot turnovers (other jobs submitted between its job's start and its own submit; goal p95 ≤ 1)
 * and in seconds; the provider's 429s; jobs completed and the run's length. Writes
 * `bench/results/fairness-<time>.json`. A measurement, not a test: it asserts nothing.
 *
 *   npm run bench:fairness -- [--jobs 100] [--probes 20] [--run-ms 2000] [--modes on,off]
 */
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

/** The figures of one run. */
interface RunFigures {
  fairShares: boolean;
  window: { startedAt: string; endedAt: string; seconds: number; slots: number };
  shares: Record<string, { slots: number; share: number; weightShare: number; deviation: number }>;
  probe: {
    jobs: number;
    /** Other jobs submitted between the probe's entry into the key's queue (its first submit attempt) and its own submit. */
    turnovers: { p50: number; p95: number; max: number; all: number[] };
    /** The same from the probe's start (its workflow's start and first task included). */
    turnoversFromStart: { p50: number; p95: number; max: number };
    waitS: { p50: number; p95: number; max: number };
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
    const submitted = rows
      .filter((r) => r.submitted_at)
      .map((r) => ({ account: r.account, at: Date.parse(r.submitted_at!), created: Date.parse(r.created_at) }));
    const ofAccount = (a: string) => submitted.filter((s) => s.account === a).map((s) => s.at);
    // While all have work: from the moment every batch job had entered the key's queue (its first
    // submit attempt registered it) to the moment the first account had no job left waiting.
    const registered = await store.db
      .selectFrom('job_events')
      .select((eb) => eb.fn.max('at').as('at'))
      .where('type', '=', 'registered')
      .where((eb) => eb.or(BATCH.map((a) => eb('job_id', 'like', `scrape:${a}:%`))))
      .executeTakeFirst();
    const start = Math.max(
      Date.parse(String(registered?.at ?? '')) || 0,
      ...BATCH.map((a) => Math.min(...ofAccount(a))),
    );
    const end = Math.min(...BATCH.map((a) => Math.max(...ofAccount(a))));
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
    const probeRows = rows.filter((r) => r.account === PROBE && r.submitted_at);
    // When each probe entered the key's queue: its submit activity's first attempt registered it.
    const queued = new Map<string, number>();
    for (const r of probeRows) {
      const registered = (await store.findings.timeline(r.id)).find((e) => e.type === 'registered');
      queued.set(r.id, registered ? Date.parse(registered.at) : Date.parse(r.created_at));
    }
    const probes = probeRows.map((r) => ({
      created: Date.parse(r.created_at),
      queued: queued.get(r.id)!,
      at: Date.parse(r.submitted_at!),
    }));
    const others = submitted.filter((s) => s.account !== PROBE);
    const turnovers = probes.map((p) => others.filter((s) => s.at > p.queued && s.at < p.at).length);
    const fromStart = probes.map((p) => others.filter((s) => s.at > p.created && s.at < p.at).length);
    const granted = await store.db.selectFrom('fair_shares').select(['account', 'granted', 'pass']).execute();
    const waits = probes.map((p) => (p.at - p.created) / 1000);
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
        turnovers: {
          p50: percentile(turnovers, 50),
          p95: percentile(turnovers, 95),
          max: Math.max(...turnovers),
          all: turnovers,
        },
        turnoversFromStart: {
          p50: percentile(fromStart, 50),
          p95: percentile(fromStart, 95),
          max: Math.max(...fromStart),
        },
        waitS: {
          p50: round(percentile(waits, 50), 2),
          p95: round(percentile(waits, 95), 2),
          max: round(Math.max(...waits), 2),
        },
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
      `account ${PROBE}: wait in slot turnovers p50 / p95 / max`,
      ...runs.map(
        (r) => `${r.probe.turnovers.p50} / ${r.probe.turnovers.p95} / ${r.probe.turnovers.max} (${r.probe.jobs} jobs)`,
      ),
    ],
    [
      `account ${PROBE}: wait p50 / p95 / max`,
      ...runs.map((r) => `${r.probe.waitS.p50} / ${r.probe.waitS.p95} / ${r.probe.waitS.max} s`),
    ],
    ['provider 429s (of submits created)', ...runs.map((r) => `${r.provider.rateLimited429} (${r.provider.submits})`)],
    [
      `account ${PROBE}: the same from its start`,
      ...runs.map(
        (r) =>
          `${r.probe.turnoversFromStart.p50} / ${r.probe.turnoversFromStart.p95} / ${r.probe.turnoversFromStart.max}`,
      ),
    ],
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
  console.log(`load (1 min): max ${l.max1m}, mean ${l.mean1m}`);
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
