/**
 * One HTTP exchange with a provider ({@link providerFetch}): the request sent with a timeout (JSON or
 * form-encoded body), the response returned for any HTTP status with its sanitised evidence, and a
 * network failure or timeout classified into a {@link ProviderError} kind (`ambiguous` for a submit
 * that may have been sent). {@link ProviderHttp} in `http.ts` builds every adapter call on this.
 */
import { redactSecrets, sanitizeBody, sanitizeHeaders, sanitizeUrl, truncate } from '../../lib/sanitize.js';
import { observeProviderCall } from '../../observability/provider.js';
import { ProviderError, type ProviderEvidence } from './errors.js';
import type { FormBody } from './request.js';

/** `submit` calls create work (outcome ambiguous on reset/timeout/5xx); `read` and `cancel` calls do not. */
export type CallPhase = 'submit' | 'read' | 'cancel';

/** Options of {@link providerFetch}. */
export interface ProviderRequest {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
  url: string;
  headers?: Record<string, string>;
  /** JSON body (serialised here). At most one of `json` and `form`. */
  json?: unknown;
  /** `application/x-www-form-urlencoded` body (Zyte `run.json`). */
  form?: FormBody;
  /** Timeout of the whole exchange, ms. */
  timeoutMs: number;
  phase: CallPhase;
  /** Secret values to scrub from anything recorded (the API key and its forms, webhook secrets). */
  secrets: readonly string[];
  signal?: AbortSignal;
}

/** A provider response, whatever its HTTP status. */
export interface ProviderResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or `undefined` when the body was empty or not JSON. */
  body: unknown;
  /** The raw body text (plain-text errors: Bright Data). Never recorded unredacted. */
  text: string;
  evidence: ProviderEvidence;
}

const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Response headers kept as evidence (sanitised). */
const KEPT_HEADERS = ['retry-after', 'x-request-id', 'idempotent-replayed', 'content-type', 'location'];

function formParams(form: FormBody): URLSearchParams {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) p.append(k, String(item));
    else p.append(k, String(v));
  }
  return p;
}

/**
 * Performs the request and returns the response for any HTTP status; throws
 * {@link ProviderError} only for network failures and timeouts:
 * - connection never made (refused, DNS, unreachable) → `transient` (nothing was sent);
 * - reset, closed socket or timeout after sending → `ambiguous` for `submit`, `transient` otherwise.
 * The evidence (endpoint, request body, response body and kept headers) is sanitised with
 * `req.secrets` by value and with secret-looking names. Every exchange gets a trace span and
 * request metrics (`src/observability/provider.ts`).
 */
export async function providerFetch(req: ProviderRequest): Promise<ProviderResponse> {
  return observeProviderCall(req, () => exchange(req));
}

/** Sends `req` under its HTTP timeout and the caller's signal. */
async function exchange(req: ProviderRequest): Promise<ProviderResponse> {
  // One controller per call, told by the caller's signal through one listener removed when the
  // call ends: a long-lived signal (a tracking loop's) then holds nothing of its finished calls,
  // which `AbortSignal.any` on Node 20 does (one entry per call).
  const call = new AbortController();
  const timer = setTimeout(
    () => call.abort(new DOMException(`timed out after ${req.timeoutMs} ms`, 'TimeoutError')),
    req.timeoutMs,
  );
  const onAbort = () => call.abort(new DOMException('the caller cancelled the call', 'AbortError'));
  if (req.signal?.aborted) onAbort();
  else req.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await send(req, call.signal);
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onAbort);
  }
}

/** Sends one request under `signal` and reads its whole answer. */
async function send(req: ProviderRequest, signal: AbortSignal): Promise<ProviderResponse> {
  const at = new Date().toISOString();
  const endpoint = `${req.method} ${sanitizeUrl(req.url, req.secrets)}`;
  const params = req.form === undefined ? undefined : formParams(req.form);
  const sent = params
    ? Object.fromEntries(
        [...new Set(params.keys())].map((k) => [k, params.getAll(k).length > 1 ? params.getAll(k) : params.get(k)]),
      )
    : req.json;
  const requestEvidence = sent === undefined ? undefined : sanitizeBody(sent, req.secrets);
  const contentType: Record<string, string> = params
    ? { 'content-type': 'application/x-www-form-urlencoded' }
    : req.json !== undefined
      ? { 'content-type': 'application/json' }
      : {};
  let res: Response;
  try {
    res = await fetch(req.url, {
      method: req.method,
      headers: { accept: 'application/json', ...contentType, ...req.headers },
      body: params ? params.toString() : req.json === undefined ? undefined : JSON.stringify(req.json),
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
  for (const h of KEPT_HEADERS) {
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
  const what = timedOut
    ? `timed out after ${req.timeoutMs} ms`
    : cancelled
      ? 'was cancelled'
      : `failed: ${err.cause?.message ?? err.message ?? String(e)}${code ? ` (${code})` : ''}`;
  const message = redactSecrets(`${ev.endpoint} ${what}`, req.secrets);
  const notSent = code !== undefined && NOT_SENT_CODES.has(code);
  const kind = req.phase === 'submit' && !notSent ? 'ambiguous' : 'transient';
  return new ProviderError(kind, message, {
    code: timedOut ? 'TIMEOUT' : (code ?? 'NETWORK'),
    httpStatus: ev.httpStatus,
    evidence: ev,
  });
}
