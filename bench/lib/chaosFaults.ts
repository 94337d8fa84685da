/**
 * The faults of the chaos runs (`bench:chaos`, `bench:budget-chaos`), shared so both inflict the
 * same: the reference provider's answers lost after it committed, 5xx, slow and hanging answers,
 * failed and never-finishing jobs, bursts of 429s; worker processes SIGKILLed at random and
 * restarted; the SQLite store's write lock held by another process for a few seconds at a time.
 * Probabilities are per request; durations in ms.
 */
import { spawn } from 'node:child_process';
import type { Sim } from '../../tools/sim/index.js';
import { REPO } from './report.js';

/** A seeded pseudo-random source in [0, 1) (a linear congruential generator: runs repeat with their seed). */
export function seededRandom(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
}

/**
 * Adds the chaos runs' request-level faults for each of the sim's `accounts` (the first matching
 * rule fires): 10 % of submits answered by a dropped connection after the job was created, 3 %
 * by a 502 after it was created, 5 % of all requests a 503, 5 % answered 1.5 s late, 2 % of status
 * reads 5 s late (past a 3-s read timeout) and 0.5 % 60 s late (a read that hangs), 3 % of jobs
 * failed `TARGET_BLOCKED` and 2 % that never finish.
 */
export function addProviderFaults(sim: Sim, accounts: readonly string[]): void {
  for (const account of accounts) {
    sim.faults.add({ account, endpoint: 'submit', action: 'drop_after_commit', probability: 0.1 });
    sim.faults.add({ account, endpoint: 'submit', action: 'error_5xx', status: 502, commit: true, probability: 0.03 });
    sim.faults.add({ account, endpoint: 'any', action: 'error_5xx', status: 503, probability: 0.05 });
    sim.faults.add({ account, endpoint: 'any', action: 'delay', delayMs: 1_500, probability: 0.05 });
    sim.faults.add({ account, endpoint: 'status', action: 'delay', delayMs: 5_000, probability: 0.02 });
    sim.faults.add({ account, endpoint: 'status', action: 'delay', delayMs: 60_000, probability: 0.005 });
    sim.faults.add({ account, endpoint: 'submit', action: 'fail_job', probability: 0.03, code: 'TARGET_BLOCKED' });
    sim.faults.add({ account, endpoint: 'submit', action: 'never_finish', probability: 0.02 });
  }
}

/** Every `everyMs`, the sim answers its next five requests `429` with `Retry-After: 2`. Returns what stops it. */
export function rateLimitBursts(sim: Sim, everyMs = 12_000): () => void {
  const timer = setInterval(
    () => sim.faults.add({ endpoint: 'any', action: 'rate_limit', retryAfterSeconds: 2, times: 5 }),
    everyMs,
  );
  return () => clearInterval(timer);
}

/** A running fault that counts what it did; `stop()` ends it (pending restarts are dropped). */
export interface RunningFault {
  readonly count: number;
  stop(): void;
}

/**
 * SIGKILLs one of `workers` worker processes at random every `everyMs` × [0.5, 1.5) and restarts
 * it 500 ms later: `kill(i)` and `respawn(i)` act on worker `i`.
 */
export function killWorkers(o: {
  workers: number;
  everyMs: number;
  random: () => number;
  kill: (i: number) => void;
  respawn: (i: number) => void;
}): RunningFault {
  let count = 0;
  let stopped = false;
  let timer: NodeJS.Timeout;
  const restarts = new Set<NodeJS.Timeout>();
  const next = () => {
    timer = setTimeout(
      () => {
        const i = Math.floor(o.random() * o.workers);
        o.kill(i);
        count++;
        const t = setTimeout(() => {
          restarts.delete(t);
          if (!stopped) o.respawn(i);
        }, 500);
        restarts.add(t);
        next();
      },
      o.everyMs * (0.5 + o.random()),
    );
  };
  next();
  return {
    get count() {
      return count;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      for (const t of restarts) clearTimeout(t);
      restarts.clear();
    },
  };
}

/**
 * Every `everyMs`, another process takes an exclusive lock on the SQLite store `storeFile` and
 * holds it `ms`: the store refuses writes meanwhile.
 */
export function lockStore(storeFile: string, everyMs: number, ms: number): RunningFault {
  let count = 0;
  const timer = setInterval(() => {
    count++;
    spawn(
      process.execPath,
      [
        '-e',
        `const D=require('better-sqlite3');const d=new D(${JSON.stringify(storeFile)});d.pragma('busy_timeout=10000');d.exec('BEGIN EXCLUSIVE');setTimeout(()=>{d.exec('COMMIT');d.close()},${ms})`,
      ],
      { cwd: REPO, stdio: 'ignore' },
    );
  }, everyMs);
  return {
    get count() {
      return count;
    },
    stop: () => clearInterval(timer),
  };
}
