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
 * | submit | `POST /v2/batch/scrape {urls: [url], formats, ignoreInvalidURLs: false, webhook?}` or `POST /v2/crawl {url, scrapeOptions, webhook?}` + `x-idempotency-key: <UUID>` (crawl only: source `idempotencyMiddleware` is on `/v2/crawl` alone; absent from the docs; a `selfHosted` entry sends it only with `idempotencyHeader`) | any 2xx with `id`; `409 {"error":"Idempotency key already used"}` (no job ID) → `conflict` (the activity then lists); `429` → `cooldown` with the wait read from the message text (source: "…please retry after 12s…", no `Retry-After`); `429 Concurrency limit reached` → concurrency refusal; `402` "Insufficient credits" → quota exhaustion (`QUOTA_EXHAUSTED`: the job fails, the key's other submits are held); `400`/`401`/`403` → permanent |
 * | status | `GET /v2/{batch/scrape|crawl}/{id}` | `status`: `scraping` → running, `completed`, `failed` (documented, never sent by the source), `cancelled` (read again until `completed` reaches `total`: pages in flight at the cancel still finish and count, see {@link settleCancelled}); any other word or case → `unrecognised`; `202`/`204` → not ready; `404 "Job expired"` → `expired`; other `404` (unknown job, another team's job, or gone after 24 h) → `not_found` (counted, then expired) |
 * | result | the same URL, then `next` (absolute, `?skip=N`, pages of ≤ 10 MB) until none, or until a page repeats only documents already read (the server ignores `skip` past 10 MiB); then `GET …/{id}/errors` (a batch: `/v2/batch/scrape/{id}/errors`, else `/v2/crawl/{id}/errors`, which serves batch IDs too) | `data[]` documents, compared with `completed` (fewer: a `partial` result that says so); `/errors` `{errors: [{id, timestamp, url, code?, error}], robotsBlocked: [url]}` become documents with `error`; `403` on `/errors` (another team's job) → permanent; a `404` on both routes after a `200` status read → no per-URL list |
 * | cancel | `DELETE /v2/{batch/scrape|crawl}/{id}` | `200 {status: "cancelled"}`; `409` → already final (newer source: a completed crawl; older ones answer `200`); `404` → not_found; `403` → permanent |
 * | reconcile | `GET /v2/crawl/active` (crawl entries), `GET /v2/team/activity?endpoint=crawl|batch_scrape` (hosted only) | see {@link findSubmitted}: a weak match on URL and time, never adopted; see {@link firecrawlEvidence} |
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
  StatusContext,
  StatusObservation,
  SubmitContext,
} from '../adapter.js';
import type { ProviderResult } from '../../model/results.js';
import { firecrawlSendsIdempotencyKey, type FirecrawlEntry } from './config.js';
import { findSubmitted, firecrawlEvidence } from './lookups.js';
import {
  finishResult,
  firecrawlDocument,
  holdsEveryDocument,
  pause,
  readResult,
  StatusBody,
  type FirecrawlReads,
  type StatusPage,
} from './results.js';

/** The route of each operation under the base URL. */
const ROUTE = { batch: '/v2/batch/scrape', crawl: '/v2/crawl' } as const;

/**
 * How a `cancelled` job's count is read until it settles, ms: at most {@link CANCEL_SETTLE_MS} in
 * all, a read every {@link CANCEL_SETTLE_READ_MS}, given up once the count has not moved for
 * {@link CANCEL_QUIET_MS}. After `DELETE`, Firecrawl's scrapes in flight still finish and count
 * (`completed` grows), and queued ones fail at their start and leave `total` (its server's
 * `scrape-worker.ts` at 61e38dc): the count is settled once `completed` reaches `total`. Firecrawl
 * counts a finished page 250 ms later (`crawl-status.ts`), so reads a second apart see each page
 * once it counts. A server whose `total` keeps pages that will never run (the hosted API's
 * documents do not say) is read until the count is quiet; a page whose fetch outlasts the quiet
 * window or the bound is not counted.
 */
const CANCEL_SETTLE_MS = 30_000;
const CANCEL_SETTLE_READ_MS = 1_000;
const CANCEL_QUIET_MS = 5_000;

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
  /** Crawl submits carry `x-idempotency-key` (see `config.ts`). */
  private readonly sendsKey: boolean;

  constructor(
    readonly name: string,
    private readonly entry: FirecrawlEntry,
  ) {
    // Only a crawl honours the key; a batch scrape replayed would be a second batch, so a batch
    // entry reconciles by listing only. A self-hosted server has no key table and no team activity.
    this.sendsKey = firecrawlSendsIdempotencyKey(entry);
    const teamActivity = entry.selfHosted === undefined;
    this.evidence = firecrawlEvidence(entry.operation, { idempotencyKey: this.sendsKey, teamActivity });
    this.capabilities = {
      idempotency: this.sendsKey,
      list: this.evidence.lookups.length > 0,
      cancel: true,
      webhooks: true,
    };
    this.route = ROUTE[entry.operation];
    this.limits = resultLimitsOf(entry);
    this.http = ProviderHttp.forEntry(name, entry, { in: 'header' });
    this.reads = {
      name,
      operation: entry.operation,
      teamActivity,
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
      headers: this.sendsKey ? { 'x-idempotency-key': ctx.idempotencyKey } : {},
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

  /**
   * A `cancelled` job read again, a second apart, until its `completed` count reaches `total` (its
   * pages in flight at the cancel have finished and counted, its queued ones left the count), the
   * count has not moved for {@link CANCEL_QUIET_MS}, or {@link CANCEL_SETTLE_MS} has passed: the
   * last answer. Any other answer as it is.
   */
  private async settleCancelled(
    url: string,
    first: { res: ProviderResponse; body: StatusPage },
    ctx: CallContext,
  ): Promise<{ res: ProviderResponse; body: StatusPage }> {
    let last = first;
    const until = Date.now() + CANCEL_SETTLE_MS;
    let movedAt = Date.now();
    const unsettled = (b: StatusPage) =>
      b.status === 'cancelled' && typeof b.total === 'number' && (b.completed ?? 0) < b.total;
    while (unsettled(last.body) && Date.now() < until && Date.now() - movedAt < CANCEL_QUIET_MS) {
      await pause(CANCEL_SETTLE_READ_MS, ctx.signal);
      const next = await this.readPage(url, ctx);
      if (!next.body) break;
      if (next.body.completed !== last.body.completed) movedAt = Date.now();
      last = { res: next.res, body: next.body };
    }
    return last;
  }

  async status(taskId: string, ctx: StatusContext): Promise<StatusObservation> {
    const url = this.http.url(this.jobPath(taskId));
    const page = await this.readPage(url, ctx);
    const retryAfterMs = this.http.retryAfterMs(page.res);
    if (!page.body) return { state: 'running', providerStatus: `HTTP ${page.res.status}`, retryAfterMs };
    const { res, body } = await this.settleCancelled(url, { res: page.res, body: page.body }, ctx);
    const state = firecrawlState(body.status);
    // `completed` counts the documents scraped so far (readable in `data`); `total` also counts
    // failed, active and queued pages, so it says nothing about documents that exist.
    const progress = {
      pagesFetched: body.completed ?? undefined,
      creditsUsed: body.creditsUsed ?? undefined,
      documents: body.completed ?? undefined,
    };
    // A final answer without `next` that carries every document it counts is the whole result:
    // written from here, after the per-URL failures are read (no second read of the pages). One
    // that serves fewer than it counts is left to the result read, which reads again. The row
    // describes the submitted URL's page when the caller names it (a crawl's start page).
    const result =
      state === 'completed' && holdsEveryDocument(body)
        ? await finishResult(
            this.reads,
            taskId,
            (body.data ?? []).map((d, i) => firecrawlDocument(d, i)),
            ctx,
            ctx.url ?? '',
            this.limits,
            { expected: body.completed ?? null },
          )
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
      const body = res.body as { status?: unknown; success?: unknown } | undefined;
      // Firecrawl's only 2xx to a cancel is `{status: "cancelled"}`. Any other (`success: false`, a
      // refusal in a success's clothes; a proxy's page; other JSON) is not its word, and never an
      // acceptance: after an acceptance a 404 reads as the task stopped and forgotten.
      if (body?.success !== false && body?.status === 'cancelled')
        return { accepted: true, state: 'cancelled', providerStatus: 'cancelled' };
      this.http.invalid(
        res,
        'cancel',
        body?.success === false
          ? 'answer {success: false} to a cancel'
          : 'answer to a cancel (not {status: "cancelled"})',
      );
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
