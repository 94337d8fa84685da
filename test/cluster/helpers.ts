/**
 * Helpers of the cluster suite: a result-store database of its own per test file on the
 * cluster's PostgreSQL, the codec environment, and SIGKILL / restart of a server process (asked of
 * the global setup, the processes' parent).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { waitFor } from '../helpers/stack.js';

/** Creates a fresh database on the cluster's PostgreSQL and returns its URL (the result store of one file). */
export async function freshStoreUrl(): Promise<string> {
  const { postgresUrl } = inject('cluster');
  const name = `scrapes_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const c = new pg.Client({ connectionString: `${postgresUrl}/postgres` });
  await c.connect();
  await c.query(`create database ${name}`);
  await c.end();
  return `${postgresUrl}/${name}`;
}

/** Puts the run's codec keys into this process's environment (workers spawned from it inherit them). */
export function useCodecEnv(): void {
  const { codecKeys } = inject('cluster');
  process.env.SCRAPE_CODEC_KEYS = codecKeys;
}

/** Asks the global setup to SIGKILL (`kill`) or start again (`restart`) a server process; returns its new PID on restart. */
export async function controlServer(action: 'kill' | 'restart', name: string): Promise<number | null> {
  const { dataDir } = inject('cluster');
  const id = randomUUID();
  const dir = path.join(dataDir, 'control');
  fs.writeFileSync(path.join(dir, `${id}.json.tmp`), JSON.stringify({ action, name }));
  fs.renameSync(path.join(dir, `${id}.json.tmp`), path.join(dir, `${id}.json`));
  const done = path.join(dir, `${id}.done`);
  await waitFor(() => fs.existsSync(done), 60_000, `${action} ${name}`);
  const r = JSON.parse(fs.readFileSync(done, 'utf8')) as { ok: boolean; pid: number | null; error?: string };
  if (!r.ok) throw new Error(`${action} ${name}: ${r.error}`);
  return r.pid;
}

/** True when a process with this PID exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A product worker process (`src/worker.ts`, the production entry point) started by a test. */
export interface ProductWorker {
  child: import('node:child_process').ChildProcess;
  /** Its `/metrics` base URL. */
  metricsUrl: string;
  /** Everything it wrote to stderr (its JSON-line log). */
  log(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `src/worker.ts` (as `npm run worker` does) with `SCRAPE_CONFIG=configFile`, `/metrics` on
 * a free port, and resolves once it logs "worker polling".
 */
export async function spawnProductWorker(configFile: string, env: Record<string, string> = {}): Promise<ProductWorker> {
  const { spawn } = await import('node:child_process');
  const { freePort } = await import('../../src/lib/ports.js');
  const port = await freePort('127.0.0.1');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    env: {
      ...process.env,
      SCRAPE_CONFIG: configFile,
      SCRAPE_WORKER_METRICS_PORT: String(port),
      SCRAPE_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (err += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (err.includes('"message":"worker polling"')) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`worker exited early (${code}): ${err.slice(-2000)}`));
    });
  });
  return {
    child,
    metricsUrl: `http://127.0.0.1:${port}`,
    log: () => err,
    kill: (signal = 'SIGKILL') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}
