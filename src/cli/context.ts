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

/** Exit codes: 0 done; 1 failed or not completed (also Temporal unreachable); 2 invalid input; 3 no such job. */
export const EXIT = { ok: 0, failed: 1, invalid: 2, notFound: 3 } as const;

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
  const rt = await openRuntime(config, { lazyTemporal: true });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
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
