/**
 * The `scraperapi` kind: ScraperAPI's Async API (one job per URL). See `adapter.ts` for the
 * contract and every decision taken where the docs are silent.
 */
import { defineProvider } from '../descriptor.js';
import { paramsOf, scraperApiEstimate } from './cost.js';
import { ScraperApiAdapter, SCRAPERAPI_EVIDENCE } from './adapter.js';
import { ScraperApiConfigSchema } from './config.js';
import { scraperApiWebhook } from './webhook.js';

export { scraperApiState } from './adapter.js';
export { scraperApiWebhook } from './webhook.js';

/** Descriptor of the `scraperapi` kind. */
export const scraperApiProvider = defineProvider({
  kind: 'scraperapi',
  title: 'ScraperAPI (async jobs)',
  contract:
    'ScraperAPI Async API: docs.scraperapi.com/asynchronous-api/job-handling and /callbacks-and-api-params (read 2026-11-30); POST https://async.scraperapi.com/jobs {apiKey, url} → {id, status, statusUrl, url}; GET /jobs/{id}; DELETE /jobs/{id}',
  configSchema: ScraperApiConfigSchema,
  capabilities: { idempotency: false, list: false, cancel: true, webhooks: true },
  evidence: [{ label: 'async jobs', evidence: SCRAPERAPI_EVIDENCE }],
  notFoundGrace: {
    ms: 60_000,
    source: "no propagation delay is documented for async jobs; the product's default window",
  },
  expiry: 'results kept up to 72 h (24 h guaranteed); a 404 afterwards is counted → expired',
  poll: { initialDelayMs: 5_000, maxDelayMs: 60_000 },
  webhook: scraperApiWebhook,
  cost: {
    unit: () => 'credits',
    estimate: (request, entry) => scraperApiEstimate({ ...entry.apiParams, ...paramsOf(request) }),
    reports: () => false,
    failed: 'free',
    doc: {
      unit: 'credits',
      estimate:
        '`apiParams.max_cost` when set (the request\'s own cap), else 1 credit, 10 with `render` or `premium`, 25 with both, 30 with `ultra_premium` (75 with `render`) (docs.scraperapi.com "Asynchronous API", "Cost Control", read 2026-11-30)',
      reported: null,
    },
  },
  create: (name, entry) => new ScraperApiAdapter(name, entry),
});
