/**
 * A scrape's result as every part shares it: the page ({@link ResultPayload}), the documents of a
 * multi-document result ({@link ResultDocument}), what an adapter returns ({@link ProviderResult}),
 * what the store writes ({@link ResultWrite}) and reads back ({@link StoredDocument}), and the rules
 * of an empty result (a content note instead of nothing).
 *
 * Uses `node:crypto` (through `documents.ts`): import it from activities, providers and the store,
 * never from workflow code.
 */
import { documentIdentity, type BinaryBody, type BodyInfo, type IdentifiableDocument } from './documents.js';

/** The extracted page as the store keeps it. */
export interface ResultPayload {
  url: string;
  finalUrl: string | null;
  httpStatus: number | null;
  title: string | null;
  byline: string | null;
  excerpt: string | null;
  lang: string | null;
  siteName: string | null;
  publishedTime: string | null;
  text: string | null;
  markdown: string | null;
  links: string[];
  contentLength: number | null;
  /** The target's body when it is binary (a PDF, an image): bytes, media type, size, SHA-256. Absent or null for a text page. */
  body?: BinaryBody | null;
  /**
   * Why the content is empty or partial, when the reader of the result must know (a PDF whose text
   * could not be extracted). The store adds the note of an empty result itself (see
   * {@link contentNoteOf}).
   */
  contentNote?: string | null;
}

/**
 * One document of a multi-document result (a crawled page, a dataset item, a batch entry), kept
 * beside the job's result row and written in the same transaction as the move to `completed`. Strings from the
 * provider are sanitised before they get here.
 */
export interface ResultDocument extends IdentifiableDocument {
  /**
   * The document's identity within its result (see `src/model/documents.ts`): set by the
   * pagination and document helpers and the adapters; when absent the store uses the canonical URL
   * with a SHA-256 of the content. Documents with the same identity are written once.
   */
  identity?: string;
}

/** A stored document: a {@link ResultDocument} with its position `seq` (0-based, dense), its identity and what is known of its binary body (no bytes). */
export type StoredDocument = Omit<ResultDocument, 'body' | 'identity'> & {
  seq: number;
  identity: string;
  body: BodyInfo | null;
};

/** Prefix of the {@link ResultPayload.contentNote} of a result with no usable content. */
export const EMPTY_NOTE_PREFIX = 'empty:';

/** Prefix of the {@link ResultPayload.contentNote} of a page the target answered with an HTTP error status. */
const TARGET_ERROR_NOTE_PREFIX = 'target error:';

/** Prefix of the {@link ResultPayload.contentNote} of a result with fewer documents than the provider counts. */
const PARTIAL_NOTE_PREFIX = 'partial:';

/**
 * A multi-document result compared with the provider's own count of it, after every page that
 * could be read: Firecrawl's `completed`, the item count of an Apify dataset or a Zyte job, the
 * record count of a Bright Data snapshot. Set by the adapter that read the pages.
 */
export interface ResultCompleteness {
  /** Documents the provider counts for the task (its own count, read with or after the pages). */
  expected: number;
  /**
   * Distinct documents read that the provider's count covers (per-document failures left out when
   * the provider does not count them; a document repeated across pages counted once).
   */
  kept: number;
  /** Whose count `expected` is, as the note names it, e.g. ``Firecrawl's `completed` ``. */
  counter: string;
  /** Why fewer documents could be read, when the reader knows (e.g. the pages repeated). */
  why?: string;
}

/** True when `c` says fewer documents were read than the provider counts. */
export function isPartial(c: ResultCompleteness | null | undefined): boolean {
  return c !== undefined && c !== null && c.kept < c.expected;
}

/**
 * The note of a partial result: `partial: kept N of the M documents <counter> counts (<why>)`;
 * null when `c` is not partial.
 */
function partialNoteOf(c: ResultCompleteness | null | undefined): string | null {
  if (!c || !isPartial(c)) return null;
  const why = c.why ?? 'the provider served no more pages';
  return `${PARTIAL_NOTE_PREFIX} kept ${c.kept} of the ${c.expected} documents ${c.counter} counts (${why})`;
}

const blank = (s: string | null | undefined) => s === null || s === undefined || s.trim() === '';

/** True when a page (the result row's fields, or a document's) has usable content: a title, text, Markdown, links or a binary body. */
function pageHasContent(
  p: Partial<Pick<ResultPayload, 'title' | 'text' | 'markdown' | 'body'>> & { links?: readonly string[] },
): boolean {
  return (
    !blank(p.title) || !blank(p.text) || !blank(p.markdown) || (p.links?.length ?? 0) > 0 || (p.body?.size ?? 0) > 0
  );
}

/** True when a document has usable content: no per-document error, and a title, text, Markdown, links, a binary body or provider fields. */
function documentHasContent(d: ResultDocument): boolean {
  return !d.error && (pageHasContent(d) || (d.data !== undefined && Object.keys(d.data).length > 0));
}

/**
 * The content note of a result (`documents`: its documents as they will be stored): a partial
 * result's note first (see {@link partialNoteOf}), then the payload's own note, then a target's
 * HTTP error status (`target error: …`, for a page of status 400 or more); else — when neither the
 * page nor any document has usable content — a note starting with {@link EMPTY_NOTE_PREFIX} that
 * says what the provider returned; null for a complete result with content from a page that
 * answered below 400.
 */
export function contentNoteOf(
  payload: ResultPayload & { completeness?: ResultCompleteness | null },
  documents: readonly ResultDocument[],
): string | null {
  const partial = partialNoteOf(payload.completeness);
  // A page the target answered with an error status (a 404, a 403 block) is its error page: kept,
  // as the provider did the work, but never a silent `completed`.
  const target =
    (payload.httpStatus ?? 0) >= 400
      ? `${TARGET_ERROR_NOTE_PREFIX} the target answered HTTP ${payload.httpStatus}: the content is its error page`
      : null;
  if (partial || payload.contentNote) return [partial, payload.contentNote, target].filter(Boolean).join('; ');
  if (pageHasContent(payload) || documents.some(documentHasContent)) return target;
  if (documents.length === 0)
    return `${EMPTY_NOTE_PREFIX} the provider returned no content${payload.httpStatus ? ` (target HTTP ${payload.httpStatus})` : ''}`;
  const errors = documents.filter((d) => d.error);
  if (errors.length === documents.length) {
    const f = errors[0]!.error!;
    return `${EMPTY_NOTE_PREFIX} all ${documents.length} document(s) are per-document errors (first: ${f.code ? `${f.code}: ` : ''}${f.message})`;
  }
  return `${EMPTY_NOTE_PREFIX} the provider returned ${documents.length} document(s) without content${errors.length ? ` (${errors.length} of them errors)` : ''}`;
}

/**
 * The documents to store: each with its identity (its own, else the canonical URL with a SHA-256
 * of its content), the first occurrence of an identity kept and later ones dropped, in order.
 */
export function uniqueDocuments(documents: readonly ResultDocument[]): (ResultDocument & { identity: string })[] {
  const seen = new Set<string>();
  const out: (ResultDocument & { identity: string })[] = [];
  for (const d of documents) {
    const identity = d.identity ?? documentIdentity(d);
    if (seen.has(identity)) continue;
    seen.add(identity);
    out.push({ ...d, identity });
  }
  return out;
}

/**
 * What `store.results.writeOnce` writes: the result row's page, plus every document of a
 * multi-document result and, where the provider counts them, the comparison with its count.
 */
export type ResultWrite = ResultPayload & {
  documents?: readonly ResultDocument[];
  completeness?: ResultCompleteness | null;
};

/** What an adapter returns for a result: the primary page, plus every document of a multi-document job. */
export type ProviderResult = ResultPayload & {
  /**
   * Every document of a multi-document job (crawl pages, dataset items, batch entries), in the
   * provider's order; absent for a single-page scrape (the payload itself is the page).
   */
  documents?: ResultDocument[];
  /** The documents compared with the provider's own count, where the provider gives one. */
  completeness?: ResultCompleteness;
};
