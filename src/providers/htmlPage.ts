/**
 * The result page of a provider that returns the target's raw response body (ScraperAPI's
 * `response.body`, an Oxylabs `raw` result's `content`) instead of extracted fields: the body is
 * run through the same extraction as the reference provider (`src/sim/extract.ts`: JSDOM with the
 * browser's encoding rules, `@mozilla/readability`, `turndown`), so that every kind's result row
 * has a title, text, Markdown and links.
 */
import { extractPage } from '../sim/extract.js';
import type { ProviderResult } from './types.js';

/** What the provider said about the target's answer. */
export interface RawPage {
  /** The URL the job was submitted for. */
  url: string;
  /** The target's body as text (HTML, JSON, plain text), or null when the provider sent none. */
  body: string | null;
  /** The URL after redirects, when the provider says (ScraperAPI's `sa-final-url` header). */
  finalUrl?: string | null;
  /** The target's HTTP status, when the provider says. */
  httpStatus?: number | null;
  /** The target's `Content-Type`, when the provider says (absent: HTML, sniffed). */
  contentType?: string | null;
}

/**
 * The {@link ProviderResult} of a raw page: extracted title, byline, excerpt, language, site name,
 * publication time, text, Markdown and links; `contentLength` is the body's size in UTF-8 bytes.
 * A body that cannot be parsed at all (or none) gives a page with null fields and the raw text as
 * `text` (nothing is dropped). Never throws for a bad body; throws `TypeError` when `url` is not
 * absolute.
 */
export function pageFromRaw(raw: RawPage): ProviderResult {
  const finalUrl = raw.finalUrl ?? null;
  const base = {
    url: raw.url,
    finalUrl,
    httpStatus: raw.httpStatus ?? null,
    byline: null,
    excerpt: null,
    lang: null,
    siteName: null,
    publishedTime: null,
    links: [] as string[],
  };
  if (raw.body === null) return { ...base, title: null, text: null, markdown: null, contentLength: null };
  const bytes = Buffer.from(raw.body, 'utf8');
  try {
    const page = extractPage(bytes, { url: finalUrl ?? raw.url, contentType: raw.contentType ?? undefined, checkReaderable: false });
    return {
      ...base,
      title: page.title,
      byline: page.byline,
      excerpt: page.excerpt,
      lang: page.lang,
      siteName: page.siteName,
      publishedTime: page.publishedTime,
      text: page.text,
      markdown: page.markdown,
      links: page.links,
      contentLength: bytes.length,
    };
  } catch {
    return { ...base, title: null, text: raw.body, markdown: null, contentLength: bytes.length };
  }
}
