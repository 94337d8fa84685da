/**
 * ScraperAPI callbacks (docs.scraperapi.com, "Callbacks & API Params", read 2026-11-30): the
 * provider POSTs the job as its status URL shows it (`{id, status, url, meta, response}` when
 * finished; `{id, status: "failed", failReason, attempts, url}` for a failure, sent only with the
 * failure-report flag). Deliveries are not signed: they come to the per-job token URL
 * (`…/v1/webhooks/<name>/<token>`). The event ID is `<id>:<status>`, the same on every redelivery
 * (three tries) of one state. The payload is a hint: the job then reads the status URL itself.
 */
import { z } from 'zod';
import { statusCallbackWebhook } from '../descriptor.js';
import { SCRAPERAPI_REF_FIELD } from './adapter.js';

/** The fields of a callback the receiver reads; more are allowed. */
const ScraperApiCallbackSchema = z.looseObject({
  id: z.union([z.string().min(1).max(200), z.number()]).transform(String),
  status: z.string().min(1).max(100),
  meta: z.record(z.string(), z.unknown()).nullish(),
});

/** The `scraperapi` kind's {@link ProviderWebhook}: unsigned, per-job token. */
export const scraperApiWebhook = statusCallbackWebhook(ScraperApiCallbackSchema, 'job', (b) => {
  const ref = b.meta?.[SCRAPERAPI_REF_FIELD];
  return { taskId: b.id, status: b.status, clientRef: typeof ref === 'string' ? ref : null };
});
