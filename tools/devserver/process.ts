/**
 * Small process helpers shared by `temporalCli.ts` and `devServer.ts`: run a command to completion
 * with a timeout and a bounded output tail, and a bounded ring buffer for a long-running child's
 * output. No shell is involved anywhere (arguments are passed as an array).
 */
import { spawn } from 'node:child_process';

/** A one-line logger; each call is one line without the trailing newline. */
export type LineLogger = (line: string) => void;

/** Default logger: writes `[devserver] <line>` to stderr. */
export const stderrLogger: LineLogger = (line) => {
  process.stderr.write(`[devserver] ${line}\n`);
};

/** Outcome of {@link runCommand}. `spawnError` is set (and `code` is null) when the command could not start. */
export interface RunResult {
  /** Exit code, or null when killed by a signal or not started. */
  code: number | null;
  /** Signal that ended the process, if any (e.g. `SIGKILL` after a timeout). */
  signal: NodeJS.Signals | null;
  /** Last {@link OutputTail} bytes of stdout. */
  stdout: string;
  /** Last {@link OutputTail} bytes of stderr. */
  stderr: string;
  /** Node's spawn error, e.g. `ENOENT` when the command is not on `env.PATH`. */
  spawnError?: NodeJS.ErrnoException;
  /** True when the command was killed because it ran longer than `timeoutMs`. */
  timedOut: boolean;
  /** Wall time in ms. */
  tookMs: number;
}

/**
 * Keeps the last `maxBytes` bytes of a stream of text (for error messages: "the tail of stderr").
 */
export class OutputTail {
  private chunks: string[] = [];
  private size = 0;
  /** @param maxBytes how many trailing characters to keep (default 16 KiB). */
  constructor(private readonly maxBytes = 16 * 1024) {}

  /** Appends a chunk, dropping the oldest text beyond `maxBytes`. */
  push(chunk: string | Buffer): void {
    const s = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    this.chunks.push(s);
    this.size += s.length;
    while (this.size > this.maxBytes && this.chunks.length > 1) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  /** The kept text; at most `maxBytes` characters (the start of the first chunk may be cut). */
  text(): string {
    const all = this.chunks.join('');
    return all.length > this.maxBytes ? all.slice(all.length - this.maxBytes) : all;
  }

  /** The last `n` non-empty lines of the kept text. */
  lastLines(n: number): string {
    return this.text()
      .split(/\r?\n/)
      .filter((l) => l.trim() !== '')
      .slice(-n)
      .join('\n');
  }
}

/**
 * Runs `command args...` without a shell, stdin closed, stdout/stderr captured (tails only),
 * and kills it with SIGKILL after `timeoutMs` ms. Never throws: spawn failures are reported in
 * {@link RunResult.spawnError}. The command is looked up on `env.PATH` (Node's documented
 * behaviour when `env` is given).
 */
export function runCommand(
  command: string,
  args: readonly string[],
  opts: { env: NodeJS.ProcessEnv; timeoutMs: number; cwd?: string; tailBytes?: number },
): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const stdout = new OutputTail(opts.tailBytes);
    const stderr = new OutputTail(opts.tailBytes);
    let timedOut = false;
    let settled = false;
    const child = spawn(command, [...args], {
      env: opts.env,
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    const finish = (r: Omit<RunResult, 'stdout' | 'stderr' | 'timedOut' | 'tookMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, stdout: stdout.text(), stderr: stderr.text(), timedOut, tookMs: Date.now() - started });
    };
    child.stdout.on('data', (d: Buffer) => stdout.push(d));
    child.stderr.on('data', (d: Buffer) => stderr.push(d));
    child.on('error', (err: NodeJS.ErrnoException) => finish({ code: null, signal: null, spawnError: err }));
    child.on('close', (code, signal) => finish({ code, signal }));
  });
}

/** A human-readable one-line reason for a failed {@link RunResult} (exit status + last stderr line). */
export function describeFailure(command: string, r: RunResult, timeoutMs: number): string {
  if (r.spawnError) {
    return r.spawnError.code === 'ENOENT'
      ? `\`${command}\` not found on PATH`
      : `could not run \`${command}\`: ${r.spawnError.message}`;
  }
  const last = lastLine(r.stderr) || lastLine(r.stdout);
  if (r.timedOut) return `\`${command}\` timed out after ${timeoutMs} ms${last ? `: ${last}` : ''}`;
  const status = r.signal ? `killed by ${r.signal}` : `exited with code ${r.code}`;
  return `\`${command}\` ${status}${last ? `: ${last}` : ''}`;
}

function lastLine(s: string): string {
  const lines = s
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines[lines.length - 1] ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
