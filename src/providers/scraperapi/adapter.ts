/**
 * Adapter for the ScraperAPI Async API. Contract: docs.scraperapi.com, "Asynchronous API" → "Job
 * Handling" and "Callbacks & API Params" (Markdown pages, read 2026-11-30), the older
 * "Async Requests Method → Callbacks" page, and ScraperAPI's own skill reference for the async
 * API (github.com/scraperapi/scraperapi-skills, `scraperapi-async`: cancel endpoint, retention,
 * failure payload). What it says, and what this adapter does:
 *
 * - **Submit** `POST /jobs` with a JSON body `{apiKey, url, apiParams?, meta?, callback?, …}` →
 *   `{id, status: "running", statusUrl, url}`. Any 2xx with an `id` is an acceptance. The key
 *   goes in the body (`apiKey`), as every sample sends it; the "Job Handling" page lists
 *   `api_key` as a *query* parameter instead, which we never do: a key in a URL ends up in proxy
 *   and server logs. The body is recorded only redacted (by value and by the name `apiKey`).
 *   Our client reference goes in `meta.scrapeOrchestratorRef` (echoed in status and callbacks).
 * - **Status** `GET /jobs/{id}` — the status URL "needs no key", so none is sent: `running`,
 *   `finished` (the final answer embeds `response {headers, body, statusCode}`, so the result is
 *   written without another read), `failed` (`failReason`, e.g. `failed_due_to_timeout`, after
 *   ScraperAPI's own retries for up to 24 h). `cancelled`/`canceled` (any case) → `cancelled`: not
 *   a documented word, but the provider itself cancels jobs (a callback that fails three times
 *   "cancels the job"), so a cancelled job must not look unknown. Any other word → `unrecognised`.
 *   `202`/`204` → not ready. A `finished` job can carry the target's `403`/`404` in
 *   `response.statusCode` (the docs' error table: "target blocked the scrape"): by default that is
 *   `completed` with that HTTP status on the result row (the provider did the work and charged;
 *   retrying is the caller's choice); entry `targetErrors: "failed"` makes it `failed` with code
 *   `TARGET_HTTP_<status>`.
 * - **Expiry**: results are kept "up to 72 hours (24 hours guaranteed)"; what the status URL answers
 *   afterwards is undocumented: a `404` is counted (`not_found`), `notFoundLimit` in a row → `expired`.
 * - **Cancel** `DELETE /jobs/{id}` (listed, semantics undocumented): sent with the key in a JSON
 *   body; `2xx` → accepted (unless its JSON states an error: an unexpected answer, tried again);
 *   `404` → not found; `405`/`501` → `unsupported`; `400`/`409` → already final. An answer
 *   carrying the job reads as a status does (`failed` with a `failReason` meaning
 *   cancelled is `cancelled`). The workflow then confirms by polling.
 * - **No list endpoint and no idempotency key**: a lost submit cannot be reconciled; the job waits
 *   in `unknown` until an operator resolves it (`resolve --task-id` or `--resubmit`).
 * - **Callback** `callback: {type: "webhook", url}` — unsigned, so the URL carries our per-job
 *   token; the failure-report flag per entry `failureReport`; three failed deliveries cancel the
 *   job (the receiver answers at once, so it stays well inside that).
 * - **Rate limits**: `429` on submit ("too many concurrent submissions") → key-wide cool-down.
 * - **Credits**: a `403` on submit means "out of credits or over the plan" (the docs' error table;
 *   the wording is not documented), unless it names `max_cost` (that request's own cost cap, a
 *   permanent refusal of this job only): quota exhaustion (`QUOTA_EXHAUSTED`), which holds the
 *   key's other submits ({@link scraperApiError}).
 */
import { z } from 'zod';
import type { LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderState } from '../../model/states.js';
import type { ScrapeRequest } from '../../model/types.js';
import { meansCancelled, ProviderError, quotaExhausted } from '../shared/errors.js';
import { notReady, ProviderHttp, path, type CallPhase, type ProviderResponse } from '../shared/http.js';
import { pageFromRaw } from '../shared/htmlPage.js';
import type {
  Accepted,
  CallContext,
  CancelAnswer,
  FindContext,
  ObservedState,
  ProviderAdapter,
  ProviderCapabilities,
  ResultContext,
  StatusObservation,
  SubmitContext,
} from '../adapter.js';
import type { ProviderResult } from '../../model/results.js';
import type { ScraperApiEntry } from './config.js';

/**
 * ScraperAPI's reading of a classified error: a `403` on submit that does not name `max_cost` is
 * the documented out-of-credits (or plan limit) refusal, so quota exhaustion; the rest unchanged.
 */
export function scraperApiError(err: ProviderError, res: ProviderResponse, phase: CallPhase): ProviderError {
  if (phase === 'submit' && res.status === 403 && err.details.quota !== true && !/max[_ ]cost/i.test(res.text))
    return quotaExhausted('permanent', err);
  return err;
}

/** Where our client reference travels in `meta` (echoed by status answers and callbacks). */
export const SCRAPERAPI_REF_FIELD = 'scrapeOrchestratorRef';

const SubmitBody = z.looseObject({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  status: z.string().default('running'),
});

/** The target's answer inside a finished job (`response`). */
const TargetResponse = z.looseObject({
  statusCode: z.number().int().nullish(),
  headers: z.record(z.string(), z.unknown()).nullish(),
  body: z.string().nullish(),
  base64EncodedBody: z.string().nullish(),
});

/** A job as the status URL (and a callback) shows it. */
const ScraperApiJobSchema = z.looseObject({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  status: z.string().min(1),
  url: z.string().nullish(),
  statusUrl: z.string().nullish(),
  failReason: z.string().nullish(),
  attempts: z.number().nullish(),
  meta: z.record(z.string(), z.unknown()).nullish(),
  response: TargetResponse.nullish(),
});
type Job = z.infer<typeof ScraperApiJobSchema>;

/** Our state for a ScraperAPI status word (see the module docs). */
export function scraperApiState(word: string): ObservedState {
  const known: Record<string, ProviderState> = { running: 'running', finished: 'completed', failed: 'failed' };
  if (known[word]) return known[word];
  if (/^cancell?ed$/i.test(word)) return 'cancelled';
  return 'unrecognised';
}

function header(headers: Record<string, unknown> | null | undefined, name: string): string | undefined {
  for (const [k, v] of Object.entries(headers ?? {})) if (k.toLowerCase() === name && typeof v === 'string') return v;
  return undefined;
}

/**
 * What ScraperAPI's lookups prove after a lost submit: nothing — there is no list or search of jobs
 * and no idempotency key, so a lost submit always waits in `unknown` for an operator. Its status URL needs no key, so task IDs are one space per API host.
 */
export const SCRAPERAPI_EVIDENCE: ReconcileEvidence = {
  replay: 'none',
  lookups: [],
  taskScope: 'host',
  source:
    'docs.scraperapi.com Async API (Job Handling), read 2026-11-30: no list endpoint, no idempotency key; the status URL needs no key',
};

/** {@link ProviderAdapter} for the ScraperAPI Async API (see the module docs). */
export class ScraperApiAdapter implements ProviderAdapter {
  readonly kind = 'scraperapi';
  readonly capabilities: ProviderCapabilities = { idempotency: false, list: false, cancel: true, webhooks: true };
  readonly evidence = SCRAPERAPI_EVIDENCE;
  private readonly http: ProviderHttp;

  constructor(
    readonly name: string,
    private readonly entry: ScraperApiEntry,
  ) {
    this.http = ProviderHttp.forEntry(name, entry, { in: 'body', name: 'apiKey' }, { classify: scraperApiError });
  }

  /** The submit body (without `apiKey`, which the HTTP client places): request options first, our fields last. */
  submitBody(request: ScrapeRequest, ctx: SubmitContext): Record<string, unknown> {
    const { apiParams, meta, ...rest }: Record<string, unknown> = request.options;
    const obj = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
    const flags =
      ctx.callbackUrl === undefined || this.entry.failureReport === 'off'
        ? {}
        : this.entry.failureReport === 'both'
          ? { expectUnsuccessReport: true, expectsUnsuccessReport: true }
          : { [this.entry.failureReport]: true };
    const params = { ...this.entry.apiParams, ...obj(apiParams) };
    return {
      ...rest,
      ...(this.entry.timeoutSec !== undefined && rest.timeoutSec === undefined
        ? { timeoutSec: this.entry.timeoutSec }
        : {}),
      ...(Object.keys(params).length > 0 ? { apiParams: params } : {}),
      url: request.url,
      meta: { ...obj(meta), [SCRAPERAPI_REF_FIELD]: ctx.clientRef },
      ...(ctx.callbackUrl !== undefined ? { callback: { type: 'webhook', url: ctx.callbackUrl }, ...flags } : {}),
    };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const res = await this.http.ok(ctx, {
      method: 'POST',
      path: '/jobs',
      json: this.submitBody(request, ctx),
      phase: 'submit',
    });
    const body = this.http.parse(res, SubmitBody, 'submit', 'submit body');
    return { taskId: body.id, providerStatus: body.status, replayed: false };
  }

  /** The job, or null for a `202`/`204` "not ready" answer. The status URL takes no key. */
  private async getJob(taskId: string, ctx: CallContext): Promise<{ res: ProviderResponse; job: Job | null }> {
    const res = await this.http.ok(ctx, {
      method: 'GET',
      path: path`/jobs/${taskId}`,
      phase: 'read',
      auth: { in: 'none' },
    });
    if (res.status === 202 || res.status === 204) return { res, job: null };
    return { res, job: this.http.parse(res, ScraperApiJobSchema, 'read', 'job status body') };
  }

  /**
   * The page of a finished job, or null when the answer carries no `response` yet. A binary
   * target (a PDF, an image) arrives as `response.base64EncodedBody` instead of `body` ("Decoding"
   * page): its bytes are kept with the target's `content-type` (the text of a PDF is read before
   * the result is written). One job is one document: no identity to compute.
   */
  private page(job: Job, fallbackUrl: string): ProviderResult | null {
    const r = job.response;
    if (!r) return null;
    const encoded = r.base64EncodedBody ? Buffer.from(r.base64EncodedBody, 'base64') : null;
    return pageFromRaw({
      url: job.url || fallbackUrl,
      body: encoded ? null : (r.body ?? null),
      bytes: encoded,
      finalUrl: header(r.headers, 'sa-final-url') ?? null,
      httpStatus: r.statusCode ?? null,
      contentType: header(r.headers, 'content-type') ?? null,
    });
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const { res, job } = await this.getJob(taskId, ctx);
    if (!job) return this.http.stillRunning(res);
    // The status URL needs no key, so anyone's task can be read: the subject (its URL and our
    // echoed reference) is what tells an operator's task ID apart from another account's.
    const ref = job.meta?.[SCRAPERAPI_REF_FIELD];
    return {
      ...this.observe(job, res),
      subject: { url: job.url ?? null, clientRef: typeof ref === 'string' ? ref : null },
    };
  }

  /** The observation of a job read from the status URL (without its subject). */
  private observe(job: Job, res: ProviderResponse): StatusObservation {
    const state = scraperApiState(job.status);
    const retryAfterMs = this.http.retryAfterMs(res);
    // A cancelled job reads `failed` with a reason that says so (`failReason: "cancelled"`).
    if (state === 'failed' && meansCancelled(job.failReason))
      return { state: 'cancelled', providerStatus: `${job.status}: ${job.failReason}`, retryAfterMs };
    if (state === 'failed') {
      return {
        state,
        providerStatus: job.status,
        retryAfterMs,
        error: {
          code: job.failReason ?? 'failed',
          message: `ScraperAPI gave up on the job${job.failReason ? `: ${job.failReason}` : ''}${job.attempts != null ? ` after ${job.attempts} attempts` : ''}`,
        },
        evidence: res.evidence,
      };
    }
    if (state !== 'completed') return { state, providerStatus: job.status, retryAfterMs };
    const page = this.page(job, '');
    const target = job.response?.statusCode ?? null;
    if (this.entry.targetErrors === 'failed' && target !== null && target >= 400) {
      return {
        state: 'failed',
        providerStatus: job.status,
        retryAfterMs,
        error: {
          code: `TARGET_HTTP_${target}`,
          message: `the target answered ${target} (ScraperAPI finished the job)`,
        },
        evidence: res.evidence,
      };
    }
    // A finished answer without `response` (or without the job's URL) is read again by `result`.
    return { state, providerStatus: job.status, retryAfterMs, result: page && page.url ? page : undefined };
  }

  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const { res, job } = await this.getJob(taskId, ctx);
    const page = job && scraperApiState(job.status) === 'completed' ? this.page(job, ctx.url) : null;
    if (!page) {
      throw notReady(
        `ScraperAPI job ${taskId} is ${job?.status ?? `not ready (HTTP ${res.status})`} without a response yet`,
        res,
      );
    }
    return page;
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    const res = await this.http.call(ctx, { method: 'DELETE', path: path`/jobs/${taskId}`, json: {}, phase: 'cancel' });
    const body = res.body as { status?: unknown; failReason?: unknown } | undefined;
    const word = typeof body?.status === 'string' ? body.status : undefined;
    const reason = typeof body?.failReason === 'string' ? body.failReason : undefined;
    const seen = word !== undefined ? scraperApiState(word) : 'unrecognised';
    // The answer reads like a status read: `failed` with a reason meaning cancelled is the cancel
    // taking effect, and is reported (and recorded on the row) as cancelled in the status read's words.
    const cancelledAsFailure = seen === 'failed' && meansCancelled(reason);
    const providerStatus = cancelledAsFailure ? `${word}: ${reason}` : word;
    const known = cancelledAsFailure ? 'cancelled' : seen !== 'unrecognised' ? (seen as ProviderState) : undefined;
    // ScraperAPI documents no answer to a cancel: a JSON or empty 2xx is taken as accepted, but a
    // body that is not JSON (a proxy's page) is not its word, and an acceptance is evidence that a
    // later 404 or failure is taken as the stop.
    if (this.http.isOk(res) && res.body === undefined && res.text.trim() !== '')
      throw this.http.invalidError(res, 'cancel', 'cancel answer (not JSON)');
    // Nor is a 2xx that says it failed (`{"error": …}`, `{"success": false}`): a gateway's or an
    // API version's refusal dressed as success proves no cancel.
    const refusal = this.http.isOk(res) && known === undefined ? errorIn2xx(res.body) : undefined;
    if (refusal !== undefined)
      throw this.http.invalidError(res, 'cancel', `cancel answer carrying an error: ${refusal}`);
    if (this.http.isOk(res)) return { accepted: true, state: known, providerStatus };
    if (res.status === 400 || res.status === 409)
      return { accepted: false, alreadyFinal: true, state: known, providerStatus };
    const err = this.http.error(res, 'cancel', ctx);
    if (res.status === 405 || res.status === 501) throw new ProviderError('unsupported', err.message, err.details);
    throw err;
  }

  /** No lookup exists: nothing to read (the evidence model leaves a lost submit for an operator). */
  async findSubmitted(_ctx: FindContext): Promise<LookupReading[]> {
    return [];
  }
}

/**
 * The error a 2xx JSON body states, when it states one: a non-empty `error` (text, or an object's
 * `message`), or `success: false` (with its `message`). Undefined otherwise.
 */
function errorIn2xx(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as { error?: unknown; success?: unknown; message?: unknown };
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  if (b.error !== undefined && b.error !== null && b.error !== '' && b.error !== false)
    return text((b.error as { message?: unknown }).message ?? b.error);
  if (b.success === false) return typeof b.message === 'string' ? b.message : 'success: false';
  return undefined;
}
