/**
 * Configuration fields of the `apify` kind (Apify actor runs, API v2). The credential is an Apify
 * API token (Console → Settings → Integrations).
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/** An actor ID (`HDSasDasz78YcAPEB`) or `username~actor-name` (`apify~website-content-crawler`). */
const ActorIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]*~?[A-Za-z0-9._-]+$/, 'an actor ID, or "username~actor-name" (a tilde, not a slash)');

/**
 * Where the scrape goes in the actor's input. `urlField` names the input field and `urlFormat`
 * its shape: `requestList` → `[{"url": …}]` (the `startUrls` of most Apify crawlers), `string` →
 * the URL itself, `stringList` → `[url]`. `clientRefField` is the input field carrying our client
 * reference (the actor ignores it; reconciliation reads it back from the run's stored `INPUT`);
 * `null` sends none, for an actor whose input schema refuses unknown fields
 * (`additionalProperties: false`): a lost submit's run then matches by URL only (weak), so it is
 * never adopted without an operator.
 * `defaults` are input fields sent with every run, under the job's `options` (which come next)
 * and under the URL and the reference (which come last and cannot be overridden).
 */
const ApifyInputSchema = z
  .strictObject({
    urlField: z.string().min(1).max(100).default('startUrls'),
    urlFormat: z.enum(['requestList', 'string', 'stringList']).default('requestList'),
    clientRefField: z.string().min(1).max(100).nullable().default('scrapeOrchestratorRef'),
    defaults: z.record(z.string(), z.unknown()).default({}),
  })
  .refine((v) => v.urlField !== v.clientRefField, {
    message: 'input.urlField and input.clientRefField must differ',
    path: ['clientRefField'],
  })
  .prefault({});

/** The estimate of one run for budgets when neither the run's cap nor the entry's `cost.estimate` is set, USD. */
export const APIFY_DEFAULT_ESTIMATE_USD = 0.1;

/** Run options sent as query parameters of Run Actor (unset: the actor's own defaults). Units in the names. */
const ApifyRunOptionsSchema = z
  .strictObject({
    /** Build tag or number (`latest`, `0.1.234`). */
    build: z.string().min(1).max(100).optional(),
    /** Run timeout, seconds. */
    timeoutSecs: z
      .number()
      .int()
      .positive()
      .max(7 * 24 * 3600)
      .optional(),
    /** Memory, megabytes (a power of 2, at least 128: Apify checks). */
    memoryMbytes: z
      .number()
      .int()
      .min(128)
      .max(32_768)
      .refine((n) => (n & (n - 1)) === 0, {
        message: 'must be a power of 2 (128, 256, 512, …): Apify refuses any other memory with 400 invalid-parameter',
      })
      .optional(),
    /** Most dataset items charged for a pay-per-result actor (count). */
    maxItems: z.number().int().positive().optional(),
    /** Most a pay-per-event run may charge, USD (Run Actor's `maxTotalChargeUsd`); also the job's cost estimate for budgets. */
    maxTotalChargeUsd: z.number().positive().max(1e6).optional(),
  })
  .prefault({});

/**
 * The kind's own fields:
 * - `actorId` (required) and `actorPath`: `actors` (default: the canonical `/v2/actors/` prefix of
 *   the OpenAPI document) or `acts` (the deprecated prefix, still served by Apify);
 * - `tokenIn`: `header` (default: `Authorization: Bearer`, Apify's recommendation) or `query`
 *   (`?token=`, "less secure": every recorded URL is redacted either way);
 * - `input` ({@link ApifyInputSchema}) and `run` ({@link ApifyRunOptionsSchema});
 * - `abortGracefully` (default false): cancel with `?gracefully=true` (the actor gets 30 s to
 *   persist its state);
 * - `timedOutAs` (default `failed`): what a `TIMED-OUT` run means; `completed` keeps the items it
 *   wrote before the timeout as the result;
 * - `clean` (default false): read dataset items with `clean=1` (skip empty items and `#hidden`
 *   fields);
 * - `reconcileList`: after a lost submit, runs started since `submittedAfter − marginMs` (default
 *   2 min of clock skew) are listed and at most `maxInputReads` (default 25) of their inputs read.
 *
 * A `404` for a run younger than the entry's `notFoundGraceMs` (common field; default 60 s, the
 * kind's declaration) is "not visible yet" (Apify reads can lag right after creation), never
 * counted towards expiry.
 */
export const ApifyConfigSchema = z.strictObject({
  kind: z.literal('apify'),
  ...httpEndpointFields({ baseUrl: 'https://api.apify.com', submitTimeoutMs: 30_000, readTimeoutMs: 15_000 }),
  actorId: ActorIdSchema,
  actorPath: z.enum(['actors', 'acts']).default('actors'),
  tokenIn: z.enum(['header', 'query']).default('header'),
  input: ApifyInputSchema,
  run: ApifyRunOptionsSchema,
  abortGracefully: z.boolean().default(false),
  timedOutAs: z.enum(['failed', 'completed']).default('failed'),
  clean: z.boolean().default(false),
  reconcileList: z
    .strictObject({
      marginMs: z.number().int().min(0).max(3_600_000).default(120_000),
      maxInputReads: z.number().int().min(1).max(500).default(25),
    })
    .prefault({}),
});

/** A parsed `apify` entry (its fields plus the common ones). */
export type ApifyEntry = EntryFor<typeof ApifyConfigSchema>;
