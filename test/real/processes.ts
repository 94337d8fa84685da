/**
 * Server processes of the real-server suite (Redis, Firecrawl's API and queue worker, Scrapyd):
 * each started in a process group of its own, its output appended to a log file, ready once a
 * probe says so, stopped the way a service manager stops a service (SIGTERM to the whole group,
 * SIGKILL after a grace period), children included.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

/** What {@link startServerProcess} starts. */
export interface ServerProcessSpec {
  /** Name for messages (`firecrawl-api`, …). */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** File the process's stdout and stderr are appended to. */
  logFile: string;
  /** Resolves true once the process serves (called every 250 ms; errors count as "not yet"). */
  ready: () => Promise<boolean>;
  /** How long it may take to become ready, ms (default 120 s). */
  readyTimeoutMs?: number;
}

/** A started server process. */
export interface ServerProcess {
  readonly name: string;
  readonly pid: number;
  /** The last `n` lines of its log. */
  logTail(n?: number): string;
  /** SIGTERM to its process group, SIGKILL after `graceMs` (default 10 s); resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL to its process group; resolves when it has exited. */
  kill(): Promise<void>;
}

function tail(file: string, n: number): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '';
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Signals the child's whole process group (ignoring a group already gone). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone already
  }
}

/**
 * Starts `spec` and waits until its probe says it serves.
 *
 * @throws Error when it exits first or is not ready in time (the message has its log's tail); it is then stopped.
 */
export async function startServerProcess(spec: ServerProcessSpec): Promise<ServerProcess> {
  const out = fs.openSync(spec.logFile, 'a');
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    detached: true, // its own process group: a stop reaches the children it spawns (Scrapyd's crawls)
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  let exit: string | undefined;
  child.once('exit', (code, signal) => (exit = signal ? `killed by ${signal}` : `exited with code ${code}`));
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject));
  spawnError.catch(() => undefined);
  const proc: ServerProcess = {
    name: spec.name,
    pid: child.pid ?? -1,
    logTail: (n = 40) => tail(spec.logFile, n),
    async stop(graceMs = 10_000) {
      signalGroup(child, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
      await exited(child);
      clearTimeout(timer);
      signalGroup(child, 'SIGKILL'); // what the leader left behind
    },
    async kill() {
      signalGroup(child, 'SIGKILL');
      await exited(child);
    },
  };
  const timeoutMs = spec.readyTimeoutMs ?? 120_000;
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (exit !== undefined || child.pid === undefined) {
      await Promise.race([spawnError, Promise.resolve()]).catch((e: Error) => (exit ??= e.message));
      throw new Error(
        `${spec.name} ${exit ?? 'did not start'} before serving; its log (${spec.logFile}):\n${proc.logTail()}`,
      );
    }
    if (await spec.ready().catch(() => false)) return proc;
    if (Date.now() > until) {
      await proc.stop(2_000);
      throw new Error(
        `${spec.name} did not serve within ${timeoutMs} ms; its log (${spec.logFile}):\n${proc.logTail()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** True when `url` answers with a status below 500 within 2 s. */
export async function answers(url: string): Promise<boolean> {
  const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  await r.body?.cancel();
  return r.status < 500;
}
