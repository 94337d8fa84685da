/** Configuration fields of the `reference` kind (the seeds' provider contract, `tools/sim`). */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/** Capabilities a reference-provider deployment may switch off (its profile). Default: all but webhooks. */
const ReferenceCapabilitiesSchema = z
  .strictObject({
    idempotency: z.boolean().default(true),
    list: z.boolean().default(true),
    cancel: z.boolean().default(true),
    webhooks: z.boolean().default(false),
  })
  .prefault({});

/**
 * The kind's own fields: `baseUrl` (no default: the reference provider runs where you start it),
 * `submitTimeoutMs` (default 15 s) and `readTimeoutMs` (default 10 s), `capabilities`, and
 * `webhookSignature` (default `true`: the provider signs events with the `webhook.secretEnv`
 * secret, `X-Sim-Signature`; `false`: no secret is sent and deliveries are authenticated by the
 * per-job token in the callback URL, like a provider that does not sign).
 */
export const ReferenceConfigSchema = z.strictObject({
  kind: z.literal('reference'),
  ...httpEndpointFields({ submitTimeoutMs: 15_000, readTimeoutMs: 10_000 }),
  capabilities: ReferenceCapabilitiesSchema,
  webhookSignature: z.boolean().default(true),
});

/** A parsed `reference` entry (its fields plus the common ones). */
export type ReferenceEntry = EntryFor<typeof ReferenceConfigSchema>;
