/**
 * Benchmark: what the workflow code costs per job, without a server, a provider or a store: each
 * recorded history of the served type (`test/replay/histories/v6-*.json`, or those named) is
 * replayed `--replays` times through the current workflow bundle (`Worker.runReplayHistories`),
 * and for each it reports the promises the workflow code created per run and this process's CPU
 * per replay. The SDK captures (and source-maps) a stack trace for every promise created in
 * workflow code, so the promise count is a cost of its own; replaying a fast job's history is the
 * workflow thread's work for that job without the noise of a whole stack. Each history's rounds
 * alternate with the others' (round 1: a, b, c; round 2: the same), the first round is warm-up.
 * A measurement, not a test: it asserts nothing.
 *
 *   npm run bench:replay -- --histories completed,failed --replays 1000 --rounds 3
 */
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { Command } from 'commander';
import { z } from 'zod';
import { workflowBundle } from '../src/worker.js';
import { round, sampleForeignCpu } from './lib/proc.js';
import {
  LOAD_OPTIONS,
  machine,
  mean,
  REPO,
  runAsScript,
  table,
  waitForQuietStart,
  withLoadOptions,
  writeResult,
} from './lib/report.js';

const OptionsSchema = z.object({
  histories: z.string().min(1),
  replays: z.coerce.number().int().positive(),
  rounds: z.coerce.number().int().positive(),
  ...LOAD_OPTIONS,
});
type Options = z.infer<typeof OptionsSchema>;

const HISTORIES = path.join(REPO, 'test', 'replay', 'histories');

/** Replays `history` `n` times; returns the promises created in workflow code and this process's CPU, both per replay. */
async function replayMany(
  bundle: Awaited<ReturnType<typeof workflowBundle>>,
  history: unknown,
  n: number,
  tag: string,
): Promise<{ promises: number; cpuMs: number; failed: number }> {
  let promises = 0;
  // Workflow code runs in its own V8 context, whose Promise is not this one's.
  const hook = v8.promiseHooks.createHook({
    init: (p: Promise<unknown>) => void (p.constructor !== Promise && promises++),
  });
  const cpu0 = process.cpuUsage();
  let failed = 0;
  try {
    const runs = Array.from({ length: n }, (_, i) => ({ workflowId: `${tag}-${i}`, history }));
    for await (const r of Worker.runReplayHistories({ workflowBundle: bundle }, runs)) if (r.error) failed++;
  } finally {
    hook();
  }
  const cpu = process.cpuUsage(cpu0);
  return { promises: promises / n, cpuMs: (cpu.user + cpu.system) / 1000 / n, failed };
}

/** Runs the benchmark; prints its table and writes `bench/results/replay-<time>.json`. */
export async function runReplay(o: Options): Promise<unknown> {
  const names =
    o.histories === 'all'
      ? fs.readdirSync(HISTORIES).filter((f) => f.endsWith('.json'))
      : o.histories.split(',').map((h) => `v6-${h.trim()}.json`);
  const histories = names.map((f) => ({
    name: f.replace(/^v6-|\.json$/g, ''),
    history: JSON.parse(fs.readFileSync(path.join(HISTORIES, f), 'utf8')) as unknown,
  }));
  // The replay workers' own state changes are not the figures: warnings only.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const quiet = await waitForQuietStart(o);
  const foreign = sampleForeignCpu(() => [{ name: 'bench-replay', pid: process.pid }]);
  const bundle = await workflowBundle();
  const rounds: { history: string; round: number; promises: number; cpuMs: number; failed: number }[] = [];
  for (let r = 0; r < o.rounds; r++)
    for (const h of histories)
      rounds.push({
        history: h.name,
        round: r,
        ...(await replayMany(bundle, h.history, o.replays, `r${r}-${h.name}`)),
      });
  const measured = rounds.filter((x) => o.rounds === 1 || x.round > 0);
  const per = histories.map((h) => {
    const mine = measured.filter((x) => x.history === h.name);
    return {
      history: h.name,
      promisesPerReplay: round(mean(mine.map((x) => x.promises)), 1),
      cpuMsPerReplay: round(mean(mine.map((x) => x.cpuMs)), 3),
      cpuMsByRound: mine.map((x) => round(x.cpuMs, 3)),
      failed: mine.reduce((a, x) => a + x.failed, 0),
    };
  });
  console.log(
    table(
      ['history', 'promises in workflow code per run', 'CPU ms per replay (each round)', 'replays that failed'],
      per.map((p) => [p.history, p.promisesPerReplay, `${p.cpuMsPerReplay} (${p.cpuMsByRound.join(' / ')})`, p.failed]),
    ),
  );
  const others = foreign.stop();
  console.log(
    `${o.replays} replays × ${o.rounds} rounds per history; first round left out; load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes ${others.foreignCores} cores`,
  );
  const out = {
    benchmark: 'replay',
    options: o,
    machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, foreign: others },
    histories: per,
    rounds,
  };
  console.log(`written ${writeResult('replay', out)}`);
  return out;
}

runAsScript(
  'replay.ts',
  withLoadOptions(new Command('bench:replay'))
    .option('--histories <names>', 'recorded histories of v6 (completed,failed,…) or all', 'completed')
    .option('--replays <n>', 'replays per history and round', '1000')
    .option('--rounds <n>', 'rounds (the first is warm-up when more than one)', '3'),
  (opts) => runReplay(OptionsSchema.parse(opts)),
);
