/**
 * The provider webhook receiver behind `POST /v1/webhooks/:provider`.
 *
 * Webhooks are hints (DESIGN.md; issue 5): a verified event wakes the job's workflow, which then
 * reads the status and the result from the provider itself; the payload is never trusted for
 * the result. The receiver answers fast (providers give < 10 s, Crawlbase < 200 ms:
 * `/work/shared/providers.md`): verify, record, signal, answer — nothing else.
 *
 * Steps for one delivery:
 * 1. verify the signature where the provider signs (HMAC-SHA256 over the raw body bytes,
 *    constant-time compare); a bad or missing signature → `401`, the event is quarantined
 *    (`invalid_signature`) and nothing else changes;
 * 2. parse the payload with the provider kind's zod schema; invalid → quarantined, `400`;
 * 3. deduplicate by (provider, event ID): a redelivery answers `200 duplicate` and does nothing;
 * 4. match to the job by the provider's task ID, else by our echoed client reference; unmatched →
 *    quarantined (`unmatched`), `202`;
 * 5. signal `wake` to the job's workflow (through the client); if Temporal cannot be reached the
 *    delivery record is removed and the answer is `503`, so the provider's retry is handled again.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { providerKeys } from '../activities/index.js';
import type { ScrapeClient } from '../client/index.js';
import type { Config, ProviderEntry } from '../config.js';
import { isFinalState } from '../model/states.js';
import { sanitizeBody, redactSecrets, REDACTED } from '../lib/sanitize.js';
import type { Store } from '../store/index.js';
import { findJobByClientRef, forgetDelivery, quarantineEvent, recordDelivery, setDeliveryOutcome } from '../store/webhooks.js';
import { ApiProblem } from './problems.js';

/** What a provider kind's event says, once parsed. */
export interface ParsedEvent {
  eventId: string;
  /** Event type as the provider names it (e.g. `job.completed`). */
  type: string;
  /** The provider's job ID. */
  taskId: string | null;
  /** Our client reference echoed by the provider. */
  clientRef: string | null;
  /** The provider status the event claims (a hint only). */
  providerStatus: string | null;
}

/** How one provider kind signs and shapes its webhook events. */
export interface WebhookKind {
  /** Request header carrying the signature (lowercase). */
  signatureHeader: string;
  /** Verifies `header` against the raw body and secret, in constant time. */
  verify(rawBody: Buffer, header: string | undefined, secret: string): boolean;
  /** Parses the JSON body (and headers); returns zod issues as a message when invalid. */
  parse(json: unknown, headers: Record<string, string | string[] | undefined>): { ok: true; event: ParsedEvent } | { ok: false; message: string };
}

/**
 * Event body of the reference provider (`src/sim/webhooks.ts`): `{event_id, type, job_id,
 * client_ref, status, occurred_at}`; more fields are allowed (providers add fields).
 */
export const ReferenceWebhookEventSchema = z.looseObject({
  event_id: z.string().min(1).max(200),
  type: z.string().min(1).max(100),
  job_id: z.string().min(1).max(200),
  client_ref: z.string().max(200).nullable().optional(),
  status: z.string().min(1).max(100),
  occurred_at: z.string().max(64).optional(),
});

/**
 * Constant-time check of a `sha256=<hex>` signature header (Firecrawl's `X-Firecrawl-Signature`
 * scheme, providers.md; the reference provider's `X-Sim-Signature`) against the HMAC-SHA256 of
 * `rawBody` keyed with `secret`. False for a missing or malformed header.
 */
export function verifySha256Signature(rawBody: Buffer, header: string | undefined, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const given = Buffer.from(m[1]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Webhook kinds by provider `kind`. */
export const WEBHOOK_KINDS: Record<ProviderEntry['kind'], WebhookKind> = {
  reference: {
    signatureHeader: 'x-sim-signature',
    verify: verifySha256Signature,
    parse(json) {
      const p = ReferenceWebhookEventSchema.safeParse(json);
      if (!p.success) return { ok: false, message: z.prettifyError(p.error) };
      return { ok: true, event: { eventId: p.data.event_id, type: p.data.type, taskId: p.data.job_id, clientRef: p.data.client_ref ?? null, providerStatus: p.data.status } };
    },
  },
};

/**
 * The verification secret of a provider's webhooks: `api.webhookSecrets[name].secretEnv`, else
 * the provider entry's `webhook.secretEnv`; undefined when neither names one (the provider does
 * not sign). Throws when the named environment variable is empty (a configuration error).
 */
export function webhookSecret(config: Config, name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const secretEnv = config.api.webhookSecrets[name]?.secretEnv ?? config.providers[name]?.webhook?.secretEnv;
  if (!secretEnv) return undefined;
  const v = env[secretEnv];
  if (!v) throw new Error(`environment variable ${secretEnv} (webhook secret of provider ${name}) is not set`);
  return v;
}

/** True when `name` is a configured provider that receives webhooks. */
export function receivesWebhooks(config: Config, name: string): boolean {
  const entry = config.providers[name];
  return entry !== undefined && (entry.webhook !== undefined || config.api.webhookSecrets[name] !== undefined);
}

/** Dependencies of {@link receiveWebhook}. */
export interface WebhookDeps {
  client: ScrapeClient;
  store: Store;
  config: Config;
  env?: NodeJS.ProcessEnv;
}

/** The receiver's answer: HTTP status and JSON body. */
export interface WebhookAnswer {
  status: 200 | 202;
  body: { received: true; event_id: string | null; outcome: 'woken' | 'duplicate' | 'quarantined' | 'job_final' | 'not_running' };
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Headers worth keeping with a quarantined event, with every credential-like value redacted. */
function keptHeaders(headers: Record<string, string | string[] | undefined>, secrets: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const value = Array.isArray(v) ? v.join(', ') : v;
    out[k] = /authorization|cookie|signature|secret|token|api-?key/i.test(k) ? REDACTED : redactSecrets(value, secrets);
  }
  return out;
}

/**
 * Handles one webhook delivery (see the module comment for the steps). Throws {@link ApiProblem}
 * `unknown-provider` (404), `invalid-signature` (401), `invalid-request` (400) or
 * `service-unavailable` (503); returns the acknowledgement otherwise.
 */
export async function receiveWebhook(deps: WebhookDeps, provider: string, rawBody: Buffer, headers: Record<string, string | string[] | undefined>): Promise<WebhookAnswer> {
  const { config, store, client } = deps;
  const entry = config.providers[provider];
  if (!entry || !receivesWebhooks(config, provider)) throw new ApiProblem('unknown-provider', `no webhook receiver for provider "${provider}"`);
  const kind = WEBHOOK_KINDS[entry.kind];
  let secret: string | undefined;
  try {
    secret = webhookSecret(config, provider, deps.env);
  } catch {
    throw new ApiProblem('service-unavailable', `the webhook secret of provider "${provider}" is not configured on this API`, {}, { 'retry-after': '60' });
  }
  const secrets = secret ? [secret] : [];
  const bodyText = rawBody.toString('utf8');
  let json: unknown;
  let parsedJson = true;
  try {
    json = JSON.parse(bodyText);
  } catch {
    parsedJson = false;
  }
  const quarantine = (reason: string, detail: string, eventId: string | null, keepBody = true) =>
    quarantineEvent(store, {
      provider,
      eventId,
      reason,
      detail,
      headers: keptHeaders(headers, secrets),
      // An unverified body is anyone's bytes: only its hash and size are kept (no store filling).
      body: !keepBody ? '' : parsedJson ? JSON.stringify(sanitizeBody(json, secrets)) : redactSecrets(bodyText, secrets),
      bodySha256: createHash('sha256').update(rawBody).digest('hex'),
      bodyBytes: rawBody.length,
    });
  const claimedEventId = (() => {
    const id = parsedJson && json && typeof json === 'object' ? (json as { event_id?: unknown }).event_id : undefined;
    return typeof id === 'string' ? id.slice(0, 200) : (headerValue(headers, 'x-sim-event-id')?.slice(0, 200) ?? null);
  })();

  if (secret && !kind.verify(rawBody, headerValue(headers, kind.signatureHeader), secret)) {
    await quarantine('invalid_signature', `missing or wrong ${kind.signatureHeader}; body not kept (unverified), see body_sha256 and body_bytes`, claimedEventId, false);
    throw new ApiProblem('invalid-signature', `the ${kind.signatureHeader} header does not match the body; nothing was changed`);
  }
  const parsed = parsedJson ? kind.parse(json, headers) : { ok: false as const, message: 'the body is not JSON' };
  if (!parsed.ok) {
    await quarantine('invalid_payload', parsed.message.slice(0, 2000), claimedEventId);
    throw new ApiProblem('invalid-request', `the webhook body is not a ${entry.kind} event: ${parsed.message.slice(0, 500)}`, { errors: [{ in: 'body', path: '', message: parsed.message.slice(0, 500) }] });
  }
  const ev = parsed.event;
  const rec = await recordDelivery(store, { provider, eventId: ev.eventId, eventType: ev.type, providerStatus: ev.providerStatus, taskId: ev.taskId });
  if (!rec.inserted) return { status: 200, body: { received: true, event_id: ev.eventId, outcome: 'duplicate' } };

  const job =
    (ev.taskId ? await store.getJobByTask(provider, ev.taskId) : undefined) ??
    (ev.clientRef ? await findJobByClientRef(store, provider, ev.clientRef, (account, key) => providerKeys(account, key).clientRef) : undefined);
  if (!job) {
    await quarantine('unmatched', `no job of provider ${provider} has task ID ${ev.taskId ?? '—'} or client reference ${ev.clientRef ?? '—'}`, ev.eventId);
    await setDeliveryOutcome(store, provider, ev.eventId, 'quarantined', null);
    return { status: 202, body: { received: true, event_id: ev.eventId, outcome: 'quarantined' } };
  }
  if (isFinalState(job.state)) {
    await setDeliveryOutcome(store, provider, ev.eventId, 'job_final', job.id);
    return { status: 200, body: { received: true, event_id: ev.eventId, outcome: 'job_final' } };
  }
  let woke: 'signalled' | 'not_running';
  try {
    woke = await client.wake(job.id, { eventId: ev.eventId, providerStatus: ev.providerStatus ?? undefined });
  } catch {
    await forgetDelivery(store, provider, ev.eventId);
    throw new ApiProblem('service-unavailable', 'the job could not be woken now; retry the delivery', {}, { 'retry-after': '5' });
  }
  const outcome = woke === 'signalled' ? 'woken' : 'not_running';
  await setDeliveryOutcome(store, provider, ev.eventId, outcome, job.id);
  return { status: 200, body: { received: true, event_id: ev.eventId, outcome } };
}
