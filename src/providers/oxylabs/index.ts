/**
 * The `oxylabs` kind: the Oxylabs Web Scraper API through Push-Pull (one query per job). See
 * `adapter.ts` for the contract.
 */
import { defineProvider } from '../descriptor.js';
import { OxylabsAdapter, OXYLABS_EVIDENCE } from './adapter.js';
import { OxylabsConfigSchema } from './config.js';
import { oxylabsWebhook } from './webhook.js';

export { oxylabsState } from './adapter.js';
export { oxylabsWebhook } from './webhook.js';

/** Descriptor of the `oxylabs` kind. */
export const oxylabsProvider = defineProvider({
  kind: 'oxylabs',
  title: 'Oxylabs Web Scraper API (Push-Pull)',
  contract:
    'Oxylabs Web Scraper API, Push-Pull: developers.oxylabs.io → Integration methods → Push-Pull, Response Codes, Rate Limits (read 2026-11-30); POST https://data.oxylabs.io/v1/queries (Basic auth) → {id, status: "pending", _links}; GET /v1/queries/{id}; GET /v1/queries/{id}/results (204 while not completed)',
  configSchema: OxylabsConfigSchema,
  capabilities: { idempotency: false, list: false, cancel: false, webhooks: true },
  evidence: [{ label: 'push-pull queries', evidence: OXYLABS_EVIDENCE }],
  notFoundGrace: {
    ms: 60_000,
    source: "no propagation delay is documented for Push-Pull jobs; the product's default window",
  },
  expiry: 'results kept at least 24 h; then 404 (counted) → expired',
  poll: { initialDelayMs: 5_000, maxDelayMs: 60_000 },
  webhook: oxylabsWebhook,
  cost: {
    unit: () => 'requests',
    estimate: () => 1,
    reports: () => false,
    failed: 'estimate',
    doc: { unit: 'requests', estimate: '1 per job (no job answer reports a cost)', reported: null },
  },
  create: (name, entry) => new OxylabsAdapter(name, entry),
});
