/**
 * Oxylabs Push-Pull callbacks (developers.oxylabs.io "Push-Pull" → Callback, read 2026-11-30):
 * when a job completes, Oxylabs POSTs the job object (`{id, status: "done", client_notes, …,
 * _links}`) to its `callback_url`. Deliveries are not signed (Oxylabs publishes its callback
 * source IPs for an allow-list instead), so they come to the per-job token URL. The event ID is
 * `<id>:<status>`, stable across redeliveries of one state. A hint only: the job reads the status
 * and the results itself.
 */
import { z } from 'zod';
import { statusCallbackWebhook } from '../descriptor.js';

/** The callback fields the receiver reads; more are allowed. */
const OxylabsCallbackSchema = z.looseObject({
  id: z.union([z.string().min(1).max(200), z.number()]).transform(String),
  status: z.string().min(1).max(100),
  client_notes: z.string().max(500).nullish(),
});

/** The `oxylabs` kind's {@link ProviderWebhook}: unsigned, per-job token. */
export const oxylabsWebhook = statusCallbackWebhook(OxylabsCallbackSchema, 'job', (b) => ({
  taskId: b.id,
  status: b.status,
  clientRef: b.client_notes ?? null,
}));
