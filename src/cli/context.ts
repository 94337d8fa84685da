/**
 * What every command of the command line shares: the exit codes, the configuration, the runtime
 * (Temporal client and store), the account it acts as, and job IDs given as keys.
 *
 * Only type imports at the top: a command loads the configuration, the runtime and the client
 * when it runs, so that `--help` loads none of them.
 */
import { InvalidInputError } from '../client/errors.js';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';

/** Exit codes: 0 done; 1 failed or not completed (also Temporal unreachable); 2 invalid input; 3 no such job (or budget); 4 refused by a budget. */
export const EXIT = { ok: 0, failed: 1, invalid: 2, notFound: 3, budget: 4 } as const;

/**
 * How long a command that needs Temporal waits for it to answer (connection and `GetSystemInfo`),
 * ms: past it the command fails saying so, instead of the client's retries (about 20 s of them).
 */
export const TEMPORAL_CONNECT_BUDGET_MS = 3_000;

/**
 * An error of the command line itself (not of the client): a stable `code` (see
 * `main.ts`, the JSON error shape), the process exit code, and fields safe to show.
 */
export class CliError extends Error {
  constructor(
    readonly code: 'usage' | 'temporal_unreachable' | 'empty_field',
    message: string,
    readonly exitCode: number,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'CliError';
  }
}

let temporalAddress: string | undefined;

/** The Temporal address of the configuration the command opened, for the "cannot reach Temporal" message; undefined before one is opened. */
export function temporalAddressInUse(): string | undefined {
  return temporalAddress;
}

/**
 * The configuration of `explicit` (`--config`), else `$SCRAPE_CONFIG`, else the running demo's,
 * and its file. Throws {@link InvalidInputError} (exit 2) for a missing or invalid one.
 */
export async function loadCliConfig(explicit?: string): Promise<{ config: Config; file: string }> {
  const { findConfigFile } = await import('../runtime.js');
  const { loadConfigFile } = await import('../config.js');
  try {
    const file = findConfigFile(explicit);
    return { config: loadConfigFile(file), file };
  } catch (e) {
    throw new InvalidInputError((e as Error).message, []);
  }
}

/**
 * Runs `fn` with an open runtime, closed afterwards. Temporal is connected lazily: a command that
 * reads only the store never waits for it.
 */
export async function withRuntime<T>(opts: { config?: string }, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const { config } = await loadCliConfig(opts.config);
  temporalAddress = config.temporal.address;
  const { openRuntime } = await import('../runtime.js');
  const rt = await openRuntime(config, { lazyTemporal: true, connectTimeoutMs: TEMPORAL_CONNECT_BUDGET_MS });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/**
 * Makes sure Temporal answers before a command uses it: the connection and one `GetSystemInfo`,
 * within {@link TEMPORAL_CONNECT_BUDGET_MS}. Throws {@link CliError} `temporal_unreachable` (exit 1)
 * naming the address, the bound and the cause. Call it just before a command's first Temporal
 * call, so that reading a file or the store, and refusing bad input, come first.
 */
export async function requireTemporal(rt: Runtime): Promise<void> {
  try {
    await rt.connection.ensureConnected();
  } catch (e) {
    const inner = (e as { cause?: unknown }).cause ?? e;
    const cause = (inner instanceof Error ? inner.message : String(inner)).split('\n')[0]!;
    // grpc-js says "Failed to connect before the deadline"; a call past it is DEADLINE_EXCEEDED (4).
    const timedOut = /deadline/i.test(cause) || (inner as { code?: unknown }).code === 4;
    const address = rt.config.temporal.address;
    throw new CliError(
      'temporal_unreachable',
      `cannot reach Temporal at ${address}: ${timedOut ? `no answer within ${TEMPORAL_CONNECT_BUDGET_MS / 1000} s` : 'the connection failed'} (${cause}); status, result, list, timeline, incident and orphans read only the store and work without it`,
      EXIT.failed,
      { address, ...(timedOut ? { waitedMs: TEMPORAL_CONNECT_BUDGET_MS } : {}) },
    );
  }
}

/** The account a command acts as: `--account`, else `$SCRAPE_ACCOUNT`, else the configuration's default. */
export function accountOf(rt: Runtime, opts: { account?: string }): string {
  return opts.account ?? process.env.SCRAPE_ACCOUNT ?? rt.config.defaultAccount;
}

/** The job ID of `idOrKey`: a full job ID (`scrape:<account>:<key>`) as it is, or just the key of `account`. */
export async function resolveJobId(idOrKey: string, account: string): Promise<string> {
  const { jobIdOf } = await import('../client/ids.js');
  return jobIdOf(idOrKey, account);
}

/** Who a command acts for in audit records (`requestedBy`, `by`): `cli:<login name>`. */
export function cliUser(): string {
  return `cli:${process.env.USER ?? 'user'}`;
}
