/**
 * One HTTP exchange with a provider ({@link providerFetch}): the request sent with a timeout (JSON or
 * form-encoded body), the response returned for any HTTP status with its sanitised evidence, and a
 * network failure or timeout classified into a {@link ProviderError} kind (`ambiguous` for a submit
 * that may have been sent). The body is read as a stream up to a byte cap
 * ({@link DEFAULT_MAX_BODY_BYTES} unless the request says otherwise). {@link ProviderHttp} in
 * `http.ts` builds every adapter call on this.
 */
import { redactSecrets, sanitizeBody, sanitizeHeaders, sanitizeUrl, truncate } from '../../lib/sanitize.js';
import { observeProviderCall } from '../../observability/provider.js';
import { ProviderError, type ProviderEvidence } from './errors.js';
import type { FormBody } from './request.js';

/** `submit` calls create work (outcome ambiguous on reset/timeout/5xx); `read` and `cancel` calls do not. */
export type CallPhase = 'submit' | 'read' | 'cancel';

/**
 * Most bytes of a response body read by default (32 MiB): far above any status, list, submit or
 * cancel answer, so a broken or hostile provider cannot fill the worker's heap with one answer.
 * Result reads are allowed their entry's `results.maxBytes` when that is larger (`http.ts`).
 */
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

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
  /** Most bytes of the response body read (default {@link DEFAULT_MAX_BODY_BYTES}); a longer body fails the call. */
  maxBodyBytes?: number;
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
 * - reset, closed socket or timeout after sending → `ambiguous` for `submit`, `transient` otherwise;
 * - a body longer than `req.maxBodyBytes` (by its `content-length` or as it streams) → code
 *   `BODY_TOO_LARGE`, `ambiguous` for `submit` (the provider may have created the task), `transient`
 *   otherwise; the rest of the body is not read, and the evidence holds no body.
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
  const cap = req.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  let text: string;
  try {
    text = await readCapped(res, cap);
  } catch (e) {
    if (e instanceof BodyTooLarge) throw bodyTooLarge(e, req, cap, { endpoint, at, request: requestEvidence, res });
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
  const evidence: ProviderEvidence = {
    endpoint,
    at,
    httpStatus: res.status,
    request: requestEvidence,
    body: body !== undefined ? sanitizeBody(body, req.secrets) : truncate(redactSecrets(text, req.secrets), 8000),
    headers: keptHeaders(res.headers, req.secrets),
  };
  return { status: res.status, headers: res.headers, body, text, evidence };
}

/** The {@link KEPT_HEADERS} of an answer, sanitised with `secrets`. */
function keptHeaders(headers: Headers, secrets: readonly string[]): Record<string, string> {
  const keep: Record<string, string> = {};
  for (const h of KEPT_HEADERS) {
    const v = headers.get(h);
    if (v !== null) keep[h] = v;
  }
  return sanitizeHeaders(keep, secrets);
}

/** Thrown by {@link readCapped} when the body passes its cap after `read` bytes (`declared`: its `content-length`). */
export class BodyTooLarge extends Error {
  constructor(
    readonly read: number,
    readonly declared: number | undefined,
  ) {
    super('response body over its cap');
  }
}

/**
 * The body of `res` as UTF-8 text (a leading BOM dropped and invalid bytes replaced, as
 * `Response.text()` does), read chunk by chunk; throws {@link BodyTooLarge} as soon as it is known
 * to pass `cap` bytes (a `content-length` above it, or the bytes read so far), after cancelling the
 * rest of the body. The chunks are decoded as they arrive (a streaming `TextDecoder`, which keeps
 * a character split across two chunks whole) and dropped, so that at its peak the read holds the
 * decoded parts and the joined text, not also the raw bytes and their copy: about twice the body
 * rather than three times.
 */
export async function readCapped(res: Response, cap: number): Promise<string> {
  const length = res.headers.get('content-length');
  const declared = length !== null && /^\d+$/.test(length) ? Number(length) : undefined;
  if (res.body === null) return '';
  if (declared !== undefined && declared > cap) {
    await res.body.cancel().catch(() => undefined);
    throw new BodyTooLarge(0, declared);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.byteLength;
    if (read > cap) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge(read, declared);
    }
    parts.push(decoder.decode(value, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join('');
}

/** The `BODY_TOO_LARGE` error of a body cut at its cap (see {@link providerFetch}); the evidence holds no body. */
function bodyTooLarge(
  e: BodyTooLarge,
  req: ProviderRequest,
  cap: number,
  ev: { endpoint: string; at: string; request: unknown; res: Response },
): ProviderError {
  const how = e.read > 0 ? `cut after ${e.read} bytes read` : `content-length ${e.declared}, cut before reading`;
  return new ProviderError(
    req.phase === 'submit' ? 'ambiguous' : 'transient',
    redactSecrets(
      `${ev.endpoint} answered ${ev.res.status} with a body over the cap of ${cap} bytes per response body (${how}); the answer was not used`,
      req.secrets,
    ),
    {
      code: 'BODY_TOO_LARGE',
      httpStatus: ev.res.status,
      evidence: {
        endpoint: ev.endpoint,
        at: ev.at,
        httpStatus: ev.res.status,
        request: ev.request,
        headers: keptHeaders(ev.res.headers, req.secrets),
      },
    },
  );
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
