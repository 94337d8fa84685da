/**
 * The `apify` kind: Apify actor runs (API v2). See `adapter.ts` for the contract and its source.
 */
import { defineProvider } from '../descriptor.js';
import { ApifyAdapter } from './adapter.js';
import { APIFY_EVIDENCE, APIFY_EVIDENCE_NO_REF } from './lookups.js';
import { APIFY_DEFAULT_ESTIMATE_USD, ApifyConfigSchema } from './config.js';
import { apifyWebhook } from './webhook.js';

export { ApifyAdapter, apifyState, statedRunLimit } from './adapter.js';
export type { ApifyEntry } from './config.js';
export { apifyWebhook } from './webhook.js';

/** Descriptor of the `apify` kind. */
export const apifyProvider = defineProvider({
  kind: 'apify',
  title: 'Apify actor runs',
  contract:
    'Apify API v2 OpenAPI (github.com/apify/apify-docs apify-api/openapi, version v2-2026-08-05T133145Z, commit 4416da6 of 2026-08-07): POST /v2/actors/{actorId}/runs → 201 {data: Run}, GET /v2/actor-runs/{runId}, GET /v2/actor-runs/{runId}/dataset/items, POST /v2/actor-runs/{runId}/abort, GET /v2/actors/{actorId}/runs; ad-hoc webhooks (X-Apify-Webhook-Dispatch-Id, unsigned)',
  configSchema: ApifyConfigSchema,
  capabilities: { idempotency: false, list: true, cancel: true, webhooks: true },
  evidence: [
    { label: 'actor runs', evidence: APIFY_EVIDENCE },
    {
      label: 'actor runs whose input takes no reference (`input.clientRefField: null`)',
      evidence: APIFY_EVIDENCE_NO_REF,
    },
  ],
  notFoundGrace: {
    ms: 60_000,
    source:
      "Apify's API reads from replicas that can lag just after a run is created (a `404 record-not-found` for a new run; the Apify client retries it)",
  },
  expiry:
    "runs beyond the latest ten are deleted with their dataset after the plan's data retention: 404 on the run (after notFoundLimit in a row) or on its dataset → expired",
  // An actor run takes tens of seconds to hours: first check after 10 s, then up to every 2 min.
  // Dataset reads page through up to results.maxDocuments items in one attempt: 2 min per attempt.
  poll: {
    initialDelayMs: 10_000,
    maxDelayMs: 120_000,
    multiplier: 1.5,
    deadlineMs: 6 * 3_600_000,
    notFoundLimit: 4,
    activityTimeoutMs: 120_000,
  },
  cost: {
    unit: () => 'usd',
    estimate: (_request, entry) => entry.run.maxTotalChargeUsd ?? APIFY_DEFAULT_ESTIMATE_USD,
    reports: () => true,
    failed: 'estimate',
    doc: {
      unit: 'USD',
      estimate:
        "the run's cap `run.maxTotalChargeUsd` (sent with every run), else 0.1 USD: set it, or the entry's `cost.estimate`, to the actor's real cost",
      reported:
        '`usageTotalUsd` of the Run, `GET /v2/actor-runs/{runId}` (Apify API v2 OpenAPI, schema `Run`, apify-docs `apify-api/openapi` v2-2026-08-05T133145Z, commit 4416da6; eventually consistent for about 10 s after the run ends)',
    },
  },
  webhook: apifyWebhook,
  create: (name, entry) => new ApifyAdapter(name, entry),
});
