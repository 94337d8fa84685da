/**
 * Webhooks of the reference provider (`tools/sim/webhooks.ts`, modelled on Firecrawl's): one JSON
 * event per status the submit asked for, `{event_id, type, job_id, client_ref, status,
 * occurred_at}`, header `X-Sim-Event-Id`, and with a secret `X-Sim-Signature: sha256=<hex
 * HMAC-SHA256 of the raw body>`. Without a secret (entry `webhookSignature: false`) deliveries are
 * unsigned and authenticated by the per-job token of the callback URL.
 */
import { z } from 'zod';
import type { ProviderWebhook } from '../descriptor.js';
import { headerValue, verifySha256Signature } from '../shared/webhook.js';

/**
 * Event body of the reference provider: `{event_id, type, job_id, client_ref, status,
 * occurred_at}`; more fields are allowed (providers add fields).
 */
const ReferenceWebhookEventSchema = z.looseObject({
  event_id: z.string().min(1).max(200),
  type: z.string().min(1).max(100),
  job_id: z.string().min(1).max(200),
  client_ref: z.string().max(200).nullable().optional(),
  status: z.string().min(1).max(100),
  occurred_at: z.string().max(64).optional(),
});

/** The reference kind's {@link ProviderWebhook}. */
export const referenceWebhook: ProviderWebhook<{ webhookSignature: boolean }> = {
  signed: (entry) => entry.webhookSignature,
  signatureHeader: 'x-sim-signature',
  verify: (rawBody, headers, secret) => verifySha256Signature(rawBody, headerValue(headers, 'x-sim-signature'), secret),
  claimedEventId(json, headers) {
    const id = json && typeof json === 'object' ? (json as { event_id?: unknown }).event_id : undefined;
    return typeof id === 'string' ? id.slice(0, 200) : (headerValue(headers, 'x-sim-event-id')?.slice(0, 200) ?? null);
  },
  parse(json) {
    const p = ReferenceWebhookEventSchema.safeParse(json);
    if (!p.success) return { ok: false, message: z.prettifyError(p.error) };
    return {
      ok: true,
      event: {
        eventId: p.data.event_id,
        type: p.data.type,
        taskId: p.data.job_id,
        clientRef: p.data.client_ref ?? null,
        providerStatus: p.data.status,
      },
    };
  },
};
