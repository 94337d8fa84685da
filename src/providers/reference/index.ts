/**
 * The `reference` kind: the seeds' asynchronous scraping provider, as `tools/sim` serves it (the
 * demo's embedded provider). See `adapter.ts` for the contract.
 */
import { defineProvider } from '../descriptor.js';
import { ReferenceAdapter, referenceEvidence } from './adapter.js';
import { ReferenceConfigSchema } from './config.js';
import { referenceWebhook } from './webhook.js';

export { referenceState } from './adapter.js';

/** Descriptor of the `reference` kind. */
export const referenceProvider = defineProvider({
  kind: 'reference',
  title: 'Reference provider (tools/sim)',
  contract:
    'the generic asynchronous scraping API (POST /api/scrape → 202 {job_id}, GET /api/jobs/:id, DELETE /api/jobs/:id/cancel) plus Idempotency-Key, GET /api/jobs?client_ref= and signed per-request webhooks; tools/sim/server.ts',
  configSchema: ReferenceConfigSchema,
  capabilities: { idempotency: true, list: true, cancel: true, webhooks: true },
  evidence: [
    {
      label: 'a deployment with Idempotency-Key and list (the defaults)',
      evidence: referenceEvidence({ idempotency: true, list: true }),
    },
  ],
  notFoundGrace: {
    ms: 60_000,
    source:
      "the reference provider (tools/sim) shows a job as soon as it answers the submit; the product's default window",
  },
  expiry: '404 once the job is deleted (profile resultTtlMs, default 1 h after it ends)',
  cost: {
    unit: () => 'credits',
    estimate: () => 1,
    reports: () => true,
    failed: 'estimate',
    doc: {
      unit: 'credits',
      estimate: '1 credit per job (the reference provider charges 1 once a job starts)',
      reported:
        '`credits_used` of `GET /api/jobs/:id` and of the cancel answer (the reference provider: tools/sim/schemas.ts, `JobStatusResponseSchema`)',
    },
  },
  webhook: referenceWebhook,
  create: (name, entry) => new ReferenceAdapter(name, entry),
});
