/**
 * A throwaway PostgreSQL server for tests: `initdb` into a temp directory and `pg_ctl start` on a
 * free loopback port, as the `postgres` OS user when run as root (initdb refuses root). Uses
 * `SCRAPE_TEST_PG_URL` instead when set. Returns undefined when no PostgreSQL binaries exist
 * (the caller decides whether that is a failure; `.ci/run` installs them).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../../src/lib/ports.js';

export interface TestPostgres {
  url: string;
  stop(): Promise<void>;
}

function findBin(name: string): string | undefined {
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  const base = '/usr/lib/postgresql';
  if (!fs.existsSync(base)) return undefined;
  for (const v of fs.readdirSync(base).sort().reverse()) {
    const p = path.join(base, v, 'bin', name);
    if (fs.existsSync(p)) return p;
  }
  return undefined;
}

/** Starts PostgreSQL (see module docs) or returns undefined when it is not installed. */
export async function startTestPostgres(): Promise<TestPostgres | undefined> {
  if (process.env.SCRAPE_TEST_PG_URL) return { url: process.env.SCRAPE_TEST_PG_URL, stop: async () => undefined };
  const initdb = findBin('initdb');
  const pgCtl = findBin('pg_ctl');
  if (!initdb || !pgCtl) return undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-pg-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (bin: string, args: string[]) => {
    if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', bin, ...args], { stdio: 'pipe' });
    else execFileSync(bin, args, { stdio: 'pipe' });
  };
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  run(initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  run(pgCtl, [
    '-D',
    data,
    '-l',
    path.join(dir, 'log'),
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    '-w',
    'start',
  ]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      try {
        run(pgCtl, ['-D', data, '-m', 'immediate', 'stop']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A suite that runs on both store dialects: registers its PostgreSQL server (started before its
 * tests, stopped after; a machine without PostgreSQL fails the suite saying how to install it)
 * and a temporary directory for its SQLite files, removed after. `urlOf` gives the store URL of a
 * dialect: a SQLite file `file` in that directory, or the server's database.
 */
export function bothDialects(prefix: string): {
  dir: string;
  urlOf(dialect: 'sqlite' | 'postgres', file: string): string;
} {
  let pg: TestPostgres | undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  beforeAll(async () => {
    pg = await startTestPostgres();
    if (!pg)
      throw new Error(
        'PostgreSQL is not installed (initdb/pg_ctl not found): install the Debian package "postgresql" or set SCRAPE_TEST_PG_URL',
      );
  });
  afterAll(async () => {
    await pg?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { dir, urlOf: (dialect, file) => (dialect === 'sqlite' ? `sqlite:${path.join(dir, file)}` : pg!.url) };
}
