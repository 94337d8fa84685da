/**
 * zod schemas of what the HTTP API is sent: request bodies, query strings, path parameters and
 * headers. The routes validate with them (fastify-type-provider-zod) and the OpenAPI document
 * (`GET /openapi.json`) is generated from them, so the two cannot drift apart. Request fields
 * reuse the model's schemas (`src/model/schemas.ts`: URL, idempotency key, poll policy, ...);
 * what the API answers is `schemas.ts`'s.
 *
 * Field names are snake_case; the nested `policy` keeps the model's names (ms durations).
 */
import { z } from 'zod';
import { JOB_STATES } from '../model/states.js';
import { IdempotencyKeySchema, StartScrapeInputSchema } from '../model/schemas.js';

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

/**
 * A whole number in a query string, written in decimal digits only (`?limit=50`), between `min`
 * and `max`, `fallback` when the parameter is absent. An empty value (`?offset=`), a sign, a
 * fraction, an exponent or a hex spelling (`0x10`) is refused (`400`), never read as 0 or 16 as
 * `Number()` would: the document says "integer", so a client's bug shows at once.
 */
function queryInteger(min: number, max: number, fallback: number, description: string) {
  const decimal = z
    .number({ error: `must be a whole number from ${min} to ${max}, in decimal digits` })
    .int()
    .min(min)
    .max(max)
    .default(fallback);
  return z
    .preprocess((v) => (typeof v === 'string' && /^[0-9]{1,12}$/.test(v) ? Number(v) : v), decimal)
    .describe(description);
}

/** Query of `GET /v1/scrapes/:id/documents`. */
export const DocumentsQuerySchema = z.strictObject({
  offset: queryInteger(0, 100_000_000, 0, 'Position of the first document (0-based).'),
  limit: queryInteger(1, 1000, 100, 'Page size, 1-1000.'),
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
  limit: queryInteger(1, 1000, 100, 'Page size, 1-1000.'),
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
