/**
 * One HTTP exchange with a provider, with a timeout, sanitised evidence and classification of
 * every failure into a {@link ProviderError} kind. Adapters build on this; they never retry.
 */
import { parseRetryAfter, parseWaitFromMessage } from '../lib/retryAfter.js';
import { redactSecrets, sanitizeBody, sanitizeHeaders, sanitizeUrl, truncate } from '../lib/sanitize.js';
import { observeProviderCall } from '../observability/provider.js';
import { ProviderError, type ProviderEvidence } from './errors.js';

/** `submit` calls create work (outcome ambiguous on reset/timeout/5xx); `read` calls do not. */
export type CallPhase = 'submit' | 'read' | 'cancel';

/** Options of {@link providerFetch}. */
export interface ProviderRequest {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  url: string;
  headers?: Record<string, string>;
  /** JSON body (serialised here). */
  json?: unknown;
  /** Timeout of the whole exchange, ms. */
  timeoutMs: number;
  phase: CallPhase;
  /** Secret values to scrub from anything recorded (the API key). */
  secrets: readonly string[];
  signal?: AbortSignal;
}

/** A provider response with a 2xx (or an expected non-2xx the caller asked to receive). */
export interface ProviderResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or `undefined` when the body was empty or not JSON. */
  body: unknown;
  text: string;
  evidence: ProviderEvidence;
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Performs the request and returns the response for any HTTP status; throws
 * {@link ProviderError} only for network failures and timeouts:
 * - connection never made (refused, DNS, unreachable) → `transient` (nothing was sent);
 * - reset, closed socket or timeout after sending → `ambiguous` for `submit`, `transient` otherwise.
 * Every exchange gets a trace span and request metrics (`src/observability/provider.ts`).
 */
export async function providerFetch(req: ProviderRequest): Promise<ProviderResponse> {
  return observeProviderCall(req, () => exchange(req));
}

async function exchange(req: ProviderRequest): Promise<ProviderResponse> {
  const at = new Date().toISOString();
  const endpoint = `${req.method} ${sanitizeUrl(req.url, req.secrets)}`;
  const requestEvidence = req.json === undefined ? undefined : sanitizeBody(req.json, req.secrets);
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  let res: Response;
  try {
    res = await fetch(req.url, {
      method: req.method,
      headers: { accept: 'application/json', ...(req.json !== undefined ? { 'content-type': 'application/json' } : {}), ...req.headers },
      body: req.json === undefined ? undefined : JSON.stringify(req.json),
      signal,
    });
  } catch (e) {
    throw networkError(e, req, { endpoint, at, request: requestEvidence });
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    // Headers arrived but the body was cut: the provider did answer, so for a submit the outcome
    // is still unknown to us.
    throw networkError(e, req, { endpoint, at, request: requestEvidence, httpStatus: res.status });
  }
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const keep: Record<string, string> = {};
  for (const h of ['retry-after', 'x-request-id', 'idempotent-replayed', 'content-type']) {
    const v = res.headers.get(h);
    if (v !== null) keep[h] = v;
  }
  const evidence: ProviderEvidence = {
    endpoint,
    at,
    httpStatus: res.status,
    request: requestEvidence,
    body: body !== undefined ? sanitizeBody(body, req.secrets) : truncate(redactSecrets(text, req.secrets), 8000),
    headers: sanitizeHeaders(keep, req.secrets),
  };
  return { status: res.status, headers: res.headers, body, text, evidence };
}

function networkError(e: unknown, req: ProviderRequest, ev: ProviderEvidence): ProviderError {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = err.cause?.code;
  const timedOut = err.name === 'TimeoutError' || (err.name === 'AbortError' && !req.signal?.aborted);
  const cancelled = err.name === 'AbortError' && req.signal?.aborted;
  const what = timedOut ? `timed out after ${req.timeoutMs} ms` : cancelled ? 'was cancelled' : `failed: ${err.cause?.message ?? err.message ?? String(e)}${code ? ` (${code})` : ''}`;
  const message = redactSecrets(`${ev.endpoint} ${what}`, req.secrets);
  const notSent = code !== undefined && NOT_SENT_CODES.has(code);
  const kind = req.phase === 'submit' && !notSent ? 'ambiguous' : 'transient';
  return new ProviderError(kind, message, { code: timedOut ? 'TIMEOUT' : (code ?? 'NETWORK'), httpStatus: ev.httpStatus, evidence: ev });
}

/** Codes by which providers say "too many concurrent runs: try later" on a non-429 status. */
const CONCURRENCY_CODES = /^(CONCURRENCY_LIMIT|concurrent-runs-limit-exceeded|too-many-concurrent-runs|rate-limit-exceeded|RATE_LIMITED)$/i;

/**
 * Classifies a non-2xx response into a {@link ProviderError}.
 * `code` and `message` are what the adapter extracted from the provider's error body.
 */
export function httpError(res: ProviderResponse, phase: CallPhase, code: string | undefined, message: string | undefined, secrets: readonly string[]): ProviderError {
  const status = res.status;
  const msg = redactSecrets(`${res.evidence.endpoint} answered ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`, secrets);
  const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), Date.now()) ?? parseWaitFromMessage(message);
  const details = { code, httpStatus: status, retryAfterMs, evidence: res.evidence };
  if (status === 429 || (code !== undefined && CONCURRENCY_CODES.test(code))) return new ProviderError('cooldown', msg, details);
  if (status === 404) return new ProviderError('not_found', msg, details);
  if (status === 409) return new ProviderError('conflict', msg, details);
  if (status === 408) return new ProviderError('transient', msg, details);
  if (status >= 500) return new ProviderError(phase === 'submit' ? 'ambiguous' : 'transient', msg, details);
  return new ProviderError('permanent', msg, details);
}
