/**
 * Webhook pieces shared by provider kinds and by the receiver (`src/api/webhooks.ts`):
 *
 * - the `sha256=<hex>` HMAC-SHA256 signature scheme over the raw body (Firecrawl's
 *   `X-Firecrawl-Signature`, docs.firecrawl.dev "Webhooks" v2; the reference provider's
 *   `X-Sim-Signature`);
 * - the per-job callback token for providers that do not sign (ScraperAPI, Apify, Oxylabs, Bright
 *   Data: none of their documents describes a signature): `HMAC-SHA256(secret, "v1:<provider>:<jobId>")` in hex, appended
 *   to the configured receiver URL as a last path segment and checked in constant time;
 * - {@link webhookCallback}: what a submit sends for one job (URL, and the secret for kinds that sign).
 *
 * Secrets are read from the environment at call time (worker and API), never from workflow input.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ProviderError } from './errors.js';
import type { WebhookEntry } from './entry.js';

/** Request headers as Node and Fastify give them (lower-case names). */
export type WebhookHeaders = Record<string, string | string[] | undefined>;

/** The first value of header `name` (lower-case), or undefined. */
export function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Constant-time check of a `sha256=<hex>` signature header against the HMAC-SHA256 of `rawBody`
 * keyed with `secret`. False for a missing or malformed header. The hex may be in either case.
 */
export function verifySha256Signature(rawBody: Buffer, header: string | undefined, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const given = Buffer.from(m[1]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The per-job callback token of `jobId` at `provider`: 64 lower-case hex characters. */
export function callbackToken(secret: string, provider: string, jobId: string): string {
  return createHmac('sha256', secret).update(`v1:${provider}:${jobId}`).digest('hex');
}

/** Constant-time check of a callback token (any string) against the token of (`provider`, `jobId`). */
export function callbackTokenMatches(token: string, secret: string, provider: string, jobId: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(token)) return false;
  const expected = Buffer.from(callbackToken(secret, provider, jobId), 'hex');
  return timingSafeEqual(Buffer.from(token, 'hex'), expected);
}

/** A callback token at the end of a URL's path (what {@link webhookCallback} appends), or undefined. */
export function tokenOfCallbackUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const last = new URL(url).pathname.split('/').pop() ?? '';
    return /^[0-9a-f]{64}$/.test(last) ? last : undefined;
  } catch {
    return undefined;
  }
}

/** `url` with `segment` appended to its path (the query string, if any, kept after it). */
export function appendPathSegment(url: string, segment: string): string {
  const u = new URL(url);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/${encodeURIComponent(segment)}`;
  return u.toString();
}

/**
 * An event ID for providers whose deliveries carry none (a ScraperAPI callback, an Oxylabs job
 * JSON, a Bright Data notify ping): `sha256:<hex of the raw body>`, so that an identical redelivery
 * is recognised as a duplicate.
 */
export function bodyEventId(rawBody: Buffer): string {
  return `sha256:${createHash('sha256').update(rawBody).digest('hex')}`;
}

/**
 * What a submit of `jobId` sends to the provider: the receiver URL (with the per-job token when the
 * provider does not sign) and, when it signs, the HMAC secret to register with it. Empty when the
 * entry has no webhook. `jobId` may be undefined only for signing providers (the URL needs no
 * token); for the others the answer is then empty (no callback rather than an unverifiable one).
 * Throws a permanent {@link ProviderError} `NO_WEBHOOK_SECRET` when the secret variable is unset.
 */
export function webhookCallback(
  provider: string,
  webhook: WebhookEntry | undefined,
  signed: boolean,
  jobId: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { callbackUrl?: string; webhookSecret?: string } {
  if (!webhook) return {};
  const secret = env[webhook.secretEnv];
  if (!secret) {
    throw new ProviderError(
      'permanent',
      `environment variable ${webhook.secretEnv} (webhook secret of provider ${provider}) is not set on the worker`,
      {
        code: 'NO_WEBHOOK_SECRET',
      },
    );
  }
  if (signed) return { callbackUrl: webhook.url, webhookSecret: secret };
  if (jobId === undefined) return {};
  return { callbackUrl: appendPathSegment(webhook.url, callbackToken(secret, provider, jobId)) };
}
