/**
 * Firecrawl's own answers, read directly (the tests compare the product with them): a crawl's or
 * batch's status and its documents over `next` pages, and the wait until its count settles.
 * Authentication is off on the test server; the key is any bearer value.
 */
import { inject } from 'vitest';
import { waitFor } from '../../helpers/stack.js';

/** Any key: the server runs without authentication. */
export const FIRECRAWL_TEST_KEY = 'fc-real-server-suite';

/** One document of a status page (the fields the tests read). */
export interface FirecrawlDoc {
  markdown?: string;
  metadata?: { sourceURL?: string; url?: string; title?: string; statusCode?: number; error?: string };
}

/** A status page of `GET /v2/crawl/{id}` or `/v2/batch/scrape/{id}`. */
export interface FirecrawlStatus {
  status: 'scraping' | 'completed' | 'failed' | 'cancelled';
  total: number;
  completed: number;
  creditsUsed?: number;
  next?: string | null;
  data: FirecrawlDoc[];
}

/** `GET <path>` (or another method) on the test server; the parsed JSON answer and its HTTP status. */
export async function firecrawlCall<T = unknown>(
  p: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T }> {
  const url = p.startsWith('http') ? p : `${inject('real').firecrawl}${p}`;
  const r = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${FIRECRAWL_TEST_KEY}`,
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
  });
  return { status: r.status, body: (await r.json()) as T };
}

/** The status of a crawl (or batch) `id` as Firecrawl answers it now (first page of documents). */
export async function firecrawlStatus(id: string, op: 'crawl' | 'batch' = 'crawl'): Promise<FirecrawlStatus> {
  const { status, body } = await firecrawlCall<FirecrawlStatus>(
    `/v2/${op === 'crawl' ? 'crawl' : 'batch/scrape'}/${id}`,
  );
  if (status !== 200) throw new Error(`Firecrawl answered ${status} for ${op} ${id}: ${JSON.stringify(body)}`);
  return body;
}

/**
 * Waits until Firecrawl says the crawl `id` is final and its `completed` count has settled: no page
 * of `site` in flight, and two reads more than 250 ms apart (Firecrawl counts a page 250 ms after it
 * finished) give the same count. Returns the second read.
 */
export async function settledStatus(
  id: string,
  site: { inFlight(): number },
  op: 'crawl' | 'batch' = 'crawl',
  timeoutMs = 180_000,
): Promise<FirecrawlStatus> {
  return waitFor(
    async () => {
      if (site.inFlight() > 0) return undefined;
      const a = await firecrawlStatus(id, op);
      if (a.status === 'scraping') return undefined;
      const t = Date.now();
      await waitFor(() => Date.now() - t > 300, 5_000, 'the next read of the count');
      const b = await firecrawlStatus(id, op);
      return site.inFlight() === 0 && b.completed === a.completed && b.status === a.status ? b : undefined;
    },
    timeoutMs,
    `Firecrawl's count of ${op} ${id} to settle`,
  );
}

/**
 * Every document Firecrawl serves for `id`, following `next` (at most `maxPages` pages), and the
 * source URLs it served more than once (past 10 MiB Firecrawl's `next` repeats pages).
 */
export async function firecrawlDocuments(
  id: string,
  maxPages = 50,
): Promise<{ status: FirecrawlStatus; docs: FirecrawlDoc[]; distinctUrls: Set<string>; pages: number }> {
  const first = await firecrawlStatus(id);
  const docs = [...first.data];
  let next = first.next;
  let pages = 1;
  while (next && pages < maxPages) {
    const { body } = await firecrawlCall<FirecrawlStatus>(next);
    docs.push(...body.data);
    next = body.next;
    pages++;
  }
  const distinctUrls = new Set(docs.map((d) => d.metadata?.sourceURL ?? d.metadata?.url ?? ''));
  return { status: first, docs, distinctUrls, pages };
}
