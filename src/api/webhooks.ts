/**
 * The provider webhook receiver behind `POST /v1/webhooks/:provider` (providers that sign their
 * deliveries) and `POST /v1/webhooks/:provider/:token` (providers that do not: the per-job token
 * of the callback URL, see `src/providers/shared/webhook.ts`).
 *
 * Webhooks are hints (docs/design.md, “Users and entry points”): a verified event wakes the job's workflow, which then
 * reads the status and the result from the provider itself; the payload is never trusted for
 * the result. The receiver answers fast (providers give < 10 s, Crawlbase < 200 ms, by
 * their webhook documentation): verify, record, signal, answer — nothing else. How a kind signs,
 * names its events and shapes its body is its descriptor's `webhook` (`src/providers/<kind>/webhook.ts`),
 * looked up by the provider entry's `kind`.
 *
 * Signed kinds, one delivery:
 * 1. verify the signature (HMAC over the raw body bytes, constant-time compare); bad or missing →
 *    `401 invalid-signature`, quarantined (`invalid_signature`, hash and size only);
 * 2. parse the payload with the kind's schema; invalid → quarantined, `400`;
 * 3. deduplicate by (provider, event ID): a redelivery answers `200 duplicate` and does nothing,
 *    except that an event kept as unmatched is matched again (it may have overtaken the submit
 *    answer that records its task ID), and wakes its job when it now finds one, and an event left
 *    `received` for longer than {@link WEBHOOK_HANDLING_STALE_MS} (its handler died before
 *    settling it) is handled again as a first delivery, by one redelivery;
 * 4. match to the job by the provider's task ID, else by our echoed client reference; unmatched →
 *    quarantined (`unmatched`), `202`;
 * 5. signal `wake` (through the client); if Temporal cannot be reached the delivery record is
 *    removed and the answer is `503`, so the provider's retry is handled again.
 *
 * Token kinds: parse (invalid → quarantined, `400`), match the job (unmatched → quarantined, and
 * the same `401 invalid-webhook-token` as a wrong token, so that nobody without a token learns which
 * jobs exist), then check the token against that job in constant time (missing or wrong → `401
 * invalid-webhook-token`, quarantined) before deduplicating and waking as above. Until a delivery
 * is verified, only its hash and size are kept.
 */
import { createHash } from 'node:crypto';
import { providerKeys } from '../activities/index.js';
import type { ScrapeClient } from '../client/index.js';
import type { Config } from '../config.js';
import { parseJsonStrict, StrictJsonError } from '../lib/json.js';
import { isFinalState } from '../model/states.js';
import { sanitizeBody, redactProviderValue, redactSecrets, REDACTED } from '../lib/sanitize.js';
import type { ProviderWebhook } from '../providers/descriptor.js';
import { findDescriptor } from '../providers/kinds.js';
import { bodyEventId, callbackTokenMatches, type WebhookHeaders } from '../providers/shared/webhook.js';
import type { JobRow, Store } from '../store/index.js';
import { ApiProblem } from './problems.js';

export { verifySha256Signature } from '../providers/shared/webhook.js';

/**
 * The verification secret of a provider's webhooks: `api.webhookSecrets[name].secretEnv`, else
 * the provider entry's `webhook.secretEnv`; undefined when neither names one. Throws when the
 * named environment variable is empty (a configuration error).
 */
export function webhookSecret(config: Config, name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const secretEnv = config.api.webhookSecrets[name]?.secretEnv ?? config.providers[name]?.webhook?.secretEnv;
  if (!secretEnv) return undefined;
  const v = env[secretEnv];
  if (!v) throw new Error(`environment variable ${secretEnv} (webhook secret of provider ${name}) is not set`);
  return v;
}

/** True when `name` is a configured provider whose kind has webhooks and whose entry (or the API) configures them. */
export function receivesWebhooks(config: Config, name: string): boolean {
  const entry = config.providers[name];
  return (
    entry !== undefined &&
    findDescriptor(entry.kind)?.webhook !== undefined &&
    (entry.webhook !== undefined || config.api.webhookSecrets[name] !== undefined)
  );
}

/**
 * How long (ms) a delivery may stay `received` (being handled) before a redelivery of its event
 * handles it again: 60 s. A live handler settles a delivery within the providers' answer window
 * (< 10 s); one still `received` after this died between recording and settling. Were a handler
 * only slow, the cost is a second wake of the job, which is harmless (a wake is a hint).
 */
export const WEBHOOK_HANDLING_STALE_MS = 60_000;

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
  body: {
    received: true;
    event_id: string | null;
    outcome: 'woken' | 'duplicate' | 'quarantined' | 'job_final' | 'not_running';
  };
}

/** Headers worth keeping with a quarantined event, with every credential-like value redacted. */
function keptHeaders(headers: WebhookHeaders, secrets: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const value = Array.isArray(v) ? v.join(', ') : v;
    out[k] = /authorization|cookie|signature|secret|token|api-?key/i.test(k) ? REDACTED : redactSecrets(value, secrets);
  }
  return out;
}

/**
 * Handles one webhook delivery (see the module comment for the steps). `token` is the last path
 * segment of the token route, absent on the plain route. Throws {@link ApiProblem}
 * `unknown-provider` (404), `invalid-signature` / `invalid-webhook-token` (401), `invalid-request`
 * (400) or `service-unavailable` (503); returns the acknowledgement otherwise.
 */
export async function receiveWebhook(
  deps: WebhookDeps,
  provider: string,
  rawBody: Buffer,
  headers: WebhookHeaders,
  token?: string,
): Promise<WebhookAnswer> {
  const { config, store, client } = deps;
  const entry = config.providers[provider];
  const hook = entry ? findDescriptor(entry.kind)?.webhook : undefined;
  if (!entry || !hook || !receivesWebhooks(config, provider))
    throw new ApiProblem('unknown-provider', `no webhook receiver for provider "${provider}"`);
  let secret: string | undefined;
  try {
    secret = webhookSecret(config, provider, deps.env);
  } catch {
    secret = undefined;
  }
  if (!secret)
    throw new ApiProblem(
      'service-unavailable',
      `the webhook secret of provider "${provider}" is not configured on this API`,
      {},
      { 'retry-after': '60' },
    );
  const signed = (hook as ProviderWebhook<typeof entry>).signed(entry);
  if (signed && token !== undefined)
    throw new ApiProblem(
      'unknown-provider',
      `provider "${provider}" signs its webhooks: deliver them to /v1/webhooks/${provider}`,
    );

  const secrets = [secret];
  const bodyText = rawBody.toString('utf8');
  let json: unknown;
  let parsedJson = true;
  let jsonProblem: string | undefined;
  try {
    json = parseJsonStrict(bodyText); // a duplicate key is refused, not "the last one wins"
  } catch (e) {
    parsedJson = false;
    // The parser's message quotes an excerpt of the body, which is unverified here: only where
    // it stops being JSON is kept.
    const where = /at position \d+(?: \(line \d+ column \d+\))?/.exec((e as Error).message)?.[0];
    const kind = e instanceof StrictJsonError && e.reason !== 'syntax' ? `${e.reason.replace('-', ' ')}` : undefined;
    jsonProblem = [kind, where].filter(Boolean).join(' ') || 'not shown (the body is unverified)';
  }
  const quarantine = (reason: string, detail: string, eventId: string | null, keepBody: boolean) =>
    store.webhooks.quarantine({
      provider,
      eventId,
      reason,
      detail,
      headers: keptHeaders(headers, secrets),
      // An unverified body is anyone's bytes: only its hash and size are kept (no store filling).
      body: !keepBody
        ? ''
        : parsedJson
          ? JSON.stringify(sanitizeBody(json, secrets))
          : redactSecrets(bodyText, secrets),
      bodySha256: createHash('sha256').update(rawBody).digest('hex'),
      bodyBytes: rawBody.length,
    });
  /** Quarantines the delivery without its (unverified) body, then refuses it with `problem`. */
  const refuse = async (reason: string, detail: string, eventId: string | null, problem: ApiProblem) => {
    await quarantine(reason, detail, eventId, false);
    throw problem;
  };
  const tokenMismatch = () =>
    new ApiProblem('invalid-webhook-token', 'the callback token does not match; nothing was changed');
  const answer = (status: 200 | 202, outcome: WebhookAnswer['body']['outcome']): WebhookAnswer => ({
    status,
    body: { received: true, event_id: ev.eventId, outcome },
  });
  const claimedEventId = hook.claimedEventId?.(parsedJson ? json : undefined, headers, entry) ?? null;

  if (signed && !hook.verify?.(rawBody, headers, secret, entry)) {
    const header = hook.signatureHeaderOf?.(entry) ?? hook.signatureHeader ?? 'signature';
    await refuse(
      'invalid_signature',
      `missing or wrong ${header}; body not kept (unverified), see body_sha256 and body_bytes`,
      claimedEventId,
      new ApiProblem('invalid-signature', `the ${header} header does not match the body; nothing was changed`),
    );
  }
  if (!signed && token === undefined)
    await refuse(
      'invalid_token',
      `provider ${provider} does not sign its webhooks: deliveries must come to the per-job callback URL /v1/webhooks/${provider}/<token>; body not kept (unverified)`,
      claimedEventId,
      new ApiProblem(
        'invalid-webhook-token',
        `provider "${provider}" does not sign its webhooks: deliver to the per-job callback URL it was given; nothing was changed`,
      ),
    );
  const parsed = parsedJson
    ? hook.parse(json, headers, rawBody, entry)
    : { ok: false as const, message: `the body is not valid JSON: ${jsonProblem ?? 'unreadable'}` };
  if (!parsed.ok) {
    await quarantine('invalid_payload', parsed.message.slice(0, 2000), claimedEventId, signed);
    throw new ApiProblem(
      'invalid-request',
      `the webhook body is not a ${entry.kind} event: ${parsed.message.slice(0, 500)}`,
      {
        errors: [{ in: 'body', path: '', message: parsed.message.slice(0, 500) }],
      },
    );
  }
  // Strings from the provider (event ID, type, status) go into the store and a signal (history): redacted first.
  const ev = redactProviderValue({ ...parsed.event, eventId: parsed.event.eventId || bodyEventId(rawBody) }, secrets);
  const findJob = async (): Promise<JobRow | undefined> =>
    (ev.taskId ? await store.jobs.byTask(provider, ev.taskId) : undefined) ??
    (ev.clientRef
      ? await store.jobs.byClientRef(provider, ev.clientRef, (account, key) => providerKeys(account, key).clientRef)
      : undefined);

  let job: JobRow | undefined;
  if (!signed) {
    // Unsigned: the event is anyone's until its token matches the job it names.
    job = await findJob();
    // An unknown job and a wrong token get the same answer: an unauthenticated caller must not
    // learn which task IDs or client references exist (a probe for other accounts’ jobs).
    if (!job)
      return refuse(
        'unmatched',
        `no job of provider ${provider} has task ID ${ev.taskId ?? '—'} or client reference ${ev.clientRef ?? '—'}; the token could not be checked, body not kept`,
        ev.eventId,
        tokenMismatch(),
      );
    if (!callbackTokenMatches(token!, secret, provider, job.id))
      await refuse(
        'invalid_token',
        `the callback token does not match the job the event names; body not kept (unverified)`,
        ev.eventId,
        tokenMismatch(),
      );
  }
  const rec = await store.webhooks.recordDelivery({
    provider,
    eventId: ev.eventId,
    eventType: ev.type,
    providerStatus: ev.providerStatus,
    taskId: ev.taskId,
  });
  if (!rec.inserted) {
    // A redelivery is a duplicate, except of an event kept as unmatched: it may have overtaken the
    // submit answer (its task ID unknown then), so it is matched again once, by whoever claims it;
    // and except of an event whose handling died before settling it (left `received` past the
    // bound): nothing came of it, so it is handled again as a first delivery, by whoever claims it.
    const { outcome } = rec.existing;
    const retaken =
      outcome === 'quarantined'
        ? await store.webhooks.reopenUnmatched(provider, ev.eventId)
        : outcome === 'received' &&
          (await store.webhooks.reclaimStale(provider, ev.eventId, WEBHOOK_HANDLING_STALE_MS));
    if (!retaken) return answer(200, 'duplicate');
    if (outcome === 'quarantined') {
      job ??= await findJob();
      if (!job) {
        await store.webhooks.setDeliveryOutcome(provider, ev.eventId, 'quarantined', null); // kept once already
        return answer(200, 'duplicate');
      }
    }
  }

  job ??= await findJob();
  if (!job) {
    await quarantine(
      'unmatched',
      `no job of provider ${provider} has task ID ${ev.taskId ?? '—'} or client reference ${ev.clientRef ?? '—'}`,
      ev.eventId,
      true,
    );
    await store.webhooks.setDeliveryOutcome(provider, ev.eventId, 'quarantined', null);
    return answer(202, 'quarantined');
  }
  if (isFinalState(job.state)) {
    await store.webhooks.setDeliveryOutcome(provider, ev.eventId, 'job_final', job.id);
    return answer(200, 'job_final');
  }
  let woke: 'signalled' | 'not_running';
  try {
    woke = await client.wake(job.id, { eventId: ev.eventId, providerStatus: ev.providerStatus ?? undefined });
  } catch {
    await store.webhooks.forgetDelivery(provider, ev.eventId);
    throw new ApiProblem(
      'service-unavailable',
      'the job could not be woken now; retry the delivery',
      {},
      { 'retry-after': '5' },
    );
  }
  const outcome = woke === 'signalled' ? 'woken' : 'not_running';
  await store.webhooks.setDeliveryOutcome(provider, ev.eventId, outcome, job.id);
  return answer(200, outcome);
}
