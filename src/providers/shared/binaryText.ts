/**
 * Binary bodies of results (a PDF, an image that a provider relays as base64): recognising them,
 * and reading the text of a PDF.
 *
 * A PDF's text is extracted with `unpdf` (PDF.js in a build for servers: no worker, no canvas, no
 * network; it reads the bytes it is given) into `text` — pages separated by a blank line — and
 * into `markdown` as plain paragraphs (Markdown's special characters escaped, so the text reads the
 * same rendered), with the document's `Title` from its information dictionary as the title when it
 * has one. The bytes themselves are always kept (see {@link BinaryBody}); a PDF whose text cannot
 * be read keeps them with a content note that says why.
 *
 * Other binary types (images, archives) are kept as bytes without text.
 */
import { extractText, getDocumentProxy, getMeta } from 'unpdf';
import { binaryBody, mediaType, type BinaryBody } from '../../model/documents.js';
import type { ProviderResult, ResultDocument } from '../../model/results.js';

export { binaryBody };

/** Media types whose bodies are text (read as HTML or text), not kept as bytes. */
export function isTextualType(contentType: string | null | undefined): boolean {
  const t = mediaType(contentType);
  if (!t) return false;
  return t.startsWith('text/') || /(^|[+/])(html|xhtml|xml|json|javascript|ecmascript|csv)($|[+;])/.test(t);
}

/** The media type the first bytes of `bytes` show (PDF, PNG, JPEG, GIF, WebP, ZIP), or null when they show none of these. */
export function sniffMediaType(bytes: Buffer): string | null {
  const head = bytes.subarray(0, 16);
  const starts = (sig: number[], at = 0) => sig.every((b, i) => head[at + i] === b);
  // A PDF may carry a few bytes before its header (the format allows up to 1024).
  if (bytes.subarray(0, 1024).includes('%PDF-')) return 'application/pdf';
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts([0x47, 0x49, 0x46, 0x38])) return 'image/gif';
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  if (starts([0x50, 0x4b, 0x03, 0x04])) return 'application/zip';
  return null;
}

/** True for a body that is a PDF (by its media type, or by its bytes when the type is missing or generic). */
export function isPdf(body: BinaryBody): boolean {
  if (body.contentType === 'application/pdf' || body.contentType === 'application/x-pdf') return true;
  if (body.contentType && body.contentType !== 'application/octet-stream' && body.contentType !== 'binary/octet-stream')
    return false;
  return sniffMediaType(body.bytes) === 'application/pdf';
}

/**
 * Decodes `text` as base64 when all of it is base64 (standard or URL-safe alphabet, optional
 * padding, line breaks allowed) and it is not empty; otherwise null. A string with spaces,
 * punctuation or Markdown is never taken for base64.
 */
export function decodeBase64(text: string | null | undefined): Buffer | null {
  if (!text) return null;
  const compact = text.replace(/[\r\n]+/g, '');
  if (compact.length === 0 || compact.length % 4 === 1 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) return null;
  const bytes = Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
  return bytes.length > 0 ? bytes : null;
}

/** What was read from a PDF. */
interface PdfText {
  /** The document's `Title` (information dictionary), or null when it has none. */
  title: string | null;
  /** Every page's text, pages separated by a blank line. */
  text: string;
  /** The text as Markdown plain paragraphs (special characters escaped). */
  markdown: string;
  /** Pages in the document. */
  pages: number;
}

const MD_INLINE = /[\\`*_[\]<>|~]/g;

/** One paragraph (trimmed) as Markdown that renders as the same plain text. */
function markdownParagraph(p: string): string {
  // Inline marks escaped; a paragraph that starts like a heading, quote, list item or rule would not stay a paragraph.
  return p
    .replace(MD_INLINE, (c) => `\\${c}`)
    .replace(/^([#>+\-=])/, '\\$1')
    .replace(/^(\d+)([.)])/, '$1\\$2');
}

/** The paragraphs of one page's text: blocks separated by blank lines, each block's lines joined by spaces. */
function paragraphsOf(page: string): string[] {
  return page
    .split(/\n\s*\n/)
    .map((block) =>
      block
        .split('\n')
        .map((l) => l.replace(/\s+/g, ' ').trim())
        .filter(Boolean)
        .join(' '),
    )
    .filter(Boolean);
}

/**
 * Reads the text and title of the PDF in `bytes`. Throws the library's error for bytes that are
 * not a readable PDF (a damaged file, an encrypted one without its password).
 */
export async function pdfText(bytes: Buffer): Promise<PdfText> {
  // The library takes ownership of the array it is given: hand it a copy. Verbosity 0: errors
  // only (its warnings about damaged files would go to the worker's console, not its log); no eval
  // of font programs.
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false });
  try {
    const { totalPages, text } = await extractText(pdf, { mergePages: false });
    const pages = (Array.isArray(text) ? text : [text]).map((t) => t.replace(/\r\n?/g, '\n').trim());
    let title: string | null = null;
    try {
      const info = (await getMeta(pdf)).info as { Title?: unknown } | undefined;
      title = typeof info?.Title === 'string' && info.Title.trim() !== '' ? info.Title.trim() : null;
    } catch {
      title = null; // a PDF without a readable information dictionary simply has no title
    }
    return {
      title,
      text: pages.filter(Boolean).join('\n\n'),
      markdown: pages.flatMap(paragraphsOf).map(markdownParagraph).join('\n\n'),
      pages: totalPages,
    };
  } finally {
    await pdf.destroy();
  }
}

const blank = (s: string | null | undefined) => s === null || s === undefined || s.trim() === '';

/** The text fields a PDF body gives a page or document that has none, or the reason it gives none. */
type PdfReading = { ok: true; pdf: PdfText } | { ok: false; reason: string };

async function readPdf(body: BinaryBody): Promise<PdfReading> {
  try {
    return { ok: true, pdf: await pdfText(body.bytes) };
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message.split('\n')[0]! : String(e) };
  }
}

/**
 * `result` with the text of its PDF bodies filled in: the row's (when its `text` is empty) and
 * every document's. Title: the PDF's own when it has one (a provider's title for a file is a guess
 * from its name), else the page's. Text and Markdown: the PDF's (see
 * {@link pdfText}); `contentLength` of the row: the body's size. A PDF that cannot be read keeps
 * its bytes, and the row gets a `contentNote` naming the reason. Bodies that are not PDFs are left
 * as they are. Never throws for a bad body.
 */
export async function withBinaryText(result: ProviderResult): Promise<ProviderResult> {
  // The row of a one-page result often holds the same file as its document: read each file once.
  const read = new Map<string, Promise<PdfReading>>();
  const fromPdf = (body: BinaryBody): Promise<PdfReading> => {
    let r = read.get(body.sha256);
    if (!r) read.set(body.sha256, (r = readPdf(body)));
    return r;
  };
  let out = result;
  if (result.body && isPdf(result.body) && blank(result.text)) {
    const r = await fromPdf(result.body);
    out = r.ok
      ? {
          ...result,
          title: r.pdf.title ?? result.title,
          text: r.pdf.text || null,
          markdown: blank(result.markdown) ? r.pdf.markdown || null : result.markdown,
          contentLength: result.body.size,
        }
      : {
          ...result,
          contentLength: result.body.size,
          contentNote:
            result.contentNote ??
            `binary body kept (${result.body.contentType ?? 'PDF'}, ${result.body.size} bytes); its text could not be extracted: ${r.reason}`,
        };
  }
  if (!result.documents?.some((d) => d.body && isPdf(d.body) && blank(d.text))) return out;
  const documents: ResultDocument[] = [];
  for (const d of result.documents) {
    if (!d.body || !isPdf(d.body) || !blank(d.text)) {
      documents.push(d);
      continue;
    }
    const r = await fromPdf(d.body);
    documents.push(
      r.ok
        ? {
            ...d,
            title: r.pdf.title ?? d.title ?? null,
            text: r.pdf.text || null,
            markdown: blank(d.markdown) ? r.pdf.markdown || null : d.markdown,
          }
        : d,
    );
  }
  return { ...out, documents };
}
