/**
 * HTTP exchanges with providers: one request with a timeout, sanitised evidence and the
 * classification of every failure into a {@link ProviderError} kind. Adapters build on this; they
 * never retry (the workflow owns retries and reconciliation).
 *
 * - {@link providerFetch} (`exchange.ts`): one exchange (JSON or form-encoded body), any HTTP status returned;
 * - {@link ProviderHttp}: an adapter's client for one provider — base URL joined keeping its path
 *   prefix ({@link joinUrl}), the credential placed where the provider wants it
 *   ({@link CredentialPlacement}: a header, the query string, Basic auth or the body), every
 *   recorded URL, header and body redacted with the call's secrets by value and by name, and
 *   non-2xx answers (JSON or plain text) classified by {@link httpError};
 * - {@link errorDetails}: the provider's error code and message from the usual body shapes.
 */
import type { z } from 'zod';
import { parseRetryAfter, parseWaitFromMessage } from '../../lib/retryAfter.js';
import { redactSecrets, sanitizeUrl, truncate } from '../../lib/sanitize.js';
import { credentialSecrets } from './credentials.js';
import { ProviderError, quotaExhausted, saysQuotaExhausted } from './errors.js';
import type { CallContext, ResultContext, StatusObservation, SubmitContext } from '../adapter.js';
import { tokenOfCallbackUrl } from './webhook.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  providerFetch,
  type CallPhase,
  type ProviderRequest,
  type ProviderResponse,
} from './exchange.js';
import {
  appendQuery,
  joinUrl,
  placeCredential,
  type CredentialPlacement,
  type FormBody,
  type QueryParams,
} from './request.js';

export type { CallPhase, ProviderResponse } from './exchange.js';
export { joinUrl, path, type CredentialPlacement, type FormBody, type QueryParams } from './request.js';

/** Codes by which providers say "too many concurrent runs: try later" on a non-429 status (providers.md: Apify's 400/402). */
const CONCURRENCY_CODES =
  /^(CONCURRENCY_LIMIT|concurrent-runs-limit-exceeded|too-many-concurrent-runs|rate-limit-exceeded|RATE_LIMITED)$/i;

/**
 * Classifies a non-2xx response into a {@link ProviderError}: a concurrency code → `cooldown`;
 * quota or credit exhaustion → `permanent` with code `QUOTA_EXHAUSTED` and `details.quota` (see
 * {@link isQuotaAnswer}); `429` → `cooldown` (with the wait from `Retry-After` or the message text),
 * `404` → `not_found`, `409` → `conflict`, `408` → `transient`, `5xx` → `ambiguous` on submit else
 * `transient`, any other 4xx → `permanent`. `code` and `message` are what the adapter extracted
 * from the provider's error body; the message is redacted with `secrets`.
 */
export function httpError(
  res: ProviderResponse,
  phase: CallPhase,
  code: string | undefined,
  message: string | undefined,
  secrets: readonly string[],
): ProviderError {
  const status = res.status;
  // Which fields were refused and why (Bright Data `errors: [[field, reason]]`, `validation_errors`):
  // shown to the user, never read by the classification below.
  const body = res.body && typeof res.body === 'object' ? (res.body as Record<string, unknown>) : {};
  const fields = fieldErrors(body.errors ?? body.validation_errors);
  const shown = fields ? (message ? `${message} (${fields})` : fields) : message;
  const msg = redactSecrets(
    `${res.evidence.endpoint} answered ${status}${code ? ` ${code}` : ''}${shown ? `: ${shown}` : ''}`,
    secrets,
  );
  const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), Date.now()) ?? parseWaitFromMessage(message);
  const details = {
    code: code === undefined ? undefined : redactSecrets(code, secrets),
    httpStatus: status,
    retryAfterMs,
    evidence: res.evidence,
  };
  if (code !== undefined && CONCURRENCY_CODES.test(code)) return new ProviderError('cooldown', msg, details);
  if (isQuotaAnswer(status, code, message)) return quotaExhausted('permanent', { message: msg, details });
  if (status === 429) return new ProviderError('cooldown', msg, details);
  if (status === 404) return new ProviderError('not_found', msg, details);
  if (status === 409) return new ProviderError('conflict', msg, details);
  if (status === 408) return new ProviderError('transient', msg, details);
  if (status >= 500) return new ProviderError(phase === 'submit' ? 'ambiguous' : 'transient', msg, details);
  return new ProviderError('permanent', msg, details);
}

/**
 * True when a non-2xx answer says the account's quota or credits are used up: any `402 Payment
 * Required` (Firecrawl "Insufficient credits", Apify's usage and payment types) unless its code
 * names a concurrency or memory limit (Apify's `concurrent-runs-limit-exceeded` and
 * `actor-memory-limit-exceeded` pass once runs finish); a `403` or `429` whose code or text says so
 * (ScraperAPI's out-of-credits `403`, a `429 QUOTA_EXCEEDED`), but not a quota per unit of time,
 * which is a rate limit ({@link saysQuotaExhausted}).
 */
function isQuotaAnswer(status: number, code: string | undefined, message: string | undefined): boolean {
  if (status === 402) return !(code !== undefined && /concurren|memory[-_]limit/i.test(code));
  if (status === 403 || status === 429) return saysQuotaExhausted(code, message);
  return false;
}

/**
 * A transient `NOT_READY` error: answer `res` shows no result yet (retried under the poll policy,
 * never a failure); `details` add to the answer's HTTP status and evidence.
 */
export function notReady(
  message: string,
  res: ProviderResponse,
  details: ProviderError['details'] = {},
): ProviderError {
  return new ProviderError('transient', message, {
    httpStatus: res.status,
    evidence: res.evidence,
    code: 'NOT_READY',
    ...details,
  });
}

/**
 * The concurrent-job limit a refusal states (`{"error": {"limit": 2}}` from the seeds' provider,
 * or a top-level `limit`), as a positive integer; undefined when it states none.
 */
function statedLimitOf(body: unknown): number | undefined {
  const o = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const e = o.error && typeof o.error === 'object' ? (o.error as Record<string, unknown>) : {};
  const v = e.limit ?? o.limit;
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}

/**
 * The provider's error code and message from a non-2xx body, for the shapes providers use:
 * `{error: {code|type, message}}` (reference, Apify), `{error: "text", code?}` (Firecrawl
 * `{success: false, error}`), `{code|type|status, message|detail|error_description}`, a JSON
 * string, or a plain-text body (Bright Data: most errors are plain text) whose first 500
 * characters become the message. Unknown shapes give no code and the text as the message.
 */
export function errorDetails(res: Pick<ProviderResponse, 'body' | 'text'>): { code?: string; message?: string } {
  const str = (v: unknown): string | undefined =>
    typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;
  const b = res.body;
  if (typeof b === 'string') return { message: b.slice(0, 500) };
  if (b && typeof b === 'object' && !Array.isArray(b)) {
    const o = b as Record<string, unknown>;
    const e = o.error;
    if (e && typeof e === 'object' && !Array.isArray(e)) {
      const eo = e as Record<string, unknown>;
      return {
        code: str(eo.code) ?? str(eo.type) ?? str(o.code),
        message: str(eo.message) ?? str(eo.detail) ?? str(o.message),
      };
    }
    const code =
      str(o.code) ??
      str(o.type) ??
      str(o.error_code) ??
      (typeof o.status === 'string' && o.status !== 'error' ? o.status : undefined);
    const message = str(e) ?? str(o.message) ?? str(o.detail) ?? str(o.error_description) ?? str(o.title);
    if (code !== undefined || message !== undefined) return { code, message };
  }
  const text = res.text.trim();
  return { message: text ? text.slice(0, 500) : undefined };
}

/**
 * A body's list of refused fields as one line (`field: reason; …`, at most 300 characters), or
 * undefined when `v` is not a non-empty list. Items may be `[field, reason]` pairs, strings, or
 * objects with a field (`field`, `path`, `loc`) and a reason (`message`, `reason`, `msg`).
 */
function fieldErrors(v: unknown): string | undefined {
  if (!Array.isArray(v) || v.length === 0) return undefined;
  const one = (x: unknown): string | undefined => {
    const text = (p: unknown) => (typeof p === 'string' ? p : JSON.stringify(p));
    if (typeof x === 'string') return x;
    if (Array.isArray(x)) return x.map(text).join(': ');
    if (x && typeof x === 'object') {
      const o = x as Record<string, unknown>;
      const field = o.field ?? o.path ?? o.loc;
      const reason = o.message ?? o.reason ?? o.msg;
      return [field, reason]
        .filter((p) => p !== undefined)
        .map((p) => (Array.isArray(p) ? p.map(text).join('.') : text(p)))
        .join(': ');
    }
    return undefined;
  };
  const line = v
    .map(one)
    .filter((x): x is string => !!x)
    .join('; ');
  return line ? line.slice(0, 300) : undefined;
}

/**
 * Every secret value of a call, to scrub from records: the credential with its derived forms, the
 * worker's known secrets, and for a submit the webhook secret and the callback URL's token.
 */
export function callSecrets(ctx: CallContext | SubmitContext): string[] {
  const out = [...credentialSecrets(ctx.apiKey), ...ctx.secrets];
  const s = ctx as Partial<SubmitContext>;
  if (s.webhookSecret) out.push(s.webhookSecret);
  const token = tokenOfCallbackUrl(s.callbackUrl);
  if (token) out.push(token);
  return out;
}

/** Options of {@link ProviderHttp}. Times in ms. */
interface ProviderHttpOptions {
  /** Configured provider name (for messages). */
  provider: string;
  /** The API's base URL; its path prefix is kept ({@link joinUrl}). */
  baseUrl: string;
  /** Where the credential goes by default (a call may override it). */
  auth: CredentialPlacement;
  submitTimeoutMs: number;
  readTimeoutMs: number;
  /** Headers sent with every call (never secrets: those go through `auth`). */
  headers?: Record<string, string>;
  /** Extracts code and message from a non-2xx answer (default {@link errorDetails}). */
  errorDetails?: (res: ProviderResponse) => { code?: string; message?: string };
  /**
   * The kind's own reading of a classified error (e.g. ScraperAPI: a `403` on submit means out of
   * credits unless it names `max_cost`); returns `err` or its replacement. Applied by {@link ProviderHttp.error}.
   */
  classify?: (err: ProviderError, res: ProviderResponse, phase: CallPhase) => ProviderError;
  /** Most bytes of one response body (default {@link DEFAULT_MAX_BODY_BYTES}); see {@link ProviderHttp.call}. */
  maxBodyBytes?: number;
}

/** One call of {@link ProviderHttp}. */
export interface CallOptions {
  method: ProviderRequest['method'];
  /** Path under the base URL (use {@link path} for values), or `url`: an absolute URL on the base URL's origin (a `next` link). */
  path?: string;
  url?: string;
  query?: QueryParams;
  json?: unknown;
  form?: FormBody;
  headers?: Record<string, string>;
  phase: CallPhase;
  /** Default: the submit timeout for `submit`, else the read timeout. */
  timeoutMs?: number;
  /** Overrides the default credential placement for this call. */
  auth?: CredentialPlacement;
  /** Most bytes of the response body, for this call (overrides the cap {@link ProviderHttp.call} chooses). */
  maxBodyBytes?: number;
}

/**
 * An adapter's HTTP client for one configured provider. Throws {@link ProviderError} only (see
 * {@link providerFetch}, {@link httpError}); `BAD_CREDENTIALS` (permanent) when a Basic credential
 * is not `user:password`; `FOREIGN_URL` (permanent) when an absolute `url` leaves the provider's
 * origin (a `next` link must never carry our credential elsewhere).
 */
export class ProviderHttp {
  constructor(readonly opts: ProviderHttpOptions) {}

  /** The client of provider entry `name`: its base URL and timeouts, the credential at `auth`, then `more`. */
  static forEntry(
    name: string,
    entry: { baseUrl: string; submitTimeoutMs: number; readTimeoutMs: number },
    auth: CredentialPlacement,
    more: Partial<ProviderHttpOptions> = {},
  ): ProviderHttp {
    const { baseUrl, submitTimeoutMs, readTimeoutMs } = entry;
    return new ProviderHttp({ provider: name, baseUrl, auth, submitTimeoutMs, readTimeoutMs, ...more });
  }

  /** `baseUrl` joined with `relPath` and `query` (prefix kept). */
  url(relPath: string, query?: QueryParams): string {
    return joinUrl(this.opts.baseUrl, relPath, query);
  }

  /**
   * Performs a call and returns the response for any HTTP status. Its body is read up to
   * `o.maxBodyBytes`, else the client's cap ({@link ProviderHttpOptions.maxBodyBytes}), raised for a
   * result read (`ctx` a {@link ResultContext}) to the entry's `results.maxBytes` when that is
   * larger, since one page may carry what the result limits accept; a longer body fails with
   * `BODY_TOO_LARGE` ({@link providerFetch}).
   */
  async call(ctx: CallContext, o: CallOptions): Promise<ProviderResponse> {
    const secrets = callSecrets(ctx);
    let url: string;
    if (o.url !== undefined) {
      const target = new URL(o.url);
      if (target.origin !== new URL(this.opts.baseUrl).origin) {
        throw new ProviderError(
          'permanent',
          `provider ${this.opts.provider} pointed at ${sanitizeUrl(o.url, secrets)}, outside its base URL's origin; not followed`,
          { code: 'FOREIGN_URL' },
        );
      }
      appendQuery(target, o.query);
      url = target.toString();
    } else {
      url = this.url(o.path ?? '/', o.query);
    }
    const placed = placeCredential(
      { url, headers: { ...this.opts.headers, ...o.headers }, json: o.json, form: o.form },
      o.auth ?? this.opts.auth,
      ctx.apiKey,
      this.opts.provider,
    );
    return providerFetch({
      method: o.method,
      ...placed,
      timeoutMs: o.timeoutMs ?? (o.phase === 'submit' ? this.opts.submitTimeoutMs : this.opts.readTimeoutMs),
      phase: o.phase,
      secrets,
      signal: ctx.signal,
      maxBodyBytes: o.maxBodyBytes ?? this.bodyCap(ctx),
    });
  }

  /** The body cap of a call under `ctx` (see {@link call}), bytes. */
  private bodyCap(ctx: CallContext): number {
    const cap = this.opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    // A result read, or a status read that may carry the result inline (`StatusContext.limits`).
    const resultBytes = (ctx as Partial<ResultContext>).limits?.maxBytes;
    return resultBytes !== undefined && resultBytes > cap ? resultBytes : cap;
  }

  /** {@link call}, throwing the classified {@link ProviderError} ({@link error}) for a non-2xx answer. */
  async ok(ctx: CallContext, o: CallOptions): Promise<ProviderResponse> {
    const res = await this.call(ctx, o);
    if (!this.isOk(res)) throw this.error(res, o.phase, ctx);
    return res;
  }

  /** True for a `2xx` answer (status `200..299`): the one test of success every adapter uses. */
  isOk(res: Pick<ProviderResponse, 'status'>): boolean {
    return res.status >= 200 && res.status < 300;
  }

  /** The classified error of a non-2xx answer; `override` replaces the extracted code or message. */
  error(
    res: ProviderResponse,
    phase: CallPhase,
    ctx: CallContext,
    override: { code?: string; message?: string } = {},
  ): ProviderError {
    const d = { ...(this.opts.errorDetails ?? errorDetails)(res), ...override };
    const classified = httpError(res, phase, d.code, d.message, callSecrets(ctx));
    const err = this.opts.classify ? this.opts.classify(classified, res, phase) : classified;
    if (err.kind === 'cooldown') err.details.statedLimit = statedLimitOf(res.body);
    return err;
  }

  /**
   * Parses a 2xx body with `schema`. A body we cannot understand is `ambiguous` for a submit (a job
   * may exist) and `transient` otherwise, code `INVALID_RESPONSE`, with zod's issues in the message.
   */
  parse<T extends z.ZodType>(res: ProviderResponse, schema: T, phase: CallPhase, what: string): z.infer<T> {
    const parsed = schema.safeParse(res.body);
    if (parsed.success) return parsed.data;
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
    return this.invalid(res, phase, `${what}: ${issues}`);
  }

  /** Throws the `INVALID_RESPONSE` error of {@link parse} for `detail`. */
  invalid(res: ProviderResponse, phase: CallPhase, detail: string): never {
    throw this.invalidError(res, phase, detail);
  }

  /** The `INVALID_RESPONSE` error of {@link parse} for `detail` (ambiguous on a submit, transient otherwise). */
  invalidError(res: ProviderResponse, phase: CallPhase, detail: string): ProviderError {
    return new ProviderError(
      phase === 'submit' ? 'ambiguous' : 'transient',
      `${res.evidence.endpoint} answered ${res.status} with an unexpected ${truncate(detail, 1000)}`,
      {
        httpStatus: res.status,
        evidence: res.evidence,
        code: 'INVALID_RESPONSE',
      },
    );
  }

  /** The provider's polling guidance of a response (Retry-After), ms. */
  retryAfterMs(res: ProviderResponse): number | undefined {
    return parseRetryAfter(res.headers.get('retry-after'), Date.now());
  }

  /**
   * The observation of an answer that shows no job state yet (a `202`/`204`, a body without the
   * job): running, as the status word the body states, else `HTTP <status>`.
   */
  stillRunning(res: ProviderResponse): StatusObservation {
    const word = (res.body as { status?: unknown } | undefined)?.status;
    return {
      state: 'running',
      providerStatus: typeof word === 'string' && word ? word : `HTTP ${res.status}`,
      retryAfterMs: this.retryAfterMs(res),
    };
  }
}
