/**
 * The command line as a user runs it, from source (`node --import tsx src/cli.ts <args>`), for the
 * tests that read its output and exit code: stdout and stderr apart, the exit code, and how long
 * the run took (a figure to print, never to assert). Every run is recorded for the secrets scan.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { recordCli } from './evidence.js';
import { REPO } from './stack.js';

/** How a CLI run ended. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit, ms. */
  ms: number;
}

/**
 * Runs the CLI from source with `args`, then `--config <config>` when given. The environment is
 * this process's without `SCRAPE_CONFIG`, colours off, plus `env`. Never rejects: a non-zero exit
 * is a result (`timeoutMs`, default 120 s, kills a run that hangs: its code is then -1).
 */
export function runCli(
  args: string[],
  opts: { config?: string; cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CliRun> {
  const argv = [
    '--import',
    import.meta.resolve('tsx'),
    path.join(REPO, 'src/cli.ts'),
    ...args,
    ...(opts.config ? ['--config', opts.config] : []),
  ];
  const t0 = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      argv,
      {
        cwd: opts.cwd ?? REPO,
        env: { ...process.env, SCRAPE_CONFIG: '', FORCE_COLOR: '0', ...opts.env },
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve(recordCli(args, { code, stdout, stderr, ms: Date.now() - t0 }));
      },
    );
  });
}

/** The JSON error object a command prints on stdout under `--json` (see `src/cli/main.ts`). */
export interface CliJsonError {
  error: { code: string; message: string; exitCode: number; details?: Record<string, unknown> };
}

/** Parses stdout of a `--json` run that failed; throws with the output when it is not one JSON error object. */
export function jsonError(r: CliRun): CliJsonError['error'] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(r.stdout);
  } catch {
    throw new Error(`stdout is not JSON (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
  const e = (parsed as Partial<CliJsonError>).error;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.exitCode !== 'number')
    throw new Error(`not a JSON error object (exit ${r.code}): ${r.stdout}`);
  return e;
}
