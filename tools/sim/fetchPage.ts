/**
 * What a job of the reference provider does while `running`: it really fetches the target URL
 * with the global `fetch` (redirects followed, bounded by the job's `timeout_ms`, a
 * connection-level failure retried twice with backoff, as real scraping providers do) and
 * extracts the page with {@link extractPage}.
 *
 * Outcomes: a page, also for a target that answered 4xx/5xx (its HTTP status is in the result);
 * `FETCH_FAILED` on a network error, a timeout or a body over the size limit; `EXTRACTION_FAILED`
 * when no document can be built. A cancel or the sim closing (the `signal`) is no outcome: it
 * rejects with the abort.
 */
import pRetry, { AbortError } from 'p-retry';
import { extractPage } from '../../src/providers/shared/extract.js';
import type { JobError, JobLog, JobResult } from './schemas.js';

/** One fetch of a job's target. */
export interface PageFetch {
  url: string;
  /** The job's own time limit for the fetch (ms, retries included). */
  timeoutMs: number;
  userAgent: string;
  /** Largest target body read, in bytes. */
  maxBodyBytes: number;
  /** Aborted when the job is cancelled or the sim closes. */
  signal: AbortSignal;
  /** Appends a line to the job's log. */
  log: (level: JobLog['level'], message: string) => void;
  /** Called once the target answered with a body within the limit (the job then counts one page fetched). */
  onFetched: () => void;
}

/** What the fetch produced: the extracted page, or the error the job fails with. */
export type PageOutcome = { ok: true; result: JobResult } | { ok: false; error: JobError };

/** Retries of a target fetch after a connection-level failure (so up to 3 attempts in all). */
const FETCH_RETRIES = 2;

/** Fetches and extracts `p.url` (see the module comment). Rejects only with the abort of `p.signal`. */
export async function fetchAndExtract(p: PageFetch): Promise<PageOutcome> {
  const { signal, log } = p;
  log('info', `fetching ${p.url}`);
  const timeout = AbortSignal.timeout(p.timeoutMs);
  const fetchSignal = AbortSignal.any([signal, timeout]);
  let response: Response;
  let body: Buffer;
  try {
    // A connection-level failure (reset, socket closed under keep-alive, refused) is retried up to
    // FETCH_RETRIES times with backoff, as real scraping providers do; a timeout or cancel is not.
    response = await pRetry(
      async () => {
        try {
          return await fetch(p.url, {
            redirect: 'follow',
            signal: fetchSignal,
            headers: { 'user-agent': p.userAgent, accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5' },
          });
        } catch (err) {
          if (fetchSignal.aborted) throw new AbortError(err instanceof Error ? err : String(err));
          throw err;
        }
      },
      {
        retries: FETCH_RETRIES,
        minTimeout: 200,
        factor: 3,
        signal: fetchSignal,
        onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
          if (retriesLeft > 0)
            log('warn', `fetch attempt ${attemptNumber} failed (${describeFetchError(error)}); retrying`);
        },
      },
    );
    const read = await readCapped(response, p.maxBodyBytes);
    if (read === null) {
      return {
        ok: false,
        error: { code: 'FETCH_FAILED', message: `response body larger than ${p.maxBodyBytes} bytes` },
      };
    }
    body = read;
  } catch (err) {
    if (signal.aborted) throw err; // cancelled / closing: not a fetch failure
    const message = timeout.aborted ? `timed out after ${p.timeoutMs} ms` : describeFetchError(err);
    log('error', `fetch failed: ${message}`);
    return { ok: false, error: { code: 'FETCH_FAILED', message } };
  }
  p.onFetched();
  const finalUrl = response.url || p.url;
  const contentType = response.headers.get('content-type') ?? undefined;
  log(
    response.ok ? 'info' : 'warn',
    `fetched ${finalUrl}: HTTP ${response.status}, ${body.length} bytes${contentType ? `, ${contentType}` : ''}`,
  );
  try {
    const page = extractPage(body, { url: finalUrl, contentType, checkReaderable: false });
    return {
      ok: true,
      result: {
        url: p.url,
        final_url: finalUrl,
        http_status: response.status,
        title: page.title,
        byline: page.byline,
        excerpt: page.excerpt,
        lang: page.lang,
        dir: page.dir,
        site_name: page.siteName,
        published_time: page.publishedTime,
        text: page.text,
        markdown: page.markdown,
        links: page.links,
        content_length: body.length,
      },
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, error: { code: 'EXTRACTION_FAILED', message } };
  }
}

/** Read a response body up to `max` bytes; null when it is larger (the stream is cancelled). */
async function readCapped(response: Response, max: number): Promise<Buffer | null> {
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

/** A fetch error on one line, with the code and message of its cause (`fetch failed: ECONNREFUSED connect …`). */
function describeFetchError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${err.message}: ${typeof code === 'string' ? `${code} ` : ''}${cause.message}`.trim();
  }
  return err.message;
}
