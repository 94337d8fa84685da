/**
 * Benchmark: what the store's SQLite work costs per job, with the prepared-statement cache
 * (`src/store/statementCache.ts`, the default) and without it (every query prepared anew, as
 * Kysely's SQLite driver does alone), side by side in one run.
 *
 * Each job goes through the store calls a polling job makes in the worker: `jobs.register`,
 * `jobs.bindTask`, `jobs.transition` to `pending`, `--checks` pairs of `polling.beginCheck` +
 * `polling.recordCheck`, `results.writeOnce` and `jobs.transition` to `completed`. Each round runs
 * both arms, in an order that flips every round (with, without | without, with | …), on their own
 * SQLite files in one temporary folder, in this process, so that both see the same machine; each
 * arm's CPU is this process's `process.cpuUsage()` over it. It waits for a quiet machine as the
 * other benchmarks do and records the CPU other processes used meanwhile. SQLite only: it measures
 * the embedded store, not a PostgreSQL one. A measurement, not a test: it asserts nothing.
 *
 *   npm run bench:store -- --jobs 2000 --rounds 4 --checks 3
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { z } from 'zod';
import { openStore, Store } from '../src/store/index.js';
import { round, sampleForeignCpu } from './lib/proc.js';
import {
  LOAD_OPTIONS,
  machine,
  mean,
  runAsScript,
  table,
  waitForQuietStart,
  withLoadOptions,
  writeResult,
} from './lib/report.js';

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  rounds: z.coerce.number().int().positive(),
  checks: z.coerce.number().int().min(0),
  ...LOAD_OPTIONS,
});
type Options = z.infer<typeof OptionsSchema>;

const ARMS = [
  { key: 'cached', label: 'statement cache (default, 256)', size: 256 },
  { key: 'uncached', label: 'no cache (prepare every query)', size: 0 },
] as const;

/** One job's store calls, as the worker makes them for a job that is polled `checks` times. */
async function oneJob(store: Store, id: string, checks: number): Promise<void> {
  await store.jobs.register(
    Store.jobRow({
      jobId: id,
      account: 'bench',
      key: id,
      provider: 'reference',
      requestHash: 'h',
      request: { url: `https://example.test/${id}`, format: 'markdown', options: {} },
      workflowId: id,
    }),
  );
  await store.jobs.bindTask({ jobId: id, taskId: `task-${id}`, providerStatus: 'queued', source: 'submit' });
  await store.jobs.transition(id, 'pending');
  for (let c = 0; c < checks; c++) {
    await store.polling.beginCheck(id, 1, false);
    await store.polling.recordCheck(id, { providerStatus: 'pending', state: 'pending' }, 1_000);
  }
  await store.results.writeOnce(
    id,
    'reference',
    `task-${id}`,
    {
      url: `https://example.test/${id}`,
      finalUrl: null,
      httpStatus: 200,
      title: 'A page',
      byline: null,
      excerpt: null,
      lang: 'en',
      siteName: null,
      publishedTime: null,
      text: 'Some text of the page.',
      markdown: '# A page\n\nSome text of the page.',
      links: [],
      contentLength: 22,
    },
    null,
  );
  await store.jobs.transition(id, 'completed');
}

/** Runs the benchmark; prints its table and writes `bench/results/store-<time>.json`. */
export async function runStore(o: Options): Promise<unknown> {
  const quiet = await waitForQuietStart(o);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-store-'));
  const foreign = sampleForeignCpu(() => [{ name: 'bench-store', pid: process.pid }]);
  try {
    const stores = Object.fromEntries(
      await Promise.all(
        ARMS.map(
          async (a) =>
            [a.key, await openStore(path.join(dir, `${a.key}.db`), { sqliteStatementCacheSize: a.size })] as const,
        ),
      ),
    );
    const rounds: { arm: string; round: number; cpuUsPerJob: number; wallUsPerJob: number }[] = [];
    for (let r = 0; r < o.rounds; r++) {
      for (const a of r % 2 === 0 ? ARMS : [...ARMS].reverse()) {
        const store = stores[a.key]!;
        const cpu0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        for (let j = 0; j < o.jobs; j++) await oneJob(store, `r${r}-j${j}`, o.checks);
        const wallUs = Number(process.hrtime.bigint() - t0) / 1_000;
        const cpu = process.cpuUsage(cpu0);
        rounds.push({
          arm: a.key,
          round: r,
          cpuUsPerJob: round((cpu.user + cpu.system) / o.jobs, 1),
          wallUsPerJob: round(wallUs / o.jobs, 1),
        });
      }
    }
    await Promise.all(Object.values(stores).map((s) => s.close()));
    // The first round warms each file and the JIT; the figures are the later rounds' means.
    const measured = rounds.filter((x) => o.rounds === 1 || x.round > 0);
    const arms = ARMS.map((a) => {
      const mine = measured.filter((x) => x.arm === a.key);
      return {
        key: a.key,
        label: a.label,
        statements: stores[a.key]!.sqliteStatements,
        cpuUsPerJob: round(mean(mine.map((x) => x.cpuUsPerJob)), 1),
        wallUsPerJob: round(mean(mine.map((x) => x.wallUsPerJob)), 1),
        rounds: mine.length,
      };
    });
    const base = arms.find((a) => a.key === 'uncached')!;
    const queries = 5 + 2 * o.checks;
    console.log(
      table(
        ['arm', 'CPU per job (µs)', 'wall per job (µs)', 'vs no cache'],
        arms.map((a) => [a.label, a.cpuUsPerJob, a.wallUsPerJob, `${round(a.cpuUsPerJob / base.cpuUsPerJob, 2)}×`]),
      ),
    );
    console.log(
      `${o.jobs} jobs × ${o.rounds} rounds per arm, ${o.checks} checks per job (${queries} store calls); first round left out`,
    );
    const others = foreign.stop();
    console.log(
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${others.foreignCores} cores`,
    );
    const out = {
      benchmark: 'store',
      options: o,
      machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, foreign: others },
      arms,
      rounds,
    };
    console.log(`written ${writeResult('store', out)}`);
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runAsScript(
  'store.ts',
  withLoadOptions(new Command('bench:store'))
    .option('--jobs <n>', 'jobs per round and arm', '2000')
    .option('--rounds <n>', 'rounds per arm (alternating; the first is warm-up when more than one)', '4')
    .option('--checks <n>', 'status checks per job', '3'),
  (opts) => runStore(OptionsSchema.parse(opts)),
);
