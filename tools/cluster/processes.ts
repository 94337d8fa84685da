/**
 * The child processes of the topology (server services, the Web UI): each one spawned without a
 * shell, its output appended to `<logDir>/<name>.log`, stopped with SIGTERM then SIGKILL.
 *
 * Lifetime: none of them may outlive the process that started them. One small watchdog process
 * (`node -e`) reads the PID of every child from a pipe; when the starting process ends for any
 * reason (even SIGKILL) the pipe closes and the watchdog sends SIGTERM, then SIGKILL after the grace
 * period, to exactly those PIDs. Nothing else is ever signalled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { LineLogger } from '../devserver/process.js';

/** How to start one named child. */
export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

/** A started child. */
export interface RunningChild {
  spec: ChildSpec;
  child: ChildProcess;
  pid: number;
  /** Settles when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const WATCHDOG_JS = `
const graceMs = Number(process.argv[1]);
const pids = new Set();
let buf = '';
const alive = (p) => { try { process.kill(p, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
let killing = false;
const killAll = () => {
  if (killing) return;
  killing = true;
  for (const p of pids) { try { process.kill(p, 'SIGTERM'); } catch {} }
  const deadline = Date.now() + graceMs;
  setInterval(() => {
    const left = [...pids].filter(alive);
    if (!left.length) process.exit(0);
    if (Date.now() > deadline) { for (const p of left) { try { process.kill(p, 'SIGKILL'); } catch {} } process.exit(0); }
  }, 100);
};
process.on('SIGINT', () => {});
process.on('SIGHUP', () => {});
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\\n')) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    const m = /^([+-])(\\d+)$/.exec(line.trim());
    if (m) { if (m[1] === '+') pids.add(Number(m[2])); else pids.delete(Number(m[2])); }
  }
});
process.stdin.on('end', killAll);
process.stdin.on('close', killAll);
process.stdin.on('error', killAll);
`;

/** A set of named children with one watchdog. */
export class ProcessGroup {
  private readonly children = new Map<string, RunningChild>();
  private readonly watchdog: ChildProcess;

  /**
   * @param logDir where each child's output goes (`<name>.log`, appended)
   * @param graceMs SIGTERM → SIGKILL grace period, ms
   */
  constructor(
    private readonly logDir: string,
    private readonly log: LineLogger,
    private readonly graceMs = 10_000,
  ) {
    fs.mkdirSync(logDir, { recursive: true });
    this.watchdog = spawn(process.execPath, ['-e', WATCHDOG_JS, String(graceMs)], {
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { PATH: process.env.PATH },
    });
    this.watchdog.on('error', () => undefined);
    this.watchdog.unref();
    (this.watchdog.stdin as unknown as { unref?: () => void }).unref?.();
  }

  /** Log file of a child. */
  logFile(name: string): string {
    return path.join(this.logDir, `${name}.log`);
  }

  /** The running child called `name`, if any. */
  get(name: string): RunningChild | undefined {
    return this.children.get(name);
  }

  /** Names of the children started and not stopped. */
  names(): string[] {
    return [...this.children.keys()];
  }

  /**
   * Spawns `spec` (a child of the same name must not be running).
   * @throws Error when the command cannot be started.
   */
  start(spec: ChildSpec): RunningChild {
    if (this.children.has(spec.name)) throw new Error(`${spec.name} is already running`);
    const out = fs.openSync(this.logFile(spec.name), 'a');
    const child = spawn(spec.command, spec.args, { env: spec.env, cwd: spec.cwd, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    if (child.pid === undefined) throw new Error(`could not start ${spec.name} (${spec.command})`);
    const pid = child.pid;
    this.watchdog.stdin?.write(`+${pid}\n`);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => {
        this.watchdog.stdin?.write(`-${pid}\n`);
        if (this.children.get(spec.name)?.pid === pid) this.children.delete(spec.name);
        resolve({ code, signal });
      });
    });
    child.on('error', () => undefined);
    const running = { spec, child, pid, exited };
    this.children.set(spec.name, running);
    this.log(`${spec.name}: started pid ${pid} (log ${this.logFile(spec.name)})`);
    return running;
  }

  /**
   * Puts a process this group did not spawn (PostgreSQL's postmaster, which `pg_ctl` daemonises)
   * under the watchdog, so that it too ends if the starting process dies.
   */
  adopt(pid: number): void {
    this.watchdog.stdin?.write(`+${pid}\n`);
  }

  /** Sends `signal` to the child `name` (e.g. SIGKILL in a test) and waits for it to exit. */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const c = this.children.get(name);
    if (!c) return;
    c.child.kill(signal);
    await c.exited;
    this.log(`${name}: pid ${c.pid} ended by ${signal}`);
  }

  /** Stops `name`: SIGTERM, then SIGKILL after the grace period. Never throws. */
  async stop(name: string): Promise<void> {
    const c = this.children.get(name);
    if (!c) return;
    c.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      c.exited,
      new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), this.graceMs))),
    ]);
    clearTimeout(timer);
    if (r === 'timeout') {
      this.log(`${name}: pid ${c.pid} did not stop within ${this.graceMs} ms, SIGKILL`);
      c.child.kill('SIGKILL');
      await c.exited;
    }
  }

  /** Stops every child (in reverse start order, `first` ones first), then the watchdog. */
  async stopAll(first: string[] = []): Promise<void> {
    for (const n of first) await this.stop(n);
    await Promise.all(
      this.names()
        .reverse()
        .map((n) => this.stop(n)),
    );
    this.watchdog.stdin?.end();
    if (this.watchdog.exitCode === null) this.watchdog.kill('SIGKILL');
  }
}
