/**
 * Adapter for Firecrawl API v2 (kind `firecrawl`): batch scrape (one URL: the asynchronous
 * single-page scrape) or crawl, chosen per entry (`config.ts` says why).
 *
 * Contract sources (verified; where they disagree the adapter survives both):
 * - OpenAPI `api-reference/v2-openapi.json` and `api-reference/webhooks-openapi.json` in
 *   github.com/firecrawl/firecrawl-docs, commit 2edce52 (2026-08-21), and the pages
 *   `api-reference/errors.mdx`, `webhooks/overview.mdx`, `webhooks/security.mdx` of the same commit;
 * - the server's source, github.com/firecrawl/firecrawl `apps/api/src/controllers/v2/*` and
 *   `routes/v2.ts`, commit 61e38dc (2025-08-25), for what the documents leave out.
 *
 * | call | request | answers handled |
 * |---|---|---|
 * | submit | `POST /v2/batch/scrape {urls: [url], formats, ignoreInvalidURLs: false, webhook?}` or `POST /v2/crawl {url, scrapeOptions, webhook?}` + `x-idempotency-key: <UUID>` (crawl only: source `idempotencyMiddleware` is on `/v2/crawl` alone; absent from the docs) | any 2xx with `id`; `409 {"error":"Idempotency key already used"}` (no job ID) → `conflict` (the activity then lists); `429` → `cooldown` with the wait read from the message text (source: "…please retry after 12s…", no `Retry-After`); `429 Concurrency limit reached` → concurrency refusal; `402` "Insufficient credits" → quota exhaustion (`QUOTA_EXHAUSTED`: the job fails, the key's other submits are held); `400`/`401`/`403` → permanent |
 * | status | `GET /v2/{batch/scrape|crawl}/{id}` | `status`: `scraping` → running, `completed`, `failed` (documented, never sent by the source), `cancelled`; any other word or case → `unrecognised`; `202`/`204` → not ready; `404 "Job expired"` → `expired`; other `404` (unknown job, another team's job, or gone after 24 h) → `not_found` (counted, then expired) |
 * | result | the same URL, then `next` (absolute, `?skip=N`, pages of ≤ 10 MB) until none; then `GET …/{id}/errors` | `data[]` documents; `/errors` `{errors: [{id, timestamp, url, code?, error}], robotsBlocked: [url]}` become documents with `error`; `403` on `/errors` (another team's job) → permanent; a `404` on `/errors` after a `200` status read → no per-URL list (older deployments have no batch errors route) |
 * | cancel | `DELETE /v2/{batch/scrape|crawl}/{id}` | `200 {status: "cancelled"}`; `409` → already final (newer source: a completed crawl; older ones answer `200`); `404` → not_found; `403` → permanent |
 * | reconcile | `GET /v2/crawl/active` (crawl entries), `GET /v2/team/activity?endpoint=crawl|batch_scrape` | see {@link findSubmitted}: a weak match on URL and time, never adopted; see {@link firecrawlEvidence} |
 *
 * Credential: `Authorization: Bearer <key>`. Reading a completed job's pages and failures:
 * `results.ts`; the reconcile lookups: `lookups.ts`; webhooks: `webhook.ts`.
 */
import { z } from 'zod';
import type { LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ScrapeRequest } from '../../model/types.js';
import { resultLimitsOf } from '../shared/entry.js';
import { ProviderError } from '../shared/errors.js';
import { ProviderHttp, type CallPhase, type ProviderResponse } from '../shared/http.js';
import type {
  Accepted,
  CallContext,
  CancelAnswer,
  FindContext,
  ObservedState,
  ProviderAdapter,
  ProviderCapabilities,
  ResultContext,
  ResultLimits,
  StatusObservation,
  SubmitContext,
} from '../adapter.js';
import type { ProviderResult } from '../../model/results.js';
import type { FirecrawlEntry } from './config.js';
import { findSubmitted, firecrawlEvidence } from './lookups.js';
import {
  finishResult,
  firecrawlDocument,
  readResult,
  StatusBody,
  type FirecrawlReads,
  type StatusPage,
} from './results.js';

/** The route of each operation under the base URL. */
const ROUTE = { batch: '/v2/batch/scrape', crawl: '/v2/crawl' } as const;

/** Formats asked for when the job's options name none (Firecrawl has no plain-text format: `text` jobs get markdown). */
const DEFAULT_FORMATS = ['markdown', 'links'];

const SubmitBody = z.looseObject({
  id: z.string().min(1),
  url: z.string().nullish(),
  invalidURLs: z.array(z.string()).nullish(),
});
/** Our state for a Firecrawl status word (exact words only; anything else, any other case, is `unrecognised`). */
export function firecrawlState(word: string): ObservedState {
  switch (word) {
    case 'scraping':
      return 'running';
    case 'completed':
      return 'completed';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
    default:
      return 'unrecognised';
  }
}

/** {@link ProviderAdapter} for Firecrawl API v2. */
export class FirecrawlAdapter implements ProviderAdapter {
  readonly kind = 'firecrawl';
  readonly capabilities: ProviderCapabilities;
  readonly evidence: ReconcileEvidence;
  private readonly http: ProviderHttp;
  private readonly route: string;
  private readonly limits: ResultLimits;
  /** What `results.ts` and `lookups.ts` read through: this entry's exchange and answer mapping. */
  private readonly reads: FirecrawlReads;

  constructor(
    readonly name: string,
    private readonly entry: FirecrawlEntry,
  ) {
    // Only a crawl honours the key; a batch scrape replayed would be a second batch, so a batch
    // entry reconciles by listing only.
    this.evidence = firecrawlEvidence(entry.operation);
    this.capabilities = { idempotency: entry.operation === 'crawl', list: true, cancel: true, webhooks: true };
    this.route = ROUTE[entry.operation];
    this.limits = resultLimitsOf(entry);
    this.http = new ProviderHttp({
      provider: name,
      baseUrl: entry.baseUrl,
      auth: { in: 'header' },
      submitTimeoutMs: entry.submitTimeoutMs,
      readTimeoutMs: entry.readTimeoutMs,
    });
    this.reads = {
      name,
      operation: entry.operation,
      http: this.http,
      jobPath: (taskId, rest) => this.jobPath(taskId, rest),
      fail: (res, phase, ctx, code) => this.fail(res, phase, ctx, code),
      readPage: (url, ctx) => this.readPage(url, ctx),
    };
  }

  /** `/v2/<route>/<id>[/<rest>]` with the ID encoded as one segment. */
  private jobPath(taskId: string, rest = ''): string {
    return `${this.route}/${encodeURIComponent(taskId)}${rest}`;
  }

  /**
   * The classified error of a non-2xx answer (the one place Firecrawl's answers are mapped):
   * `404` whose message says "expired" on a read → `expired`; `429 Concurrency limit reached` on a
   * submit → a concurrency refusal (`CONCURRENCY_LIMIT`); the rest by `ProviderHttp.error`
   * (`429` → cooldown with the wait from the message text, `409` → conflict, `404` → not_found, …).
   */
  private fail(res: ProviderResponse, phase: CallPhase, ctx: CallContext, code?: string): ProviderError {
    const err = this.http.error(res, phase, ctx, code ? { code } : {});
    if (res.status === 404 && phase === 'read' && /expired/i.test(res.text))
      return new ProviderError('expired', err.message, { ...err.details, code: 'JOB_EXPIRED' });
    if (res.status === 429 && phase === 'submit' && /concurrency/i.test(res.text))
      err.details.code = 'CONCURRENCY_LIMIT';
    return err;
  }

  /** The submit body: the job's options (Firecrawl's own fields) under ours; refuses options that name our fields. */
  private submitBody(request: ScrapeRequest, ctx: SubmitContext): Record<string, unknown> {
    const options = request.options ?? {};
    const ours = this.entry.operation === 'crawl' ? ['url', 'webhook'] : ['urls', 'webhook'];
    const clash = ours.find((k) => k in options);
    if (clash)
      throw new ProviderError(
        'permanent',
        `option "${clash}" is set by the orchestrator for Firecrawl ${this.entry.operation} jobs; remove it from the job's options`,
        { code: 'BAD_OPTIONS' },
      );
    // Webhook metadata is echoed in every delivery: our client reference lets the receiver match a delivery even before the task ID is recorded.
    const webhook = ctx.callbackUrl
      ? { url: ctx.callbackUrl, metadata: { clientRef: ctx.clientRef }, events: this.entry.webhookEvents }
      : undefined;
    const scrapeDefaults = { formats: DEFAULT_FORMATS, ...this.entry.scrapeOptions };
    if (this.entry.operation === 'batch')
      return {
        ...scrapeDefaults,
        ignoreInvalidURLs: false,
        ...options,
        urls: [request.url],
        ...(webhook ? { webhook } : {}),
      };
    const jobScrape = options.scrapeOptions;
    if (jobScrape !== undefined && (jobScrape === null || typeof jobScrape !== 'object' || Array.isArray(jobScrape))) {
      throw new ProviderError('permanent', 'option "scrapeOptions" must be an object of Firecrawl scrape options', {
        code: 'BAD_OPTIONS',
      });
    }
    return {
      ...options,
      url: request.url,
      scrapeOptions: { ...scrapeDefaults, ...(jobScrape as Record<string, unknown> | undefined) },
      ...(webhook ? { webhook } : {}),
    };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const res = await this.http.call(ctx, {
      method: 'POST',
      path: this.route,
      json: this.submitBody(request, ctx),
      headers: this.entry.operation === 'crawl' ? { 'x-idempotency-key': ctx.idempotencyKey } : {},
      phase: 'submit',
    });
    if (res.status === 409) throw this.fail(res, 'submit', ctx, 'IDEMPOTENCY_KEY_USED');
    if (!this.http.isOk(res)) throw this.fail(res, 'submit', ctx);
    const body = this.http.parse(res, SubmitBody, 'submit', 'submit body');
    return { taskId: body.id, providerStatus: 'scraping', replayed: false };
  }

  /** One status page (`url` absolute on our base URL), or `null` for a `202`/`204` "not ready" answer. */
  private async readPage(url: string, ctx: CallContext): Promise<{ res: ProviderResponse; body: StatusPage | null }> {
    const res = await this.http.call(ctx, { method: 'GET', url, phase: 'read' });
    if (res.status === 202 || res.status === 204) return { res, body: null };
    if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
    return { res, body: this.http.parse(res, StatusBody, 'read', 'status body') };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const { res, body } = await this.readPage(this.http.url(this.jobPath(taskId)), ctx);
    const retryAfterMs = this.http.retryAfterMs(res);
    if (!body) return { state: 'running', providerStatus: `HTTP ${res.status}`, retryAfterMs };
    const state = firecrawlState(body.status);
    // `completed` counts the documents scraped so far (readable in `data`); `total` also counts
    // failed, active and queued pages, so it says nothing about documents that exist.
    const progress = {
      pagesFetched: body.completed ?? undefined,
      creditsUsed: body.creditsUsed ?? undefined,
      documents: body.completed ?? undefined,
    };
    // The final answer without `next` carries every document: written from here, after the
    // per-URL failures are read (no second read of the pages). A status read does not know the
    // submitted URL: the result row's `url` is then the first document's (a crawl's start page).
    const result =
      state === 'completed' && !body.next
        ? await finishResult(this.reads, taskId, (body.data ?? []).map(firecrawlDocument), ctx, '', this.limits)
        : undefined;
    return {
      state,
      providerStatus: body.status,
      progress,
      ...(typeof body.creditsUsed === 'number' ? { cost: body.creditsUsed } : {}),
      result,
      error:
        state === 'failed'
          ? {
              code: body.code ?? undefined,
              message: body.error ?? `Firecrawl reported the ${this.entry.operation} failed`,
            }
          : undefined,
      retryAfterMs,
      evidence: state === 'failed' ? res.evidence : undefined,
    };
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    const res = await this.http.call(ctx, { method: 'DELETE', path: this.jobPath(taskId), phase: 'cancel' });
    if (this.http.isOk(res)) {
      const word = (res.body as { status?: unknown } | undefined)?.status;
      return { accepted: true, state: 'cancelled', providerStatus: typeof word === 'string' ? word : 'cancelled' };
    }
    if (res.status === 409) return { accepted: false, alreadyFinal: true };
    throw this.fail(res, 'cancel', ctx);
  }

  /** Every document of a completed job, then its per-URL failures: see {@link readResult}. */
  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    return readResult(this.reads, taskId, ctx);
  }

  /** The lookups of a lost submit: see {@link findSubmitted}. */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    return findSubmitted(this.reads, ctx);
  }
}
