/**
 * The `firecrawl` kind: Firecrawl API v2, batch scrape (one URL) or crawl per entry. See
 * `adapter.ts` for the contract and its sources, `results.ts` for reading a completed job,
 * `lookups.ts` for reconciling a lost submit, `config.ts` for the fields, `webhook.ts` for
 * deliveries.
 */
import { defineProvider } from '../descriptor.js';
import { numericOption } from '../shared/cost.js';
import { FirecrawlAdapter } from './adapter.js';
import { firecrawlEvidence } from './lookups.js';
import { FirecrawlConfigSchema } from './config.js';
import { firecrawlWebhook } from './webhook.js';

export { FirecrawlAdapter, firecrawlState } from './adapter.js';
export { firecrawlDocument } from './results.js';
export { firecrawlSendsIdempotencyKey, firecrawlSignsWebhooks, type FirecrawlEntry } from './config.js';
export { firecrawlEventStatus, firecrawlWebhook } from './webhook.js';

/** Descriptor of the `firecrawl` kind. */
export const firecrawlProvider = defineProvider({
  kind: 'firecrawl',
  title: 'Firecrawl API v2 (batch scrape, crawl)',
  contract:
    'Firecrawl API v2: OpenAPI api-reference/v2-openapi.json and webhooks-openapi.json of github.com/firecrawl/firecrawl-docs (commit 2edce52, 2026-08-21); server source github.com/firecrawl/firecrawl apps/api/src/controllers/v2 (commit 61e38dc, 2025-08-25) for x-idempotency-key, 409 and list shapes',
  configSchema: FirecrawlConfigSchema,
  // Idempotency: crawl entries of the hosted API only (the adapter narrows it per entry).
  capabilities: { idempotency: true, list: true, cancel: true, webhooks: true },
  evidence: [
    { label: 'crawl entry', evidence: firecrawlEvidence('crawl') },
    { label: 'batch entry', evidence: firecrawlEvidence('batch') },
    {
      label: 'crawl entry, self-hosted (`selfHosted`)',
      evidence: firecrawlEvidence('crawl', { idempotencyKey: false, teamActivity: false }),
    },
    {
      label: 'batch entry, self-hosted (`selfHosted`)',
      evidence: firecrawlEvidence('batch', { idempotencyKey: false, teamActivity: false }),
    },
  ],
  notFoundGrace: {
    ms: 60_000,
    source:
      'Firecrawl answers `404 Job not found` for a crawl or batch read in its first seconds, before its record is written (seen on the self-hosted server and reported against the hosted one)',
  },
  expiry: '404 after 24 h ("Job expired" → expired at once; "Job not found" counted, then expired)',
  // A status read of a running crawl returns the pages so far (up to 10 MB): poll less often than the global default.
  poll: { initialDelayMs: 5_000, maxDelayMs: 120_000 },
  cost: {
    unit: () => 'credits',
    reports: () => true,
    failed: 'estimate',
    doc: {
      unit: 'credits',
      estimate:
        "crawl: its page `limit` (the job's `options.limit`, default 100) × 1 credit; batch scrape of one URL: 1 credit (5 with a `json` format)",
      reported:
        '`creditsUsed` of `GET /v2/crawl/{id}` and `GET /v2/batch/scrape/{id}` (Firecrawl API v2 OpenAPI, firecrawl-docs `api-reference/v2-openapi.json`, commit 2edce52, 2026-08-21)',
    },
    estimate: (request, entry) => {
      if (entry.operation === 'crawl') return numericOption(request, 'limit') ?? 100;
      const formats = [request.options.formats, entry.scrapeOptions.formats].find((f) => Array.isArray(f));
      const json = (formats as unknown[] | undefined)?.some(
        (f) => f === 'json' || (typeof f === 'object' && f !== null && (f as { type?: unknown }).type === 'json'),
      );
      return json ? 5 : 1;
    },
  },
  webhook: firecrawlWebhook,
  create: (name, entry) => new FirecrawlAdapter(name, entry),
  refineEntry(entry, ctx) {
    // Firecrawl's own server signs no delivery: with a signature expected, every one would be refused.
    if (entry.selfHosted !== undefined && entry.webhookSignature === true)
      ctx.addIssue({
        code: 'custom',
        path: ['webhookSignature'],
        message:
          'a self-hosted Firecrawl never signs its webhooks (no X-Firecrawl-Signature header), so with webhookSignature: true every delivery would be refused; remove webhookSignature (a selfHosted entry receives unsigned deliveries on each job’s own token URL) or set it to false',
      });
  },
});
