/**
 * Configuration fields of the `scraperapi` kind (ScraperAPI Async API, docs.scraperapi.com
 * "Asynchronous API": Job Handling, Callbacks & API Params; read 2026-11-30).
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/**
 * The kind's own fields:
 * - `apiParams`: the standard ScraperAPI parameters sent with every job in the body's `apiParams`
 *   object (`render`, `country_code`, `premium`, …); a job's `options.apiParams` overrides them
 *   field by field;
 * - `timeoutSec`: the async-only job timeout sent as `timeoutSec` (s), when set;
 * - `failureReport`: which spelling of the "call the webhook for failed jobs too" flag to send
 *   with a callback — the docs spell it `expectUnsuccessReport` (Callbacks & API Params) and
 *   `expectsUnsuccessReport` (older Callbacks page); `both` (default) sends both, `off` neither
 *   (then a failed job is only seen by polling);
 * - `targetErrors`: what a `finished` job whose target answered `4xx`/`5xx` (`response.statusCode`)
 *   becomes: `completed` (default: the provider did its job; the result row keeps that HTTP
 *   status and the page) or `failed` (code `TARGET_HTTP_<status>`, evidence kept).
 */
export const ScraperApiConfigSchema = z.strictObject({
  kind: z.literal('scraperapi'),
  ...httpEndpointFields({ baseUrl: 'https://async.scraperapi.com', submitTimeoutMs: 30_000, readTimeoutMs: 15_000 }),
  apiParams: z.record(z.string(), z.unknown()).default({}),
  timeoutSec: z.number().int().positive().max(86_400).optional(),
  failureReport: z.enum(['both', 'expectUnsuccessReport', 'expectsUnsuccessReport', 'off']).default('both'),
  targetErrors: z.enum(['completed', 'failed']).default('completed'),
});

/** A parsed `scraperapi` entry (its fields plus the common ones). */
export type ScraperApiEntry = EntryFor<typeof ScraperApiConfigSchema>;
