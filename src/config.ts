/**
 * Worker, CLI and API configuration, validated with zod.
 *
 * Provider credentials live here (a JSON file named by `SCRAPE_CONFIG`, or built in code for the
 * embedded demo), never in workflow input: the workflow carries only the provider's name and our
 * account, and activities resolve the key at call time (no secrets in history, logs or errors).
 *
 * Environment overrides: `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `SCRAPE_TASK_QUEUE`,
 * `SCRAPE_STORE_URL`, `SCRAPE_CODEC` (`on`/`off`), and those of the `observability` section.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { CodecConfigSchema } from './codec/config.js';
import { applyObservabilityEnv, ObservabilityConfigSchema } from './observability/config.js';
import { AccountsSchema, checkAccounts } from './accounts.js';
import { ProviderEntrySchema, type ProvidersConfig } from './providers/kinds.js';

/** Rate limit of one caller (fixed window). */
const RateLimitSchema = z
  .object({
    /** Requests allowed per window (count). */
    max: z.number().int().positive(),
    /** Window length, ms. */
    timeWindowMs: z.number().int().positive().default(60_000),
  })
  .strict();

/**
 * The HTTP API (`src/api`, `npm run api`). Secrets are named by environment variable, never
 * written here. API keys are stored hashed (see `src/api/auth.ts` for the key file format).
 * Environment overrides: `SCRAPE_API_HOST`, `SCRAPE_API_PORT`, `SCRAPE_API_KEYS_FILE`.
 */
const ApiConfigSchema = z
  .object({
    /** Listen address (default loopback only). */
    host: z.string().min(1).default('127.0.0.1'),
    /** Listen port (0: any free port). */
    port: z.number().int().min(0).max(65_535).default(8080),
    /** JSON file of hashed API keys (`{"keys": [{"account", "sha256", "name"?}]}`). */
    keysFile: z.string().min(1).optional(),
    /** Environment variable that may hold the same JSON as `keysFile` (both are merged). */
    keysEnv: z.string().min(1).default('SCRAPE_API_KEYS'),
    /** Largest accepted request body, bytes (larger: `413`). Default 1 MiB. */
    bodyLimitBytes: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** Per-account limits on authenticated requests, per-IP limits on the rest, per-provider on webhooks. */
    rateLimit: z
      .object({
        /** Default limit of every account. */
        default: RateLimitSchema.prefault({ max: 600 }),
        /** Overrides by account name. */
        accounts: z.record(z.string(), RateLimitSchema).default({}),
        /** Limit per client IP of requests without a valid key (documentation, bad keys). */
        unauthenticated: RateLimitSchema.prefault({ max: 60 }),
        /** Limit per provider of webhook deliveries. */
        webhooks: RateLimitSchema.prefault({ max: 6_000 }),
      })
      .strict()
      .prefault({}),
    /**
     * Webhook verification secrets by provider name, by environment variable name. When absent
     * for a provider, the provider entry's `webhook.secretEnv` is used (the secret we send it).
     */
    webhookSecrets: z.record(z.string(), z.object({ secretEnv: z.string().min(1) }).strict()).default({}),
    /** How long `POST /v1/scrapes/:id/cancel` waits for the observed outcome before answering with a link to it, ms. */
    cancelWaitMs: z.number().int().min(0).max(120_000).default(10_000),
  })
  .strict();
/** The parsed `api` section (defaults applied). */
export type ApiConfig = z.infer<typeof ApiConfigSchema>;

/** The whole configuration. */
const ConfigSchema = z.object({
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
  /** The provider entries by name (see `src/providers/kinds.ts`). */
  providers: z.record(z.string(), ProviderEntrySchema),
  /** How long we keep result payloads, ms (null: forever). Default 7 days. */
  resultRetentionMs: z
    .number()
    .int()
    .positive()
    .nullable()
    .default(7 * 24 * 3_600_000),
  /** The HTTP API; every field has a default. */
  api: ApiConfigSchema.prefault({}),
  /** Payload encryption and the codec server (off by default; see `src/codec`). */
  codec: CodecConfigSchema.prefault({}),
  /** `/metrics` ports, trace export, log level (see `src/observability`). */
  observability: ObservabilityConfigSchema.prefault({}),
  /** Per account: its weight in a provider key's fair share of slots, its budgets and its policy when one is spent (`src/accounts.ts`, docs/budgets.md). */
  accounts: AccountsSchema,
});
/** The parsed configuration (defaults applied); its `providers` and `api` parts are the {@link ProvidersConfig} the providers read. */
export type Config = z.infer<typeof ConfigSchema> & ProvidersConfig;
export type ConfigInput = z.input<typeof ConfigSchema>;

/**
 * Parses configuration from an object, applying environment overrides.
 * Throws a readable error listing every invalid field.
 */
export function parseConfig(input: unknown, env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.superRefine(checkAccounts).safeParse(input);
  if (!parsed.success) throw new Error(`invalid configuration:\n${z.prettifyError(parsed.error)}`);
  const c = parsed.data;
  if (env.TEMPORAL_ADDRESS) c.temporal.address = env.TEMPORAL_ADDRESS;
  if (env.TEMPORAL_NAMESPACE) c.temporal.namespace = env.TEMPORAL_NAMESPACE;
  if (env.SCRAPE_TASK_QUEUE) c.temporal.taskQueue = env.SCRAPE_TASK_QUEUE;
  if (env.SCRAPE_STORE_URL) c.storeUrl = env.SCRAPE_STORE_URL;
  if (env.SCRAPE_API_HOST) c.api.host = env.SCRAPE_API_HOST;
  if (env.SCRAPE_API_PORT) c.api.port = z.coerce.number().int().min(0).max(65_535).parse(env.SCRAPE_API_PORT);
  if (env.SCRAPE_API_KEYS_FILE) c.api.keysFile = env.SCRAPE_API_KEYS_FILE;
  if (env.SCRAPE_CODEC) c.codec.enabled = z.enum(['on', 'off']).parse(env.SCRAPE_CODEC) === 'on';
  applyObservabilityEnv(c.observability, env);
  return c;
}

/**
 * Names of the providers whose entry configures a `webhook`: jobs on them start with
 * `webhooks: true` (polling slows by the policy's `webhookSlowdown`; the events wake the job).
 */
export function webhookProviderNames(config: Config): string[] {
  return Object.entries(config.providers)
    .filter(([, entry]) => entry.webhook !== undefined)
    .map(([name]) => name);
}

/** Reads and parses the JSON file at `path` (default `$SCRAPE_CONFIG`). Throws when missing or invalid. */
export function loadConfigFile(path = process.env.SCRAPE_CONFIG, env: NodeJS.ProcessEnv = process.env): Config {
  if (!path)
    throw new Error(
      'no configuration file: set SCRAPE_CONFIG to a JSON file (see docs/providers.md, "Configuring an entry")',
    );
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read configuration ${path}: ${(e as Error).message}`);
  }
  return parseConfig(raw, env);
}
