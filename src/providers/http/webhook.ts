/**
 * Webhooks of the declarative `http` kind, as the entry's `webhookScheme` describes them: signed
 * (HMAC-SHA256 of the raw body with the `webhook.secretEnv` secret, in `signatureHeader`, as
 * `sha256=<hex>` or bare hex, checked in constant time) or unsigned (per-job token URL); the event
 * ID, type, task ID, our reference and status read from the body by JSON Pointer.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ProviderWebhook } from '../descriptor.js';
import { headerValue, verifySha256Signature } from '../shared/webhook.js';
import type { HttpEntry } from './config.js';
import { pickString } from './template.js';

/** Constant-time check of a bare-hex HMAC-SHA256 signature of `rawBody`. */
function verifyHex(rawBody: Buffer, header: string | undefined, secret: string): boolean {
  if (typeof header !== 'string' || !/^[0-9a-fA-F]{64}$/.test(header.trim())) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(Buffer.from(header.trim(), 'hex'), expected);
}

/** The `http` kind's {@link ProviderWebhook}. */
export const httpWebhook: ProviderWebhook<HttpEntry> = {
  signed: (entry) => entry.webhookScheme?.signed ?? false,
  signatureHeaderOf: (entry) => entry.webhookScheme?.signatureHeader,
  verify(rawBody, headers, secret, entry) {
    const w = entry?.webhookScheme;
    if (!w?.signatureHeader) return false;
    const header = headerValue(headers, w.signatureHeader);
    return w.signatureFormat === 'hex'
      ? verifyHex(rawBody, header, secret)
      : verifySha256Signature(rawBody, header, secret);
  },
  claimedEventId(json, headers, entry) {
    const w = entry?.webhookScheme;
    const id =
      pickString(json, w?.eventIdPath) ?? (w?.eventIdHeader ? headerValue(headers, w.eventIdHeader) : undefined);
    return id ? id.slice(0, 200) : null;
  },
  parse(json, headers, _raw, entry) {
    const w = entry?.webhookScheme;
    if (!w) return { ok: false, message: `provider entry has no webhookScheme` };
    if (json === null || typeof json !== 'object') return { ok: false, message: 'the body is not a JSON object' };
    const taskId = pickString(json, w.taskIdPath) ?? null;
    const clientRef = pickString(json, w.clientRefPath) ?? null;
    if (!taskId && !clientRef)
      return {
        ok: false,
        message: `no task ID at ${JSON.stringify(w.taskIdPath)} and no client reference at ${JSON.stringify(w.clientRefPath)}`,
      };
    const eventId =
      pickString(json, w.eventIdPath) ?? (w.eventIdHeader ? headerValue(headers, w.eventIdHeader) : undefined) ?? '';
    return {
      ok: true,
      event: {
        eventId: eventId.slice(0, 200),
        type: pickString(json, w.typePath) ?? 'event',
        taskId,
        clientRef,
        providerStatus: pickString(json, w.statusPath) ?? null,
      },
    };
  },
};
