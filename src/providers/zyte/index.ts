/**
 * The `zyte` kind: Zyte Scrapy Cloud jobs (a deployed Scrapy spider run per scrape). See
 * `adapter.ts` for the contract and its sources.
 */
import { defineProvider } from '../descriptor.js';
import { ZyteAdapter } from './adapter.js';
import { ZYTE_EVIDENCE } from './lookups.js';
import { ZyteConfigSchema } from './config.js';

export { ZyteAdapter } from './adapter.js';
export { zyteState } from './states.js';
export type { ZyteEntry } from './config.js';

/** Descriptor of the `zyte` kind. */
export const zyteProvider = defineProvider({
  kind: 'zyte',
  title: 'Zyte Scrapy Cloud',
  contract:
    'Scrapy Cloud HTTP API (docs.zyte.com/scrapy-cloud/usage/reference/http/, read 2026-11-30): POST app.zyte.com/api/run.json (form) → {"status": "ok", "jobid"}, GET storage.zyte.com/jobs/P/S/J, GET storage.zyte.com/items/P/S/J, POST /api/jobs/stop.json, GET /api/jobs/list.json?has_tag; duplicate refusal "<spider> already scheduled" as recorded by python-scrapinghub 9da80b9',
  configSchema: ZyteConfigSchema,
  capabilities: { idempotency: false, list: true, cancel: true, webhooks: false },
  evidence: [{ label: 'spider jobs', evidence: ZYTE_EVIDENCE }],
  notFoundGrace: {
    ms: 60_000,
    source:
      "no propagation delay is documented for a scheduled job's record on storage.zyte.com; the product's default window",
  },
  expiry:
    "state deleted, or 404 on the job after the plan's data retention (notFoundLimit in a row) → expired; a cancel that meets a deleted job weighs its close reason (finished on its own: cancel_unconfirmed; failed: failed; cancelled only when the reason says so)",
  // Spider jobs queue for a free unit and run for minutes: first check after 10 s, then up to every 2 min.
  poll: {
    initialDelayMs: 10_000,
    maxDelayMs: 120_000,
    multiplier: 1.5,
    deadlineMs: 6 * 3_600_000,
    activityTimeoutMs: 120_000,
  },
  cost: {
    unit: () => 'requests',
    estimate: () => 1,
    reports: () => false,
    failed: 'estimate',
    doc: {
      unit: 'requests',
      estimate: '1 per job (Scrapy Cloud bills unit-hours, which no job answer reports)',
      reported: null,
    },
  },
  create: (name, entry) => new ZyteAdapter(name, entry),
});
