/**
 * zod schemas of the HTTP API: request bodies, query strings, path parameters, headers and
 * responses. The routes validate with them (fastify-type-provider-zod) and the OpenAPI document
 * (`GET /openapi.json`) is generated from them, so the two cannot drift apart. Request fields
 * reuse the model's schemas (`src/model/schemas.ts`: URL, idempotency key, poll policy, ...).
 *
 * Field names are snake_case; the nested `policy` keeps the model's names (ms durations).
 * Times are UTC ISO-8601 strings. How jobs are mapped onto the response schemas is in `views.ts`.
 */
import { z } from 'zod';
import { JOB_STATES } from '../model/states.js';
import { WAIT_REASONS } from '../model/types.js';
import { IdempotencyKeySchema, StartScrapeInputSchema } from '../model/schemas.js';
import { CostSchema } from './budgetSchemas.js';

const S = StartScrapeInputSchema.shape;

/**
 * The shape of a target URL that the document declares (JSON Schema `pattern`): `http` or `https`,
 * a host name whose labels start with a letter, or a dotted IPv4 address, an optional port of up
 * to 5 digits, then any path, query and fragment without control characters. Every URL
 * of this shape is accepted unless it carries a credential (user-info, or a parameter such as
 * `api_key`; see docs/jobs.md, "Secrets in requests"); the server also accepts a few spellings the pattern leaves
 * out (internationalised host names, IPv6 literals, surrounding spaces), always normalising them
 * to their WHATWG serialisation.
 */
const TARGET_URL_PATTERN =
  '^[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z][A-Za-z0-9-]*(?:\\.[A-Za-z][A-Za-z0-9-]*)*\\.?|(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?(?:[/?#][^\\x00-\\x1f\\x7f]*)?$';

/**
 * Body of `POST /v1/scrapes` for a deployment whose providers are `providers` (the document lists
 * them: a request naming another one is refused, so the schema says so). Unknown fields are
 * rejected (400).
 */
export function createScrapeBodySchema(providers: readonly string[]) {
  const names = providers.length > 0 ? (providers as [string, ...string[]]) : (['none'] as [string]);
  return z
    .strictObject({
      url: z
        .string()
        .trim()
        .max(4096)
        .regex(
          new RegExp(TARGET_URL_PATTERN),
          'url must be an absolute URL with scheme http or https and a host name or IPv4 address',
        )
        .pipe(S.url)
        .describe(
          'The page to scrape: an absolute http(s) URL without credentials (user-info, `api_key=`, `token=<secret>`, … are refused with the reason).',
        ),
      provider: z
        .enum(names, {
          error: (iss) => `unknown provider ${JSON.stringify(iss.input)}; configured: ${names.join(', ')}`,
        })
        .optional()
        .describe('Configured provider name; default: the configured default provider.'),
      format: S.format.describe('Output format requested from the provider.'),
      options: S.options.describe(
        'Provider-specific options (JSON; no secrets; not `url`, `format`, `client_ref` or `webhook`).',
      ),
      row: S.row.describe('Your own record of the request, kept with the job as evidence.'),
      batch_id: S.batchId.describe('Groups jobs (filter `GET /v1/scrapes?batch_id=`).'),
      priority: S.priority.describe(
        'Order among your jobs waiting for a slot of the same provider key (higher first; default 0). Your account’s share of the key is its weight.',
      ),
      policy: S.policy.describe(
        'Polling overrides (all durations in ms); see the PollPolicy of the workflow. `initialDelayMs` must not exceed `maxDelayMs` (a relation JSON Schema cannot state: refused with 400 naming both).',
      ),
    })
    .meta({ id: 'CreateScrapeRequest', description: 'A scrape request.' });
}
/** A parsed `POST /v1/scrapes` body (defaults applied). */
export type CreateScrapeBody = z.infer<ReturnType<typeof createScrapeBodySchema>>;

/** Request headers of `POST /v1/scrapes` (other headers are allowed). */
export const CreateScrapeHeadersSchema = z.object({
  'idempotency-key': IdempotencyKeySchema.optional().describe(
    'Your key for this logical request (1-200 of A-Z a-z 0-9 . _ : -), scoped to your account, kept as long as the job. The same key with the same body returns the same job; with another body: 422. Without it, the key is derived from (provider, url, format, options): the same request returns the same job.',
  ),
});

/**
 * Path parameter `:id` (a job ID `scrape:<account>:<key>`; URL-encode the colons or not). Any
 * string up to 300 characters is a valid ID to ask for: one that names no job of the caller's
 * account is a 404; a longer one is a 400 (also past the router's 400-character segment limit).
 */
export const JobIdParamsSchema = z.object({
  id: z.string().min(1).max(300).describe('Job ID, `scrape:<account>:<key>` (URL-encoded or not).'),
});

/** Path parameter `:provider` of the webhook receiver. */
export const ProviderParamsSchema = z.object({
  provider: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .describe('Configured provider name.'),
});

/** Path parameters of the per-job callback route `/v1/webhooks/:provider/:token` (providers that do not sign). */
export const WebhookTokenParamsSchema = z.object({
  provider: ProviderParamsSchema.shape.provider,
  token: z
    .string()
    .min(1)
    .max(200)
    .describe('The per-job token of the callback URL the job was submitted with (a wrong one answers 401).'),
});

/** Query of `GET /v1/scrapes/:id/documents`. */
export const DocumentsQuerySchema = z.strictObject({
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000_000)
    .default(0)
    .describe('Position of the first document (0-based).'),
  limit: z.coerce.number().int().min(1).max(1000).default(100).describe('Page size, 1-1000.'),
});

/** Path parameter `:slug` of a problem type description (an unknown slug is a 404). */
export const ProblemSlugParamsSchema = z.object({
  slug: z.string().min(1).max(300).describe('A problem type slug, e.g. `not-found`.'),
});

const STATE_ALTERNATIVES = `(?:${JOB_STATES.join('|')})`;

/**
 * The list cursor of the HTTP API: `<ms>.<id>` — the `created_at` of the previous page's last job
 * (epoch ms, UTC) and its ID (base64url). Every string of this shape is a valid position in the
 * list, so the pattern is the whole rule. See {@link toApiCursor} / {@link fromApiCursor}.
 */
const API_CURSOR_PATTERN = '^[0-9]{1,13}\\.[A-Za-z0-9_-]{2,400}$';

/** Query of `GET /v1/scrapes`. */
export const ListQuerySchema = z.strictObject({
  state: z
    .string()
    .trim()
    .max(300)
    .regex(
      new RegExp(`^(?:${STATE_ALTERNATIVES}(?:,${STATE_ALTERNATIVES})*)?$`),
      `state must be a comma-separated list of ${JOB_STATES.join(', ')}`,
    )
    .optional()
    .describe('Comma-separated states to include (empty: all).'),
  batch_id: z.string().max(120).optional().describe('Only jobs of this batch.'),
  limit: z.coerce.number().int().min(1).max(1000).default(100).describe('Page size, 1-1000.'),
  cursor: z
    .string()
    .trim()
    .max(420)
    .regex(new RegExp(API_CURSOR_PATTERN), 'cursor must be the next_cursor of the previous page, unchanged')
    .optional()
    .describe('The `next_cursor` of the previous page.'),
});

/** The API's cursor (see {@link API_CURSOR_PATTERN}) of a list position `{createdAt, id}`. */
export function toApiCursor(c: { createdAt: string; id: string }): string {
  return `${Date.parse(c.createdAt)}.${Buffer.from(c.id, 'utf8').toString('base64url')}`;
}

/** The list position of an API cursor matching {@link API_CURSOR_PATTERN} (any such string is one). */
export function fromApiCursor(cursor: string): { createdAt: string; id: string } {
  const dot = cursor.indexOf('.');
  return {
    createdAt: new Date(Number(cursor.slice(0, dot))).toISOString(),
    id: Buffer.from(cursor.slice(dot + 1), 'base64url').toString('utf8'),
  };
}

/** Body of `POST /v1/scrapes/:id/cancel` (optional: no body at all is fine). */
export const CancelBodySchema = z
  .strictObject({ reason: z.string().min(1).max(500).optional().describe('Why (kept in the job’s cancel record).') })
  .nullish();

const JobErrorOutSchema = z.object({
  kind: z
    .string()
    .describe('permanent | cooldown | transient | ambiguous | not_found | conflict | internal | provider_failed'),
  code: z.string().nullable(),
  message: z.string(),
  http_status: z.number().int().nullable(),
  at: z.string(),
});

/** A job as `GET /v1/scrapes/:id`, `POST /v1/scrapes` and the list return it. */
export const ScrapeSchema = z
  .object({
    job_id: z.string().describe('`scrape:<account>:<key>`.'),
    key: z.string().describe('The idempotency key (yours, or derived from the request).'),
    provider: z.string(),
    url: z.string(),
    state: z
      .enum(JOB_STATES)
      .describe('Our state (see README, "Job states"); `tracking_interrupted` is resumable, not a failure.'),
    final: z.boolean().describe('True when the job will not change any more by itself.'),
    provider_status: z.string().nullable().describe("The provider's raw status at the last check."),
    task_id: z.string().nullable().describe("The provider's job ID."),
    batch_id: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    submitted_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    deadline_at: z.string().nullable().describe('When tracking stops (then `tracking_interrupted`).'),
    progress: z.object({
      status_checks: z.number().int().describe('Successful status checks at the provider so far.'),
      failing_checks: z
        .number()
        .int()
        .describe(
          'Status checks that failed since the last successful one (the check is being retried; `last_error` says why). Never a resubmission.',
        ),
      last_checked_at: z.string().nullable().describe('When the provider last answered a status check.'),
    }),
    last_error: JobErrorOutSchema.nullable(),
    waiting: z
      .object({
        reason: z
          .enum(WAIT_REASONS)
          .describe(
            'What the job waits for: a free slot under the provider key’s limit (given by the key’s fair share between accounts), a cool-down of the key, a credential the worker lacks, an operator’s decision, or a budget of the account that its estimated cost would take past its amount (the account’s policy holds such jobs until the period renews or the budget is raised).',
          ),
        message: z.string().describe('What the job waits for and what would end the wait, in one line.'),
        until: z.string().nullable().describe('When the next try comes (UTC), when known.'),
      })
      .nullable()
      .describe('Why the job waits, while it does; null when it does not.'),
    cost: CostSchema.nullable().describe(
      'What the job costs at its provider, in its unit; null before its first submit.',
    ),
    content_note: z
      .string()
      .nullable()
      .describe(
        'The note of the stored result when its content is empty or partial (`empty: …`, `partial: kept N of the M documents <provider count> counts (why)`); null otherwise.',
      ),
    partial: z
      .boolean()
      .describe(
        'True when the job completed with fewer documents than the provider counts: what could be read is kept, `content_note` says how many of how many and why.',
      ),
    expected_documents: z
      .number()
      .int()
      .nullable()
      .describe('The provider’s own count of the stored result’s documents, where it gives one; else null.'),
    poll_after_s: z
      .number()
      .int()
      .nullable()
      .describe('Polling guidance while the job runs (seconds; also the `Retry-After` header); null once final.'),
    status_url: z.string().describe('This job (path, URL-encoded).'),
    result_url: z.string(),
    cancel_url: z.string(),
  })
  .meta({ id: 'Scrape' });
/** A job as the API shows it (see {@link ScrapeSchema}). */
export type ScrapeOut = z.infer<typeof ScrapeSchema>;

/** `GET /v1/scrapes`. */
export const ScrapeListSchema = z
  .object({
    jobs: z.array(ScrapeSchema).describe("The caller's jobs, newest first."),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page.'),
  })
  .meta({ id: 'ScrapeList' });

/** What is kept of a binary body. */
export const BodySchema = z.object({
  content_type: z.string().nullable().describe('Media type, e.g. `application/pdf`.'),
  size: z.number().int().describe('Bytes.'),
  sha256: z.string().describe('Hex SHA-256 of the bytes.'),
});

/** `GET /v1/scrapes/:id/result` (200). */
export const ResultSchema = z
  .object({
    job_id: z.string(),
    result_id: z.string(),
    provider: z.string(),
    task_id: z.string(),
    url: z.string(),
    final_url: z.string().nullable(),
    http_status: z.number().int().nullable().describe("The target page's HTTP status."),
    title: z.string().nullable(),
    byline: z.string().nullable(),
    excerpt: z.string().nullable(),
    lang: z.string().nullable(),
    site_name: z.string().nullable(),
    published_time: z.string().nullable(),
    text: z.string().nullable(),
    markdown: z.string().nullable(),
    links: z.array(z.string()),
    content_length: z.number().int().nullable().describe('Bytes of the target response body.'),
    body: BodySchema.nullable().describe(
      'The target’s binary body (a PDF, an image) as kept: its media type, size and SHA-256; null for a text page. A PDF’s text is in `text` and `markdown`.',
    ),
    content_note: z
      .string()
      .nullable()
      .describe(
        'Why the content is empty or partial (`empty: the provider returned no content`, `partial: kept N of the M documents <provider count> counts (why)`, a PDF whose text could not be read); null when the result is complete and has usable content. The job is still `completed`: the provider did the work.',
      ),
    partial: z
      .boolean()
      .describe(
        'True when the result holds fewer documents than the provider counts (after every page that could be read); `content_note` says how many of how many and why.',
      ),
    expected_documents: z
      .number()
      .int()
      .nullable()
      .describe(
        'The provider’s own count of the result’s documents (Firecrawl’s `completed`, a dataset’s item count), where it gives one; else null.',
      ),
    written_at: z.string(),
    expires_at: z.string().nullable().describe('When the result will be purged (then `410`); null: kept.'),
  })
  .meta({ id: 'ScrapeResult' });

/** One document of a multi-document result. */
const ResultDocumentSchema = z
  .object({
    seq: z.number().int().describe('Position in the provider’s order (0-based).'),
    url: z.string().nullable(),
    final_url: z.string().nullable(),
    http_status: z.number().int().nullable(),
    title: z.string().nullable(),
    markdown: z.string().nullable(),
    text: z.string().nullable(),
    links: z.array(z.string()).nullable(),
    data: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('Provider-specific fields (page metadata, a dataset item’s own fields).'),
    error: z
      .object({ code: z.string().nullable(), message: z.string() })
      .nullable()
      .describe('A per-document failure (the document has no content).'),
    identity: z
      .string()
      .describe(
        'The document’s identity within the result (the provider’s document ID, else its URL with its position or a hash of its content): one document per identity.',
      ),
    body: BodySchema.nullable().describe('The document’s binary body (a file), when it is one; null otherwise.'),
  })
  .meta({ id: 'ResultDocument' });

/** `GET /v1/scrapes/:id/documents` (200). */
export const ResultDocumentsSchema = z
  .object({
    job_id: z.string(),
    result_id: z.string(),
    total: z.number().int().describe('Documents of the result in all (0 for a single-page result: see `result_url`).'),
    offset: z.number().int(),
    limit: z.number().int(),
    documents: z.array(ResultDocumentSchema),
    next_offset: z.number().int().nullable().describe('`offset` of the next page; null on the last page.'),
  })
  .meta({ id: 'ResultDocuments' });

/** A cancel report as the API shows it. */
export const CancelReportSchema = z.object({
  requested_by: z.string(),
  reason: z.string(),
  via: z.enum(['signal', 'update', 'native', 'deadline']),
  requested_at: z.string(),
  outcome: z
    .enum(['cancelled', 'completed', 'failed', 'cancel_unconfirmed'])
    .nullable()
    .describe('What was observed at the provider; null while in progress.'),
  detail: z.string().nullable(),
  provider_cancel_calls: z.number().int(),
  remaining_effects: z
    .object({
      pages_fetched: z.number().nullable(),
      documents: z.number().nullable().describe('Documents (crawl pages, items) the provider holds for the job.'),
      credits_used: z.number().nullable(),
    })
    .nullable()
    .describe('Effects already produced that remain.'),
});

/** `POST /v1/scrapes/:id/cancel`. */
export const CancelResponseSchema = z
  .object({
    job_id: z.string(),
    result: z
      .enum(['observed', 'requested', 'already_final', 'not_running'])
      .describe(
        '`observed`: the provider outcome is known (`cancel.outcome`); `requested`: the cancel is under way, follow `status_url`; `already_final`: nothing to cancel; `not_running`: the job never reached a final state but its workflow no longer runs (an orphan: an operator resumes it).',
      ),
    state: z.enum(JOB_STATES),
    cancel: CancelReportSchema.nullable(),
    note: z.string().nullable().describe('Why the outcome is not known yet, when `result` is `requested`.'),
    status_url: z.string(),
  })
  .meta({ id: 'CancelOutcome' });

/** Answer of the webhook receiver. */
export const WebhookAckSchema = z.object({
  received: z.literal(true),
  event_id: z.string().nullable(),
  outcome: z
    .enum(['woken', 'duplicate', 'quarantined', 'job_final', 'not_running'])
    .describe(
      '`woken`: the job checks the provider now; `duplicate`: this event was handled before; `quarantined`: kept for an operator (unmatched); `job_final` / `not_running`: nothing to wake.',
    ),
});

/** `GET /healthz`. */
export const HealthSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  temporal: z.enum(['ok', 'unreachable']),
  store: z.enum(['ok', 'unreachable']),
});

/** `GET /problems/:slug`. */
export const ProblemTypeSchema = z.object({
  type: z.string(),
  status: z.number().int(),
  title: z.string(),
  description: z.string(),
});
