/**
 * Configuration fields of the `firecrawl` kind (Firecrawl API v2).
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
 *
 * **Self-hosted servers** (`selfHosted`): Firecrawl's open-source API server (`apps/api` of
 * github.com/firecrawl/firecrawl; observed at commit 61e38dc, 2025-08-25) runs without Supabase
 * ("it's not possible to configure Supabase in self-hosted instances", its `SELF_HOST.md`), and
 * then differs from the hosted API in three ways an entry must know:
 * - `x-idempotency-key` on `POST /v2/crawl` answers `500` (the key's table lives in Supabase:
 *   `services/idempotency/validate.ts`), so every crawl submit would fail: the header is off
 *   (`selfHosted.idempotencyHeader`, default `false`; `true` for a deployment that has the table).
 *   Without it a lost crawl submit is never replayed: it is reconciled from the active list only;
 * - `GET /v2/team/activity` does not exist (`404`): never read. `GET /v2/crawl/active` lists
 *   running crawls only, so a lost submit of a crawl that already finished, and of any batch
 *   scrape, can never be proven absent: the job waits in `unknown` for an operator, never
 *   resubmitted (the entry's evidence says so: `lookups.ts`);
 * - webhooks are never signed (no `X-Firecrawl-Signature`, no `webhookId`): a self-hosted entry
 *   receives them on each job's own token URL (the token is the authenticity check), and
 *   `webhookSignature: true` is refused at configuration (every delivery would be refused).
 * A complete configuration for a self-hosted server and for the hosted API:
 * `docs/providers/firecrawl.md`.
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/** Firecrawl webhook event filters accepted by `webhook.events` (v2 OpenAPI: `completed`, `page`, `failed`, `started`). */
const FirecrawlWebhookEventSchema = z.enum(['completed', 'failed', 'page', 'started']);

/**
 * The kind's own fields:
 * - `baseUrl` (default `https://api.firecrawl.dev`; paths are `/v2/...`; a prefix is kept);
 * - `submitTimeoutMs` (20 s) and `readTimeoutMs` (25 s; a status page can carry 10 MB of documents):
 *   both stay under the default `poll.activityTimeoutMs` (30 s), which bounds one attempt;
 * - `operation`: `batch` (default) or `crawl`, see the module docs;
 * - `scrapeOptions`: Firecrawl scrape options every job of this entry starts from (e.g.
 *   `{"onlyMainContent": true}`), under the job's own `options` (batch) or `options.scrapeOptions`
 *   (crawl); default `{}` (formats default to `markdown` + `links`);
 * - `selfHosted` (absent: the hosted API): `{idempotencyHeader}` for Firecrawl's own server run
 *   without Supabase (see the module docs): `idempotencyHeader` (default `false`) sends
 *   `x-idempotency-key` on crawl submits; `GET /v2/team/activity` is never read; webhooks are
 *   unsigned;
 * - `webhookSignature` (default `true` for the hosted API, `false` with `selfHosted`): `true`: the
 *   Firecrawl account has a webhook secret (dashboard, Settings → Advanced) and `webhook.secretEnv`
 *   holds a copy of it: deliveries are verified by `X-Firecrawl-Signature` on
 *   `/v1/webhooks/<name>`. `false`: deliveries are unsigned (a hosted account without a secret, a
 *   self-hosted server): each job's webhook URL carries its own token, checked by the receiver.
 *   `true` with `selfHosted` is refused at configuration;
 * - `webhookEvents` (default `["completed", "failed"]`): the events asked for; `page` and
 *   `started` would wake the job once per page for nothing (webhooks are only hints).
 */
export const FirecrawlConfigSchema = z.strictObject({
  kind: z.literal('firecrawl'),
  ...httpEndpointFields({ baseUrl: 'https://api.firecrawl.dev', submitTimeoutMs: 20_000, readTimeoutMs: 25_000 }),
  operation: z.enum(['batch', 'crawl']).default('batch'),
  scrapeOptions: z.record(z.string(), z.unknown()).default({}),
  selfHosted: z
    .strictObject({
      idempotencyHeader: z
        .boolean()
        .default(false)
        .describe('send x-idempotency-key on crawl submits (a self-hosted server without Supabase answers it 500)'),
    })
    .optional(),
  webhookSignature: z.boolean().optional(),
  webhookEvents: z.array(FirecrawlWebhookEventSchema).min(1).default(['completed', 'failed']),
});

/** A parsed `firecrawl` entry (its fields plus the common ones). */
export type FirecrawlEntry = EntryFor<typeof FirecrawlConfigSchema>;

/** Whether `entry`'s deliveries are signed: `webhookSignature` when set, else true for the hosted API and false for a self-hosted server. */
export function firecrawlSignsWebhooks(entry: { webhookSignature?: boolean; selfHosted?: unknown }): boolean {
  return entry.webhookSignature ?? entry.selfHosted === undefined;
}

/** Whether crawl submits of `entry` carry `x-idempotency-key` (the hosted API: always; a self-hosted server: `selfHosted.idempotencyHeader`). */
export function firecrawlSendsIdempotencyKey(entry: Pick<FirecrawlEntry, 'operation' | 'selfHosted'>): boolean {
  return entry.operation === 'crawl' && (entry.selfHosted?.idempotencyHeader ?? true);
}
