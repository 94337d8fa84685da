/**
 * Start the reference provider from the command line (for demos and manual runs; tests use
 * `startSim` directly). Prints its base URL and runs until SIGINT / SIGTERM.
 *
 * Usage: `tsx tools/sim/main.ts [flags]` (or `npm run sim -- [flags]`). Each flag has an env
 * equivalent; flags win.
 *
 * | flag | env | meaning |
 * |---|---|---|
 * | `--host <h>` | `SIM_HOST` | bind address (default 127.0.0.1) |
 * | `--port <n>` | `SIM_PORT` | port (default 0 = random) |
 * | `--accounts <name:key,...>` | `SIM_ACCOUNTS` | accounts; repeat a name for more keys (default `demo:demo-key`) |
 * | `--profile <json>` | `SIM_PROFILE` | default profile for every account, e.g. `{"concurrency":2}` |
 * | `--account-profile <name=json>` (repeatable) | `SIM_ACCOUNT_PROFILES` (JSON object name → profile) | per-account profile |
 * | `--config <file.json>` | `SIM_CONFIG` | full `SimOptions` JSON (flags above override it) |
 * | `--admin-token <t>` | `SIM_ADMIN_TOKEN` | enable `/_sim/*` admin routes |
 * | `--allow-fault-header` | `SIM_ALLOW_FAULT_HEADER=1` | honour `X-Sim-Fault` |
 * | `--log` | `SIM_LOG=1` | request logging (Authorization redacted) |
 *
 * API keys are never printed; only account names and key counts.
 * Exit codes: 0 after a signal, 2 on invalid configuration, 1 when the server cannot start.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startSim } from './server.js';
import { PartialProfileSchema, type AccountInput, type ProfileInput, type SimOptions } from './schemas.js';

const HELP = `Usage: tsx tools/sim/main.ts [--host H] [--port N] [--accounts name:key,...] [--profile JSON]
       [--account-profile name=JSON]... [--config FILE] [--admin-token T] [--allow-fault-header] [--log]`;

/** Thrown by {@link optionsFromCli} for `--help` / `-h`; `main` prints the usage and exits 0. */
export class HelpRequested extends Error {
  constructor() {
    super(HELP);
  }
}

/**
 * Parse `name:key,name:key2,other:key3` into accounts (a repeated name collects several keys).
 * @throws Error on an entry without `name:key`.
 */
export function parseAccounts(spec: string): AccountInput[] {
  const byName = new Map<string, string[]>();
  for (const entry of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = entry.indexOf(':');
    if (i <= 0 || i === entry.length - 1)
      throw new Error(`invalid account entry (expected name:key): "${entry.slice(0, Math.max(i, 0)) || '?'}:…"`);
    const name = entry.slice(0, i);
    const key = entry.slice(i + 1);
    byName.set(name, [...(byName.get(name) ?? []), key]);
  }
  return [...byName].map(([name, apiKeys]) => ({ name, apiKeys }));
}

function parseJson(label: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`${label} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * Build `SimOptions` from CLI arguments and environment variables (see the module docs).
 * @throws Error / ZodError on invalid input; {@link HelpRequested} for `--help`.
 */
export function optionsFromCli(argv: string[], env: NodeJS.ProcessEnv): SimOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      accounts: { type: 'string' },
      profile: { type: 'string' },
      'account-profile': { type: 'string', multiple: true },
      config: { type: 'string' },
      'admin-token': { type: 'string' },
      'allow-fault-header': { type: 'boolean' },
      log: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) throw new HelpRequested();

  const configPath = values.config ?? env.SIM_CONFIG;
  const base: Partial<SimOptions> = configPath
    ? (parseJson(configPath, readFileSync(configPath, 'utf8')) as Partial<SimOptions>)
    : {};

  const opts: Partial<SimOptions> = { ...base };
  const host = values.host ?? env.SIM_HOST;
  if (host) opts.host = host;
  const port = values.port ?? env.SIM_PORT;
  if (port !== undefined && port !== '') opts.port = z.coerce.number().int().min(0).max(65_535).parse(port);

  const accountsSpec = values.accounts ?? env.SIM_ACCOUNTS;
  let accounts: AccountInput[] = accountsSpec ? parseAccounts(accountsSpec) : (opts.accounts ?? []);
  if (accounts.length === 0) accounts = [{ name: 'demo', apiKeys: ['demo-key'] }];

  const profileSpec = values.profile ?? env.SIM_PROFILE;
  if (profileSpec) opts.defaults = PartialProfileSchema.parse(parseJson('--profile', profileSpec));

  const perAccount: Record<string, ProfileInput> = {};
  if (env.SIM_ACCOUNT_PROFILES) {
    const obj = z
      .record(z.string(), PartialProfileSchema)
      .parse(parseJson('SIM_ACCOUNT_PROFILES', env.SIM_ACCOUNT_PROFILES));
    Object.assign(perAccount, obj);
  }
  for (const item of values['account-profile'] ?? []) {
    const i = item.indexOf('=');
    if (i <= 0) throw new Error(`--account-profile expects name=JSON, got "${item}"`);
    perAccount[item.slice(0, i)] = PartialProfileSchema.parse(parseJson('--account-profile', item.slice(i + 1)));
  }
  for (const name of Object.keys(perAccount)) {
    if (!accounts.some((a) => a.name === name)) throw new Error(`--account-profile for unknown account "${name}"`);
  }
  opts.accounts = accounts.map((a) =>
    perAccount[a.name] ? { ...a, profile: { ...a.profile, ...perAccount[a.name] } } : a,
  );

  const adminToken = values['admin-token'] ?? env.SIM_ADMIN_TOKEN;
  if (adminToken) opts.adminToken = adminToken;
  if (values['allow-fault-header'] || env.SIM_ALLOW_FAULT_HEADER === '1') opts.allowFaultHeader = true;
  if (values.log || env.SIM_LOG === '1') opts.logger = true;
  return opts as SimOptions;
}

async function main(): Promise<void> {
  let options: SimOptions;
  try {
    options = optionsFromCli(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof HelpRequested) {
      console.log(HELP);
      process.exit(0);
    }
    const message = err instanceof z.ZodError ? z.prettifyError(err) : (err as Error).message;
    console.error(`sim: invalid configuration: ${message}\n${HELP}`);
    process.exit(2);
  }
  const sim = await startSim(options);
  const accounts = options.accounts.map(
    (a) => `${a.name} (${a.apiKeys.length} key${a.apiKeys.length === 1 ? '' : 's'})`,
  );
  console.log(`sim listening on ${sim.url}`);
  console.log(`accounts: ${accounts.join(', ')}`);
  if (options.adminToken) console.log('admin routes enabled at /_sim/*');
  const stop = (signal: string): void => {
    console.log(`sim: ${signal}, closing`);
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

const isEntry = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntry) {
  main().catch((err: unknown) => {
    console.error(`sim: cannot start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
