/**
 * zod schemas of what the HTTP API answers: jobs, lists, results and their documents, cancel
 * reports, webhook acknowledgements, health and problem types. The routes serialise with them
 * and the OpenAPI document (`GET /openapi.json`) is generated from them; what the API is sent is
 * `requestSchemas.ts`'s. How jobs are mapped onto these schemas is in `views.ts`.
 *
 * Field names are snake_case. Times are UTC ISO-8601 strings.
 */
import { z } from 'zod';
import { JOB_STATES } from '../model/states.js';
import { WAIT_REASONS } from '../model/types.js';
import { CostSchema } from './budgetSchemas.js';

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
            'What the job waits for: a free slot under the provider key’s limit (given by the key’s fair share between accounts), a cool-down of the key, a credential the worker lacks, an operator’s decision, a budget of the account that its estimated cost would take past its amount (the account’s policy holds such jobs until the period renews or the budget is raised), the provider’s lookups read again after their lag before a lost submit’s outcome is concluded (`evidence`), or the back-off before a submit proven never to have created a task is sent again under the same key (`resubmit`).',
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
