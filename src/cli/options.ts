/**
 * The command line's argument parsers (each throws commander's `InvalidArgumentError` naming the
 * accepted form; commander prints it and exits 2), the options of every command that acts as an
 * account, and the poll-policy flags of `submit` and `run`.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { InvalidInputError } from '../client/errors.js';
import { formatDuration, parseDuration } from '../lib/duration.js';
import { JOB_STATES } from '../model/states.js';
import type { PollPolicy } from '../model/types.js';

/** A whole number above 0. */
export function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

/** A whole number (negative too). */
export function integer(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
}

/** A TCP port, 0 for any free one. */
export function port(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('a port 0-65535 (0: any free port)');
  return n;
}

/** A duration (`500ms`, `30s`, `5m`, a bare number of seconds) in ms. */
function duration(v: string): number {
  try {
    return parseDuration(v);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

/** A finite number. */
export function decimal(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('must be a number');
  return n;
}

/** One CSV delimiter character (`tab` for a tab). */
export function delimiter(v: string): string {
  const d = v === 'tab' || v === '\\t' ? '\t' : v;
  if ([...d].length !== 1 || d === '"' || d === '\n' || d === '\r')
    throw new InvalidArgumentError('one character (e.g. ";", "|", or "tab")');
  return d;
}

/** A comma-separated list of job states. */
export function stateList(v: string): string[] {
  const states = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = states.filter((x) => !(JOB_STATES as readonly string[]).includes(x));
  if (states.length === 0 || bad.length > 0)
    throw new InvalidArgumentError(
      `unknown state(s) ${bad.join(', ') || '(none given)'}; one of ${JOB_STATES.join(', ')}`,
    );
  return states;
}

/** The options of every command that acts as an account: `--config <file>` and `--account <name>`. */
export function accountOptions(c: Command): Command {
  return c
    .option('-c, --config <file>', "configuration file (default: $SCRAPE_CONFIG, else the demo's)")
    .option('-a, --account <name>', 'account to act as');
}

/** Command `name` of `program` on one `<job>` (a job ID or its key), with {@link accountOptions}. */
export function jobCommand(program: Command, name: string): Command {
  return accountOptions(program.command(name).argument('<job>', 'a job ID (`scrape:<account>:<key>`) or just its key'));
}

/** The poll-policy flags of `submit` and `run` (durations: a number with ms/s/m/h/d, or seconds). */
export function policyOptions(c: Command): Command {
  return c
    .addOption(
      new Option(
        '--deadline <duration>',
        'tracking deadline, counted from the moment the provider has the task (e.g. 30m, 2h; a bare number is seconds; default 30m); past it the job is tracking_interrupted, resumable',
      ).argParser(duration),
    )
    .addOption(
      new Option('--on-deadline <action>', 'at the deadline: stop tracking, or cancel at the provider').choices([
        'interrupt',
        'cancel',
      ]),
    )
    .addOption(
      new Option(
        '--poll-initial <duration>',
        'delay before the first status check (e.g. 500ms, 2s; default 2s)',
      ).argParser(duration),
    )
    .addOption(
      new Option('--poll-max <duration>', 'longest delay between two status checks (e.g. 1m; default 60s)').argParser(
        duration,
      ),
    )
    .addOption(
      new Option('--poll-multiplier <x>', 'growth of the delay after each check, 1-10 (default 1.5)').argParser(
        decimal,
      ),
    )
    .addOption(
      new Option('--poll-jitter <fraction>', 'random spread of each delay, 0-1 (default 0.2)').argParser(decimal),
    );
}

/**
 * The poll policy of the flags, validated against the model's schema; throws
 * {@link InvalidInputError} naming the flag, its bounds and what was given.
 */
export async function policyFrom(opts: {
  deadline?: number;
  onDeadline?: 'interrupt' | 'cancel';
  pollInitial?: number;
  pollMax?: number;
  pollMultiplier?: number;
  pollJitter?: number;
}): Promise<Partial<PollPolicy> | undefined> {
  const flags = {
    deadlineMs: ['--deadline', opts.deadline],
    onDeadline: ['--on-deadline', opts.onDeadline],
    initialDelayMs: ['--poll-initial', opts.pollInitial],
    maxDelayMs: ['--poll-max', opts.pollMax],
    multiplier: ['--poll-multiplier', opts.pollMultiplier],
    jitter: ['--poll-jitter', opts.pollJitter],
  } as const;
  const policy = Object.fromEntries(
    Object.entries(flags)
      .filter(([, [, v]]) => v !== undefined)
      .map(([k, [, v]]) => [k, v]),
  );
  if (Object.keys(policy).length === 0) return undefined;
  const { PollPolicySchema } = await import('../model/schemas.js');
  const r = PollPolicySchema.safeParse(policy);
  if (r.success) return r.data;
  const given = (k: keyof typeof flags) =>
    `${flags[k][0]} ${typeof policy[k] === 'number' && k.endsWith('Ms') ? formatDuration(policy[k]) : String(policy[k])}`;
  const lines = r.error.issues.map((i) => {
    const k = String(i.path[0]) as keyof typeof flags;
    if (k === 'initialDelayMs' && policy.maxDelayMs !== undefined && i.code === 'custom')
      return `${given('initialDelayMs')} is longer than ${given('maxDelayMs')}`;
    const field = PollPolicySchema.shape[k]?.unwrap() as
      { minValue?: number | null; maxValue?: number | null } | undefined;
    if (k.endsWith('Ms') && field?.minValue != null && field.maxValue != null)
      return `${given(k)}: must be from ${formatDuration(field.minValue)} to ${formatDuration(field.maxValue)}`;
    return `${given(k)}: ${i.message}`;
  });
  throw new InvalidInputError(`invalid poll policy:\n  ${lines.join('\n  ')}`, r.error.issues);
}

/** `--json` as every command has it: the command's output, and an error, as JSON on stdout. */
export function jsonOption(c: Command, what = 'print JSON'): Command {
  return c.option('--json', `${what} (an error too: one JSON object {"error": {code, message, exitCode, details?}})`);
}

const EXIT_NOTES = new WeakMap<Command, string>();

/**
 * States what the exit codes of command `c` mean where they say more than the shared ones
 * (`--help` after the options, and `docs/cli.md`, which reads it back with {@link exitNoteOf}).
 */
export function exitNote(c: Command, note: string): Command {
  EXIT_NOTES.set(c, note);
  return c.addHelpText('after', `\nExit codes: ${note}`);
}

/** The note {@link exitNote} gave command `c`, if any. */
export function exitNoteOf(c: Command): string | undefined {
  return EXIT_NOTES.get(c);
}
