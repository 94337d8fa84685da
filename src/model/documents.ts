/**
 * What makes two documents of one result the same document, and how a binary body is described.
 *
 * A provider's pages can repeat a document (a page that starts with the previous page's last
 * item, an empty page followed by the same position again, a reader resuming from an inclusive
 * key), so every document carries an **identity**, unique within its result; the store writes one
 * row per identity, the first occurrence winning. The identity is, in order of preference:
 *
 * 1. `id:<provider document ID>` — where the provider gives each document an ID of its own
 *    (Firecrawl `metadata.scrapeId`, Zyte's item `_key`, a declared `id` field of an `http` entry);
 * 2. `pos:<canonical URL>#<absolute position>` — where the pagination knows the document's
 *    position in the provider's whole result (offset paging: offset + index; Bright Data parts:
 *    (part − 1) × batch size + index; Firecrawl `next` pages: the page's `skip` + index);
 * 3. `sha256:<canonical URL>#<hex SHA-256 of the document's content>` — otherwise.
 *
 * The canonical URL is the WHATWG serialisation (`new URL(u).href`); a string that does not parse
 * is kept as given, and a document without URL has an empty one.
 *
 * Uses `node:crypto`: import it from activities, providers and the store, never from workflow code.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/hash.js';

/** A binary body as kept: its bytes, media type, size (bytes) and hex SHA-256. */
export interface BinaryBody {
  bytes: Buffer;
  /** Media type as the provider reported it (or as sniffed from the bytes), e.g. `application/pdf`; null when unknown. */
  contentType: string | null;
  /** `bytes.length`. */
  size: number;
  /** Hex SHA-256 of `bytes`. */
  sha256: string;
}

/** What callers are shown of a binary body (the bytes are read separately). */
export interface BodyInfo {
  contentType: string | null;
  /** Bytes. */
  size: number;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
}

/** The body columns of a stored result or document row as a {@link BodyInfo}, or null when the row has no binary body. */
export function bodyInfoOf(r: {
  content_type: string | null;
  body_size: number | string | null;
  body_sha256: string | null;
}): BodyInfo | null {
  return r.body_sha256 === null
    ? null
    : { contentType: r.content_type, size: Number(r.body_size ?? 0), sha256: r.body_sha256 };
}

/** The {@link BinaryBody} of `bytes` with media type `contentType` (parameters such as `; charset=` dropped, lower case). */
export function binaryBody(bytes: Buffer, contentType: string | null | undefined): BinaryBody {
  return {
    bytes,
    contentType: mediaType(contentType),
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
  };
}

/** The bare media type of a `Content-Type` value (`application/pdf; x=y` → `application/pdf`), or null. */
export function mediaType(contentType: string | null | undefined): string | null {
  const t = contentType?.split(';')[0]?.trim().toLowerCase();
  return t ? t : null;
}

/** The WHATWG serialisation of `url` (`HTTPS://Example.com:443/a/../b` → `https://example.com/b`); the input as given when it does not parse; `''` for none. */
export function canonicalUrl(url: string | null | undefined): string {
  if (!url) return '';
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

/** The fields of a document that its content hash covers (what a reader sees of it; `ResultDocument` in `results.ts` without its identity). */
export interface IdentifiableDocument {
  /** The document's URL (the crawled page's, or the input URL of a dataset item), when it has one. */
  url: string | null;
  finalUrl?: string | null;
  httpStatus?: number | null;
  title?: string | null;
  markdown?: string | null;
  text?: string | null;
  links?: string[];
  /** Provider-specific fields (page metadata, a dataset item's own fields), JSON. */
  data?: Record<string, unknown>;
  /** A per-document failure (Firecrawl's `/errors`, a failed batch entry): the document has no content. */
  error?: { code?: string; message: string };
  /** The document's binary body, when the document is a file (a PDF crawled as such). */
  body?: BinaryBody | null;
}

/**
 * The identity of a document (see the module docs): `providerId` when given (non-empty), else
 * the canonical URL with `position` (a non-negative integer, the document's absolute position in
 * the provider's result), else the canonical URL with the SHA-256 of its content (every field but
 * the position; a binary body by its own SHA-256).
 */
export function documentIdentity(
  doc: IdentifiableDocument,
  opts: { providerId?: string | number | null; position?: number | null } = {},
): string {
  if (opts.providerId !== undefined && opts.providerId !== null && String(opts.providerId) !== '')
    return `id:${String(opts.providerId)}`;
  const url = canonicalUrl(doc.url);
  if (opts.position !== undefined && opts.position !== null && Number.isInteger(opts.position) && opts.position >= 0)
    return `pos:${url}#${opts.position}`;
  return `sha256:${url}#${contentHash(doc)}`;
}

/** Hex SHA-256 of a document's content: the canonical JSON of its fields, a binary body counted by its SHA-256. */
function contentHash(doc: IdentifiableDocument): string {
  const { body, ...rest } = doc;
  const content = {
    ...rest,
    url: canonicalUrl(doc.url),
    body: body ? { contentType: body.contentType, size: body.size, sha256: body.sha256 } : null,
  };
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}
