/**
 * The budget chaos run (issue 38, docs/budgets.md): 500 jobs started at once for one account whose
 * budget admits 50 jobs at their estimate, submitted by two worker processes, under the faults of
 * `bench:chaos` (`bench/lib/chaosFaults.ts`): the provider loses the answers of submits it
 * committed, answers 5xx, slowly or not at all, sends bursts of 429s, fails and never finishes some
 * jobs; workers are SIGKILLed at random and restarted; another process holds the store's write lock
 * for seconds at a time. The reference provider charges 1 credit per job that starts (its
 * `credits_used`); the entry estimates each job at `--estimate` credits (default 2: the budget of
 * 50 × 2 credits frees as jobs settle at what the provider charged, so later submits are admitted
 * while earlier jobs settle). The account's policy is `--policy` (`refuse`: refused at the door
 * once the budget is spent, else failed `BUDGET_EXCEEDED` by the worker before anything is sent;
 * `hold`: held until the job's submit time runs out, the budget being a `total` one that never
 * renews). Real parts throughout (`bench/lib/accountsStack.ts`).
 *
 * Printed (and written to `bench/results/budget-chaos-<time>.json`): the budget's reserved and
 * reserved + spent sampled every `--sample-ms` throughout, their peaks and the store's own peak
 * against the amount (never above it); the overspend (spent past the amount, and what the provider
 * charged the account past it: 0); every settled cost against the provider's record of its task
 * (`credits_used`), and provider jobs no job accounts for; leaked reservations
 * (`store.budgets.leaks()`: jobs that ended holding one, periods whose sums disagree with their
 * jobs; 0); jobs by final state, with the refusals at the door; the faults inflicted; the run time
 * and the machine's load. A job whose tracking deadline passed before any status read reported
 * its cost ends `tracking_interrupted` settled at its estimate; after the run an operator resumes
 * those (`client.resume`, as `scrape resume` does) and the same figures are taken again once
 * they end. A measurement, not a test: it asserts nothing.
 *
 *   npm run bench:budget-chaos -- [--submits 500] [--budget-jobs 50] [--estimate 2] [--policy refuse|hold]
 */
import path from 'node:path';
import { Command } from 'commander';
import PQueue from 'p-queue';
import { z } from 'zod';
import { BudgetExceededError } from '../src/client/index.js';
import { isFinalState } from '../src/model/states.js';
import type { Store } from '../src/store/index.js';
import type { Sim } from '../tools/sim/index.js';
import type { PollPolicy } from '../src/model/types.js';
import { startAccountsStack } from './lib/accountsStack.js';
import { addProviderFaults, killWorkers, lockStore, rateLimitBursts, seededRandom } from './lib/chaosFaults.js';
import { round } from './lib/proc.js';
import { machine, runAsScript, sampleLoad, table, writeResult } from './lib/report.js';

const OptionsSchema = z.object({
  submits: z.coerce.number().int().positive().default(500),
  budgetJobs: z.coerce.number().int().positive().default(50),
  estimate: z.coerce.number().positive().default(2),
  policy: z.enum(['refuse', 'hold']).default('refuse'),
  workers: z.coerce.number().int().positive().default(2),
  concurrency: z.coerce.number().int().positive().default(50),
  providerConcurrency: z.coerce.number().int().positive().default(100),
  killEveryMs: z.coerce.number().int().positive().default(5_000),
  storeOutageEveryMs: z.coerce.number().int().positive().default(20_000),
  storeOutageMs: z.coerce.number().int().positive().default(4_000),
  deadlineMs: z.coerce.number().int().positive().default(60_000),
  chaosMs: z.coerce.number().int().min(0).default(120_000),
  convergeMs: z.coerce.number().int().positive().default(300_000),
  sampleMs: z.coerce.number().int().positive().default(100),
  seed: z.coerce.number().int().default(42),
  keepDir: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

const ACCOUNT = 'tenant';
const SIM_ACCOUNT = 'budget';
const POLICY: Partial<PollPolicy> = {
  initialDelayMs: 1_000,
  maxDelayMs: 4_000,
  multiplier: 1.5,
  jitter: 0.2,
  activityTimeoutMs: 6_000,
  cancelConfirmDeadlineMs: 10_000,
};

/** The budget's standing as sampled while the run went on, in credits. */
interface Sampled {
  samples: number;
  /** Samples the store could not answer (its write lock held by another process). */
  unanswered: number;
  peakReserved: number;
  peakHeld: number;
  /** Samples with `reserved + spent` above the amount. */
  above: number;
  /** `[ms since start, reserved, spent]`, one per sample. */
  series: [number, number, number][];
}

/** Samples the budget's standing every `everyMs` until `stop()`, which returns what it saw. */
function sampleBudget(
  read: () => Promise<{ reserved: number; spent: number } | undefined>,
  amount: number,
  everyMs: number,
) {
  const out: Sampled = { samples: 0, unanswered: 0, peakReserved: 0, peakHeld: 0, above: 0, series: [] };
  const t0 = Date.now();
  let running = true;
  const loop = (async () => {
    while (running) {
      const s = await read().catch(() => undefined);
      if (!s) out.unanswered++;
      else {
        out.samples++;
        out.peakReserved = Math.max(out.peakReserved, s.reserved);
        out.peakHeld = Math.max(out.peakHeld, s.reserved + s.spent);
        if (s.reserved + s.spent > amount + 1e-9) out.above++;
        out.series.push([Date.now() - t0, round(s.reserved, 6), round(s.spent, 6)]);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop(): Promise<Sampled> {
      running = false;
      await loop;
      return out;
    },
  };
}

/** What the ledger and the provider say at one moment: the budget's standing, the jobs by state, each settlement against the provider's record, leaks. */
async function ledgerFigures(store: Store, sim: Sim, budgetId: string) {
  const standing = (await store.budgets.list({ id: budgetId }))[0]!;
  const rows = await store.db.selectFrom('jobs').selectAll().where('account', '=', ACCOUNT).execute();
  const stats = sim.stats();
  const providerJobs = stats.jobs.filter((j) => j.account === SIM_ACCOUNT);
  const byTask = new Map(providerJobs.map((j) => [j.job_id, j]));
  const states: Record<string, number> = {};
  const failedBy: Record<string, number> = {};
  const open: string[] = [];
  const settlement = {
    /** Jobs with a task whose settled cost equals the provider's `credits_used`. */
    matched: 0,
    mismatched: [] as {
      jobId: string;
      state: string;
      settled: number | null;
      provider: number;
      source: string | null;
    }[],
    /** Jobs without a task: settled at 0 (or never settled), holding nothing. */
    withoutTask: 0,
    withoutTaskCharged: [] as { jobId: string; settled: number | null; reserved: number }[],
    /** How each job's settled figure was found. */
    bySource: {} as Record<string, number>,
  };
  const bound = new Set<string>();
  for (const r of rows) {
    states[r.state] = (states[r.state] ?? 0) + 1;
    if (!isFinalState(r.state)) open.push(`${r.id}: ${r.state}`);
    if (r.state === 'failed') {
      const code = r.last_error ? ((JSON.parse(r.last_error) as { code?: string }).code ?? '?') : '?';
      failedBy[code] = (failedBy[code] ?? 0) + 1;
    }
    const source = r.cost_source ?? (r.cost_ledgers ? 'released (nothing created)' : 'never reserved');
    settlement.bySource[source] = (settlement.bySource[source] ?? 0) + 1;
    const settled = r.cost_settled === null ? null : Number(r.cost_settled);
    if (r.task_id) {
      bound.add(r.task_id);
      const p = byTask.get(r.task_id);
      const charged = p?.credits_used ?? Number.NaN;
      if (settled !== null && Math.abs(settled - charged) < 1e-9) settlement.matched++;
      else
        settlement.mismatched.push({
          jobId: r.id,
          state: r.state,
          settled,
          provider: charged,
          source: r.cost_source,
        });
    } else {
      settlement.withoutTask++;
      if ((settled ?? 0) !== 0 || Number(r.cost_reserved ?? 0) !== 0)
        settlement.withoutTaskCharged.push({ jobId: r.id, settled, reserved: Number(r.cost_reserved ?? 0) });
    }
  }
  const unbound = providerJobs.filter((j) => !bound.has(j.job_id));
  const charged = providerJobs.reduce((s, j) => s + j.credits_used, 0);
  const leaks = await store.budgets.leaks();
  return {
    standing,
    rows,
    states,
    failedBy,
    open,
    settlement,
    providerJobs: providerJobs.length,
    unbound,
    charged,
    leaks,
  };
}

/** Runs the scenario; returns what it wrote. */
export async function runBudgetChaos(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const started = Date.now();
  const load = sampleLoad();
  const before = machine();
  const random = seededRandom(o.seed);
  const amount = o.budgetJobs * o.estimate;
  const apiKey = 'sk-budget-chaos-0123456789abcdef';
  const stack = await startAccountsStack({
    name: 'budget-chaos',
    simAccounts: [
      {
        name: SIM_ACCOUNT,
        apiKeys: [apiKey],
        profile: { concurrency: o.providerConcurrency, retryAfterSeconds: 2, minRunMs: 300 },
      },
    ],
    providers: (url) => ({
      reference: {
        kind: 'reference',
        baseUrl: url,
        submitTimeoutMs: 3_000,
        readTimeoutMs: 3_000,
        credentials: { default: { apiKey } },
        // The key's slots are not what admits a job here: its budget is (the key starts at the
        // provider's concurrency, above the jobs the budget admits at once).
        limits: {
          maxConcurrent: 20,
          minIntervalMs: 0,
          activeJobs: { initial: o.providerConcurrency, max: o.providerConcurrency },
        },
        cost: { estimate: o.estimate },
      },
    }),
    accounts: {
      [ACCOUNT]: {
        budgets: [{ provider: 'reference', period: 'total', amount }],
        onBudgetExceeded: o.policy,
      },
    },
    workers: o.workers,
    random,
    log,
  });
  const store = stack.runtime.store;
  const faults: { stop(): void }[] = [];
  try {
    // The workers seed the configuration's budget at their start: nothing is submitted before it is there.
    for (const until = Date.now() + 120_000; ;) {
      const b = await store.budgets.list({ account: ACCOUNT }).catch(() => []);
      if (b.length > 0) break;
      if (Date.now() > until) throw new Error('the workers did not seed the budget within 120 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const budget = (await store.budgets.list({ account: ACCOUNT }))[0]!;
    const sampler = sampleBudget(async () => (await store.budgets.list({ id: budget.id }))[0], amount, o.sampleMs);
    addProviderFaults(stack.sim, [SIM_ACCOUNT]);
    faults.push({ stop: rateLimitBursts(stack.sim) });
    const killer = killWorkers({
      workers: o.workers,
      everyMs: o.killEveryMs,
      random,
      kill: stack.kill,
      respawn: stack.respawn,
    });
    const outages = lockStore(path.join(stack.dir, 'store.db'), o.storeOutageEveryMs, o.storeOutageMs);
    faults.push(killer, outages);
    log(
      `budget-chaos: ${o.submits} submits against ${amount} credits (${o.budgetJobs} jobs at ${o.estimate}), policy ${o.policy}; ${o.workers} workers killed every ~${o.killEveryMs / 1000} s, store locked ${o.storeOutageMs / 1000} s every ${o.storeOutageEveryMs / 1000} s`,
    );

    // The submits, at once: a start the store could not take (its lock held) is retried under the
    // same key (idempotent); a refusal at the door is the answer.
    const client = stack.runtime.client;
    const queue = new PQueue({ concurrency: o.concurrency });
    const refusedAtDoor: string[] = [];
    const startErrors: string[] = [];
    const jobIds: string[] = [];
    const runId = `${process.pid}-${started.toString(36)}`;
    await Promise.all(
      Array.from({ length: o.submits }, (_, i) =>
        queue.add(async () => {
          const key = `bc-${runId}-${i}`;
          for (let attempt = 1; ; attempt++) {
            try {
              const ref = await client.startScrape({
                account: ACCOUNT,
                url: stack.pageUrl(i),
                key,
                policy: { ...POLICY, deadlineMs: o.deadlineMs },
              });
              jobIds.push(ref.jobId);
              return;
            } catch (e) {
              if (e instanceof BudgetExceededError) {
                refusedAtDoor.push(key);
                return;
              }
              if (attempt >= 10) {
                startErrors.push(`${key}: ${e instanceof Error ? e.message : String(e)}`);
                return;
              }
              await new Promise((r) => setTimeout(r, 1_000));
            }
          }
        }),
      ),
    );
    log(
      `budget-chaos: ${jobIds.length} jobs started, ${refusedAtDoor.length} refused at the door, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    const openCount = async () => {
      const rows = await store.db.selectFrom('jobs').select(['state']).where('account', '=', ACCOUNT).execute();
      return rows.filter((r) => !isFinalState(r.state)).length;
    };
    const chaosUntil = Date.now() + o.chaosMs;
    while (Date.now() < chaosUntil) {
      const open = await openCount().catch(() => -1);
      if (open === 0) break;
      log(`budget-chaos: ${open} jobs open, kills ${killer.count}, outages ${outages.count}`);
      await new Promise((r) => setTimeout(r, 5_000));
    }
    const chaosPhaseMs = Date.now() - started;
    const chaosEnded = new Date().toISOString();
    for (const f of faults) f.stop();
    stack.sim.faults.clear();
    // Every worker is alive for the convergence (one killed just now included).
    for (let i = 0; i < o.workers; i++) stack.respawn(i);
    log(`budget-chaos: chaos stopped after ${(chaosPhaseMs / 1000).toFixed(1)} s; waiting for every job to end`);
    const convergeStart = Date.now();
    for (let last = 0; ;) {
      const open = await openCount();
      if (open === 0 || Date.now() - convergeStart > o.convergeMs) break;
      if (Date.now() - last > 10_000) {
        last = Date.now();
        log(`budget-chaos: converging, ${open} jobs open`);
      }
      await new Promise((r) => setTimeout(r, 2_000));
    }
    const convergeMs = Date.now() - convergeStart;
    const atEnd = await ledgerFigures(store, stack.sim, budget.id);
    // An operator resumes the jobs whose tracking was interrupted (`scrape resume`): their tracking
    // reads the provider's record, and each settles again at it.
    const interruptedRows = atEnd.rows.filter((r) => r.state === 'tracking_interrupted');
    const interrupted = interruptedRows.map((r) => r.id);
    const endedBefore = new Map(interruptedRows.map((r) => [r.id, r.finished_at ?? '']));
    const resumeStart = Date.now();
    for (const id of interrupted)
      await client.resume(ACCOUNT, id, { policy: { ...POLICY, deadlineMs: o.deadlineMs } }).catch((e: unknown) => {
        log(`budget-chaos: resume of ${id} failed: ${e instanceof Error ? e.message : String(e)}`);
        endedBefore.delete(id);
      });
    if (interrupted.length > 0) log(`budget-chaos: resumed ${endedBefore.size} tracking_interrupted jobs`);
    // A resumed job has ended again once its row is final with a later end than before the resume.
    while (endedBefore.size > 0) {
      const rows = await store.db
        .selectFrom('jobs')
        .select(['id', 'state', 'finished_at'])
        .where('id', 'in', [...endedBefore.keys()])
        .execute();
      const ended = rows.filter((r) => isFinalState(r.state) && (r.finished_at ?? '') > endedBefore.get(r.id)!);
      if (ended.length === endedBefore.size || Date.now() - resumeStart > o.convergeMs) break;
      await new Promise((r) => setTimeout(r, 2_000));
    }
    const resumeMs = Date.now() - resumeStart;
    const sampled = await sampler.stop();
    const afterResume = interrupted.length > 0 ? await ledgerFigures(store, stack.sim, budget.id) : atEnd;
    const { standing, states, failedBy, open, settlement, providerJobs, unbound, charged, leaks } = atEnd;
    const stats = stack.sim.stats();
    // How much of the work the faults saw: provider jobs created, and jobs that settled, before they stopped.
    const during = {
      providerJobs: stats.jobs.filter((j) => j.account === SIM_ACCOUNT && j.created_at < chaosEnded).length,
      settled: atEnd.rows.filter((r) => r.cost_settled !== null && (r.finished_at ?? '') < chaosEnded).length,
      budgetFullAfterS: (() => {
        const full = sampled.series.find(([, reserved, spent]) => reserved + spent >= amount - 1e-9);
        return full ? round(full[0] / 1000, 1) : null;
      })(),
    };
    const l = load.stop();
    const out = {
      options: o,
      budget: {
        id: budget.id,
        amount,
        unit: standing.unit,
        final: { reserved: standing.reserved, spent: standing.spent, remaining: standing.remaining },
        storePeak: afterResume.standing.peak,
        sampled: { ...sampled, series: undefined },
      },
      overspend: {
        spent: round(Math.max(0, standing.spent - amount), 6),
        providerCharged: charged,
        provider: round(Math.max(0, charged - amount), 6),
      },
      settlement,
      providerJobs: {
        total: providerJobs,
        unbound: unbound.map((j) => ({ taskId: j.job_id, credits: j.credits_used })),
      },
      leaks,
      jobs: {
        submits: o.submits,
        started: jobIds.length,
        refusedAtDoor: refusedAtDoor.length,
        startErrors,
        reserved: atEnd.rows.filter((r) => r.cost_ledgers !== null).length,
        states,
        failedBy,
        open,
      },
      afterResume: {
        resumed: interrupted.length,
        states: afterResume.states,
        settlement: afterResume.settlement,
        spent: afterResume.standing.spent,
        reserved: afterResume.standing.reserved,
        overspend: round(Math.max(0, afterResume.standing.spent - amount), 6),
        providerCharged: afterResume.charged,
        unbound: afterResume.unbound.length,
        leaks: afterResume.leaks,
        ms: resumeMs,
      },
      faults: {
        workerKills: killer.count,
        storeOutages: outages.count,
        provider: {
          requests: stats.requests.total,
          byStatus: stats.requests.byStatus,
        },
      },
      chaosPhaseMs,
      during,
      convergeMs,
      runMs: Date.now() - started,
      machine: { before, load: l },
      series: sampled.series,
    };
    const fmt = (n: number) => String(round(n, 6));
    const lines: [string, string][] = [
      ['submits (concurrent)', `${o.submits} (${o.concurrency} at a time), ${o.workers} worker processes`],
      [
        'budget',
        `${fmt(amount)} ${standing.unit} in total (${o.budgetJobs} jobs at the estimate ${fmt(o.estimate)}; the provider charges 1 per job that starts), policy ${o.policy}`,
      ],
      [
        'peak reserved / reserved + spent (sampled)',
        `${fmt(sampled.peakReserved)} / ${fmt(sampled.peakHeld)} of ${fmt(amount)} — ${sampled.above} of ${sampled.samples} samples above the amount (every ${o.sampleMs} ms; ${sampled.unanswered} unanswered during store outages)`,
      ],
      [
        'peak reserved + spent (the store’s own, at every reservation)',
        `${fmt(afterResume.standing.peak)} of ${fmt(amount)}`,
      ],
      [
        'overspend',
        `${fmt(out.overspend.spent)} (spent ${fmt(standing.spent)} of ${fmt(amount)}); at the provider ${fmt(out.overspend.provider)} (charged ${fmt(charged)})`,
      ],
      [
        'settled cost vs the provider’s record',
        `${settlement.matched} of ${settlement.matched + settlement.mismatched.length} jobs with a task match its credits_used; ${settlement.mismatched.length} differ; ${settlement.withoutTask} jobs without a task, ${settlement.withoutTaskCharged.length} of them charged or holding`,
      ],
      ...settlement.mismatched
        .slice(0, 10)
        .map((m): [string, string] => [
          `  differs`,
          `${m.jobId} (${m.state}): settled ${m.settled ?? '—'} (${m.source ?? '—'}), provider ${m.provider}`,
        ]),
      ...(interrupted.length > 0
        ? [
            [
              `after resuming the ${interrupted.length} tracking_interrupted`,
              `${afterResume.settlement.matched} of ${afterResume.settlement.matched + afterResume.settlement.mismatched.length} match; spent ${fmt(afterResume.standing.spent)}, reserved ${fmt(afterResume.standing.reserved)} (provider charged ${fmt(afterResume.charged)}); leaked reservations ${afterResume.leaks.length}; states ${Object.entries(
                afterResume.states,
              )
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')} (${(resumeMs / 1000).toFixed(1)} s)`,
            ] as [string, string],
          ]
        : []),
      ['provider jobs no job accounts for', `${unbound.length} of ${providerJobs}`],
      [
        'leaked reservations',
        `${leaks.length}${leaks.length > 0 ? ` (${leaks.map((x) => `${x.kind} ${x.id}: ${x.held} vs ${x.expected}`).join('; ')})` : ''}`,
      ],
      [
        'jobs',
        `${jobIds.length} started, ${refusedAtDoor.length} refused at the door (402), ${out.jobs.reserved} reserved in the budget${startErrors.length ? `, ${startErrors.length} starts failed` : ''}`,
      ],
      [
        'final states',
        Object.entries(states)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') + (open.length ? ` (${open.length} not final)` : ''),
      ],
      [
        '  failed by code',
        Object.entries(failedBy)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || '—',
      ],
      [
        'settled from',
        Object.entries(settlement.bySource)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
      ],
      [
        'faults',
        `${killer.count} worker SIGKILLs, ${outages.count} store outages; provider requests ${stats.requests.total} (429 ${stats.requests.byStatus['429'] ?? 0}, 5xx ${(stats.requests.byStatus['502'] ?? 0) + (stats.requests.byStatus['503'] ?? 0)}, dropped ${stats.requests.byStatus.dropped ?? 0})`,
      ],
      [
        'under the faults',
        `${during.providerJobs} of ${providerJobs} provider jobs created and ${during.settled} of ${out.jobs.reserved} reserving jobs settled before the faults stopped; the budget first full ${during.budgetFullAfterS ?? '—'} s after sampling began`,
      ],
      [
        'chaos / convergence / run',
        `${(chaosPhaseMs / 1000).toFixed(1)} s / ${(convergeMs / 1000).toFixed(1)} s / ${(out.runMs / 1000).toFixed(1)} s`,
      ],
    ];
    console.log(table(['figure', 'value'], lines));
    console.log(
      `machine: ${before.cores} cores, ${before.memTotalGiB} GiB, Node ${process.versions.node}; load (1 min) at start ${before.loadavg[0]}, during the run max ${l.max1m}, mean ${l.mean1m}`,
    );
    console.log(`written ${writeResult('budget-chaos', out)}`);
    return out;
  } finally {
    for (const f of faults) f.stop();
    await stack.stop(o.keepDir);
  }
}

runAsScript(
  'budgetChaos.ts',
  new Command('budget-chaos')
    .option('--submits <n>', 'jobs started at once', '500')
    .option('--budget-jobs <n>', 'jobs the budget admits at their estimate', '50')
    .option('--estimate <credits>', "each job's estimate (the provider charges 1 credit per job that starts)", '2')
    .option('--policy <p>', "the account's policy when the budget is spent: refuse or hold", 'refuse')
    .option('--workers <n>', 'worker processes', '2')
    .option('--concurrency <n>', 'starts in flight at once', '50')
    .option(
      '--provider-concurrency <n>',
      "jobs the provider runs at once (the key's limit of active jobs starts there)",
      '100',
    )
    .option('--kill-every-ms <ms>', 'mean interval between worker SIGKILLs', '5000')
    .option('--store-outage-every-ms <ms>', 'interval between store write-lock windows', '20000')
    .option('--store-outage-ms <ms>', 'length of each window', '4000')
    .option('--deadline-ms <ms>', "each job's tracking deadline", '60000')
    .option('--chaos-ms <ms>', 'how long the faults go on after the last start', '120000')
    .option('--converge-ms <ms>', 'after the faults, how long to wait for every job to end', '300000')
    .option('--sample-ms <ms>', "how often the budget's standing is sampled", '100')
    .option('--seed <n>', 'random seed', '42')
    .option('--keep-dir', 'keep the store and configuration for inspection'),
  (opts) => runBudgetChaos(OptionsSchema.parse(opts)),
);
