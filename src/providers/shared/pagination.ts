/**
 * Reading a multi-document result page by page (crawl pages, dataset items, batch entries), in
 * the three styles providers use:
 *
 * - **offset/limit** ({@link paginateOffset}): Apify `GET /v2/datasets/{id}/items?offset&limit`;
 * - **cursor** ({@link paginateCursor}): an opaque cursor returned with each page;
 * - **next link** ({@link paginateNextLink}): Firecrawl's `next` URL (`?skip=N`) until none.
 *
 * Every style calls `heartbeat` between pages (the activity heartbeats, so a long read shows
 * progress and learns of cancellation), stops when the activity is cancelled, refuses a page that
 * repeats the previous position (a provider loop) — except after an empty page, which a provider
 * may serve before the rest of the stream at the same position (read again at most
 * {@link EMPTY_PAGE_REREADS} times) — and enforces the entry's {@link ResultLimits} with a permanent
 * {@link ProviderError} `RESULT_TOO_LARGE` that says which limit was passed and how to raise it in
 * the configuration.
 *
 * Each item can be mapped with its **absolute position** in the provider's result (`map`): the
 * offset of its page plus its index for offset paging, the page's `start` where a cursor or
 * next-link fetch reports it (Bright Data parts, Firecrawl's `skip`), else null. Document
 * builders turn the position into the document's identity (see `src/model/documents.ts`), so a
 * document repeated across pages is stored once.
 */
import { canonicalUrl, documentIdentity } from '../../model/documents.js';
import { ProviderError } from './errors.js';
import {
  uniqueDocuments,
  type ProviderResult,
  type ResultCompleteness,
  type ResultDocument,
} from '../../model/results.js';
import type { ResultLimits } from '../adapter.js';

export { canonicalUrl, documentIdentity } from '../../model/documents.js';

/** How many times in a row an empty page may announce its own position as the next one before the read stops as a loop. */
export const EMPTY_PAGE_REREADS = 3;

/** What every paginated read needs. */
interface PageReadOptions<T> {
  /** Configured provider name (for the limit message: `providers.<name>.results…`). */
  provider: string;
  /** The provider task being read (for messages). */
  taskId: string;
  limits: ResultLimits;
  heartbeat?: (progress: { documents: number; pages: number }) => void;
  signal?: AbortSignal;
  /** Bytes one item counts against `limits.maxBytes` (default: its JSON serialisation, UTF-8). */
  sizeOf?: (item: T) => number;
}

/** Maps one item read, with its absolute position in the provider's result (null when the pagination does not know it). */
type ItemMapper<T, U> = (item: T, position: number | null) => U;

/**
 * Default size of an item: UTF-8 bytes of its JSON, where binary bytes (a `Buffer` anywhere in
 * it, e.g. a document's body) count as their own length rather than as their JSON rendering.
 */
export function jsonBytes(item: unknown): number {
  let binary = 0;
  const text = JSON.stringify(item, function (this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key];
    if (raw instanceof Uint8Array) {
      binary += raw.length;
      return null;
    }
    return value;
  });
  return Buffer.byteLength(text ?? '', 'utf8') + binary;
}

/**
 * Counts documents and bytes against the limits; throws `RESULT_TOO_LARGE` (permanent) naming the
 * limit, the configuration key that raises it, and the task.
 */
class ResultBudget {
  documents = 0;
  bytes = 0;
  pages = 0;

  constructor(
    private readonly provider: string,
    private readonly taskId: string,
    private readonly limits: ResultLimits,
  ) {}

  /** Adds one page's documents and bytes; throws when a limit is passed. */
  add(count: number, bytes: number): void {
    this.documents += count;
    this.bytes += bytes;
    this.pages++;
    if (this.documents > this.limits.maxDocuments) {
      throw tooLarge(
        this.provider,
        this.taskId,
        `more than ${this.limits.maxDocuments} documents`,
        'maxDocuments',
        this.limits.maxDocuments,
      );
    }
    if (this.bytes > this.limits.maxBytes) {
      throw tooLarge(
        this.provider,
        this.taskId,
        `more than ${this.limits.maxBytes} bytes of documents`,
        'maxBytes',
        this.limits.maxBytes,
      );
    }
  }
}

function tooLarge(
  provider: string,
  taskId: string,
  what: string,
  key: 'maxDocuments' | 'maxBytes',
  value: number,
): ProviderError {
  return new ProviderError(
    'permanent',
    `the result of task ${taskId} at provider ${provider} has ${what} (limit results.${key} = ${value}); raise "providers.${provider}.results.${key}" in the configuration to accept it, then resume the job`,
    { code: 'RESULT_TOO_LARGE' },
  );
}

/**
 * Checks a complete result (single page plus its documents, e.g. an inline `data[]`) against the
 * limits. Throws `RESULT_TOO_LARGE` (permanent).
 */
export function enforceResultLimits(
  result: ProviderResult,
  limits: ResultLimits,
  provider: string,
  taskId: string,
): ProviderResult {
  const docs = result.documents ?? [];
  const budget = new ResultBudget(provider, taskId, limits);
  const { documents: _d, ...page } = result;
  budget.add(docs.length, jsonBytes(page) + docs.reduce((n, d) => n + jsonBytes(d), 0));
  return result;
}

/** One page as a style's reader returns it: its items, the next position (null: done) and the absolute position of its first item when known. */
interface ReadPage<T, P> {
  items: T[];
  next: P | null;
  start?: number | null;
}

async function collect<T, P, U>(
  opts: PageReadOptions<T>,
  first: P,
  read: (pos: P) => Promise<ReadPage<T, P>>,
  same: (a: P, b: P) => boolean,
  map: ItemMapper<T, U>,
): Promise<U[]> {
  const budget = new ResultBudget(opts.provider, opts.taskId, opts.limits);
  const sizeOf = opts.sizeOf ?? jsonBytes;
  const out: U[] = [];
  let pos: P | null = first;
  let emptyRereads = 0;
  while (pos !== null) {
    if (opts.signal?.aborted)
      throw new ProviderError(
        'transient',
        `reading the result of task ${opts.taskId} was cancelled after ${budget.pages} pages`,
        { code: 'CANCELLED' },
      );
    const page: ReadPage<T, P> = await read(pos);
    budget.add(
      page.items.length,
      page.items.reduce((n, it) => n + sizeOf(it), 0),
    );
    const start = page.start ?? null;
    page.items.forEach((it, i) => out.push(map(it, start === null ? null : start + i)));
    opts.heartbeat?.({ documents: budget.documents, pages: budget.pages });
    if (page.next !== null && same(page.next, pos)) {
      // An empty page that points at its own position: the stream goes on there (read it again, a bounded number of times).
      if (page.items.length === 0 && emptyRereads < EMPTY_PAGE_REREADS) {
        emptyRereads++;
        pos = page.next;
        continue;
      }
      throw new ProviderError(
        'transient',
        `provider ${opts.provider} returned the same page position twice while reading task ${opts.taskId} (page ${budget.pages}); stopped to avoid a loop`,
        { code: 'PAGINATION_LOOP' },
      );
    }
    emptyRereads = 0;
    pos = page.next;
  }
  return out;
}

const identityMap = <T>(item: T) => item;

/**
 * Offset/limit pagination. `fetch(offset, limit)` reads one page (`limit` = `limits.pageSize`);
 * reading stops at an empty page, at `done: true`, or — unless `shortPagesContinue` — at a page
 * shorter than `limit`. The next offset is `offset + limit` (`nextOffset` overrides it: Apify's
 * count can skip hidden items). With `emptyPagesContinue` an empty page does not end the read by
 * itself: `fetch` says when it is done (Apify's `clean` filters a scanned window after paging, so
 * a window of empty items answers `[]` while later windows still hold items). Each item's position
 * is `offset + index` (`fetch` returns `positions: false` when the page's items are not at those
 * positions, e.g. filtered). Returns every item in order, mapped by `map` (default: as read).
 */
export async function paginateOffset<T, U = T>(
  opts: PageReadOptions<T> & {
    startOffset?: number;
    shortPagesContinue?: boolean;
    emptyPagesContinue?: boolean;
    map?: ItemMapper<T, U>;
    fetch: (
      offset: number,
      limit: number,
    ) => Promise<{ items: T[]; done?: boolean; nextOffset?: number; positions?: boolean }>;
  },
): Promise<U[]> {
  const limit = opts.limits.pageSize;
  return collect(
    opts,
    opts.startOffset ?? 0,
    async (offset) => {
      const page = await opts.fetch(offset, limit);
      const empty = page.items.length === 0 && !opts.emptyPagesContinue;
      const end = page.done === true || empty || (!opts.shortPagesContinue && page.items.length < limit);
      return {
        items: page.items,
        next: end ? null : (page.nextOffset ?? offset + limit),
        start: page.positions === false ? null : offset,
      };
    },
    (a, b) => a <= b,
    (opts.map ?? identityMap) as ItemMapper<T, U>,
  );
}

/**
 * Cursor pagination. `fetch(cursor)` reads one page (`cursor` undefined for the first) and returns
 * the next cursor, or null/undefined/empty when there is none, and — when the provider's paging
 * says — `start`, the absolute position of the page's first item. Returns every item in order,
 * mapped by `map` (default: as read).
 */
export async function paginateCursor<T, U = T>(
  opts: PageReadOptions<T> & {
    map?: ItemMapper<T, U>;
    fetch: (
      cursor: string | undefined,
      limit: number,
    ) => Promise<{ items: T[]; cursor?: string | null; start?: number | null }>;
  },
): Promise<U[]> {
  const limit = opts.limits.pageSize;
  return collect<T, { cursor: string | undefined }, U>(
    opts,
    { cursor: undefined },
    async ({ cursor }) => {
      const page = await opts.fetch(cursor, limit);
      return { items: page.items, next: page.cursor ? { cursor: page.cursor } : null, start: page.start ?? null };
    },
    (a, b) => a.cursor === b.cursor,
    (opts.map ?? identityMap) as ItemMapper<T, U>,
  );
}

/**
 * Next-link pagination. `fetch(url)` reads the page at `url` (the first is `firstUrl`) and returns
 * the provider's `next` URL, or null/undefined when done, and — when the link says (Firecrawl's
 * `?skip=N`) — `start`, the absolute position of the page's first item. Fetch it through
 * `ProviderHttp.call({url})`, which refuses a link outside the provider's origin. Returns every
 * item in order, mapped by `map` (default: as read).
 */
export async function paginateNextLink<T, U = T>(
  opts: PageReadOptions<T> & {
    firstUrl: string;
    map?: ItemMapper<T, U>;
    fetch: (url: string) => Promise<{ items: T[]; next?: string | null; start?: number | null }>;
  },
): Promise<U[]> {
  return collect(
    opts,
    opts.firstUrl,
    async (url) => {
      const page = await opts.fetch(url);
      return { items: page.items, next: page.next ? page.next : null, start: page.start ?? null };
    },
    (a, b) => a === b,
    (opts.map ?? identityMap) as ItemMapper<T, U>,
  );
}

/**
 * `doc` with its identity (see `src/model/documents.ts`): `providerId` when the provider gives
 * the document an ID of its own, else its canonical URL with `position` when known, else its URL
 * with a SHA-256 of its content.
 */
export function withIdentity(
  doc: ResultDocument,
  opts: { providerId?: string | number | null; position?: number | null },
): ResultDocument {
  return { ...doc, identity: documentIdentity(doc, opts) };
}

/**
 * The document a multi-document result's row describes: the one without an error whose URL (or
 * final URL) is the submitted URL in its canonical form — a crawl's start page, whichever moment
 * it finished — else the first without an error, else the first.
 */
export function describedDocument(
  documents: readonly ResultDocument[],
  submittedUrl: string,
): ResultDocument | undefined {
  const usable = documents.filter((d) => !d.error);
  const at = submittedUrl ? canonicalUrl(submittedUrl) : '';
  const start = at
    ? (usable.find((d) => canonicalUrl(d.url) === at) ?? usable.find((d) => canonicalUrl(d.finalUrl) === at))
    : undefined;
  return start ?? usable[0] ?? documents[0];
}

/**
 * The comparison of `documents` with the provider's own count of them (see
 * {@link ResultCompleteness}): `kept` is the number of distinct documents (one per identity, as the
 * store keeps them), per-document failures left out unless `countErrors` (the provider counts
 * them too), or `opts.kept` where the reader counted otherwise (positions scanned under a filter).
 * Undefined when the provider gave no count (`expected` null or undefined).
 */
export function completenessOf(
  documents: readonly ResultDocument[],
  expected: number | null | undefined,
  counter: string,
  opts: { countErrors?: boolean; why?: string; kept?: number } = {},
): ResultCompleteness | undefined {
  if (expected === null || expected === undefined || !Number.isFinite(expected)) return undefined;
  const kept = opts.kept ?? uniqueDocuments(documents).filter((d) => opts.countErrors === true || !d.error).length;
  return { expected, kept, counter, ...(opts.why ? { why: opts.why } : {}) };
}

/**
 * A multi-document result: the result row summarises the job (`url` = the submitted URL; final
 * URL, HTTP status and title of the document at the submitted URL, else of the first document
 * without an error: see {@link describedDocument}; no text of its own) and `documents` holds every
 * document in the provider's order. With `singleFillsRow`, a result of exactly one document
 * without an error also gets that document's text, Markdown, links and binary body on its row (a
 * one-record snapshot is the page itself).
 */
export function resultFromDocuments(
  documents: ResultDocument[],
  submittedUrl: string,
  opts: { singleFillsRow?: boolean } = {},
): ProviderResult {
  const first = describedDocument(documents, submittedUrl);
  const only = opts.singleFillsRow && documents.length === 1 && first && !first.error ? first : undefined;
  return {
    url: submittedUrl,
    finalUrl: first?.finalUrl ?? null,
    httpStatus: first?.httpStatus ?? null,
    title: first?.title ?? null,
    byline: null,
    excerpt: null,
    lang: null,
    siteName: null,
    publishedTime: null,
    text: only?.text ?? null,
    markdown: only?.markdown ?? null,
    links: only?.links ?? [],
    contentLength: !only
      ? null
      : (only.body?.size ??
        ((only.markdown ?? only.text) ? Buffer.byteLength(only.markdown ?? only.text ?? '', 'utf8') : null)),
    ...(only?.body ? { body: only.body } : {}),
    documents,
  };
}
