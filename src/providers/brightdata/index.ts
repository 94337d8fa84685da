/**
 * The `brightdata` kind: Bright Data's Web Scraper API (datasets v3), one input per trigger. See
 * `adapter.ts` for the contract and `guard.ts` for the IP-block guard.
 */
import { defineProvider } from '../descriptor.js';
import { BrightDataAdapter } from './adapter.js';
import { BRIGHTDATA_EVIDENCE } from './lookups.js';
import { BrightDataConfigSchema } from './config.js';
import { brightDataWebhook } from './webhook.js';

export { BrightDataAdapter, brightDataState, statedRunningJobsLimit } from './adapter.js';
export { BRIGHTDATA_BLOCK_AT, BRIGHTDATA_BLOCK_WINDOW_MS } from './config.js';
export { RefusalGuard, RefusalWindow } from './guard.js';
export { brightDataWebhook } from './webhook.js';

/** Descriptor of the `brightdata` kind. */
export const brightDataProvider = defineProvider({
  kind: 'brightdata',
  title: 'Bright Data Web Scraper API (datasets v3)',
  contract:
    'Bright Data Web Scraper API (datasets v3): docs.brightdata.com scraper-rest-api.json (POST /datasets/v3/trigger), Management APIs (progress, snapshots, snapshot input, cancel, parts), Download Snapshot, Error codes by Endpoint, Scraper API error codes and limits (read 2026-11-30)',
  configSchema: BrightDataConfigSchema,
  capabilities: { idempotency: false, list: true, cancel: true, webhooks: true },
  evidence: [{ label: 'dataset snapshots', evidence: BRIGHTDATA_EVIDENCE }],
  notFoundGrace: {
    ms: 60_000,
    source: "no propagation delay is documented for snapshots; the product's default window",
  },
  expiry: '400 "Snapshot is expired" after 30 days (the download page says 16) → expired',
  poll: { initialDelayMs: 10_000, maxDelayMs: 120_000 },
  webhook: brightDataWebhook,
  cost: {
    unit: () => 'records',
    estimate: (_request, entry) => (entry.trigger.type === 'discover_new' ? (entry.trigger.limitPerInput ?? 1) : 1),
    reports: () => true,
    failed: 'free',
    doc: {
      unit: 'records',
      estimate:
        '`trigger.limitPerInput` records with discovery (`trigger.type: discover_new`), else 1 record (one input per job)',
      reported:
        '`records` of `GET /datasets/v3/progress/{snapshot_id}` (progress answers captured against the live API, not in the official documents: test/fixtures/providers/brightdata/CONTRACT.md, T1; failed records are not billed, "error codes" page)',
    },
  },
  create: (name, entry) => new BrightDataAdapter(name, entry),
});
