/**
 * Bright Data `notify` pings (docs.brightdata.com "Scraper async requests", parameter `notify`:
 * "a notification will be sent to this URL once the collection is finished, with snapshot_id and
 * status"; read 2026-11-30): `{snapshot_id, status}`. Unsigned, so they come to the per-job
 * token URL. The event ID is `<snapshot_id>:<status>`, stable across redeliveries (Bright Data
 * retries a delivery not answered within 30 s). A hint only: the job reads progress and the
 * snapshot itself.
 */
import { z } from 'zod';
import { statusCallbackWebhook } from '../descriptor.js';

/** The notify fields the receiver reads; more are allowed. */
const BrightDataNotifySchema = z.looseObject({
  snapshot_id: z.string().min(1).max(200),
  status: z.string().min(1).max(100),
});

/** The `brightdata` kind's {@link ProviderWebhook}: unsigned, per-job token. */
export const brightDataWebhook = statusCallbackWebhook(BrightDataNotifySchema, 'snapshot', (b) => ({
  taskId: b.snapshot_id,
  status: b.status,
  clientRef: null,
}));
