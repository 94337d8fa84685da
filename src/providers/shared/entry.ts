/**
 * The fields every provider entry of the configuration has, whatever its kind, validated with zod:
 *
 * | field        | shape                                             | default                              |
 * |--------------|---------------------------------------------------|--------------------------------------|
 * | `credentials`| `{default?, accounts}` of `{apiKey}`/`{apiKeyEnv}`| required (may be `{}`), unless the entry's calls send no credential (the `http` kind's `auth: {in: "none"}`) |
 * | `limits`     | `{maxConcurrent, minIntervalMs, activeJobs, quotaHoldMs}` per provider key | 8 concurrent calls, no spacing, 8 active jobs to start, 10 min quota hold |
 * | `poll`       | `Partial<PollPolicy>` (ms, factors)               | the kind's defaults, then the global |
 * | `results`    | `{maxDocuments, maxBytes, pageSize}`              | 10,000 docs, 256 MiB, pages of 100   |
 * | `reconcile`  | `{settleMs}`                                      | {@link DEFAULT_SETTLE_MS} (10 s)     |
 * | `notFoundGraceMs` | ms a new task's reads may answer `404` before the provider shows it | the kind's declaration (1 min) |
 * | `webhook`    | `{url, secretEnv}`                                | none (polling only)                  |
 * | `cost`       | `{estimate}`: one job's cost in the kind's unit   | the kind's estimate (docs/budgets.md)|
 *
 * A kind adds its own fields (base URL, timeouts, actor ID, …) in its `config.ts`;
 * {@link providerEntrySchema} joins the two into the entry's schema, strict (an unknown or
 * misspelt field is an error, never silently ignored).
 */
import { z } from 'zod';
import { secretPartsOfUrl } from '../../lib/secretDetection.js';
import { PollPolicySchema } from '../../model/schemas.js';
import { CostEntrySchema } from './cost.js';
import { CredentialsSchema } from './credentials.js';
import { DEFAULT_RESULT_LIMITS, type ResultLimits } from '../adapter.js';

/** Default settle window of a provider's list after a submit, ms (see `ResolvedProvider.settleMs`). */
export const DEFAULT_SETTLE_MS = 10_000;

/** Default of `limits.quotaHoldMs`: submits are held 10 minutes after a quota or credit exhaustion. */
export const DEFAULT_QUOTA_HOLD_MS = 600_000;

/** Shared request limits of one provider account (all workflows of all accounts using the key). */
const LimitsSchema = z.strictObject({
  /** Maximum concurrent in-flight HTTP calls per provider key (count). */
  maxConcurrent: z.number().int().positive().default(8),
  /** Minimum spacing between two calls with the same key, ms. */
  minIntervalMs: z.number().int().nonnegative().default(0),
  /**
   * Adaptive limit of provider jobs active at once per key (submits wait for a free slot): it starts
   * at `initial` and doubles per window of accepted submits until the first concurrency refusal
   * (`429 CONCURRENCY_LIMIT`, Apify's `concurrent-runs-limit-exceeded`), which halves it (never above
   * a limit the refusal states); from then on it grows by one job per window. Never above `max`.
   * Learned values are shared by every worker through the store.
   */
  activeJobs: z
    .strictObject({ initial: z.number().int().positive().default(8), max: z.number().int().positive().optional() })
    .refine((v) => v.max === undefined || v.max >= v.initial, 'activeJobs.max must be at least activeJobs.initial')
    .prefault({}),
  /**
   * How long submits of the key are held after the provider said its quota or credits are used up
   * (a `402`, an out-of-credits `403`, a job failed for credits: code `QUOTA_EXHAUSTED`), ms,
   * 1 s … 7 days, default {@link DEFAULT_QUOTA_HOLD_MS} (10 min). During the hold no submit of
   * the key calls the provider (status reads go on); after it one submit goes first as a probe
   * and the others follow one at a time. Shared by every worker through the store.
   */
  quotaHoldMs: z
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(DEFAULT_QUOTA_HOLD_MS),
  /**
   * Whether the key's slots (its adaptive limit of active jobs) go to the accounts that wait for
   * them by weight (a weighted fair queue across every worker: configuration `accounts.<name>.weight`,
   * default equal), or to whichever waiting submit asks first (false). Default true.
   */
  fairShares: z.boolean().default(true),
});

/**
 * Poll policy defaults of one provider (every field optional, durations in ms): applied over the
 * kind's defaults and {@link DEFAULT_POLL_POLICY}, under each job's own `policy`
 * (see `effectivePolicy` in `policy.ts`).
 */
const PollDefaultsSchema = PollPolicySchema.refine(
  (p) => p.initialDelayMs === undefined || p.maxDelayMs === undefined || p.initialDelayMs <= p.maxDelayMs,
  {
    message: 'poll.initialDelayMs must not exceed poll.maxDelayMs',
    path: ['initialDelayMs'],
  },
);

/** Bounds of one result read ({@link ResultLimits}); missing fields take {@link DEFAULT_RESULT_LIMITS}. */
const ResultLimitsSchema = z
  .strictObject({
    /** Most documents accepted for one task (count). */
    maxDocuments: z.number().int().min(1).max(10_000_000),
    /** Most bytes of result text (JSON-serialised documents) accepted for one task. Max 4 GiB. */
    maxBytes: z
      .number()
      .int()
      .min(1)
      .max(4 * 1024 ** 3),
    /** Documents asked per page where the provider takes a page size (count). */
    pageSize: z.number().int().min(1).max(10_000),
  })
  .partial();

/** Reconciliation after a lost submit. */
const ReconcileSchema = z
  .strictObject({
    /**
     * How long after a submit the provider's list may still miss the job, ms (search-backed lists
     * lag): absence is proven only by a list read at least this long after the last submit
     * attempt, and a second read. 0..1 h.
     */
    settleMs: z.number().int().min(0).max(3_600_000),
  })
  .partial();

/**
 * An http(s) URL of a provider or of our receiver, without credentials in it: user-info
 * (`user:pass@`) or a credential parameter (`?api_key=…`) would be sent nowhere safe (fetch refuses
 * a URL with user-info, and its error quotes the URL, password and all, into the job's error
 * record), and a provider's key belongs in `credentials`.
 */
export const HttpUrlSchema = z
  .string()
  .url()
  .refine((v) => /^https?:\/\//i.test(v), 'must be an http:// or https:// URL')
  .superRefine((v, ctx) => {
    const parts = secretPartsOfUrl(v);
    if (parts.length > 0)
      ctx.addIssue({
        code: 'custom',
        message: `must not carry credentials (${parts.join(', ')}): give the provider's key under "credentials"`,
      });
  });

/**
 * Webhooks of one provider. `url` is our receiver for this provider as the provider reaches it:
 * `https://<api host>/v1/webhooks/<provider name>`. `secretEnv` names the environment variable
 * (on the worker and on the API) holding the secret: for kinds that sign their deliveries, the
 * HMAC secret registered with the provider; for kinds that do not, the key of the per-job token
 * appended to `url` (`…/v1/webhooks/<name>/<token>`), which never leaves us. Webhooks are hints:
 * polling continues, slowed by `poll.webhookSlowdown`.
 */
const WebhookEntrySchema = z.strictObject({
  url: HttpUrlSchema,
  secretEnv: z.string().min(1),
});
/** The parsed `webhook` of an entry. */
export type WebhookEntry = z.infer<typeof WebhookEntrySchema>;

/** The common fields' shape (see the module table). */
const COMMON_ENTRY_FIELDS = {
  /** Required unless the kind says the entry sends no credential (`ProviderDescriptor.credentialNeeded`): checked by `defineProvider`. */
  credentials: CredentialsSchema.optional(),
  limits: LimitsSchema.prefault({}),
  poll: PollDefaultsSchema.optional(),
  results: ResultLimitsSchema.optional(),
  reconcile: ReconcileSchema.optional(),
  /** How long after its creation a task's reads may answer `404` because the provider does not show it yet, ms (0..1 day); default the kind's declaration. */
  notFoundGraceMs: z.number().int().min(0).max(86_400_000).optional(),
  webhook: WebhookEntrySchema.optional(),
  /** The estimate of one job of this entry for the budgets, in the kind's unit (default: the kind's rule; docs/budgets.md). */
  cost: CostEntrySchema.optional(),
};
type CommonShape = typeof COMMON_ENTRY_FIELDS;

/** The entry schema of a kind whose own fields are `S` (see {@link providerEntrySchema}). */
export type EntrySchemaOf<S> = z.ZodObject<Omit<S, keyof CommonShape> & CommonShape, z.core.$strict>;

/** The parsed entry of a kind whose own fields' schema is `C` (e.g. `EntryFor<typeof ReferenceConfigSchema>`). */
export type EntryFor<C extends z.ZodObject> = z.infer<EntrySchemaOf<C['shape']>>;

/** The common fields of any parsed entry, for code that does not care about the kind. */
type CommonEntry = z.infer<z.ZodObject<CommonShape>> & { kind: string };

/**
 * Joins a kind's own fields (`{kind: z.literal(...), ...}`) with {@link COMMON_ENTRY_FIELDS} into a
 * strict object schema: the entry schema of that kind. A kind field named like a common one is a
 * programming error (thrown at import).
 */
export function providerEntrySchema<S extends { kind: z.ZodLiteral<string> } & z.ZodRawShape>(
  kindShape: S,
): EntrySchemaOf<S> {
  for (const k of Object.keys(COMMON_ENTRY_FIELDS)) {
    if (k in kindShape) throw new Error(`provider kind field "${k}" collides with a common entry field`);
  }
  return z.strictObject({ ...kindShape, ...COMMON_ENTRY_FIELDS }) as unknown as EntrySchemaOf<S>;
}

/**
 * Fields most HTTP kinds share: the API's base URL (with `baseUrl` as default when the provider
 * has a public one; a path prefix such as `/api/v2` is kept when paths are joined) and the
 * timeouts of one submit and one read (ms).
 */
export function httpEndpointFields(defaults: { baseUrl?: string; submitTimeoutMs: number; readTimeoutMs: number }) {
  return {
    baseUrl: defaults.baseUrl === undefined ? HttpUrlSchema : HttpUrlSchema.default(defaults.baseUrl),
    submitTimeoutMs: z.number().int().positive().max(600_000).default(defaults.submitTimeoutMs),
    readTimeoutMs: z.number().int().positive().max(600_000).default(defaults.readTimeoutMs),
  };
}

/** The entry's result limits, each missing field from {@link DEFAULT_RESULT_LIMITS}. */
export function resultLimitsOf(entry: Pick<CommonEntry, 'results'>): ResultLimits {
  return { ...DEFAULT_RESULT_LIMITS, ...(entry.results ?? {}) };
}

/** The entry's list settle window, ms (default {@link DEFAULT_SETTLE_MS}). */
export function settleMsOf(entry: Pick<CommonEntry, 'reconcile'>): number {
  return entry.reconcile?.settleMs ?? DEFAULT_SETTLE_MS;
}
