/**
 * Reading the result of an `http` entry's job (kind `http`): the page at `result.pagePath` and/or
 * the documents at `result.documentsPath`, from the final status answer or from `result.request`,
 * paged by offset, cursor or `next` link with heartbeats and the entry's result limits, mapped by
 * the entry's field pointers (`fields`). The contract is the entry (`config.ts`); the adapter's
 * module docs say how each answer is read.
 */
import { resultLimitsOf } from '../shared/entry.js';
import { ProviderError } from '../shared/errors.js';
import {
  notReady,
  type CallPhase,
  type ProviderHttp,
  type ProviderResponse,
  type QueryParams,
} from '../shared/http.js';
import { appendQuery } from '../shared/request.js';
import {
  enforceResultLimits,
  paginateCursor,
  paginateNextLink,
  paginateOffset,
  resultFromDocuments,
  withIdentity,
} from '../shared/pagination.js';
import type { CallContext, ObservedState, ResultContext } from '../adapter.js';
import type { ProviderResult, ResultDocument } from '../../model/results.js';
import type { CallConfig } from './callConfig.js';
import { callOptions, taskVars } from './calls.js';
import type { HttpEntry } from './config.js';
import { pick, pickString, placeholdersOf, rootOf, type TemplateVars } from './template.js';

type Fields = HttpEntry['result']['fields'];

/** What `results.ts` and `lookups.ts` read through: the adapter's name, entry, exchange and answer mapping. */
export interface HttpReads {
  name: string;
  entry: HttpEntry;
  http: ProviderHttp;
  /** Our state for a provider word under the entry's `status` map. */
  mapStatus(status: HttpEntry['status'], word: string): ObservedState;
  /** The status answer of `taskId`, and whether it is ready (not a "not ready" code). */
  readStatus(taskId: string, ctx: CallContext): Promise<{ res: ProviderResponse; ready: boolean }>;
  /** Throws the classified error unless `res` is a 2xx that is no error answer. */
  ok(
    res: ProviderResponse,
    phase: CallPhase,
    ctx: CallContext,
    what?: 'submit' | 'read' | 'cancel' | 'list',
  ): ProviderResponse;
  /** Makes configured call `call` with its templates rendered from `vars` (any HTTP status returned). */
  call(ctx: CallContext, call: CallConfig, vars: TemplateVars, phase: CallPhase): Promise<ProviderResponse>;
  /** The body of `res` read in `format` (JSON, or the array of its JSON lines). */
  body(res: ProviderResponse, format: HttpEntry['result']['format']): unknown;
  /** The word of a ready status answer and our state for it (throws `not_found` for a task the provider does not know). */
  observe(taskId: string, res: ProviderResponse): { word: string; state: ObservedState };
}

export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);

/** The page of `doc` by the entry's field pointers (absent fields empty; `url` falls back to `fallbackUrl`). */
function toPage(doc: unknown, f: Fields, fallbackUrl: string): ProviderResult {
  const at = (p: string | undefined) => (p === undefined ? undefined : pick(doc, p));
  const links = at(f.links);
  return {
    url: str(at(f.url)) ?? fallbackUrl,
    finalUrl: str(at(f.finalUrl)),
    httpStatus: num(at(f.httpStatus)),
    title: str(at(f.title)),
    byline: str(at(f.byline)),
    excerpt: str(at(f.excerpt)),
    lang: str(at(f.lang)),
    siteName: str(at(f.siteName)),
    publishedTime: str(at(f.publishedTime)),
    text: str(at(f.text)),
    markdown: str(at(f.markdown)),
    links: Array.isArray(links) ? links.filter((l): l is string => typeof l === 'string') : [],
    contentLength: num(at(f.contentLength)),
  };
}

/**
 * One document by the entry's field pointers; the whole item is kept in `data`. Identity: the
 * value at `fields.id` when the entry declares it, else the URL with `position` (the item's
 * absolute position, when the paging knows it), else the URL with a hash of the item.
 */
function toDocument(item: unknown, f: Fields, position: number | null): ResultDocument {
  const p = toPage(item, f, '');
  const error = f.error === undefined ? undefined : pickString(item, f.error);
  const providerId = f.id === undefined ? null : str(pick(item, f.id));
  return withIdentity(
    {
      url: p.url || null,
      finalUrl: p.finalUrl,
      httpStatus: p.httpStatus,
      title: p.title,
      markdown: p.markdown,
      text: p.text,
      links: p.links,
      data:
        item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : { value: item },
      ...(error ? { error: { message: error } } : {}),
    },
    { providerId, position },
  );
}

/** The result carried by a final status answer (result without `request`, not paged), or undefined when it carries none. */
export function inlineResult(reads: HttpReads, taskId: string, body: unknown): ProviderResult | undefined {
  const r = reads.entry.result;
  if (r.request !== undefined) return undefined;
  return fromBody(reads, taskId, body, '');
}

/** The result in one answer: the page, the documents, or both; undefined when the answer holds neither. */
function fromBody(reads: HttpReads, taskId: string, body: unknown, fallbackUrl: string): ProviderResult | undefined {
  const r = reads.entry.result;
  const page = r.pagePath === undefined ? undefined : pick(body, r.pagePath);
  const items = r.documentsPath === undefined ? undefined : pick(body, r.documentsPath);
  const hasPage = page !== undefined && page !== null && typeof page === 'object';
  if (!hasPage && !Array.isArray(items)) return undefined;
  const docs = Array.isArray(items) ? items.map((i, n) => toDocument(i, r.fields, n)) : undefined;
  const result: ProviderResult = hasPage
    ? { ...toPage(page, r.fields, fallbackUrl), ...(docs ? { documents: docs } : {}) }
    : resultFromDocuments(docs!, fallbackUrl);
  return enforceResultLimits(result, resultLimitsOf(reads.entry), reads.name, taskId);
}

/** `url` with the parameters of `query` appended. */
function withQuery(url: string, query: QueryParams | undefined): string {
  const u = new URL(url);
  appendQuery(u, query);
  return u.toString();
}

/**
 * The `task_failed` error of a `404` on the result read of a task the provider said is complete
 * (`errors.resultNotFound: "failed"`): the provider finished the task and has no result for it.
 * An HTML error page is reduced to its text.
 */
function noResult(reads: HttpReads, res: ProviderResponse, taskId: string, ctx: CallContext): ProviderError {
  const html = /html/i.test(res.headers.get('content-type') ?? '') || /^\s*</.test(res.text);
  const err = reads.http.error(
    res,
    'read',
    ctx,
    html && typeof res.body !== 'object'
      ? {
          message: res.text
            .replace(/<[^>]*>/g, ' ')
            .replace(/\s+/g, ' ')
            .trim()
            .slice(0, 300),
        }
      : {},
  );
  return new ProviderError(
    'task_failed',
    `the provider finished task ${taskId} and has no result for it: ${err.message}`,
    { ...err.details, code: err.details.code ?? 'NO_RESULT' },
  );
}

/**
 * The result of a completed job: from the status answer when the entry has no `result.request`,
 * else from that request, paged as `result.pagination` says. Throws `NOT_READY` (transient) while
 * the job is not completed, and the classified error of any refusal.
 */
export async function readResult(reads: HttpReads, taskId: string, ctx: ResultContext): Promise<ProviderResult> {
  const r = reads.entry.result;
  const noResultYet = (res: ProviderResponse, what: string) =>
    notReady(`task ${taskId} is ${what}, no result yet`, res);
  if (r.request === undefined) {
    const { res, ready } = await reads.readStatus(taskId, ctx);
    if (!ready) throw noResultYet(res, `not ready (HTTP ${res.status})`);
    const { word, state } = reads.observe(taskId, res);
    if (state !== 'completed') throw noResultYet(res, word);
    const out = fromBody(reads, taskId, res.body, ctx.url);
    if (!out) throw noResultYet(res, `${word} without a result`);
    return out;
  }
  const req = r.request;
  const vars: TemplateVars = taskVars(taskId, ctx);
  // A template over the final status answer (a result URL it returned): that answer is read first.
  if (placeholdersOf(req).some((n) => rootOf(n) === 'statusAnswer'))
    vars.statusAnswer = (await reads.readStatus(taskId, ctx)).res.body;
  const opts = callOptions(reads.http, req, vars, 'read');
  const first = opts.url !== undefined ? withQuery(opts.url, opts.query) : reads.http.url(opts.path!, opts.query);
  const read = async (o: { url?: string; query?: Record<string, string | number | undefined> }) => {
    const res = await reads.http.call(ctx, {
      ...opts,
      path: undefined,
      url: o.url ?? first,
      query: o.url ? undefined : o.query,
    });
    if (res.status === 404 && reads.entry.errors.resultNotFound === 'failed') throw noResult(reads, res, taskId, ctx);
    // A JSON-lines answer is documents, one a line: `errors.errorWhen` never reads into them.
    reads.ok(r.format !== 'json' && reads.http.isOk(res) ? { ...res, body: undefined } : res, 'read', ctx);
    if (r.notReadyStatusCodes.includes(res.status)) throw noResultYet(res, `not ready (HTTP ${res.status})`);
    return { ...res, body: reads.body(res, r.format) };
  };
  const pg = r.pagination;
  if (!pg) {
    const res = await read({});
    const out = fromBody(reads, taskId, res.body, ctx.url);
    if (!out)
      reads.http.invalid(res, 'read', `result answer: nothing at ${JSON.stringify(r.pagePath ?? r.documentsPath)}`);
    return out;
  }
  const itemsOf = (res: ProviderResponse): unknown[] => {
    const items = pick(res.body, r.documentsPath!);
    if (!Array.isArray(items))
      reads.http.invalid(res, 'read', `result page: no array at ${JSON.stringify(r.documentsPath)}`);
    return items;
  };
  const common = { provider: reads.name, taskId, limits: ctx.limits, heartbeat: ctx.heartbeat, signal: ctx.signal };
  const map = (i: unknown, position: number | null) => toDocument(i, r.fields, position);
  let documents: ResultDocument[];
  if (pg.style === 'offset') {
    const totalPath = pg.totalPath;
    documents = await paginateOffset({
      ...common,
      map,
      // With a declared total, the total says where the documents end; a short or empty page does not.
      shortPagesContinue: totalPath !== undefined,
      emptyPagesContinue: totalPath !== undefined,
      fetch: async (offset, limit) => {
        const res = await read({ query: { [pg.offsetParam]: offset, [pg.limitParam]: limit } });
        const items = itemsOf(res);
        if (totalPath === undefined) return { items };
        const total = pick(res.body, totalPath);
        if (typeof total !== 'number' || !Number.isInteger(total) || total < 0)
          reads.http.invalid(res, 'read', `result page: no document count at ${JSON.stringify(totalPath)}`);
        // A page longer than asked (one that starts a document back) still moves on by the limit.
        const reached = offset + Math.min(items.length, limit);
        return { items, done: reached >= total, nextOffset: reached };
      },
    });
  } else if (pg.style === 'cursor') {
    documents = await paginateCursor({
      ...common,
      map,
      fetch: async (cursor, limit) => {
        const res = await read({
          query: {
            ...(cursor ? { [pg.cursorParam]: cursor } : {}),
            ...(pg.limitParam ? { [pg.limitParam]: limit } : {}),
          },
        });
        return { items: itemsOf(res), cursor: pickString(res.body, pg.cursorPath) ?? null };
      },
    });
  } else {
    documents = await paginateNextLink({
      ...common,
      map,
      firstUrl: first,
      fetch: async (url) => {
        const res = await read({ url });
        const next = pickString(res.body, pg.nextPath);
        return { items: itemsOf(res), next: next ? new URL(next, url).toString() : null };
      },
    });
  }
  return resultFromDocuments(documents, ctx.url);
}
