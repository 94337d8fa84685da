/**
 * The result page of a provider that returns the target's raw response body (ScraperAPI's
 * `response.body`, an Oxylabs `raw` result's `content`) instead of extracted fields: the body is
 * run through the same extraction as the reference provider (`tools/sim/extract.ts`: JSDOM with the
 * browser's encoding rules, `@mozilla/readability`, `turndown`), so that every kind's result row
 * has a title, text, Markdown and links.
 *
 * A body the provider relays as bytes (ScraperAPI's `response.base64EncodedBody`, an Oxylabs
 * `content` asked with `content_encoding: base64`) is extracted the same way when its media type
 * is textual, and otherwise kept as a binary body (bytes, media type, size, SHA-256); the text of a
 * PDF is read afterwards by `withBinaryText` (`./binaryText.ts`), which is asynchronous.
 */
import { extractPage } from './extract.js';
import { binaryBody, isTextualType, sniffMediaType } from './binaryText.js';
import type { ProviderResult } from '../../model/results.js';

/** What the provider said about the target's answer. */
interface RawPage {
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
  /**
   * The target's body as bytes, when the provider relays it so (decoded from base64); it takes
   * the place of `body`. Textual media types (HTML, text, JSON, XML) are extracted; anything else
   * (by its type, or by its first bytes when the type is missing) is kept as a binary body.
   */
  bytes?: Buffer | null;
}

/**
 * The {@link ProviderResult} of a raw page: extracted title, byline, excerpt, language, site name,
 * publication time, text, Markdown and links; `contentLength` is the body's size in bytes (UTF-8
 * for a text body). A body that cannot be parsed at all (or none) gives a page with null fields and
 * the raw text as `text` (nothing is dropped); a binary body gives a page with null text fields and
 * `body` set. Never throws for a bad body; throws `TypeError` when `url` is not absolute.
 */
export function pageFromRaw(raw: RawPage): ProviderResult {
  if (raw.bytes) {
    const sniffed = sniffMediaType(raw.bytes);
    const textual = raw.contentType ? isTextualType(raw.contentType) : sniffed === null;
    if (!textual) {
      // A generic type says nothing: the bytes tell what the file is when they can.
      const specific = raw.contentType && !/octet-stream/i.test(raw.contentType) ? raw.contentType : null;
      const page = extracted(raw, null);
      return {
        ...page,
        contentLength: raw.bytes.length,
        body: binaryBody(raw.bytes, specific ?? sniffed ?? raw.contentType ?? 'application/octet-stream'),
      };
    }
    return extracted(raw, raw.bytes);
  }
  if (raw.body === null) return extracted(raw, null);
  return extracted(raw, Buffer.from(raw.body, 'utf8'));
}

/** {@link pageFromRaw} of a textual body (`bytes`: the body, or null for none). */
function extracted(raw: RawPage, bytes: Buffer | null): ProviderResult {
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
  if (bytes === null) return { ...base, title: null, text: null, markdown: null, contentLength: null };
  try {
    const page = extractPage(bytes, {
      url: finalUrl ?? raw.url,
      contentType: raw.contentType ?? undefined,
      checkReaderable: false,
    });
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
    return {
      ...base,
      title: null,
      text: raw.body ?? bytes.toString('utf8'),
      markdown: null,
      contentLength: bytes.length,
    };
  }
}
