/**
 * The chaos run (issues 3 and 13): N logical requests through the real stack — Temporal (a dev
 * server, or `TEMPORAL_ADDRESS`: the production cluster of `npm run cluster`), two worker
 * processes, the reference provider, the SQLite store — while the provider drops responses after
 * committing, answers 5xx, sends 429 bursts with Retry-After, answers slowly, lets status reads
 * hang past our timeout, fails jobs and never finishes some; a fifth of the requests go to a
 * provider account without idempotency keys whose list shows a new job only seconds later (a
 * lagging, search-backed list: a lost submit there is reconciled by listing across the settle
 * window); workers are SIGKILLed at random every few seconds and restarted; and the store refuses
 * writes for a few seconds at a time (an exclusive lock held by another process).
 *
 * It prints (and writes to bench/results/chaos-<time>.json): logical requests, provider jobs
 * created (must equal requests: one account has idempotency keys, the other is reconciled by its
 * list across the settle window), duplicate result rows (0),
 * jobs lost (0: every job ends in an observed final state or an explicit unknown /
 * tracking_interrupted with its evidence), the highest polling rate any job reached against the
 * policy, and the run time.
 *
 *   npm run bench:chaos -- --requests 500
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import fastifyStatic from '@fastify/static';
import { Command } from 'commander';
import Fastify from 'fastify';
import { sql } from 'kysely';
import PQueue from 'p-queue';
import { ScrapeClient } from '../src/client/index.js';
import { parseConfig } from '../src/config.js';
import { providerPollDefaults } from '../src/providers/shared/policy.js';
import { connectOrStartTemporal } from '../tools/devserver/connectOrStart.js';
import { isFinalState } from '../src/model/states.js';
import type { PollPolicy } from '../src/model/types.js';
import { startSim } from '../tools/sim/index.js';
import { openStore } from '../src/store/index.js';
import { writeWorkflowBundle } from '../src/worker.js';
import { addProviderFaults, killWorkers, lockStore, rateLimitBursts, seededRandom } from './lib/chaosFaults.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Options of {@link runChaos}. Durations in ms. */
export interface ChaosOptions {
  requests: number;
  /** Use this Temporal server instead of starting a dev server. */
  temporalAddress?: string;
  namespace?: string;
  workers?: number;
  /** Mean interval between worker kills. */
  killEveryMs?: number;
  /** Interval between store lock windows, and their length. */
  storeOutageEveryMs?: number;
  storeOutageMs?: number;
  /** Tracking deadline of each job (never-finishing jobs end `tracking_interrupted` after it). */
  deadlineMs?: number;
  /** How long faults, kills and outages go on after the last request was started. */
  chaosMs?: number;
  /** After the chaos stops, give up waiting for jobs to end after this long. */
  convergeMs?: number;
  log?: (line: string) => void;
  seed?: number;
  /**
   * Jobs each simulated provider account runs at once (beyond it a submit is refused
   * `CONCURRENCY_LIMIT`; default 25). The product learns it (the key's adaptive active-jobs limit);
   * its concurrent HTTP calls per key are configured to 80 % of it (default 20).
   */
  providerConcurrency?: number;
  /** Keep the temp directory (store, config) for inspection. */
  keepDir?: boolean;
}

/** The figures of one chaos run. */
export interface ChaosReport {
  logicalRequests: number;
  providerJobsCreated: number;
  duplicateResultRows: number;
  /** Result rows in the store (each completed job has exactly one: checked per job as its evidence). */
  resultRows: number;
  jobsLost: number;
  lostJobs: string[];
  states: Record<string, number>;
  /** Why each job that did not complete ended as it did (its last error's code and message). */
  notCompleted: { jobId: string; state: string; error: string }[];
  workerKills: number;
  storeOutages: number;
  /** How long the chaos lasted, and how long jobs took to end after it stopped. */
  chaosPhaseMs: number;
  convergeMs: number;
  provider: { requests: number; byStatus: Record<string, number>; dropped: number };
  politeness: {
    policyMinGapMs: number;
    minGapBetweenStatusChecksMs: number;
    /** How many pairs of one job's status requests were closer together than `policyMinGapMs`. */
    checksCloserThanPolicy: number;
    /** The closest such pairs: the provider's task ID, our key, the gap and when. */
    closestChecks: { taskId: string; key: string | null; gapMs: number; at: string }[];
    maxStatusChecksIn10sByOneJob: number;
    policyMaxStatusChecksIn10s: number;
    maxStatusChecksPerJob: number;
  };
  runMs: number;
}

const POLICY: Partial<PollPolicy> = {
  initialDelayMs: 1_000,
  maxDelayMs: 4_000,
  multiplier: 1.5,
  jitter: 0.2,
  activityTimeoutMs: 6_000,
  cancelConfirmDeadlineMs: 10_000,
};

/** Runs the chaos scenario and returns its report (also printed via `log`). */
export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-chaos-'));
  const cleanups: (() => Promise<unknown>)[] = [];
  const deadlineMs = opts.deadlineMs ?? 60_000;
  const random = seededRandom(opts.seed ?? 42);
  try {
    const temporal = opts.temporalAddress
      ? { address: opts.temporalAddress, namespace: opts.namespace ?? 'default', stop: async () => undefined }
      : await connectOrStartTemporal({
          devServer: { dbFile: path.join(dir, 'temporal.db'), headless: true },
          logger: () => undefined,
        });
    cleanups.push(() => temporal.stop());

    const site = Fastify({ logger: false });
    await site.register(fastifyStatic, { root: path.join(REPO, 'sample-site') });
    const siteUrl = (await site.listen({ host: '127.0.0.1', port: 0 })).replace(/\/$/, '');
    cleanups.push(() => site.close());
    const pages = [
      'index.html',
      ...fs.readdirSync(path.join(REPO, 'sample-site', 'articles')).map((f) => `articles/${f}`),
    ];

    const concurrency = opts.providerConcurrency ?? 25;
    const maxConcurrent = Math.max(1, Math.floor(concurrency * 0.8));
    const apiKey = 'sk-chaos-0123456789abcdef';
    const lagKey = 'sk-chaos-lag-0123456789abcdef';
    const sim = await startSim({
      host: '127.0.0.1',
      port: 0,
      accounts: [
        { name: 'chaos', apiKeys: [apiKey], profile: { concurrency, retryAfterSeconds: 2, minRunMs: 300 } },
        // No idempotency key, and a list that shows a new job only 3 s later (settle window: 10 s).
        {
          name: 'chaos-lag',
          apiKeys: [lagKey],
          profile: {
            concurrency,
            retryAfterSeconds: 2,
            minRunMs: 300,
            idempotency: false,
            list: true,
            listLagMs: 3_000,
          },
        },
      ],
      logger: false,
      random,
    });
    cleanups.push(() => sim.close());
    // Provider faults (the first matching request-level rule fires; probabilities are per request).
    addProviderFaults(sim, ['chaos', 'chaos-lag']);
    const stopBursts = rateLimitBursts(sim);
    cleanups.push(async () => stopBursts());

    const storeFile = path.join(dir, 'store.db');
    const config = parseConfig(
      {
        temporal: {
          address: temporal.address,
          namespace: temporal.namespace,
          taskQueue: `chaos-${process.pid}-${Date.now()}`,
        },
        storeUrl: `sqlite:${storeFile}`,
        defaultAccount: 'chaos',
        providers: {
          reference: {
            kind: 'reference',
            baseUrl: sim.url,
            submitTimeoutMs: 3_000,
            readTimeoutMs: 3_000,
            credentials: { default: { apiKey } },
            limits: { maxConcurrent, minIntervalMs: 0 },
          },
          reference_lag: {
            kind: 'reference',
            baseUrl: sim.url,
            submitTimeoutMs: 3_000,
            readTimeoutMs: 3_000,
            capabilities: { idempotency: false, list: true, cancel: true, webhooks: false },
            credentials: { default: { apiKey: lagKey } },
            limits: { maxConcurrent, minIntervalMs: 0 },
          },
        },
      },
      {},
    );
    const configFile = path.join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify(config));
    // Workers load a prebuilt workflow bundle, so a restarted worker polls again within a second.
    const bundle = path.join(dir, 'workflow-bundle.js');
    await writeWorkflowBundle(bundle);
    const store = await openStore(config.storeUrl);
    cleanups.push(() => store.close());
    const connection = await Connection.connect({ address: temporal.address });
    cleanups.push(() => connection.close());
    const client = new ScrapeClient({
      temporal: new Client({ connection, namespace: temporal.namespace }),
      store,
      taskQueue: config.temporal.taskQueue,
      defaultProvider: 'reference',
      providers: Object.keys(config.providers),
      pollDefaults: (provider) => providerPollDefaults(config, provider),
    });

    // Workers in child processes, SIGKILLed at random and restarted.
    const workers: (ChildProcess | undefined)[] = [];
    const everySpawned = new Set<ChildProcess>(); // killed at the end, whatever slot they were in
    const spawnWorker = (i: number) => {
      const previous = workers[i];
      if (previous && previous.exitCode === null && previous.signalCode === null) previous.kill('SIGKILL');
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/worker.ts')], {
        cwd: REPO,
        env: { ...process.env, SCRAPE_CONFIG: configFile, SCRAPE_WORKFLOW_BUNDLE: bundle },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', () => undefined);
      everySpawned.add(child);
      child.once('exit', () => everySpawned.delete(child));
      workers[i] = child;
    };
    const nWorkers = opts.workers ?? 2;
    for (let i = 0; i < nWorkers; i++) spawnWorker(i);
    cleanups.push(async () => {
      const alive = [...everySpawned];
      for (const w of alive) w.kill('SIGKILL');
      await Promise.all(
        alive.map((w) =>
          w.exitCode !== null || w.signalCode !== null ? undefined : new Promise((r) => w.once('exit', r)),
        ),
      );
    });
    const killer = killWorkers({
      workers: nWorkers,
      everyMs: opts.killEveryMs ?? 5_000,
      random,
      kill: (i) => workers[i]?.kill('SIGKILL'),
      respawn: spawnWorker,
    });
    cleanups.push(async () => killer.stop());

    // The store refuses writes for a few seconds at a time: an exclusive lock from another process.
    const outages = lockStore(storeFile, opts.storeOutageEveryMs ?? 20_000, opts.storeOutageMs ?? 4_000);
    cleanups.push(async () => outages.stop());

    log(
      `chaos: ${opts.requests} requests, ${nWorkers} workers killed every ~${(opts.killEveryMs ?? 5_000) / 1000} s, store locked ${(opts.storeOutageMs ?? 4_000) / 1000} s every ${(opts.storeOutageEveryMs ?? 20_000) / 1000} s`,
    );
    const runId = `${process.pid}-${started.toString(36)}`;
    const queue = new PQueue({ concurrency: 32 });
    const jobIds: string[] = [];
    await Promise.all(
      Array.from({ length: opts.requests }, (_, i) =>
        queue.add(async () => {
          const url = `${siteUrl}/${pages[i % pages.length]}?req=${i}`;
          for (let attempt = 1; ; attempt++) {
            try {
              const provider = i % 5 === 4 ? 'reference_lag' : 'reference';
              const ref = await client.startScrape({
                account: 'chaos',
                url,
                key: `chaos-${runId}-${i}`,
                provider,
                policy: { ...POLICY, deadlineMs },
              });
              jobIds[i] = ref.jobId;
              return;
            } catch (e) {
              // The store may be locked right now: the caller retries with the same key (idempotent).
              if (attempt >= 10) throw e;
              await new Promise((r) => setTimeout(r, 1_000));
            }
          }
        }),
      ),
    );
    log(`chaos: ${jobIds.length} jobs started in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // Chaos goes on for a while after the last start, then stops: every job must then reach a
    // final state (or an explicit unknown) with no duplicate and nothing lost.
    const chaosUntil = Date.now() + (opts.chaosMs ?? 60_000);
    const openCount = async () => {
      const rows = await store.db.selectFrom('jobs').select(['state']).where('account', '=', 'chaos').execute();
      return { total: rows.length, open: rows.filter((r) => !isFinalState(r.state)).length };
    };
    while (Date.now() < chaosUntil) {
      const c = await openCount();
      if (c.open === 0) break;
      log(`chaos: ${c.total - c.open}/${opts.requests} final, kills ${killer.count}, outages ${outages.count}`);
      await new Promise((r) => setTimeout(r, 5_000));
    }
    const chaosPhaseMs = Date.now() - started;
    killer.stop();
    outages.stop();
    stopBursts();
    sim.faults.clear();
    // Every slot gets a live worker for the convergence phase (a worker killed just now included).
    for (let i = 0; i < nWorkers; i++) {
      const w = workers[i];
      if (!w || w.killed || w.exitCode !== null || w.signalCode !== null) spawnWorker(i);
    }
    log(`chaos: stopped after ${(chaosPhaseMs / 1000).toFixed(1)} s; waiting for every job to end`);
    const convergeStart = Date.now();
    const until = convergeStart + (opts.convergeMs ?? deadlineMs + 240_000);
    for (;;) {
      const c = await openCount();
      if (c.open === 0 || Date.now() > until) break;
      log(`chaos: converging, ${c.total - c.open}/${opts.requests} final`);
      await new Promise((r) => setTimeout(r, 3_000));
    }
    const convergeMs = Date.now() - convergeStart;

    // ---- figures ----
    const rows = await store.db.selectFrom('jobs').selectAll().where('account', '=', 'chaos').execute();
    const states: Record<string, number> = {};
    const notCompleted: ChaosReport['notCompleted'] = [];
    const lost: string[] = [];
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of jobIds) {
      const r = byId.get(id);
      if (!r) {
        lost.push(`${id}: no store row`);
        continue;
      }
      states[r.state] = (states[r.state] ?? 0) + 1;
      if (r.state !== 'completed') {
        const e = r.last_error ? (JSON.parse(r.last_error) as { code?: string; message?: string }) : undefined;
        notCompleted.push({ jobId: id, state: r.state, error: e ? `${e.code ?? ''} ${e.message ?? ''}`.trim() : '—' });
      }
      const evidence =
        r.state === 'completed'
          ? (await store.results.count({ jobId: id })) === 1
          : r.state === 'failed'
            ? r.last_error !== null
            : r.state === 'tracking_interrupted' || r.state === 'expired'
              ? r.task_id !== null
              : r.state === 'unknown'
                ? r.last_error !== null
                : r.state === 'cancelled' || r.state === 'cancel_unconfirmed';
      if (!evidence) lost.push(`${id}: ${r.state} without evidence`);
    }
    const dup = await store.db
      .selectFrom('results')
      .select(['job_id', sql<number>`count(*)`.as('n')])
      .groupBy('job_id')
      .having(sql`count(*)`, '>', 1)
      .execute();
    const resultRows = Number(
      (
        await store.db
          .selectFrom('results')
          .select(sql<number>`count(*)`.as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    const stats = sim.stats();
    const policyMinGapMs = Math.round((POLICY.initialDelayMs ?? 1_000) * (1 - (POLICY.jitter ?? 0.2)));
    let minGap = Infinity;
    /** Status requests of one job closer together than the policy's smallest delay, for a look at why. */
    const closeChecks: { taskId: string; key: string | null; gapMs: number; at: string }[] = [];
    let max10s = 0;
    let maxChecks = 0;
    for (const j of stats.jobs) {
      const t = [...j.status_request_times].sort((a, b) => a - b);
      maxChecks = Math.max(maxChecks, t.length);
      for (let k = 1; k < t.length; k++) {
        const gap = t[k]! - t[k - 1]!;
        minGap = Math.min(minGap, gap);
        if (gap < policyMinGapMs)
          closeChecks.push({
            taskId: j.job_id,
            key: j.idempotency_key ?? j.client_ref,
            gapMs: gap,
            at: new Date(t[k]!).toISOString(),
          });
      }
      for (let a = 0, b = 0; b < t.length; b++) {
        while (t[b]! - t[a]! > 10_000) a++;
        max10s = Math.max(max10s, b - a + 1);
      }
    }
    const report: ChaosReport = {
      logicalRequests: opts.requests,
      providerJobsCreated: (stats.jobsCreated.byAccount.chaos ?? 0) + (stats.jobsCreated.byAccount['chaos-lag'] ?? 0),
      duplicateResultRows: dup.reduce((s, d) => s + Number(d.n) - 1, 0),
      resultRows,
      jobsLost: lost.length,
      lostJobs: lost.slice(0, 20),
      states,
      notCompleted,
      workerKills: killer.count,
      storeOutages: outages.count,
      chaosPhaseMs,
      convergeMs,
      provider: {
        requests: stats.requests.total,
        byStatus: stats.requests.byStatus,
        dropped: stats.requests.byStatus.dropped ?? 0,
      },
      politeness: {
        policyMinGapMs,
        minGapBetweenStatusChecksMs: Number.isFinite(minGap) ? minGap : 0,
        checksCloserThanPolicy: closeChecks.length,
        closestChecks: closeChecks.sort((a, b) => a.gapMs - b.gapMs).slice(0, 20),
        maxStatusChecksIn10sByOneJob: max10s,
        policyMaxStatusChecksIn10s: Math.ceil(10_000 / policyMinGapMs),
        maxStatusChecksPerJob: maxChecks,
      },
      runMs: Date.now() - started,
    };
    return report;
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    if (opts.keepDir) log(`chaos: kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Prints a report as a small table. */
export function formatChaosReport(r: ChaosReport): string {
  const lines = [
    ['logical requests', r.logicalRequests],
    [
      'provider jobs created',
      `${r.providerJobsCreated} (must equal requests; a fifth on a lagging list without idempotency)`,
    ],
    ['duplicate result rows', r.duplicateResultRows],
    ['result rows', `${r.resultRows} (completed jobs: ${r.states.completed ?? 0})`],
    ['jobs lost', r.jobsLost],
    [
      'final states',
      Object.entries(r.states)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    ],
    ...r.notCompleted.map((n): [string, string] => [`  ${n.state}`, `${n.jobId}: ${n.error}`]),
    ['worker SIGKILLs / store outages', `${r.workerKills} / ${r.storeOutages}`],
    [
      'provider requests (429 / 5xx / dropped)',
      `${r.provider.requests} (${r.provider.byStatus['429'] ?? 0} / ${(r.provider.byStatus['502'] ?? 0) + (r.provider.byStatus['503'] ?? 0)} / ${r.provider.dropped})`,
    ],
    [
      'min gap between status polls of a job',
      `${r.politeness.minGapBetweenStatusChecksMs} ms (policy's smallest poll delay ${r.politeness.policyMinGapMs} ms; a retry of a failed check may come sooner, ≥ 1 s by its retry policy)`,
    ],
    [
      'status requests of one job closer than that',
      `${r.politeness.checksCloserThanPolicy}${r.politeness.closestChecks[0] ? ` (closest: ${r.politeness.closestChecks[0].gapMs} ms, key ${r.politeness.closestChecks[0].key})` : ''}`,
    ],
    [
      'most status checks by one job in 10 s',
      `${r.politeness.maxStatusChecksIn10sByOneJob} (poll policy allows ${r.politeness.policyMaxStatusChecksIn10s})`,
    ],
    [
      'chaos phase / convergence after it',
      `${(r.chaosPhaseMs / 1000).toFixed(1)} s / ${(r.convergeMs / 1000).toFixed(1)} s`,
    ],
    ['run time', `${(r.runMs / 1000).toFixed(1)} s`],
  ];
  return lines.map(([k, v]) => `${String(k).padEnd(42)} ${v}`).join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const program = new Command('chaos')
    .option('-n, --requests <n>', 'logical requests', (v) => Number(v), 500)
    .option('--workers <n>', 'worker processes', (v) => Number(v), 2)
    .option('--kill-every-ms <ms>', 'mean interval between worker kills', (v) => Number(v), 5_000)
    .option('--deadline-ms <ms>', 'tracking deadline of each job', (v) => Number(v), 60_000)
    .option('--chaos-ms <ms>', 'how long the chaos goes on after the last start', (v) => Number(v), 120_000)
    .option('--seed <n>', 'random seed', (v) => Number(v), 42)
    .option(
      '--converge-ms <ms>',
      'after the chaos, how long to wait for every job to end (default: deadline + 240 s; a 10,000-request run on 2 cores needs ~20 min)',
      (v) => Number(v),
    )
    .option(
      '--provider-concurrency <n>',
      'jobs each provider account runs at once (the product learns it; its concurrent calls per key: 80 %)',
      (v) => Number(v),
      25,
    )
    .option('--keep-dir', 'keep the store and config for inspection')
    .parse();
  const o = program.opts();
  runChaos({
    requests: o.requests,
    workers: o.workers,
    killEveryMs: o.killEveryMs,
    deadlineMs: o.deadlineMs,
    chaosMs: o.chaosMs,
    seed: o.seed,
    convergeMs: o.convergeMs,
    providerConcurrency: o.providerConcurrency,
    keepDir: o.keepDir,
    temporalAddress: process.env.TEMPORAL_ADDRESS,
  })
    .then((r) => {
      console.log(formatChaosReport(r));
      const out = path.join(REPO, 'bench', 'results', `chaos-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
      fs.writeFileSync(out, JSON.stringify(r, null, 2));
      console.log(`written ${out}`);
      process.exit(
        r.jobsLost === 0 && r.duplicateResultRows === 0 && r.providerJobsCreated === r.logicalRequests ? 0 : 1,
      );
    })
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}
