/**
 * Zod schemas and TypeScript types for the reference asynchronous scraping provider ("the sim").
 *
 * Source of the contract: the generic asynchronous scraping API of our design brief (docs/design.md, “The problem”): every job endpoint
 * answers `202` with a `job_id`; status by `GET /api/jobs/:id`, progress by `/logs`, cancel by
 * `DELETE /api/jobs/:id/cancel`; more active jobs than allowed get `429 CONCURRENCY_LIMIT`. The
 * optional behaviours (idempotency, list, Apify-style `400 concurrent-runs-limit-exceeded`,
 * Retry-After in the message text) follow what real providers do (Firecrawl's `x-idempotency-key`,
 * Apify's run limits, ScraperAPI's Retry-After prose).
 *
 * Every boundary of the sim parses its input with one of these schemas: server options, account
 * profiles, fault rules (in-process, admin HTTP and the `X-Sim-Fault` header) and request bodies.
 */
import { z } from 'zod';
import { FaultRuleSchema, type Endpoint } from './faultSchemas.js';

export * from './faultSchemas.js';

// ---------------------------------------------------------------------------------------------
// Profiles and options
// ---------------------------------------------------------------------------------------------

/** Profile fields without defaults (shared by the full and the partial schema). */
const profileFields = {
  idempotency: z.boolean(),
  list: z.boolean(),
  cancel: z.boolean(),
  concurrency: z.number().int().min(0),
  concurrencyErrorStyle: z.enum(['429', '400']),
  retryAfterStyle: z.enum(['header', 'message', 'none']),
  retryAfterSeconds: z.number().int().min(0).max(86_400),
  queueDelayMs: z.number().int().min(0),
  minRunMs: z.number().int().min(0),
  runLogSigma: z.number().min(0).max(3),
  resultTtlMs: z.number().int().min(0),
  idempotencyTtlMs: z.number().int().min(0),
  blockedHosts: z.array(z.string().min(1).max(253)),
  listLagMs: z.number().int().min(0).max(3_600_000),
  echoKey: z.boolean(),
  idempotencyReplay: z.enum(['honoured', 'conflict']),
};

/**
 * Behaviour profile of one account. Every field has a default, so `ProfileSchema.parse({})` is the
 * default profile (the seeds' provider plus idempotency and list).
 *
 * - `idempotency` (default `true`): honour the `Idempotency-Key` request header on submit.
 * - `list` (default `true`): `GET /api/jobs` exists; when `false` it answers `404 NOT_SUPPORTED`.
 * - `cancel` (default `true`): `DELETE /api/jobs/:id/cancel` exists; else `404 NOT_SUPPORTED`.
 * - `concurrency` (default `1`): maximum number of active (queued or running) jobs per account.
 * - `concurrencyErrorStyle` (default `"429"`): `"429"` → `429 CONCURRENCY_LIMIT`; `"400"` → Apify's
 *   `400 concurrent-runs-limit-exceeded`.
 * - `retryAfterStyle` (default `"header"`): how the wait is announced on 429 / concurrency errors:
 *   `Retry-After: <s>` header, or only in the message text (`"... Please retry after 7 seconds."`),
 *   or `"none"`.
 * - `retryAfterSeconds` (default `2`, seconds): the announced wait.
 * - `queueDelayMs` (default `0`, ms): time a job stays `queued` before it starts running.
 * - `minRunMs` (default `0`, ms): minimum time a job stays `running`.
 * - `runLogSigma` (optional, absent = `0`): spreads that time log-normally: a job stays `running`
 *   at least `minRunMs × exp(runLogSigma × z)`, where `z` is a standard normal number derived from
 *   a hash of the job's URL path and query (so the same pages give the same durations in every run
 *   and account,
 *   which lets two schedules be compared on the same jobs). `minRunMs` is then the median.
 * - `resultTtlMs` (default `3_600_000` ms = 1 h): a final job is deleted this long after `finished_at`.
 * - `idempotencyTtlMs` (default `86_400_000` ms = 24 h): how long an idempotency key is remembered.
 * - `blockedHosts` (default `[]`): target hosts refused with `403 TARGET_DISALLOWED`; an entry
 *   `example.com` also blocks its subdomains (`www.example.com`). Case-insensitive.
 * - `listLagMs` (default `0`, ms): a new job shows in `GET /api/jobs` only this long after it was
 *   created (search-backed lists lag behind writes).
 * - `echoKey` (default `false`): a careless provider that copies the account's API key into its
 *   answers — a failed job's `error.message` (`invalid key <key>: …`), the result's `final_url`
 *   (`?api_key=<key>`) and a `debug.note` field, to test that no secret is ever recorded.
 * - `idempotencyReplay` (optional, absent = `"honoured"`; only with `idempotency`): how a second
 *   submit with a remembered `Idempotency-Key` and the same body is answered: `"honoured"` → the
 *   first submit's `202` again with `Idempotent-Replayed: true`; `"conflict"` → `409
 *   IDEMPOTENCY_CONFLICT` without the original `job_id` (nothing is created either way). No
 *   default, so `ProfileSchema.parse({})` is unchanged.
 */
export const ProfileSchema = z.strictObject({
  idempotency: profileFields.idempotency.default(true),
  list: profileFields.list.default(true),
  cancel: profileFields.cancel.default(true),
  concurrency: profileFields.concurrency.default(1),
  concurrencyErrorStyle: profileFields.concurrencyErrorStyle.default('429'),
  retryAfterStyle: profileFields.retryAfterStyle.default('header'),
  retryAfterSeconds: profileFields.retryAfterSeconds.default(2),
  queueDelayMs: profileFields.queueDelayMs.default(0),
  minRunMs: profileFields.minRunMs.default(0),
  runLogSigma: profileFields.runLogSigma.optional(),
  resultTtlMs: profileFields.resultTtlMs.default(3_600_000),
  idempotencyTtlMs: profileFields.idempotencyTtlMs.default(86_400_000),
  blockedHosts: profileFields.blockedHosts.default([]),
  listLagMs: profileFields.listLagMs.default(0),
  echoKey: profileFields.echoKey.default(false),
  idempotencyReplay: profileFields.idempotencyReplay.optional(),
});

/** A fully resolved account profile (all defaults applied). See {@link ProfileSchema}. */
export type Profile = z.infer<typeof ProfileSchema>;

/**
 * A partial profile as accepted in options (`defaults`, `accounts[].profile`): the same fields,
 * all optional and WITHOUT defaults (so that merging `defaults` and an account's profile works).
 */
export const PartialProfileSchema = z.strictObject(profileFields).partial();

/** Partial profile input type; missing fields fall back to `defaults`, then to {@link ProfileSchema}. */
export type ProfileInput = z.input<typeof PartialProfileSchema>;

/**
 * One account of the sim: a `name` (used in stats, faults and logs) and the API keys that map to
 * it (`Authorization: Bearer <key>`). Keys must be unique across all accounts.
 */
export const AccountSchema = z.strictObject({
  name: z.string().min(1).max(100),
  apiKeys: z.array(z.string().min(1).max(500)).min(1),
  profile: PartialProfileSchema.optional(),
});

/** Input type of one account (see {@link AccountSchema}). */
export type AccountInput = z.input<typeof AccountSchema>;

// ---------------------------------------------------------------------------------------------
// Server options
// ---------------------------------------------------------------------------------------------

/** Event emitted when the sim receives an API request (after authentication, before faults). */
export interface SimRequestEvent {
  /** Epoch ms when the request was received. */
  at: number;
  method: string;
  /** Request path without the query string. */
  path: string;
  endpoint: Endpoint;
  /** Account name, or null when the API key was missing or unknown. */
  account: string | null;
  /** The `:id` route parameter, when the endpoint has one. */
  jobId: string | null;
}

/**
 * Options of {@link createSim} / {@link startSim}.
 *
 * - `host` (default `127.0.0.1`), `port` (default `0` = random free port).
 * - `adminToken`: enables the `/_sim/*` admin routes (header `X-Sim-Admin: <token>`); without it
 *   they answer 404.
 * - `accounts`: at least one; API keys unique across accounts.
 * - `defaults`: profile fields applied to every account before its own `profile`.
 * - `logger` (default `false`): Fastify/pino request logging to stdout, headers included with
 *   `Authorization`, `X-Sim-Admin` and `Cookie` redacted.
 * - `logStream`: write those logs to this stream instead (implies logging).
 * - `allowFaultHeader` (default `false`): honour the per-request `X-Sim-Fault` header.
 * - `faults`: fault rules installed at start.
 * - `maxBodyBytes` (default 10 MiB): largest target response body read; more fails the job with
 *   `FETCH_FAILED`.
 * - `userAgent`: User-Agent sent to targets.
 * - `random`: source of randomness in [0, 1) for fault probabilities (default `Math.random`).
 * - `onRequest`: callback for every API request (same as `sim.events.on('request')`).
 * - `webhookRetryDelaysMs` (default `[500, 2000, 5000]`, ms): waits between the attempts of one
 *   webhook delivery after a non-2xx answer or a network error; one attempt more than delays.
 * - `webhookTimeoutMs` (default 5000 ms): timeout of one webhook delivery attempt.
 */
export const SimOptionsSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65_535).default(0),
    adminToken: z.string().min(1).max(500).optional(),
    accounts: z.array(AccountSchema).min(1),
    defaults: PartialProfileSchema.optional(),
    logger: z.boolean().default(false),
    logStream: z
      .custom<NodeJS.WritableStream>(
        (v) => typeof v === 'object' && v !== null && typeof (v as { write?: unknown }).write === 'function',
        'must be a writable stream',
      )
      .optional(),
    allowFaultHeader: z.boolean().default(false),
    faults: z.array(FaultRuleSchema).default([]),
    maxBodyBytes: z
      .number()
      .int()
      .min(1)
      .default(10 * 1024 * 1024),
    userAgent: z.string().min(1).default('scrape-orchestrator-sim/0.1 (+reference provider)'),
    random: z.custom<() => number>((v) => typeof v === 'function', 'must be a function').optional(),
    onRequest: z
      .custom<(event: SimRequestEvent) => void>((v) => typeof v === 'function', 'must be a function')
      .optional(),
    webhookRetryDelaysMs: z.array(z.number().int().min(0).max(3_600_000)).max(20).default([500, 2_000, 5_000]),
    webhookTimeoutMs: z.number().int().min(1).max(120_000).default(5_000),
  })
  .superRefine((opts, ctx) => {
    const names = new Set<string>();
    const keys = new Set<string>();
    opts.accounts.forEach((acct, i) => {
      if (names.has(acct.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['accounts', i, 'name'],
          message: `duplicate account name "${acct.name}"`,
        });
      }
      names.add(acct.name);
      acct.apiKeys.forEach((key, j) => {
        if (keys.has(key)) {
          // Never echo the key itself.
          ctx.addIssue({ code: 'custom', path: ['accounts', i, 'apiKeys', j], message: 'API key used twice' });
        }
        keys.add(key);
      });
    });
  });

/** Input type of the sim options (see {@link SimOptionsSchema}). */
export type SimOptions = z.input<typeof SimOptionsSchema>;
/** Parsed sim options (defaults applied). */
export type ResolvedSimOptions = z.infer<typeof SimOptionsSchema>;

// ---------------------------------------------------------------------------------------------
// HTTP request bodies
// ---------------------------------------------------------------------------------------------

function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** Job statuses that can be announced by a webhook event. */
export const WebhookEventStatusSchema = z.enum(['running', 'completed', 'failed', 'cancelled']);

/**
 * The `webhook` of a submit body (modelled on Firecrawl's per-request `webhook {url, headers,
 * metadata, events}` and its `X-Firecrawl-Signature` header).
 *
 * - `url`: absolute http(s) URL the sim POSTs each event to (≤ 2048 chars).
 * - `secret`: when given, each delivery carries `X-Sim-Signature: sha256=<hex>`, the hex
 *   HMAC-SHA256 of the raw request body keyed with this secret (1..500 chars). Never echoed.
 * - `events`: statuses to announce (default the final ones: `completed`, `failed`, `cancelled`).
 *
 * Each event is a JSON {@link WebhookEventSchema} body with headers `X-Sim-Event-Id` (the
 * `event_id`) and `X-Sim-Delivery-Attempt` (1, 2, …). A delivery answered with a non-2xx status or
 * not answered is retried per `webhookRetryDelaysMs`; a delivery may arrive more than once.
 */
export const WebhookRequestSchema = z.strictObject({
  url: z.string().min(1).max(2048).refine(isHttpUrl, 'must be an absolute http:// or https:// URL'),
  secret: z.string().min(1).max(500).optional(),
  events: z.array(WebhookEventStatusSchema).min(1).default(['completed', 'failed', 'cancelled']),
});
/** Parsed `webhook` of a submit body. */
export type WebhookRequest = z.infer<typeof WebhookRequestSchema>;

/**
 * Body of `POST /api/scrape`. Unknown fields are rejected.
 *
 * - `url`: absolute http/https URL (≤ 4096 chars).
 * - `format`: `"markdown"` (default) or `"text"`; recorded and echoed (the result carries both).
 * - `client_ref`: caller's correlation reference, ≤ 200 chars (`null` is treated as absent).
 * - `timeout_ms`: target fetch timeout in ms, integer 1000..120000 (default 30000).
 * - `webhook`: optional callback, see {@link WebhookRequestSchema}. It is not part of the
 *   idempotency comparison: a replayed submit keeps the first submit's webhook.
 */
export const SubmitBodySchema = z.strictObject({
  url: z.string().min(1).max(4096).refine(isHttpUrl, 'must be an absolute http:// or https:// URL'),
  format: z.enum(['markdown', 'text']).default('markdown'),
  client_ref: z.string().max(200).nullish(),
  timeout_ms: z.number().int().min(1000).max(120_000).default(30_000),
  webhook: WebhookRequestSchema.optional(),
});
/** Parsed submit body. */
export type SubmitBody = z.infer<typeof SubmitBodySchema>;

/**
 * Body of one webhook event. `type` is `job.<status>`; `occurred_at` is the ISO-8601 UTC time of
 * the transition; `client_ref` echoes the submit's `client_ref` (null when none).
 */
export const WebhookEventSchema = z.object({
  event_id: z.string(),
  type: z.enum(['job.running', 'job.completed', 'job.failed', 'job.cancelled']),
  job_id: z.string(),
  client_ref: z.string().nullable(),
  status: WebhookEventStatusSchema,
  occurred_at: z.string(),
});
/** See {@link WebhookEventSchema}. */
export type WebhookEvent = z.infer<typeof WebhookEventSchema>;

/** `Idempotency-Key` header: 1..255 characters. */
export const IdempotencyKeySchema = z.string().min(1).max(255);

/** Job statuses. `queued` and `running` are active; the others are final. */
export const JobStatusSchema = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']);
/** See {@link JobStatusSchema}. */
export type JobStatus = z.infer<typeof JobStatusSchema>;

/** Query of `GET /api/jobs`: `client_ref` (exact match), `status`, `limit` 1..100 (default 50). */
export const ListQuerySchema = z.strictObject({
  client_ref: z.string().max(200).optional(),
  status: JobStatusSchema.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});

// ---------------------------------------------------------------------------------------------
// HTTP response bodies (exported so that adapters and tests can validate what they receive)
// ---------------------------------------------------------------------------------------------

/** `202` answer of `POST /api/scrape`. Times are ISO-8601 UTC strings. */
export const SubmitResponseSchema = z.object({
  job_id: z.string(),
  status: z.literal('queued'),
  created_at: z.string(),
});
/** See {@link SubmitResponseSchema}. */
export type SubmitResponse = z.infer<typeof SubmitResponseSchema>;

/** `result` of a completed job. `content_length` is the target response body size in bytes. */
export const JobResultSchema = z.object({
  url: z.string(),
  final_url: z.string(),
  http_status: z.number().int(),
  title: z.string().nullable(),
  byline: z.string().nullable(),
  excerpt: z.string().nullable(),
  lang: z.string().nullable(),
  dir: z.string().nullable(),
  site_name: z.string().nullable(),
  published_time: z.string().nullable(),
  text: z.string(),
  markdown: z.string(),
  links: z.array(z.string()),
  content_length: z.number().int(),
});
/** See {@link JobResultSchema}. */
export type JobResult = z.infer<typeof JobResultSchema>;

/** `error` of a failed job. */
export const JobErrorSchema = z.object({ code: z.string(), message: z.string() });
/** See {@link JobErrorSchema}. */
export type JobError = z.infer<typeof JobErrorSchema>;

/**
 * `200` answer of `GET /api/jobs/:id` (and, without `result`, each item of `GET /api/jobs`).
 * `started_at` / `finished_at` are null until the job starts / ends; `result` only when
 * `completed`; `error` only when `failed`.
 */
export const JobStatusResponseSchema = z.object({
  job_id: z.string(),
  status: JobStatusSchema,
  url: z.string(),
  client_ref: z.string().nullable(),
  format: z.enum(['markdown', 'text']),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  progress: z.object({ pages_fetched: z.number().int() }),
  credits_used: z.number().int(),
  result: JobResultSchema.optional(),
  error: JobErrorSchema.optional(),
});
/** See {@link JobStatusResponseSchema}. */
export type JobStatusResponse = z.infer<typeof JobStatusResponseSchema>;

/** One log line of `GET /api/jobs/:id/logs`. */
export const JobLogSchema = z.object({
  at: z.string(),
  level: z.enum(['info', 'warn', 'error']),
  message: z.string(),
});
/** See {@link JobLogSchema}. */
export type JobLog = z.infer<typeof JobLogSchema>;

/** Error body of every non-2xx answer: `{error: {code, message, ...extra}}`. */
export const ErrorBodySchema = z.object({
  error: z.looseObject({ code: z.string(), message: z.string() }),
});
/** See {@link ErrorBodySchema}. */
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
