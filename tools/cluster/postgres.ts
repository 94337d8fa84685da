/**
 * PostgreSQL for the local production topology, from the Debian `postgresql` binaries: a data
 * directory made once with `initdb` (superuser `temporal`, trust authentication on loopback only)
 * and a server started with `pg_ctl` on a loopback port. Both run as the `postgres` OS user when we
 * are root (`initdb` refuses root).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { LineLogger } from '../devserver/process.js';

const run = promisify(execFile);

/** A running PostgreSQL. */
export interface ClusterPostgres {
  host: string;
  port: number;
  /** Superuser (trust authentication on 127.0.0.1). */
  user: string;
  dataDir: string;
  /** PID of the postmaster. */
  pid: number;
  /** Stops the server (`pg_ctl stop -m fast`). Never throws. */
  stop(): Promise<void>;
}

/** Path of a PostgreSQL server binary (`initdb`, `pg_ctl`): on PATH, else the newest `/usr/lib/postgresql/<v>/bin`. */
export function findPostgresBinary(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  const base = '/usr/lib/postgresql';
  if (!fs.existsSync(base)) return undefined;
  for (const v of fs.readdirSync(base).sort((a, b) => Number(b) - Number(a))) {
    const p = path.join(base, v, 'bin', name);
    if (fs.existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Starts PostgreSQL on `127.0.0.1:port` with its data in `dataDir` (created with `initdb` when
 * empty; an existing one is reused, so the cluster keeps its state across restarts).
 *
 * @throws Error when the binaries are missing (with the package to install) or the server does not start.
 */
export async function startClusterPostgres(opts: {
  dataDir: string;
  port: number;
  log: LineLogger;
  user?: string;
}): Promise<ClusterPostgres> {
  const initdb = findPostgresBinary('initdb');
  const pgCtl = findPostgresBinary('pg_ctl');
  if (!initdb || !pgCtl)
    throw new Error('PostgreSQL server binaries not found: install them (Debian: apt-get install postgresql)');
  const user = opts.user ?? 'temporal';
  const asRoot = process.getuid?.() === 0;
  const exec = (bin: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', bin, ...args]) : run(bin, args);
  const dataDir = path.resolve(opts.dataDir);
  const sockDir = path.join(path.dirname(dataDir), 'pg-socket');
  fs.mkdirSync(sockDir, { recursive: true });
  if (asRoot) fs.chownSync(sockDir, ...postgresIds());
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (asRoot) fs.chownSync(dataDir, ...postgresIds());
    opts.log(`postgres: initdb ${dataDir}`);
    if (asRoot)
      await exec('test', ['-x', path.dirname(dataDir)]).catch(() => {
        throw new Error(
          `the postgres OS user cannot reach ${path.dirname(dataDir)}: every folder above the data directory must be traversable (chmod o+x), or choose another --data-dir`,
        );
      });
    await exec(initdb, ['-D', dataDir, '-U', user, '--auth=trust', '-E', 'UTF8', '--locale=C']);
  }
  const logFile = path.join(path.dirname(dataDir), 'postgres.log');
  if (asRoot && !fs.existsSync(logFile)) {
    fs.writeFileSync(logFile, '');
    fs.chownSync(logFile, ...postgresIds());
  }
  const settings = `-p ${opts.port} -k ${sockDir} -c listen_addresses=127.0.0.1 -c max_connections=300`;
  try {
    await exec(pgCtl, ['-D', dataDir, '-l', logFile, '-o', settings, '-w', '-t', '60', 'start']);
  } catch (e) {
    const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-10).join('\n') : '';
    throw new Error(`PostgreSQL did not start on port ${opts.port}: ${(e as Error).message}\n${tail}`);
  }
  opts.log(`postgres: listening on 127.0.0.1:${opts.port} (data ${dataDir})`);
  const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let stopped = false;
  return {
    pid,
    host: '127.0.0.1',
    port: opts.port,
    user,
    dataDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await exec(pgCtl, ['-D', dataDir, '-m', 'fast', '-w', 'stop']).catch((e: Error) =>
        opts.log(`postgres: stop failed: ${e.message}`),
      );
    },
  };
}

function postgresIds(): [number, number] {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const parts = line?.split(':');
  if (!parts?.[2] || !parts[3]) throw new Error('no `postgres` OS user (it comes with the Debian postgresql package)');
  return [Number(parts[2]), Number(parts[3])];
}
