/**
 * Output and machine-load helpers shared by the benchmarks: the printed table, the JSON file in
 * `bench/results/`, and the load check that runs before a full-size run (the machine is shared).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import type { Command } from 'commander';
import { z } from 'zod';
import { round } from './proc.js';

/** Repository root (absolute). */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Writes `data` to `bench/results/<name>-<ISO time>.json`; returns the path. */
export function writeResult(name: string, data: unknown): string {
  const dir = path.join(REPO, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}

/** Renders rows as a text table (first row is the header). */
export function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head, style: { head: [], border: [] }, wordWrap: true });
  for (const r of rows) t.push(r.map((c) => (typeof c === 'number' ? String(c) : c)));
  return t.toString();
}

/** The machine at one moment: 1/5/15-minute load averages, cores, memory (GiB). */
export interface MachineSnapshot {
  at: string;
  loadavg: [number, number, number];
  cores: number;
  memTotalGiB: number;
  memFreeGiB: number;
}

/** Reads {@link MachineSnapshot}. */
export function machine(): MachineSnapshot {
  const [a, b, c] = os.loadavg();
  return {
    at: new Date().toISOString(),
    loadavg: [round(a ?? 0), round(b ?? 0), round(c ?? 0)],
    cores: os.cpus().length,
    memTotalGiB: round(os.totalmem() / 2 ** 30, 1),
    memFreeGiB: round(os.freemem() / 2 ** 30, 1),
  };
}

/**
 * Waits until the 1-minute load average is below `maxLoad`, checking every `everyMs` ms, for at
 * most `timeoutMs` ms. Returns the snapshot at start and whether the run starts under load.
 */
export async function waitForQuietMachine(opts: {
  maxLoad: number;
  timeoutMs: number;
  everyMs?: number;
  log?: (l: string) => void;
}): Promise<{ underLoad: boolean; waitedMs: number; start: MachineSnapshot }> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const t0 = Date.now();
  for (;;) {
    const m = machine();
    if (m.loadavg[0] < opts.maxLoad) return { underLoad: false, waitedMs: Date.now() - t0, start: m };
    if (Date.now() - t0 >= opts.timeoutMs) {
      log(
        `load ${m.loadavg[0]} is still ≥ ${opts.maxLoad} after ${Math.round((Date.now() - t0) / 60_000)} min: running anyway, marked as under load`,
      );
      return { underLoad: true, waitedMs: Date.now() - t0, start: m };
    }
    log(`load ${m.loadavg.join(' ')} ≥ ${opts.maxLoad}: waiting (${Math.round((Date.now() - t0) / 1000)} s so far)`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 60_000));
  }
}

/**
 * The options of {@link waitForQuietStart}, as a zod shape to spread into a benchmark's options
 * schema: `maxLoad` (a 1-minute load average, > 0) and `waitLoadMin` (minutes, ≥ 0).
 */
export const LOAD_OPTIONS = {
  maxLoad: z.coerce.number().positive(),
  waitLoadMin: z.coerce.number().min(0),
};

/** Adds `--max-load` and `--wait-load-min` (parsed by {@link LOAD_OPTIONS}) to `command`; returns it. */
export function withLoadOptions(command: Command): Command {
  return command
    .option('--max-load <x>', 'start only when the 1-minute load average is below this', '1.5')
    .option('--wait-load-min <min>', 'wait at most this long for the load to drop', '30');
}

/**
 * {@link waitForQuietMachine} with a benchmark's `--max-load` (1-minute load average) and
 * `--wait-load-min` (minutes): resolves with the machine at the start, whether it was still under
 * load when the wait ran out, and the ms waited. Never throws.
 */
export function waitForQuietStart(
  o: { maxLoad: number; waitLoadMin: number },
  log?: (l: string) => void,
): ReturnType<typeof waitForQuietMachine> {
  return waitForQuietMachine({ maxLoad: o.maxLoad, timeoutMs: o.waitLoadMin * 60_000, log });
}

/** Samples the 1-minute load average every `everyMs` ms; `stop()` returns max and mean. */
export function sampleLoad(everyMs = 5_000): { stop(): { max1m: number; mean1m: number; samples: number } } {
  const xs: number[] = [os.loadavg()[0] ?? 0];
  const timer = setInterval(() => xs.push(os.loadavg()[0] ?? 0), everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      xs.push(os.loadavg()[0] ?? 0);
      return {
        max1m: round(Math.max(...xs)),
        mean1m: round(xs.reduce((s, x) => s + x, 0) / xs.length),
        samples: xs.length,
      };
    },
  };
}

/** Percentile `p` (0..100) of `xs` by nearest rank; NaN when empty. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}

/** Mean of `xs`; NaN when empty. */
export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length;
}

/**
 * Prints a benchmark's closing lines — `loadLine` (the machine's load), the worker log's trouble
 * counts when there were any — and writes `out` as `bench/results/<name>-<time>.json`.
 */
export function finishReport(
  name: string,
  out: { workerLog: { databaseLocked: number; workflowFailures: number } },
  loadLine: string,
): void {
  console.log(loadLine);
  if (out.workerLog.databaseLocked > 0 || out.workerLog.workflowFailures > 0)
    console.log(`worker log: ${JSON.stringify(out.workerLog)}`);
  console.log(`written ${writeResult(name, out)}`);
}

/**
 * When `bench/<script>` is the script being run: parses the command line with `program`, runs
 * `run` on the options and exits 0, or 1 after printing the error.
 */
export function runAsScript(
  script: string,
  program: Command,
  run: (opts: Record<string, unknown>) => Promise<unknown>,
): void {
  if (!process.argv[1] || path.resolve(process.argv[1]) !== path.join(REPO, 'bench', script)) return;
  program.parse();
  run(program.opts()).then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
