/**
 * Webhooks of Apify actor runs: the ad-hoc webhook a submit attaches to its run (`webhooks` query
 * parameter of Run Actor; apify-docs `sources/platform/integrations/programming/webhooks/`,
 * "Ad-hoc webhooks", "Webhook actions", "Events", read at commit 4416da6 of 2026-08-07).
 *
 * - Apify does not sign deliveries ("include a secret token in the webhook URL"): every job gets
 *   its own callback URL ending in the per-job token, checked by the receiver in constant time.
 * - The body is the default payload template: `{userId, createdAt, eventType, eventData:
 *   {actorId, actorTaskId?, actorRunId}, resource: <the Run object>}`.
 * - Every delivery carries `X-Apify-Webhook-Dispatch-Id`, the same on every retry of one
 *   dispatch (retries: about 1 min, 2 min, 4 min, … up to 11 retries over ~32 h; timeout 2 min):
 *   it is the event ID we deduplicate on. "In rare cases the webhook might be invoked more than
 *   once": a second dispatch of the same event has another ID and only wakes the job again
 *   (harmless: wakes are merged and the status is read from Apify, never from the payload).
 */
import { z } from 'zod';
import type { ProviderWebhook } from '../descriptor.js';
import { headerValue } from '../shared/webhook.js';

/** The dispatch ID header (lower-case, as Node gives headers). */
const APIFY_DISPATCH_HEADER = 'x-apify-webhook-dispatch-id';

/** The default payload template of an Apify webhook; more fields are allowed. */
const ApifyWebhookPayloadSchema = z.looseObject({
  userId: z.string().max(200).nullish(),
  createdAt: z.string().max(64).nullish(),
  eventType: z.string().min(1).max(100),
  eventData: z
    .looseObject({ actorId: z.string().max(200).nullish(), actorRunId: z.string().max(200).nullish() })
    .nullish(),
  resource: z.looseObject({ id: z.string().max(200).nullish(), status: z.string().max(100).nullish() }).nullish(),
});

/** The `apify` kind's {@link ProviderWebhook}: unsigned (per-job token URL), deduplicated by dispatch ID. */
export const apifyWebhook: ProviderWebhook<unknown> = {
  signed: () => false,
  claimedEventId: (_json, headers) => headerValue(headers, APIFY_DISPATCH_HEADER)?.slice(0, 200) ?? null,
  parse(json, headers) {
    const p = ApifyWebhookPayloadSchema.safeParse(json);
    if (!p.success) return { ok: false, message: z.prettifyError(p.error) };
    const taskId = p.data.eventData?.actorRunId ?? p.data.resource?.id ?? null;
    if (!taskId)
      return { ok: false, message: 'the event names no run (eventData.actorRunId and resource.id are both missing)' };
    return {
      ok: true,
      event: {
        // Empty when the header is missing: the receiver then uses a hash of the body.
        eventId: headerValue(headers, APIFY_DISPATCH_HEADER)?.slice(0, 200) ?? '',
        type: p.data.eventType,
        taskId,
        clientRef: null,
        providerStatus: p.data.resource?.status ?? null,
      },
    };
  },
};
