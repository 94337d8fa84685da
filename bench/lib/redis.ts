/**
 * A Redis server for the BullMQ phase of `bench:throughput`: Debian's `redis-server` (install it
 * with `apt-get install -y redis-server`), started on a free loopback port with no persistence
 * (`--save '' --appendonly no`), its working directory in the benchmark's temp directory, stopped
 * after the phase. Its process is measured as that phase's "server". Commands are counted from its
 * own `INFO` (read with `redis-cli`, which the same package installs).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/lib/ports.js';

const run = promisify(execFile);

/** A running Redis server. */
export interface RedisServer {
  host: string;
  port: number;
  pid: number;
  /** `redis-server --version`. */
  version: string;
  /**
   * Commands the server processed so far (`total_commands_processed`, which in Redis 7 counts the
   * commands a Lua script runs as well as the script call itself) and each command's calls from
   * `INFO commandstats` (the same counting; `evalsha` is one script call).
   */
  commands(): Promise<{ total: number; byCommand: Record<string, number> }>;
  /** Stops the server (SIGTERM, SIGKILL after 5 s); resolves when it exited. */
  stop(): Promise<void>;
}

/** Why there is no Redis server: the reason, for the report. */
export interface RedisUnavailable {
  unavailable: string;
}

/** Path of `name` on `PATH`, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Starts `redis-server` in `dir` on a free loopback port and waits until it answers `PING`
 * (at most 15 s). Resolves {@link RedisUnavailable} with the reason instead of throwing when the
 * binary is missing or the server does not come up, so that the other phases still run.
 */
export async function startRedis(dir: string): Promise<RedisServer | RedisUnavailable> {
  const server = onPath('redis-server');
  const cli = onPath('redis-cli');
  if (!server || !cli)
    return {
      unavailable: `${server ? 'redis-cli' : 'redis-server'} is not on PATH (install Debian's package: apt-get install -y redis-server)`,
    };
  const version = (await run(server, ['--version'])).stdout.trim();
  const host = '127.0.0.1';
  const port = await freePort(host);
  const work = path.join(dir, 'redis');
  fs.mkdirSync(work, { recursive: true });
  const logFile = path.join(work, 'redis.log');
  const child: ChildProcess = spawn(
    server,
    [
      '--bind',
      host,
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      work,
      '--logfile',
      logFile,
      '--daemonize',
      'no',
      '--protected-mode',
      'yes',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const cliArgs = ['-h', host, '-p', String(port)];
  const until = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) return { unavailable: `redis-server exited with ${child.exitCode}: ${tail(logFile)}` };
    const pong = await run(cli, [...cliArgs, 'PING']).then(
      (r) => r.stdout.trim(),
      () => '',
    );
    if (pong === 'PONG') break;
    if (Date.now() > until) {
      child.kill('SIGKILL');
      return { unavailable: `redis-server did not answer PING within 15 s: ${tail(logFile)}` };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host,
    port,
    pid: child.pid!,
    version,
    async commands() {
      const info = (await run(cli, [...cliArgs, 'INFO', 'all'])).stdout;
      const totalCommands = Number(/^total_commands_processed:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
      const byCommand: Record<string, number> = {};
      for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) byCommand[m[1]!] = Number(m[2]);
      return { total: totalCommands, byCommand };
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(-500).trim() || '(empty log)';
  } catch {
    return '(no log)';
  }
}
