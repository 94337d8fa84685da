/**
 * Long-running commands as a user or a process manager runs them, for the tests that stop them
 * with a signal: `npm run <script>` started in a process group of its own, its output collected,
 * the signal sent to npm alone (as a process manager does), the time to exit measured, and what is
 * left of the group afterwards (Linux `/proc`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { recordCli } from './evidence.js';
import { REPO, waitFor } from './stack.js';

/** How a command ended. */
export interface CommandExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A command started by {@link startNpm}. */
export interface RunningCommand {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr interleaved. */
  output(): string;
  exited: Promise<CommandExit>;
  /** Waits until its output matches `re`; returns the match. */
  waitForOutput(re: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** SIGKILLs its whole process group if anything of it is still running (for `afterAll`). */
  kill(): void;
}

/** Starts `npm run --silent <script> -- <args>` in its own process group. */
export function startNpm(script: string, args: string[], env: NodeJS.ProcessEnv = {}): RunningCommand {
  const child = spawn('npm', ['run', '--silent', script, '--', ...args], {
    cwd: REPO,
    env: { ...process.env, FORCE_COLOR: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<CommandExit>((resolve) =>
    child.once('exit', (code, signal) => {
      recordCli(['npm', 'run', script, '--', ...args], { code, out }); // kept for the secrets scan
      resolve({ code, signal });
    }),
  );
  return {
    child,
    output: () => out,
    exited,
    waitForOutput: (re, timeoutMs) =>
      waitFor(
        () => re.exec(out) ?? undefined,
        timeoutMs,
        `${re} in the output of npm run ${script}:\n${out.slice(-3000)}`,
      ),
    kill() {
      if (child.pid !== undefined && groupMembers(child.pid).length > 0) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The PIDs of `pid`'s direct children. */
export function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The live processes (not zombies) of process group `pgid`, as `pid command`. */
export function groupMembers(pgid: number): string[] {
  const found: string[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const fields = st.slice(st.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid)
        found.push(`${e} ${st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'))}`);
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

/**
 * Sends `signal` to npm alone and waits for it to exit; returns how it ended and how long that
 * took (ms). Rejects when it has not exited within `boundMs`.
 */
export async function stopWith(
  cmd: RunningCommand,
  signal: NodeJS.Signals,
  boundMs = 10_000,
): Promise<CommandExit & { ms: number }> {
  const t0 = Date.now();
  process.kill(cmd.child.pid!, signal);
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    cmd.exited,
    new Promise<never>((_r, reject) => {
      timer = setTimeout(
        () => reject(new Error(`still running ${boundMs} ms after ${signal}; output:\n${cmd.output().slice(-3000)}`)),
        boundMs,
      );
    }),
  ]).finally(() => clearTimeout(timer));
  return { ...exit, ms: Date.now() - t0 };
}
