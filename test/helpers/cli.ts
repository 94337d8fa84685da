/**
 * Runs the command line from source (`node --import tsx src/cli.ts <args>`) as a user would, and
 * returns its exit code and output (recorded for the secrets scan). A command that has not ended
 * after `timeoutMs` is killed and reported with exit code -1.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { recordCli } from './evidence.js';

const run = promisify(execFile);
const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** What a command printed and how it exited. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `scrape <args>` from source with `env` added to the process's (no `$SCRAPE_CONFIG` unless given). */
export async function runCli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CliRun> {
  try {
    const r = await run(
      process.execPath,
      ['--import', import.meta.resolve('tsx'), path.join(REPO, 'src/cli.ts'), ...args],
      {
        cwd: opts.cwd ?? REPO,
        env: { ...process.env, SCRAPE_CONFIG: '', FORCE_COLOR: '0', ...opts.env },
        timeout: opts.timeoutMs ?? 90_000,
      },
    );
    return recordCli(args, { code: 0, stdout: r.stdout, stderr: r.stderr });
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return recordCli(args, {
      code: typeof err.code === 'number' ? err.code : -1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    });
  }
}
