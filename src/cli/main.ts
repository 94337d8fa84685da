/**
 * The command line's program: its name, help and exit codes, and the registration of its
 * commands, one file each under `commands/` (shared parts: `context.ts` for the configuration,
 * runtime and account, `options.ts` for argument parsers and common flags, `print.ts` for tables).
 * The process entry is `src/cli.ts` (`bin/scrape.js` runs its build, `dist/cli.js`).
 *
 * Exit codes: 0 success; 1 a job failed or did not complete, or a service failed (Temporal
 * unreachable, …); 2 invalid input (a bad row or argument, a missing input or configuration file,
 * an invalid configuration, a request refused for the job's state such as `resolve` of a job that
 * is not in `unknown`, a key reused with other parameters); 3 no such job.
 *
 * Start-up time: only commander and pure modules load before a command runs; each command imports
 * what it needs (the Temporal client, the store, …) when it runs, so `--help` answers at once.
 */
import { Command } from 'commander';
import { ScrapeError } from '../client/errors.js';
import { registerApi } from './commands/api.js';
import { registerCancel } from './commands/cancel.js';
import { registerCancelBatch } from './commands/cancelBatch.js';
import { registerDemo } from './commands/demo.js';
import { registerIncident } from './commands/incident.js';
import { registerList } from './commands/list.js';
import { registerOrphans } from './commands/orphans.js';
import { registerResolve } from './commands/resolve.js';
import { registerResult } from './commands/result.js';
import { registerResume } from './commands/resume.js';
import { registerRun } from './commands/run.js';
import { registerSetup } from './commands/setup.js';
import { registerStatus } from './commands/status.js';
import { registerSubmit } from './commands/submit.js';
import { registerTimeline } from './commands/timeline.js';
import { registerUpgradeCheck } from './commands/upgrade.js';
import { registerWorker } from './commands/worker.js';
import { EXIT, temporalAddressInUse } from './context.js';

/** Builds the command tree, commands in the order `--help` lists them (exported for tests). */
export function buildCli(): Command {
  const program = new Command('scrape')
    .description('Durable orchestration of asynchronous scraping APIs on Temporal')
    .showHelpAfterError()
    // Usage errors (unknown option, bad argument) exit 2 like every other invalid input; help and version 0.
    .exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.invalid))
    .configureHelp({ sortSubcommands: false })
    .addHelpText(
      'after',
      '\nExit codes: 0 done; 1 failed or not completed (or Temporal unreachable); 2 invalid input (usage, a missing input or config file, a refused request); 3 no such job.',
    );
  // Registered after the program's settings: each command inherits them (exit override, help).
  for (const register of [
    registerRun,
    registerSubmit,
    registerStatus,
    registerResult,
    registerCancel,
    registerResume,
    registerResolve,
    registerTimeline,
    registerIncident,
    registerOrphans,
    registerCancelBatch,
    registerList,
    registerSetup,
    registerUpgradeCheck,
    registerWorker,
    registerApi,
    registerDemo,
  ]) {
    register(program);
  }
  return program;
}

/** True for the errors of a Temporal that cannot be reached (gRPC UNAVAILABLE / DEADLINE_EXCEEDED, refused connections). */
function isTemporalUnreachable(e: unknown): boolean {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    const code = (c as { code?: unknown }).code;
    if (code === 14 || code === 4) return true;
    if (
      c instanceof Error &&
      /Failed to connect to Temporal server|ECONNREFUSED|No connection established|UNAVAILABLE/i.test(c.message)
    )
      return true;
  }
  return false;
}

/** Prints what a command threw on one line and exits with its code (see the exit codes above). */
function exitOnError(e: unknown): never {
  if (e instanceof ScrapeError) {
    console.error(`error (${e.code}): ${e.message}`);
    process.exit(
      e.code === 'not_found'
        ? EXIT.notFound
        : e.code === 'invalid' || e.code === 'conflict'
          ? EXIT.invalid
          : EXIT.failed,
    );
  }
  if (isTemporalUnreachable(e)) {
    const address = temporalAddressInUse();
    console.error(
      `error: cannot reach Temporal${address ? ` at ${address}` : ''} (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); status, result, list, timeline, incident and orphans read only the store and work without it`,
    );
    process.exit(EXIT.failed);
  }
  console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(EXIT.failed);
}

/** Runs the CLI on `argv` (the shape of `process.argv`): parses it, runs the command, and exits non-zero with a one-line error when it throws. */
export async function main(argv: string[] = process.argv): Promise<void> {
  await buildCli().parseAsync(argv).catch(exitOnError);
}
