/**
 * Configuration fields of the `firecrawl` kind (Firecrawl API v2). The common fields
 * (credentials, limits, poll, results, reconcile, webhook) come from `../shared/entry.ts`.
 *
 * The **operation** is chosen by configuration, one per entry, not per job:
 * - `batch` (default): `POST /v2/batch/scrape` with the job's one URL. Firecrawl v2's `POST
 *   /v2/scrape` is synchronous only (v2 OpenAPI, 2026-08-21: no async flag; the request holds the
 *   connection until the page is scraped), so a one-URL batch scrape is the asynchronous way to
 *   scrape one page: an ID at once, status and result by polling, cancel, webhooks.
 * - `crawl`: `POST /v2/crawl` from the job's URL; many documents.
 * Why per entry: the two operations differ in what reconciliation can rely on — only
 * `POST /v2/crawl` honours `x-idempotency-key`, and only crawls appear in `GET /v2/crawl/active` —
 * and a kind's capabilities are per entry; the task ID also stays Firecrawl's bare job ID, the same
 * one the dashboard and webhooks show, because the entry says which route reads it. Use two entries
 * (e.g. `fc-page`, `fc-crawl`) on the same key for both. A job's `options` are Firecrawl's own
 * request fields for that operation (crawl `limit`, `includePaths`, `scrapeOptions`…; batch
 * `formats`, `onlyMainContent`…), passed through and validated by Firecrawl (a `400` fails the job
 * with Firecrawl's reason).
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/** Firecrawl webhook event filters accepted by `webhook.events` (v2 OpenAPI: `completed`, `page`, `failed`, `started`). */
export const FirecrawlWebhookEventSchema = z.enum(['completed', 'failed', 'page', 'started']);

/**
 * The kind's own fields:
 * - `baseUrl` (default `https://api.firecrawl.dev`; paths are `/v2/...`; a prefix is kept);
 * - `submitTimeoutMs` (20 s) and `readTimeoutMs` (25 s; a status page can carry 10 MB of documents):
 *   both stay under the default `poll.activityTimeoutMs` (30 s), which bounds one attempt;
 * - `operation`: `batch` (default) or `crawl`, see the module docs;
 * - `scrapeOptions`: Firecrawl scrape options every job of this entry starts from (e.g.
 *   `{"onlyMainContent": true}`), under the job's own `options` (batch) or `options.scrapeOptions`
 *   (crawl); default `{}` (formats default to `markdown` + `links`);
 * - `webhookSignature` (default `true`): the Firecrawl account has a webhook secret (dashboard,
 *   Settings → Advanced) and `webhook.secretEnv` holds a copy of it: deliveries are verified by
 *   `X-Firecrawl-Signature` on `/v1/webhooks/<name>`. `false`: the account has no secret
 *   (deliveries are unsigned); each job's webhook URL then carries its own token;
 * - `webhookEvents` (default `["completed", "failed"]`): the events asked for; `page` and
 *   `started` would wake the job once per page for nothing (webhooks are only hints).
 */
export const FirecrawlConfigSchema = z.strictObject({
  kind: z.literal('firecrawl'),
  ...httpEndpointFields({ baseUrl: 'https://api.firecrawl.dev', submitTimeoutMs: 20_000, readTimeoutMs: 25_000 }),
  operation: z.enum(['batch', 'crawl']).default('batch'),
  scrapeOptions: z.record(z.string(), z.unknown()).default({}),
  webhookSignature: z.boolean().default(true),
  webhookEvents: z.array(FirecrawlWebhookEventSchema).min(1).default(['completed', 'failed']),
});

/** A parsed `firecrawl` entry (its fields plus the common ones). */
export type FirecrawlEntry = EntryFor<typeof FirecrawlConfigSchema>;
