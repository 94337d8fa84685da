/**
 * Webhooks of Firecrawl API v2 (firecrawl-docs `api-reference/webhooks-openapi.json` and
 * `webhooks/security.mdx`, commit 2edce52, 2026-08-21):
 * - body `{success, type, id, webhookId, data, metadata?, error?}`; `type` is `crawl.started`,
 *   `crawl.page`, `crawl.completed`, `batch_scrape.*` (and the undocumented `crawl.failed`,
 *   `crawl.cancelled` of the source); `id` is the job ID; `webhookId` identifies the delivery and
 *   stays the same on retries (our dedupe key); `metadata` echoes the request's, where the adapter
 *   put `{clientRef}`;
 * - `X-Firecrawl-Signature: sha256=<hex HMAC-SHA256 of the raw body>`, keyed with the account's
 *   webhook secret (dashboard, Settings → Advanced), present only when the account has one: an
 *   entry with `webhookSignature: false` receives unsigned deliveries on the per-job token URL;
 * - Firecrawl's own server (self-hosted, 61e38dc) signs nothing and sends no `webhookId` (the
 *   receiver then dedupes on the body's hash); a cancelled crawl sends `crawl.completed` with
 *   `success: true` (a hint only: the status read decides). A `selfHosted` entry is unsigned;
 * - answer within 10 s; retries after 1, 5 and 15 minutes.
 */
import { z } from 'zod';
import type { ProviderWebhook } from '../descriptor.js';
import { headerValue, verifySha256Signature } from '../shared/webhook.js';
import { firecrawlSignsWebhooks } from './config.js';

/** Signature header (lower-case). */
const FIRECRAWL_SIGNATURE_HEADER = 'x-firecrawl-signature';

/** A delivery's body; more fields are allowed (Firecrawl adds fields). */
const FirecrawlWebhookEventSchema = z.looseObject({
  success: z.boolean().optional(),
  type: z.string().min(1).max(100),
  id: z.string().min(1).max(200),
  webhookId: z.string().min(1).max(200).optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  error: z.string().nullish(),
});

/** The provider status a Firecrawl event type implies (a hint only): `crawl.completed` → `completed`, `*.page`/`*.started` → `scraping`. */
export function firecrawlEventStatus(type: string): string {
  const sub = type.split('.').pop() ?? '';
  return sub === 'page' || sub === 'started' ? 'scraping' : sub;
}

/** The `firecrawl` kind's {@link ProviderWebhook}. */
export const firecrawlWebhook: ProviderWebhook<{ webhookSignature?: boolean; selfHosted?: unknown }> = {
  signed: (entry) => firecrawlSignsWebhooks(entry),
  signatureHeader: FIRECRAWL_SIGNATURE_HEADER,
  verify: (rawBody, headers, secret) =>
    verifySha256Signature(rawBody, headerValue(headers, FIRECRAWL_SIGNATURE_HEADER), secret),
  claimedEventId(json) {
    const id = json && typeof json === 'object' ? (json as { webhookId?: unknown }).webhookId : undefined;
    return typeof id === 'string' ? id.slice(0, 200) : null;
  },
  parse(json) {
    const p = FirecrawlWebhookEventSchema.safeParse(json);
    if (!p.success) return { ok: false, message: z.prettifyError(p.error) };
    const ref = p.data.metadata?.clientRef;
    return {
      ok: true,
      event: {
        // Empty: the receiver falls back to the body's hash (older deliveries carry no webhookId).
        eventId: p.data.webhookId ?? '',
        type: p.data.type,
        taskId: p.data.id,
        clientRef: typeof ref === 'string' ? ref : null,
        providerStatus: firecrawlEventStatus(p.data.type),
      },
    };
  },
};
