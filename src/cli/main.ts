/**
 * The command line's program: its name, help and exit codes, and the registration of its
 * commands, one file each under `commands/` (shared parts: `context.ts` for the configuration,
 * runtime and account, `options.ts` for argument parsers and common flags, `print.ts` for tables).
 * The process entry is `src/cli.ts` (`bin/scrape.js` runs its build, `dist/cli.js`).
 *
 * Exit codes: {@link EXIT_CODES_TEXT}; a request refused for the job's state (`resolve` of a job
 * not in `unknown`) or a key reused with other parameters is invalid input (2).
 *
 * Errors: one line on stderr, `error (<code>): <message>`; with `--json`, one JSON object on
 * stdout instead (see {@link CliErrorJson}), with the same exit code. Either way a URL's
 * credentials are never shown.
 *
 * Start-up time: only commander and pure modules load before a command runs; each command imports
 * what it needs (the Temporal client, the store, …) when it runs, so `--help` answers at once.
 */
import { Command, CommanderError } from 'commander';
import { ScrapeError } from '../client/errors.js';
import { redactUrlCredentials } from '../lib/sanitize.js';
import { registerApi } from './commands/api.js';
import { registerBudgets } from './commands/budgets.js';
import { registerCost } from './commands/cost.js';
import { registerCancel } from './commands/cancel.js';
import { registerCancelBatch } from './commands/cancelBatch.js';
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
import { CliError, EXIT, temporalAddressInUse } from './context.js';
import { printJson } from './print.js';

/** The exit codes every command shares, as `--help` and `docs/cli.md` state them. */
export const EXIT_CODES_TEXT =
  'Exit codes: 0 done; 1 failed or not completed (or Temporal unreachable); 2 invalid input (usage, a missing input or config file, a refused request); 3 no such job (or budget); 4 refused by a budget of the account (nothing was started).';

/** Every command's registration, in the order `--help` lists them. */
const COMMANDS: ((program: Command) => void)[] = [
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
  registerCost,
  registerBudgets,
  registerSetup,
  registerUpgradeCheck,
  registerWorker,
  registerApi,
];

/**
 * Builds the command tree, commands in the order `--help` lists them (exported for tests and the
 * reference generator). With `json`, commander's own messages (a usage error and the help after
 * it) are not written: the error is printed as JSON by {@link main} instead.
 */
export function buildCli(opts: { json?: boolean } = {}): Command {
  const program = asCommandLine(
    new Command('scrape').description('Durable orchestration of asynchronous scraping APIs on Temporal'),
    opts,
  );
  // Registered after the program's settings: each command inherits them (exit override, output, help).
  for (const register of COMMANDS) register(program);
  return program;
}

/**
 * Gives `program` the command line's settings: usage errors exit 2 like every other invalid input
 * (help and version 0), and with `json` commander's own messages are not written (the error is
 * printed as JSON by {@link main} or by a tool's own entry). The demo tool uses it too.
 */
export function asCommandLine(program: Command, opts: { json?: boolean } = {}): Command {
  return program
    .showHelpAfterError()
    .configureOutput({
      writeErr: (s) => (opts.json ? undefined : process.stderr.write(s)),
      outputError: (s, write) => (opts.json ? undefined : write(s)),
    })
    .exitOverride((err) => {
      if (err.exitCode === 0) process.exit(EXIT.ok);
      if (opts.json) reportError(new CliError('usage', usageMessage(err), EXIT.invalid), true);
      process.exit(EXIT.invalid);
    })
    .configureHelp({ sortSubcommands: false })
    .addHelpText('after', `\n${EXIT_CODES_TEXT}`);
}

/** commander's message of a usage error without its `error: ` prefix (a bare `scrape` asks for a command). */
function usageMessage(err: CommanderError): string {
  if (err.code === 'commander.help' || err.code === 'commander.executeSubCommandAsync')
    return 'no command given; `scrape --help` lists them';
  return err.message.replace(/^error: /, '');
}

/** True for the errors of a Temporal that cannot be reached (gRPC UNAVAILABLE / DEADLINE_EXCEEDED, refused connections). */
function isTemporalUnreachable(e: unknown): boolean {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    const code = (c as { code?: unknown }).code;
    if (code === 14 || code === 4) return true;
    if (
      c instanceof Error &&
      /Failed to connect to Temporal server|Failed to connect before the deadline|ECONNREFUSED|No connection established|UNAVAILABLE/i.test(
        c.message,
      )
    )
      return true;
  }
  return false;
}

/**
 * An error as `--json` prints it, on stdout, one object; the process exits with `exitCode`.
 * `code` is stable: `invalid`, `conflict`, `usage` (exit 2); `not_found` (exit 3);
 * `budget_exceeded` (exit 4); `not_ready`, `expired`, `temporal_unreachable`, `empty_field`,
 * `error` (anything else; exit 1). `details`
 * carries the fields safe to show (the state of a job without a result, the issues of invalid
 * input, the Temporal address, …), when there are any.
 */
export interface CliErrorJson {
  error: { code: string; message: string; exitCode: number; details?: Record<string, unknown> };
}

/** What a thrown value is to the user: its stable code, message, exit code and details. */
export function describeError(e: unknown): CliErrorJson['error'] {
  const withDetails = (d: Record<string, unknown>) => (Object.keys(d).length > 0 ? { details: d } : {});
  if (e instanceof CliError)
    return { code: e.code, message: e.message, exitCode: e.exitCode, ...withDetails(e.details) };
  if (e instanceof ScrapeError) {
    const exitCode =
      e.code === 'not_found'
        ? EXIT.notFound
        : e.code === 'invalid' || e.code === 'conflict'
          ? EXIT.invalid
          : e.code === 'budget_exceeded'
            ? EXIT.budget
            : EXIT.failed;
    return { code: e.code, message: e.message, exitCode, ...withDetails(e.details) };
  }
  if (isTemporalUnreachable(e)) {
    const address = temporalAddressInUse();
    return {
      code: 'temporal_unreachable',
      message: `cannot reach Temporal${address ? ` at ${address}` : ''} (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); status, result, list, timeline, incident and orphans read only the store and work without it`,
      exitCode: EXIT.failed,
      ...withDetails(address ? { address } : {}),
    };
  }
  return { code: 'error', message: e instanceof Error ? e.message : String(e), exitCode: EXIT.failed };
}

/** Prints `e` (one line on stderr, or with `json` the {@link CliErrorJson} object on stdout); returns its exit code. */
export function reportError(e: unknown, json: boolean): number {
  const d = describeError(e);
  if (json) printJson({ error: d } satisfies CliErrorJson);
  else console.error(`error (${d.code}): ${redactUrlCredentials(d.message)}`);
  return d.exitCode;
}

/** True when `argv` (the shape of `process.argv`) asks for JSON: `--json` before any `--`. */
export function wantsJson(argv: string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}

/**
 * Runs the CLI on `argv` (the shape of `process.argv`): parses it, runs the command, and when it
 * throws, reports the error (a line on stderr, or JSON on stdout under `--json`) and exits with
 * its code (see the exit codes above).
 */
export async function main(argv: string[] = process.argv): Promise<void> {
  const json = wantsJson(argv);
  await buildCli({ json })
    .parseAsync(argv)
    .catch((e: unknown) => process.exit(reportError(e, json)));
}
