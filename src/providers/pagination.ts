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
 * repeats the previous position (a provider loop), and enforces the entry's {@link ResultLimits}
 * with a permanent {@link ProviderError} `RESULT_TOO_LARGE` that says which limit was passed and
 * how to raise it in the configuration.
 */
import { ProviderError } from './errors.js';
import type { ProviderResult, ResultDocument, ResultLimits } from './types.js';

/** What every paginated read needs. */
export interface PageReadOptions<T> {
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

/** Default size of an item: UTF-8 bytes of its JSON. */
export function jsonBytes(item: unknown): number {
  return Buffer.byteLength(JSON.stringify(item) ?? '', 'utf8');
}

/**
 * Counts documents and bytes against the limits; throws `RESULT_TOO_LARGE` (permanent) naming the
 * limit, the configuration key that raises it, and the task.
 */
export class ResultBudget {
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
      throw tooLarge(this.provider, this.taskId, `more than ${this.limits.maxDocuments} documents`, 'maxDocuments', this.limits.maxDocuments);
    }
    if (this.bytes > this.limits.maxBytes) {
      throw tooLarge(this.provider, this.taskId, `more than ${this.limits.maxBytes} bytes of documents`, 'maxBytes', this.limits.maxBytes);
    }
  }
}

function tooLarge(provider: string, taskId: string, what: string, key: 'maxDocuments' | 'maxBytes', value: number): ProviderError {
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
export function enforceResultLimits(result: ProviderResult, limits: ResultLimits, provider: string, taskId: string): ProviderResult {
  const docs = result.documents ?? [];
  const budget = new ResultBudget(provider, taskId, limits);
  const { documents: _d, ...page } = result;
  budget.add(docs.length, jsonBytes(page) + docs.reduce((n, d) => n + jsonBytes(d), 0));
  return result;
}

async function collect<T, P>(opts: PageReadOptions<T>, first: P, read: (pos: P) => Promise<{ items: T[]; next: P | null }>, same: (a: P, b: P) => boolean): Promise<T[]> {
  const budget = new ResultBudget(opts.provider, opts.taskId, opts.limits);
  const sizeOf = opts.sizeOf ?? jsonBytes;
  const out: T[] = [];
  let pos: P | null = first;
  while (pos !== null) {
    if (opts.signal?.aborted) throw new ProviderError('transient', `reading the result of task ${opts.taskId} was cancelled after ${budget.pages} pages`, { code: 'CANCELLED' });
    const page: { items: T[]; next: P | null } = await read(pos);
    budget.add(page.items.length, page.items.reduce((n, it) => n + sizeOf(it), 0));
    out.push(...page.items);
    opts.heartbeat?.({ documents: budget.documents, pages: budget.pages });
    if (page.next !== null && same(page.next, pos)) {
      throw new ProviderError('transient', `provider ${opts.provider} returned the same page position twice while reading task ${opts.taskId} (page ${budget.pages}); stopped to avoid a loop`, { code: 'PAGINATION_LOOP' });
    }
    pos = page.next;
  }
  return out;
}

/**
 * Offset/limit pagination. `fetch(offset, limit)` reads one page (`limit` = `limits.pageSize`);
 * reading stops at an empty page, at `done: true`, or — unless `shortPagesContinue` — at a page
 * shorter than `limit`. The next offset is `offset + limit` (`nextOffset` overrides it: Apify's
 * count can skip hidden items). With `emptyPagesContinue` an empty page does not end the read by
 * itself: `fetch` says when it is done (Apify's `clean` filters a scanned window after paging, so
 * a window of empty items answers `[]` while later windows still hold items). Returns every item
 * in order.
 */
export async function paginateOffset<T>(
  opts: PageReadOptions<T> & {
    startOffset?: number;
    shortPagesContinue?: boolean;
    emptyPagesContinue?: boolean;
    fetch: (offset: number, limit: number) => Promise<{ items: T[]; done?: boolean; nextOffset?: number }>;
  },
): Promise<T[]> {
  const limit = opts.limits.pageSize;
  return collect(
    opts,
    opts.startOffset ?? 0,
    async (offset) => {
      const page = await opts.fetch(offset, limit);
      const empty = page.items.length === 0 && !opts.emptyPagesContinue;
      const end = page.done === true || empty || (!opts.shortPagesContinue && page.items.length < limit);
      return { items: page.items, next: end ? null : (page.nextOffset ?? offset + limit) };
    },
    (a, b) => a <= b,
  );
}

/**
 * Cursor pagination. `fetch(cursor)` reads one page (`cursor` undefined for the first) and returns
 * the next cursor, or null/undefined/empty when there is none. Returns every item in order.
 */
export async function paginateCursor<T>(opts: PageReadOptions<T> & { fetch: (cursor: string | undefined, limit: number) => Promise<{ items: T[]; cursor?: string | null }> }): Promise<T[]> {
  const limit = opts.limits.pageSize;
  return collect<T, { cursor: string | undefined }>(
    opts,
    { cursor: undefined },
    async ({ cursor }) => {
      const page = await opts.fetch(cursor, limit);
      return { items: page.items, next: page.cursor ? { cursor: page.cursor } : null };
    },
    (a, b) => a.cursor === b.cursor,
  );
}

/**
 * Next-link pagination. `fetch(url)` reads the page at `url` (the first is `firstUrl`) and returns
 * the provider's `next` URL, or null/undefined when done. Fetch it through `ProviderHttp.call({url})`,
 * which refuses a link outside the provider's origin. Returns every item in order.
 */
export async function paginateNextLink<T>(opts: PageReadOptions<T> & { firstUrl: string; fetch: (url: string) => Promise<{ items: T[]; next?: string | null }> }): Promise<T[]> {
  return collect(
    opts,
    opts.firstUrl,
    async (url) => {
      const page = await opts.fetch(url);
      return { items: page.items, next: page.next ? page.next : null };
    },
    (a, b) => a === b,
  );
}

/**
 * A multi-document result: the result row summarises the job (`url` = the submitted URL; final
 * URL, HTTP status and title of the first document without an error; no text of its own) and
 * `documents` holds every document in order.
 */
export function resultFromDocuments(documents: ResultDocument[], submittedUrl: string): ProviderResult {
  const first = documents.find((d) => !d.error) ?? documents[0];
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
    text: null,
    markdown: null,
    links: [],
    contentLength: null,
    documents,
  };
}
