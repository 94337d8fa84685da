/**
 * Reading a completed Firecrawl job (kind `firecrawl`): the status pages followed through `next`
 * (rebased onto our base URL), the per-URL failures of `GET …/{id}/errors`, and the result built
 * from them within the entry's limits. The answers' shapes follow the Firecrawl v2 OpenAPI
 * (`CrawlStatusResponseObj`, `BatchScrapeStatusResponseObj`, `CrawlErrorsResponseObj`); the call
 * table and the sources are in `adapter.ts`.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { ProviderResult, ResultDocument } from '../../model/results.js';
import { ProviderError } from '../shared/errors.js';
import { notReady, type CallPhase, type ProviderHttp, type ProviderResponse } from '../shared/http.js';
import { binaryBody, decodeBase64, isTextualType } from '../shared/binaryText.js';
import {
  canonicalUrl,
  completenessOf,
  enforceResultLimits,
  paginateNextLink,
  resultFromDocuments,
  withIdentity,
} from '../shared/pagination.js';
import type { CallContext, ResultContext, ResultLimits } from '../adapter.js';

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
export const StatusBody = z.looseObject({
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
  errors: z
    .array(
      z.looseObject({
        id: z.string().nullish(),
        timestamp: z.string().nullish(),
        url: z.string().nullish(),
        code: z.string().nullish(),
        error: z.string().nullish(),
      }),
    )
    .nullish(),
  robotsBlocked: z.array(z.string()).nullish(),
});

/** One status page as parsed (`GET /v2/{crawl|batch/scrape}/{id}`). */
export type StatusPage = z.infer<typeof StatusBody>;

/**
 * What the reads of one Firecrawl entry need from its adapter: the entry's name and operation,
 * whether its deployment has `GET /v2/team/activity`, its HTTP exchange, the job URL path, the
 * mapping of a non-2xx answer to a classified error, and the read of one status page (`null` body
 * for a `202`/`204` "not ready" answer).
 */
export interface FirecrawlReads {
  readonly name: string;
  readonly operation: 'crawl' | 'batch';
  /** `GET /v2/team/activity` exists (the hosted API; never on a self-hosted server). */
  readonly teamActivity: boolean;
  readonly http: ProviderHttp;
  jobPath(taskId: string, rest?: string): string;
  fail(res: ProviderResponse, phase: CallPhase, ctx: CallContext, code?: string): ProviderError;
  readPage(url: string, ctx: CallContext): Promise<{ res: ProviderResponse; body: StatusPage | null }>;
}

/** Whose count a crawl's documents are compared with (the result's note names it). */
const COUNTER = "Firecrawl's `completed`";

/** Why a crawl's reading stopped at a page of repeats (the result's note says it). */
const REPEATED =
  'its `next` pages served only documents already read — past 10 MiB of results Firecrawl ignores `skip` and serves the first documents again — so no further page was followed';

/** How Firecrawl's count of a crawl's documents compares with those read: `expected` its `completed`, `why` fewer were read, when known. */
interface FirecrawlCount {
  expected: number | null;
  why?: string;
}

/** The first of a string-or-list metadata field (`title`, `description`, `language`), or null. */
const first = (v: string | string[] | null | undefined): string | null =>
  Array.isArray(v) ? (v[0] ?? null) : (v ?? null);

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
  const data =
    file && typeof rest.html === 'string' && rest.html === markdown
      ? Object.fromEntries(Object.entries(rest).filter(([k]) => k !== 'html'))
      : rest;
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

/**
 * Firecrawl's `next` rebased onto our base URL: its path from `/v2/` on and its query. The server
 * builds `next` from its own host (and `https`), which behind a gateway or a path prefix is not
 * ours; rebasing also keeps the credential on our configured origin.
 */
function rebase(http: ProviderHttp, next: string | null | undefined): string | null {
  if (!next) return null;
  let u: URL;
  try {
    u = new URL(next, http.url('/'));
  } catch {
    return null;
  }
  const i = u.pathname.indexOf('/v2/');
  return http.url(`${i >= 0 ? u.pathname.slice(i) : u.pathname}${u.search}`);
}

/** The key a document is recognised by when a page repeats it: its scrape ID, else its URL; null when it has neither. */
function repeatKey(d: z.infer<typeof DocumentBody>): string | null {
  const m = d.metadata ?? {};
  if (m.scrapeId) return `id:${m.scrapeId}`;
  const url = m.sourceURL ?? m.url;
  return url ? `url:${canonicalUrl(url)}` : null;
}

/** One reading of a completed job's pages: its documents, Firecrawl's `completed` count, and whether a page only repeated documents already read. */
interface PagesRead {
  docs: ResultDocument[];
  expected: number | null;
  repeated: boolean;
}

/**
 * Reads of a completed job's pages when they serve fewer documents than its `completed` counts
 * (and no page repeated), and the pause before each, ms. Firecrawl's server counts a page when its
 * scrape is done but serves its document only once the scrape's queue job has stored its return
 * value a moment later (`crawl-status.ts` skips a counted job without one): the pages are read
 * again, at most {@link SHORT_REREADS} times, before the result is called partial.
 */
const SHORT_REREADS = 4;
const SHORT_REREAD_MS = 1_000;

/** Why a job's documents stayed fewer than its count though its pages were read again (the result's note says it). */
const SHORT = `its pages served fewer documents than it counts, also when read again ${SHORT_REREADS} times ${SHORT_REREAD_MS / 1000} s apart`;

/** Distinct documents of `data` pages (the ones `completed` counts: every document served, one per identity). */
const distinct = (docs: readonly ResultDocument[]) => completenessOf(docs, 0, COUNTER, { countErrors: true })!.kept;

/**
 * Every document of a completed job: the status pages from the first, following `next` (rebased)
 * until none is left, heartbeating between pages, within the entry's result limits; then the
 * per-URL failures of `/errors`. An empty page ends the read only when the answer's `completed`
 * count shows no document at or past its `skip` (older servers announce a `next` past the last
 * page forever when failed pages count in `total`); otherwise the stream goes on at its `next`,
 * the same position included. Each document's position is its page's `skip` plus its index, and
 * a document repeated across pages (same `scrapeId`) is stored once. A page whose every document
 * was already read ends the read: Firecrawl's server ignores `skip` once a result passes 10 MiB
 * (`getDoneJobsOrderedUntil`, `lib/crawl-redis.ts` at 61e38dc), so every further page repeats the
 * first ones and nothing past them can be read. Pages that end with fewer documents than
 * `completed` counts, without a repeat, are read again (see {@link SHORT_REREADS}). The documents
 * read are compared with Firecrawl's `completed` (fewer: a `partial` result, see
 * {@link finishResult}).
 */
export async function readResult(reads: FirecrawlReads, taskId: string, ctx: ResultContext): Promise<ProviderResult> {
  for (let reread = 0; ; reread++) {
    const read = await readPages(reads, taskId, ctx);
    const short = !read.repeated && read.expected !== null && distinct(read.docs) < read.expected;
    if (!short || reread >= SHORT_REREADS)
      return finishResult(reads, taskId, read.docs, ctx, ctx.url, ctx.limits, {
        expected: read.expected,
        ...(read.repeated ? { why: REPEATED } : short ? { why: SHORT } : {}),
      });
    await pause(SHORT_REREAD_MS, ctx.signal);
  }
}

/** One reading of the job's pages (see {@link readResult}). */
async function readPages(reads: FirecrawlReads, taskId: string, ctx: ResultContext): Promise<PagesRead> {
  const seen = new Set<string>();
  let expected: number | null = null;
  let repeated = false;
  const docs = await paginateNextLink({
    provider: reads.name,
    taskId,
    limits: ctx.limits,
    heartbeat: ctx.heartbeat,
    signal: ctx.signal,
    firstUrl: reads.http.url(reads.jobPath(taskId)),
    fetch: async (url) => {
      const { res, body } = await reads.readPage(url, ctx);
      if (!body || body.status !== 'completed') {
        throw notReady(`task ${taskId} is ${body?.status ?? `not ready (HTTP ${res.status})`}, no result yet`, res);
      }
      const start = skipOf(url);
      const items = body.data ?? [];
      if (typeof body.completed === 'number') expected = Math.max(expected ?? 0, body.completed);
      const keys = items.map(repeatKey);
      if (items.length > 0 && keys.every((k) => k !== null && seen.has(k))) {
        repeated = true;
        return { items: [], start, next: null };
      }
      for (const k of keys) if (k !== null) seen.add(k);
      const more = items.length > 0 || (start !== null && typeof body.completed === 'number' && body.completed > start);
      return { items, start, next: more ? rebase(reads.http, body.next) : null };
    },
    map: (d, position) => firecrawlDocument(d, position),
  });
  return { docs, expected, repeated };
}

/** Whether a final status page already holds every document its `completed` counts (then it is the whole result). */
export function holdsEveryDocument(body: StatusPage): boolean {
  return !body.next && (body.data ?? []).length >= (body.completed ?? 0);
}

/** Re-reads of `/errors` for a batch that completed with neither a document nor a failure, and the pause before each, ms. */
const ERRORS_REREADS = 2;
const ERRORS_REREAD_MS = 1_000;

/**
 * Joins the documents with the per-URL failures and builds the result. A batch entry scrapes one
 * URL: its page fills the result row; when Firecrawl could not scrape it (no document, only a
 * failure) the task failed — `task_failed` with Firecrawl's code (`SCRAPE_FAILED` when none) and a
 * message naming the URL; a batch whose page Firecrawl counts but never served completes `partial`
 * with no document. Firecrawl's server counts a failed page out of the batch before its
 * failure is readable (the page leaves the count, then its scrape is marked failed), so a batch
 * read with neither a document nor a failure reads `/errors` again, at most
 * {@link ERRORS_REREADS} times {@link ERRORS_REREAD_MS} apart. A crawl's row describes its start
 * page (`submittedUrl`: the request's URL; see `describedDocument`), and its documents are
 * compared with Firecrawl's count (`count`): fewer is a `partial` result that says so. Throws
 * `RESULT_TOO_LARGE` (permanent) past the limits.
 */
export async function finishResult(
  reads: FirecrawlReads,
  taskId: string,
  docs: ResultDocument[],
  ctx: CallContext,
  submittedUrl: string,
  limits: ResultLimits,
  count: FirecrawlCount = { expected: null },
): Promise<ProviderResult> {
  let failures = await failuresOf(reads, taskId, ctx);
  // A page Firecrawl counts did not fail: only a batch with nothing counted waits for its failure.
  const counted = (count.expected ?? 0) > 0;
  if (reads.operation === 'batch' && !counted) {
    for (let i = 0; i < ERRORS_REREADS && docs.length === 0 && failures.length === 0; i++) {
      await pause(ERRORS_REREAD_MS, ctx.signal);
      failures = await failuresOf(reads, taskId, ctx);
    }
  }
  const all = [...docs, ...failures];
  const fallbackUrl = submittedUrl || all[0]?.url || '';
  const completeness = completenessOf(docs, count.expected, COUNTER, {
    countErrors: true,
    ...(count.why ? { why: count.why } : {}),
  });
  if (reads.operation === 'batch') {
    const page = all.find((d) => !d.error);
    // Firecrawl counts the page scraped but never served it: completed, partial, and said so.
    if (!page && counted && docs.length === 0)
      return enforceResultLimits(
        { ...resultFromDocuments(all, fallbackUrl), completeness: completeness! },
        limits,
        reads.name,
        taskId,
      );
    if (!page) {
      const f = all[0];
      throw new ProviderError(
        'task_failed',
        `Firecrawl could not scrape ${fallbackUrl || f?.url || `the URL of batch ${taskId}`}: ${f?.error?.message ?? 'no document and no reason'}`,
        {
          code: f?.error?.code ?? 'SCRAPE_FAILED',
        },
      );
    }
    const meta = (page.data?.metadata ?? {}) as {
      description?: string | string[] | null;
      language?: string | string[] | null;
    };
    const row = resultFromDocuments(all, fallbackUrl);
    const file = page.body ? { body: page.body } : {};
    return enforceResultLimits(
      {
        ...row,
        ...file,
        markdown: page.markdown ?? null,
        links: page.links ?? [],
        excerpt: first(meta.description),
        lang: first(meta.language),
        contentLength: page.body?.size ?? page.markdown?.length ?? null,
      },
      limits,
      reads.name,
      taskId,
    );
  }
  const result = resultFromDocuments(all, fallbackUrl);
  return enforceResultLimits(completeness ? { ...result, completeness } : result, limits, reads.name, taskId);
}

/** Waits `ms`, or until `signal` aborts (then throws the transient `CANCELLED` a stopped read gets). */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    throw new ProviderError('transient', 'the read was stopped while waiting', { code: 'CANCELLED' });
  }
}

/** A 404 on an errors route that says the route (not the job) is missing: any `404` but "Job expired". */
const routeMissing = (res: ProviderResponse) => res.status === 404 && !/expired/i.test(res.text);

/**
 * The per-URL failures (`/errors`) as documents with `error`, robots.txt refusals included (code
 * `ROBOTS_BLOCKED`); none when neither the job's route nor, for a batch, the crawl route answers.
 */
async function failuresOf(reads: FirecrawlReads, taskId: string, ctx: CallContext): Promise<ResultDocument[]> {
  // Called only after a 200 status read of this job: a 404 here is a missing route, not a missing
  // job. Firecrawl's own server routes no `/v2/batch/scrape/{id}/errors` (61e38dc); its
  // `/v2/crawl/{id}/errors` serves batch IDs too: a batch's failures are read there when the batch
  // route is missing.
  let res = await reads.http.call(ctx, { method: 'GET', path: reads.jobPath(taskId, '/errors'), phase: 'read' });
  if (routeMissing(res) && reads.operation === 'batch')
    res = await reads.http.call(ctx, {
      method: 'GET',
      path: `/v2/crawl/${encodeURIComponent(taskId)}/errors`,
      phase: 'read',
    });
  if (routeMissing(res)) return [];
  if (!reads.http.isOk(res)) throw reads.fail(res, 'read', ctx);
  const body = reads.http.parse(res, ErrorsBody, 'read', 'errors body');
  return [
    // A failed scrape's `id` is its scrape ID: the row's identity.
    ...(body.errors ?? []).map((e): ResultDocument =>
      withIdentity(
        {
          url: e.url ?? null,
          data: { id: e.id ?? null, timestamp: e.timestamp ?? null },
          error: { ...(e.code ? { code: e.code } : {}), message: e.error ?? 'failed' },
        },
        { providerId: e.id },
      ),
    ),
    ...(body.robotsBlocked ?? []).map((url): ResultDocument =>
      withIdentity({ url, error: { code: 'ROBOTS_BLOCKED', message: 'blocked by the site’s robots.txt' } }, {}),
    ),
  ];
}
