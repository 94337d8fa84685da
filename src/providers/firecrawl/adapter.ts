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
 * | reconcile | `GET /v2/crawl/active` (crawl entries), `GET /v2/team/activity?endpoint=crawl|batch_scrape` | see {@link FirecrawlAdapter.findSubmitted}: a weak match on URL and time, never adopted; see {@link firecrawlEvidence} |
 *
 * Credential: `Authorization: Bearer <key>`. Webhooks: see `webhook.ts`.
 */
import { z } from 'zod';
import { canonicalJson } from '../../lib/hash.js';
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ScrapeRequest } from '../../model/types.js';
import { resultLimitsOf } from '../shared/entry.js';
import { ProviderError } from '../shared/errors.js';
import { ProviderHttp, type CallPhase, type ProviderResponse } from '../shared/http.js';
import { binaryBody, decodeBase64, isTextualType } from '../shared/binaryText.js';
import { enforceResultLimits, paginateNextLink, resultFromDocuments, withIdentity } from '../shared/pagination.js';
import type { Accepted, CallContext, CancelAnswer, FindContext, ObservedState, ProviderAdapter, ProviderCapabilities, ResultContext, ResultLimits, StatusObservation, SubmitContext } from '../adapter.js';
import type { ProviderResult, ResultDocument } from '../../model/results.js';
import type { FirecrawlEntry } from './config.js';

/** The route of each operation under the base URL. */
const ROUTE = { batch: '/v2/batch/scrape', crawl: '/v2/crawl' } as const;

/** Formats asked for when the job's options name none (Firecrawl has no plain-text format: `text` jobs get markdown). */
const DEFAULT_FORMATS = ['markdown', 'links'];

/** How far a Firecrawl `created_at` may precede our submit intent and still be ours (clock skew between us and Firecrawl), ms. */
export const RECONCILE_SKEW_MS = 120_000;

/** Most pages of `GET /v2/team/activity` read by one reconcile (100 entries each). */
const ACTIVITY_PAGES = 5;

const SubmitBody = z.looseObject({ id: z.string().min(1), url: z.string().nullish(), invalidURLs: z.array(z.string()).nullish() });
const StringOrList = z.union([z.string(), z.array(z.string())]).nullish();
/** One document of `data[]` (v2 OpenAPI `CrawlStatusResponseObj.data.items`): formats plus `metadata`. */
const DocumentBody = z.looseObject({
  markdown: z.string().nullish(),
  links: z.array(z.unknown()).nullish(),
  metadata: z
    .looseObject({
      title: StringOrList,
      description: StringOrList,
      language: StringOrList,
      sourceURL: z.string().nullish(),
      url: z.string().nullish(),
      statusCode: z.number().int().nullish(),
      contentType: z.string().nullish(),
      scrapeId: z.string().nullish(),
      error: z.string().nullish(),
    })
    .nullish(),
});
/** `GET /v2/{crawl|batch/scrape}/{id}` (v2 OpenAPI `CrawlStatusResponseObj` / `BatchScrapeStatusResponseObj`). */
const StatusBody = z.looseObject({
  status: z.string().min(1),
  total: z.number().nullish(),
  completed: z.number().nullish(),
  creditsUsed: z.number().nullish(),
  expiresAt: z.string().nullish(),
  next: z.string().nullish(),
  data: z.array(DocumentBody).nullish(),
  error: z.string().nullish(),
  code: z.string().nullish(),
});
/** `GET …/{id}/errors` (v2 OpenAPI `CrawlErrorsResponseObj`; `code` from the source). */
const ErrorsBody = z.looseObject({
  errors: z.array(z.looseObject({ id: z.string().nullish(), timestamp: z.string().nullish(), url: z.string().nullish(), code: z.string().nullish(), error: z.string().nullish() })).nullish(),
  robotsBlocked: z.array(z.string()).nullish(),
});
const ListedCrawl = z.looseObject({ id: z.string().min(1), url: z.string().nullish(), created_at: z.string().nullish(), options: z.record(z.string(), z.unknown()).nullish() });
/**
 * `GET /v2/crawl/active`. The source answers `{success, crawls: [{id, teamId, url, created_at,
 * options}]}`; the OpenAPI names the array `data` as required and lists a `status` it never sends.
 */
const ActiveBody = z.looseObject({ crawls: z.array(ListedCrawl).nullish(), data: z.array(ListedCrawl).nullish() });
/** `GET /v2/team/activity` (v2 OpenAPI `getActivity`: the last 24 h, newest first, cursor paging). */
const ActivityBody = z.looseObject({
  data: z.array(z.looseObject({ id: z.string().min(1), endpoint: z.string().nullish(), created_at: z.string().nullish(), target: z.string().nullish() })).nullish(),
  cursor: z.string().nullish(),
  has_more: z.boolean().nullish(),
});

/** How long `GET /v2/team/activity` keeps a job: "the last 24 hours" (v2 OpenAPI `getActivity`), ms. */
const ACTIVITY_RETENTION_MS = 24 * 3_600_000;

/**
 * What Firecrawl's replays and lookups prove after a lost submit, per operation:
 * - a crawl's `x-idempotency-key` reused answers `409 Idempotency key already used` without the
 *   job ID (source `idempotencyMiddleware`, on `/v2/crawl` only): proof that a job with our key
 *   exists; a batch scrape takes no key, so a replay would be a second paid batch;
 * - `GET /v2/crawl/active` lists running crawls only (never finished ones, never batch scrapes);
 * - `GET /v2/team/activity` lists every crawl or batch scrape of the last 24 h, finished ones too,
 *   from a log written after the request (lag assumed 60 s), and may not be offered (`404`);
 * - neither echoes anything of ours (webhook `metadata` is echoed only in deliveries): every match
 *   is weak (URL and creation time), so a listed job is never adopted on its own.
 */
export function firecrawlEvidence(operation: 'crawl' | 'batch'): ReconcileEvidence {
  const activity = { name: 'GET /v2/team/activity', shows: ['queued', 'running', 'finished'] as const, finishedForMs: ACTIVITY_RETENTION_MS, lagMs: 60_000, match: 'weak' as const };
  const active = { name: 'GET /v2/crawl/active', shows: ['queued', 'running'] as const, finishedForMs: null, lagMs: 30_000, match: 'weak' as const };
  return {
    replay: operation === 'crawl' ? 'conflict' : 'none',
    lookups: operation === 'crawl' ? [active, activity] : [activity],
    taskScope: 'credential',
    source: 'Firecrawl v2 OpenAPI (firecrawl-docs 2026-08-21) and server source apps/api (61e38dc): idempotency middleware on /v2/crawl, crawl/active, team/activity',
  };
}

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

const first = (v: string | string[] | null | undefined): string | null => (Array.isArray(v) ? (v[0] ?? null) : (v ?? null));

/** A URL in one spelling (WHATWG serialisation), for matching listed jobs to ours; the input when it does not parse. */
function normalUrl(u: string | null | undefined): string | null {
  if (!u) return null;
  try {
    return new URL(u).href;
  } catch {
    return u;
  }
}

/**
 * One `data[]` entry as a {@link ResultDocument}: every field but `markdown`/`links` kept in `data`
 * (metadata, html, …). Identity: `metadata.scrapeId` (the provider's ID of the page scrape), else
 * the URL with `position` — the entry's absolute position (page `skip` + index) when known. A file
 * scraped with `parsers: []` comes back as base64 in `markdown` and `html` with a non-HTML
 * `metadata.contentType` (the PDF engine's raw mode): its bytes become the document's binary body
 * (base64 kept in neither `markdown` nor `data`).
 */
export function firecrawlDocument(d: z.infer<typeof DocumentBody>, position: number | null = null): ResultDocument {
  const { markdown, links, ...rest } = d;
  const m = d.metadata ?? {};
  const file = m.contentType && !isTextualType(m.contentType) ? decodeBase64(markdown) : null;
  const data = file && typeof rest.html === 'string' && rest.html === markdown ? Object.fromEntries(Object.entries(rest).filter(([k]) => k !== 'html')) : rest;
  const doc: ResultDocument = {
    url: m.sourceURL ?? m.url ?? null,
    finalUrl: m.url ?? null,
    httpStatus: m.statusCode ?? null,
    title: first(m.title),
    markdown: file ? null : (markdown ?? null),
    links: (links ?? []).filter((l): l is string => typeof l === 'string'),
    data,
    ...(file ? { body: binaryBody(file, m.contentType) } : {}),
    ...(m.error ? { error: { message: m.error } } : {}),
  };
  return withIdentity(doc, { providerId: m.scrapeId, position });
}

/** The `skip` of a status page URL (its absolute position in the job's documents); 0 for the first page. */
function skipOf(url: string): number | null {
  try {
    const v = new URL(url).searchParams.get('skip');
    if (v === null) return 0;
    const n = Number(v);
    return Number.isInteger(n) && n >= 0 ? n : null;
  } catch {
    return null;
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
    this.http = new ProviderHttp({ provider: name, baseUrl: entry.baseUrl, auth: { in: 'header' }, submitTimeoutMs: entry.submitTimeoutMs, readTimeoutMs: entry.readTimeoutMs });
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
    if (res.status === 404 && phase === 'read' && /expired/i.test(res.text)) return new ProviderError('expired', err.message, { ...err.details, code: 'JOB_EXPIRED' });
    if (res.status === 429 && phase === 'submit' && /concurrency/i.test(res.text)) err.details.code = 'CONCURRENCY_LIMIT';
    return err;
  }

  /** The submit body: the job's options (Firecrawl's own fields) under ours; refuses options that name our fields. */
  private submitBody(request: ScrapeRequest, ctx: SubmitContext): Record<string, unknown> {
    const options = request.options ?? {};
    const ours = this.entry.operation === 'crawl' ? ['url', 'webhook'] : ['urls', 'webhook'];
    const clash = ours.find((k) => k in options);
    if (clash) throw new ProviderError('permanent', `option "${clash}" is set by the orchestrator for Firecrawl ${this.entry.operation} jobs; remove it from the job's options`, { code: 'BAD_OPTIONS' });
    // Webhook metadata is echoed in every delivery: our client reference lets the receiver match a delivery even before the task ID is recorded.
    const webhook = ctx.callbackUrl ? { url: ctx.callbackUrl, metadata: { clientRef: ctx.clientRef }, events: this.entry.webhookEvents } : undefined;
    const scrapeDefaults = { formats: DEFAULT_FORMATS, ...this.entry.scrapeOptions };
    if (this.entry.operation === 'batch') return { ...scrapeDefaults, ignoreInvalidURLs: false, ...options, urls: [request.url], ...(webhook ? { webhook } : {}) };
    const jobScrape = options.scrapeOptions;
    if (jobScrape !== undefined && (jobScrape === null || typeof jobScrape !== 'object' || Array.isArray(jobScrape))) {
      throw new ProviderError('permanent', 'option "scrapeOptions" must be an object of Firecrawl scrape options', { code: 'BAD_OPTIONS' });
    }
    return { ...options, url: request.url, scrapeOptions: { ...scrapeDefaults, ...(jobScrape as Record<string, unknown> | undefined) }, ...(webhook ? { webhook } : {}) };
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
  private async readPage(url: string, ctx: CallContext): Promise<{ res: ProviderResponse; body: z.infer<typeof StatusBody> | null }> {
    const res = await this.http.call(ctx, { method: 'GET', url, phase: 'read' });
    if (res.status === 202 || res.status === 204) return { res, body: null };
    if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
    return { res, body: this.http.parse(res, StatusBody, 'read', 'status body') };
  }

  /**
   * Firecrawl's `next` rebased onto our base URL: its path from `/v2/` on and its query. The server
   * builds `next` from its own host (and `https`), which behind a gateway or a path prefix is not
   * ours; rebasing also keeps the credential on our configured origin.
   */
  private rebase(next: string | null | undefined): string | null {
    if (!next) return null;
    let u: URL;
    try {
      u = new URL(next, this.http.url('/'));
    } catch {
      return null;
    }
    const i = u.pathname.indexOf('/v2/');
    return this.http.url(`${i >= 0 ? u.pathname.slice(i) : u.pathname}${u.search}`);
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const { res, body } = await this.readPage(this.http.url(this.jobPath(taskId)), ctx);
    const retryAfterMs = this.http.retryAfterMs(res);
    if (!body) return { state: 'running', providerStatus: `HTTP ${res.status}`, retryAfterMs };
    const state = firecrawlState(body.status);
    const progress = { pagesFetched: body.completed ?? undefined, creditsUsed: body.creditsUsed ?? undefined, documents: body.total ?? undefined };
    // The final answer without `next` carries every document: written from here, after the
    // per-URL failures are read (no second read of the pages). A status read does not know the
    // submitted URL: the result row's `url` is then the first document's (a crawl's start page).
    const result = state === 'completed' && !body.next ? await this.finish(taskId, (body.data ?? []).map(firecrawlDocument), ctx, '', this.limits) : undefined;
    return {
      state,
      providerStatus: body.status,
      progress,
      result,
      error: state === 'failed' ? { code: body.code ?? undefined, message: body.error ?? `Firecrawl reported the ${this.entry.operation} failed` } : undefined,
      retryAfterMs,
      evidence: state === 'failed' ? res.evidence : undefined,
    };
  }

  /**
   * Every document of a completed job: the status pages from the first, following `next` (rebased)
   * until none is left, heartbeating between pages, within the entry's result limits; then the
   * per-URL failures of `/errors`. An empty page ends the read only when the answer's `completed`
   * count shows no document at or past its `skip` (older servers announce a `next` past the last
   * page forever when failed pages count in `total`); otherwise the stream goes on at its `next`,
   * the same position included. Each document's position is its page's `skip` plus its index, and
   * a document repeated across pages (same `scrapeId`) is stored once.
   */
  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const docs = await paginateNextLink({
      provider: this.name,
      taskId,
      limits: ctx.limits,
      heartbeat: ctx.heartbeat,
      signal: ctx.signal,
      firstUrl: this.http.url(this.jobPath(taskId)),
      fetch: async (url) => {
        const { res, body } = await this.readPage(url, ctx);
        if (!body || body.status !== 'completed') {
          throw new ProviderError('transient', `task ${taskId} is ${body?.status ?? `not ready (HTTP ${res.status})`}, no result yet`, { httpStatus: res.status, evidence: res.evidence, code: 'NOT_READY' });
        }
        const start = skipOf(url);
        const items = body.data ?? [];
        const more = items.length > 0 || (start !== null && typeof body.completed === 'number' && body.completed > start);
        return { items, start, next: more ? this.rebase(body.next) : null };
      },
      map: (d, position) => firecrawlDocument(d, position),
    });
    return this.finish(taskId, docs, ctx, ctx.url, ctx.limits);
  }

  /**
   * Joins the documents with the per-URL failures and builds the result. A batch entry scrapes one
   * URL: its page fills the result row; when Firecrawl could not scrape it (no document, only a
   * failure) the task failed — `task_failed` with Firecrawl's code (`SCRAPE_FAILED` when none).
   * Throws `RESULT_TOO_LARGE` (permanent) past the limits.
   */
  private async finish(taskId: string, docs: ResultDocument[], ctx: CallContext, submittedUrl: string, limits: ResultLimits): Promise<ProviderResult> {
    const failures = await this.failures(taskId, ctx);
    const all = [...docs, ...failures];
    const fallbackUrl = submittedUrl || all[0]?.url || '';
    if (this.entry.operation === 'batch') {
      const page = all.find((d) => !d.error);
      if (!page) {
        const f = all[0]?.error;
        throw new ProviderError('task_failed', `Firecrawl could not scrape ${fallbackUrl}: ${f?.message ?? 'no document and no reason'}`, { code: f?.code ?? 'SCRAPE_FAILED' });
      }
      const meta = (page.data?.metadata ?? {}) as { description?: string | string[] | null; language?: string | string[] | null };
      const row = resultFromDocuments(all, fallbackUrl);
      const file = page.body ? { body: page.body } : {};
      return enforceResultLimits({ ...row, ...file, markdown: page.markdown ?? null, links: page.links ?? [], excerpt: first(meta.description), lang: first(meta.language), contentLength: page.body?.size ?? page.markdown?.length ?? null }, limits, this.name, taskId);
    }
    return enforceResultLimits(resultFromDocuments(all, fallbackUrl), limits, this.name, taskId);
  }

  /** The per-URL failures (`/errors`) as documents with `error`, robots.txt refusals included (code `ROBOTS_BLOCKED`). */
  private async failures(taskId: string, ctx: CallContext): Promise<ResultDocument[]> {
    const res = await this.http.call(ctx, { method: 'GET', path: this.jobPath(taskId, '/errors'), phase: 'read' });
    // Called only after a 200 status read of this job: a 404 here is a missing route, not a missing job.
    if (res.status === 404 && !/expired/i.test(res.text)) return [];
    if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
    const body = this.http.parse(res, ErrorsBody, 'read', 'errors body');
    return [
      // A failed scrape's `id` is its scrape ID: the row's identity.
      ...(body.errors ?? []).map((e): ResultDocument =>
        withIdentity({ url: e.url ?? null, data: { id: e.id ?? null, timestamp: e.timestamp ?? null }, error: { ...(e.code ? { code: e.code } : {}), message: e.error ?? 'failed' } }, { providerId: e.id }),
      ),
      ...(body.robotsBlocked ?? []).map((url): ResultDocument => withIdentity({ url, error: { code: 'ROBOTS_BLOCKED', message: 'blocked by the site’s robots.txt' } }, {})),
    ];
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

  /**
   * Reads the lookups of {@link firecrawlEvidence} for the job of a lost submit: the active
   * crawls (crawl entries) and the team's activity of the last 24 h (crawl or batch scrape; a
   * deployment without it answers `404`: unavailable). A job with the submitted URL (one
   * spelling), created no earlier than our first submit intent minus {@link RECONCILE_SKEW_MS}
   * and, on the active list, with every crawl option we sent that the list echoes (`limit`
   * excepted: Firecrawl caps it by the remaining credits), is a **weak** candidate: another job of
   * ours or another client of the same team could fit as well. One whose options differ is
   * `foreign`. An activity read that reached {@link ACTIVITY_PAGES} pages is incomplete.
   */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    const target = normalUrl(ctx.request.url);
    const since = Date.parse(ctx.submittedAfter) - RECONCILE_SKEW_MS;
    const recent = (at: string | null | undefined) => !at || Number.isNaN(Date.parse(at)) || Date.parse(at) >= since;
    const readings: LookupReading[] = [];
    if (this.entry.operation === 'crawl') {
      const res = await this.http.call(ctx, { method: 'GET', path: '/v2/crawl/active', phase: 'read' });
      if (res.status === 404 || res.status === 501) {
        readings.push({ lookup: 'GET /v2/crawl/active', available: false, complete: false, candidates: [], at: new Date().toISOString(), note: `answered ${res.status}: not offered by this deployment` });
      } else {
        if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
        const body = this.http.parse(res, ActiveBody, 'read', 'active crawls');
      const sent = Object.entries(ctx.request.options ?? {}).filter(([k]) => !['scrapeOptions', 'webhook', 'limit', 'url'].includes(k));
      const candidates: Candidate[] = [];
      for (const c of body.crawls ?? body.data ?? []) {
        if (normalUrl(c.url) !== target || !recent(c.created_at)) continue;
        const differs = sent.find(([k, v]) => c.options && k in c.options && canonicalJson(c.options[k]) !== canonicalJson(v));
        candidates.push(
          differs
            ? { taskId: c.id, providerStatus: 'scraping', match: 'foreign', createdAt: c.created_at ?? null, why: `same URL, but option "${differs[0]}" differs from ours` }
            : { taskId: c.id, providerStatus: 'scraping', match: 'weak', createdAt: c.created_at ?? null, why: 'same URL, created since our submit; Firecrawl echoes nothing of ours' },
        );
      }
        readings.push({ lookup: 'GET /v2/crawl/active', available: true, complete: true, candidates, at: new Date().toISOString() });
      }
    }
    const candidates: Candidate[] = [];
    let cursor: string | undefined;
    let complete = false;
    for (let page = 0; page < ACTIVITY_PAGES; page++) {
      const res = await this.http.call(ctx, { method: 'GET', path: '/v2/team/activity', query: { endpoint: this.entry.operation === 'crawl' ? 'crawl' : 'batch_scrape', limit: 100, cursor }, phase: 'read' });
      if ((res.status === 404 && !/expired/i.test(res.text)) || res.status === 501) {
        readings.push({ lookup: 'GET /v2/team/activity', available: false, complete: false, candidates: [], at: new Date().toISOString(), note: `answered ${res.status}: not offered by this deployment` });
        return readings;
      }
      if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
      const body = this.http.parse(res, ActivityBody, 'read', 'team activity');
      const items = body.data ?? [];
      for (const a of items) {
        if (normalUrl(a.target) === target && recent(a.created_at) && !candidates.some((c) => c.taskId === a.id)) {
          candidates.push({ taskId: a.id, providerStatus: 'listed', match: 'weak', createdAt: a.created_at ?? null, why: 'same URL, created since our submit; Firecrawl echoes nothing of ours' });
        }
      }
      const oldest = items.at(-1)?.created_at;
      if (!body.has_more || !body.cursor || (oldest && !recent(oldest))) {
        complete = true;
        break;
      }
      cursor = body.cursor;
    }
    readings.push({ lookup: 'GET /v2/team/activity', available: true, complete, candidates, at: new Date().toISOString(), ...(complete ? {} : { note: `more than ${ACTIVITY_PAGES} pages of activity since the submit: not read to the end` }) });
    return readings;
  }
}
