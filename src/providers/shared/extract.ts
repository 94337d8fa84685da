/**
 * Page extraction: raw response bytes in, article fields out. The product uses it for providers
 * that relay a page's raw HTML (`htmlPage.ts`), and the reference provider in `tools/sim` for the
 * pages it fetches.
 *
 * The document is built by JSDOM from the *raw bytes* together with the response `Content-Type`,
 * so the encoding is determined the way a browser does it (BOM, then the header's `charset`, then
 * `<meta charset>` / `<meta http-equiv>` prescan, then UTF-8); pages in Shift_JIS, GBK,
 * windows-1252... decode correctly. The article is extracted by `@mozilla/readability` and
 * converted to Markdown with `turndown`. Scripts are never run and no sub-resource is loaded.
 *
 */
import { JSDOM, VirtualConsole } from 'jsdom';
import { Readability, isProbablyReaderable } from '@mozilla/readability';
import TurndownService from 'turndown';

/** Options of {@link extractPage}. */
export interface ExtractOptions {
  /** Absolute URL of the document (the final URL after redirects); base for relative links. */
  url: string;
  /** The response `Content-Type` header, e.g. `text/html; charset=shift_jis`. Absent = HTML, sniffed. */
  contentType?: string;
  /** Compute {@link ExtractedPage.readerable} with `isProbablyReaderable` (default true). */
  checkReaderable?: boolean;
}

/**
 * What {@link extractPage} returns. String fields are `null` when the page does not provide them.
 *
 * - `title`: exactly Readability's `article.title`; `document.title` when Readability found no
 *   article (null when that is empty too).
 * - `byline`, `excerpt`, `lang`, `dir`, `siteName`, `publishedTime`: Readability's fields (`lang`
 *   and `dir` fall back to the `<html>` attributes when there is no article).
 * - `text`: the article's `textContent` with every run of whitespace collapsed to one space.
 * - `markdown`: turndown of the article's HTML (ATX headings, fenced code, `-` bullets).
 * - `links`: every `a[href]` of the original document resolved against the document base URL,
 *   only http/https, fragment removed, deduplicated, in document order.
 * - `length`: characters in `text`. `bytes`: size of the input body in bytes.
 * - `mimeType`: the MIME essence used (`text/html` when absent or unparseable).
 * - `readerable`: `isProbablyReaderable` of the original document (null when not computed or not
 *   HTML). It never blocks extraction.
 * - `usedReadability`: false when Readability returned null or threw and the whole `<body>` was used.
 */
export interface ExtractedPage {
  title: string | null;
  byline: string | null;
  excerpt: string | null;
  lang: string | null;
  dir: string | null;
  siteName: string | null;
  publishedTime: string | null;
  text: string;
  markdown: string;
  links: string[];
  length: number;
  bytes: number;
  mimeType: string;
  readerable: boolean | null;
  usedReadability: boolean;
}

/** Thrown by {@link extractPage} when the bytes cannot be turned into a document at all. */
export class ExtractionError extends Error {
  override readonly name = 'ExtractionError';
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

let turndownSingleton: TurndownService | undefined;
function turndown(): TurndownService {
  if (!turndownSingleton) {
    turndownSingleton = new TurndownService({
      headingStyle: 'atx',
      codeBlockStyle: 'fenced',
      bulletListMarker: '-',
      emDelimiter: '*',
    });
    turndownSingleton.remove(['script', 'style', 'noscript', 'template']);
  }
  return turndownSingleton;
}

/** Collapse every whitespace run (including NBSP) to one space and trim. */
export function normalizeWhitespace(s: string): string {
  return s.replace(/[\s\u00a0]+/g, ' ').trim();
}

interface ParsedContentType {
  essence: string;
  charset: string | null;
}

function parseContentType(contentType: string | undefined): ParsedContentType {
  if (!contentType) return { essence: 'text/html', charset: null };
  const [rawEssence, ...params] = contentType.split(';');
  const essence = (rawEssence ?? '').trim().toLowerCase();
  let charset: string | null = null;
  for (const p of params) {
    const m = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(p);
    if (m?.[1]) charset = m[1];
  }
  if (!/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(essence)) return { essence: 'text/html', charset };
  return { essence, charset };
}

function isTextual(essence: string): boolean {
  return (
    essence.startsWith('text/') ||
    essence === 'application/json' ||
    essence === 'application/xml' ||
    essence === 'application/javascript' ||
    essence.endsWith('+json') ||
    essence.endsWith('+xml')
  );
}

function decodeText(body: Buffer, charset: string | null): string {
  if (charset) {
    try {
      return new TextDecoder(charset).decode(body);
    } catch {
      // unknown label: fall through to UTF-8
    }
  }
  return new TextDecoder('utf-8').decode(body);
}

/** Remove the contents of `<style>` elements at byte level (ASCII-compatible encodings only). */
function stripStyleBlocks(body: Buffer): Buffer {
  const s = body.toString('latin1').replace(/(<style\b[^>]*>)[\s\S]*?(<\/style\s*>)/gi, '$1$2');
  return Buffer.from(s, 'latin1');
}

function buildDom(body: Buffer, url: string, charset: string | null): JSDOM {
  // A silent virtual console: JSDOM reports unparseable CSS etc. there; we do not want that noise.
  const make = (bytes: Buffer, cs: string | null): JSDOM =>
    new JSDOM(bytes, {
      url,
      contentType: cs ? `text/html; charset=${cs}` : 'text/html',
      virtualConsole: new VirtualConsole(),
    });
  const attempts: Array<() => JSDOM> = [
    () => make(body, charset),
    // An unknown charset label: let JSDOM sniff instead.
    ...(charset ? [() => make(body, null)] : []),
    // JSDOM's CSS parser (cssstyle) throws on some real stylesheets; Readability drops <style>
    // anyway, so parse again without stylesheet contents.
    () => make(stripStyleBlocks(body), charset),
    ...(charset ? [() => make(stripStyleBlocks(body), null)] : []),
  ];
  let lastError: unknown;
  for (const attempt of attempts) {
    try {
      return attempt();
    } catch (err) {
      lastError = err;
    }
  }
  throw new ExtractionError(
    `cannot parse document: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
  );
}

function collectLinks(doc: Document): string[] {
  const seen = new Set<string>();
  const base = doc.baseURI;
  for (const a of Array.from(doc.querySelectorAll('a[href]'))) {
    const href = a.getAttribute('href')?.trim();
    if (!href) continue;
    let resolved: URL;
    try {
      resolved = new URL(href, base);
    } catch {
      continue;
    }
    if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') continue;
    resolved.hash = '';
    seen.add(resolved.href);
  }
  return [...seen];
}

function emptyToNull(v: string | null | undefined): string | null {
  return v === undefined || v === null || v === '' ? null : v;
}

/** The {@link ExtractedPage} of `body` with `text` and `markdown`; what `found` does not give is null (no links, no Readability). */
function extracted(
  body: Buffer,
  mimeType: string,
  text: string,
  markdown: string,
  found: Partial<ExtractedPage> = {},
): ExtractedPage {
  return {
    title: null,
    byline: null,
    excerpt: null,
    lang: null,
    dir: null,
    siteName: null,
    publishedTime: null,
    text,
    markdown,
    links: [],
    length: text.length,
    bytes: body.length,
    mimeType,
    readerable: null,
    usedReadability: false,
    ...found,
  };
}

/**
 * Extract the article of one fetched page.
 *
 * @param body raw response bytes, undecoded.
 * @param opts `url`: absolute final URL (document base); `contentType`: the response
 *   `Content-Type` header (its `charset` wins over `<meta charset>`, as in browsers).
 * @returns the extracted fields, see {@link ExtractedPage}. Non-HTML textual bodies (`text/plain`,
 *   JSON, XML) yield their decoded text as `text` and `markdown` with a null title; other binary
 *   types yield empty text.
 * @throws ExtractionError when no document can be built from the bytes; TypeError when `url` is
 *   not an absolute URL.
 */
export function extractPage(body: Buffer, opts: ExtractOptions): ExtractedPage {
  const url = new URL(opts.url).href;
  const { essence, charset } = parseContentType(opts.contentType);

  if (!HTML_TYPES.has(essence)) {
    const text = isTextual(essence) ? decodeText(body, charset) : '';
    return extracted(body, essence, normalizeWhitespace(text), text.trim());
  }

  const dom = buildDom(body, url, charset);
  try {
    const doc = dom.window.document;
    const documentTitle = emptyToNull(doc.title);
    const links = collectLinks(doc);
    let readerable: boolean | null = null;
    if (opts.checkReaderable !== false) {
      try {
        readerable = isProbablyReaderable(doc);
      } catch {
        readerable = null;
      }
    }
    const htmlLang = emptyToNull(doc.documentElement?.getAttribute('lang'));
    const htmlDir = emptyToNull(doc.documentElement?.getAttribute('dir'));

    let article: ReturnType<Readability['parse']> = null;
    try {
      // Readability mutates the document, so everything read from the original comes first.
      article = new Readability(doc).parse();
    } catch {
      article = null;
    }

    if (article) {
      const text = normalizeWhitespace(article.textContent ?? '');
      const markdown = article.content ? turndown().turndown(article.content).trim() : '';
      return extracted(body, essence, text, markdown, {
        title: article.title ?? documentTitle,
        byline: emptyToNull(article.byline),
        excerpt: emptyToNull(article.excerpt),
        lang: emptyToNull(article.lang) ?? htmlLang,
        dir: emptyToNull(article.dir) ?? htmlDir,
        siteName: emptyToNull(article.siteName),
        publishedTime: emptyToNull(article.publishedTime),
        links,
        readerable,
        usedReadability: true,
      });
    }

    // No article: fall back to the whole body (Readability may have altered it, so re-parse).
    const fresh = buildDom(body, url, charset);
    try {
      const fdoc = fresh.window.document;
      fdoc.querySelectorAll('script, style, noscript, template').forEach((n) => n.remove());
      const bodyEl = fdoc.body;
      const text = normalizeWhitespace(bodyEl?.textContent ?? '');
      const markdown = bodyEl ? turndown().turndown(bodyEl.innerHTML).trim() : '';
      return extracted(body, essence, text, markdown, {
        title: documentTitle,
        lang: htmlLang,
        dir: htmlDir,
        links,
        readerable,
      });
    } finally {
      fresh.window.close();
    }
  } finally {
    dom.window.close();
  }
}
