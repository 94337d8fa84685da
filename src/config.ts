/**
 * Worker, CLI and API configuration, validated with zod.
 *
 * Provider credentials live here (a JSON file named by `SCRAPE_CONFIG`, or built in code for the
 * embedded demo), never in workflow input: the workflow carries only the provider's name and our
 * account, and activities resolve the key at call time (DESIGN.md rule 8).
 *
 * Environment overrides: `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `SCRAPE_TASK_QUEUE`,
 * `SCRAPE_STORE_URL`.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { ReferenceConfigSchema } from './providers/reference.js';

/** An API key given literally (config files are worker-side secrets) or by environment variable name. */
export const CredentialSchema = z.union([
  z.object({ apiKey: z.string().min(1) }).strict(),
  z.object({ apiKeyEnv: z.string().min(1) }).strict(),
]);
export type Credential = z.infer<typeof CredentialSchema>;

/** Credentials of one provider: a default and per-account overrides (our account → provider key). */
export const CredentialsSchema = z.object({
  default: CredentialSchema.optional(),
  accounts: z.record(z.string(), CredentialSchema).default({}),
});

/** Shared request limits of one provider account (all workflows of all accounts using the key). */
export const LimitsSchema = z.object({
  /** Maximum concurrent in-flight HTTP calls per provider key (count). */
  maxConcurrent: z.number().int().positive().default(8),
  /** Minimum spacing between two calls with the same key, ms. */
  minIntervalMs: z.number().int().nonnegative().default(0),
});

/** One configured provider. */
export const ProviderEntrySchema = z.discriminatedUnion('kind', [
  ReferenceConfigSchema.extend({ credentials: CredentialsSchema, limits: LimitsSchema.default({ maxConcurrent: 8, minIntervalMs: 0 }) }),
]);
export type ProviderEntry = z.infer<typeof ProviderEntrySchema>;

/** The whole configuration. */
export const ConfigSchema = z.object({
  temporal: z
    .object({
      address: z.string().default('127.0.0.1:7233'),
      namespace: z.string().default('default'),
      taskQueue: z.string().default('scrapes'),
    })
    .default({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'scrapes' }),
  /** `sqlite:<file>` or `postgres://…` (see src/store). */
  storeUrl: z.string().default('sqlite:.data/scrapes.db'),
  /** Account the CLI acts as when `--account` is not given. */
  defaultAccount: z.string().default('default'),
  /** Default provider name for jobs that do not name one. */
  defaultProvider: z.string().default('reference'),
  providers: z.record(z.string(), ProviderEntrySchema),
  /** How long we keep result payloads, ms (null: forever). Default 7 days. */
  resultRetentionMs: z.number().int().positive().nullable().default(7 * 24 * 3_600_000),
});
export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;

/**
 * Parses configuration from an object, applying environment overrides.
 * Throws a readable error listing every invalid field.
 */
export function parseConfig(input: unknown, env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(input);
  if (!parsed.success) throw new Error(`invalid configuration:\n${z.prettifyError(parsed.error)}`);
  const c = parsed.data;
  if (env.TEMPORAL_ADDRESS) c.temporal.address = env.TEMPORAL_ADDRESS;
  if (env.TEMPORAL_NAMESPACE) c.temporal.namespace = env.TEMPORAL_NAMESPACE;
  if (env.SCRAPE_TASK_QUEUE) c.temporal.taskQueue = env.SCRAPE_TASK_QUEUE;
  if (env.SCRAPE_STORE_URL) c.storeUrl = env.SCRAPE_STORE_URL;
  return c;
}

/** Reads and parses the JSON file at `path` (default `$SCRAPE_CONFIG`). Throws when missing or invalid. */
export function loadConfigFile(path = process.env.SCRAPE_CONFIG, env: NodeJS.ProcessEnv = process.env): Config {
  if (!path) throw new Error('no configuration file: set SCRAPE_CONFIG to a JSON file (see README, "Pointing it at real services")');
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read configuration ${path}: ${(e as Error).message}`);
  }
  return parseConfig(raw, env);
}

/**
 * The API key for (provider, account): the account's own credential, else the provider default.
 * Returns the key and a label naming the provider account (used to key the shared limiter;
 * never the key itself). Throws when none is configured or the environment variable is empty.
 */
export function resolveCredential(entry: ProviderEntry, providerName: string, account: string, env: NodeJS.ProcessEnv = process.env): { apiKey: string; label: string } {
  const own = entry.credentials.accounts[account];
  const cred = own ?? entry.credentials.default;
  if (!cred) throw new Error(`no credentials for provider "${providerName}" and account "${account}" in the worker configuration`);
  const label = `${providerName}/${own ? account : 'default'}`;
  if ('apiKey' in cred) return { apiKey: cred.apiKey, label };
  const v = env[cred.apiKeyEnv];
  if (!v) throw new Error(`environment variable ${cred.apiKeyEnv} (credentials of ${label}) is not set`);
  return { apiKey: v, label };
}
