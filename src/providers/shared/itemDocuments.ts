/**
 * Documents from the items of a job's dataset, for kinds whose result is a list of arbitrary JSON
 * items written by the provider-side program (Apify dataset items, Zyte Scrapy Cloud items). The
 * item's shape is the actor's or spider's own, so only the common field names are lifted into the
 * document's columns; the rest of the item stays in `data`:
 *
 * | document field | item fields read (first string / integer found)                                |
 * |----------------|----------------------------------------------------------------------------------|
 * | `url`          | `url`, `loadedUrl`, `request.url`                                                |
 * | `finalUrl`     | `loadedUrl`, `finalUrl`, `final_url`                                             |
 * | `httpStatus`   | `httpStatusCode`, `statusCode`, `status_code`, `crawl.httpStatusCode`, `status`  |
 * | `title`        | `title`, `metadata.title`                                                        |
 * | `text`         | `text`                                                                           |
 * | `markdown`     | `markdown`                                                                       |
 *
 * `text` and `markdown` are kept in their columns only (not repeated in `data`). Every string is
 * sanitised with the call's secrets (an actor may echo its input, and the input may hold
 * credentials of the target site).
 *
 * Identity (see `src/model/documents.ts`): the item's own ID field when the kind has one (Zyte's
 * `_key`, asked for with `meta=_key`; kept out of `data`), else the item's URL with its absolute
 * position in the dataset when the read knows it, else the URL with a SHA-256 of the item.
 */
import { documentIdentity } from '../../model/documents.js';
import { sanitizeBody } from '../../lib/sanitize.js';
import type { ResultDocument } from '../../model/results.js';

function at(o: Record<string, unknown>, path: string): unknown {
  let v: unknown = o;
  for (const k of path.split('.')) {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function firstString(o: Record<string, unknown>, paths: readonly string[]): string | null {
  for (const p of paths) {
    const v = at(o, p);
    if (typeof v === 'string' && v !== '') return v;
  }
  return null;
}

function firstStatus(o: Record<string, unknown>, paths: readonly string[]): number | null {
  for (const p of paths) {
    const v = at(o, p);
    if (typeof v === 'number' && Number.isInteger(v) && v >= 100 && v <= 599) return v;
  }
  return null;
}

/** How a dataset item's identity is found (see the module docs). */
interface ItemIdentity {
  /** The item field that holds the provider's own ID of the item (Zyte: `_key`). */
  idField?: string;
  /** The item's absolute position in the provider's dataset, when the read knows it (0-based). */
  position?: number | null;
}

/**
 * One {@link ResultDocument} from one dataset item (see the module table), with its identity. A
 * non-object item (a bare string or number) is kept as `data: {value}` with no URL. `secrets`:
 * values to redact.
 */
export function documentFromItem(
  item: unknown,
  secrets: readonly string[],
  identity: ItemIdentity = {},
): ResultDocument {
  if (!item || typeof item !== 'object' || Array.isArray(item)) {
    const doc: ResultDocument = { url: null, data: { value: sanitizeBody(item, secrets) } };
    return { ...doc, identity: documentIdentity(doc, { position: identity.position }) };
  }
  const clean = sanitizeBody(item, secrets) as Record<string, unknown>;
  const { text, markdown, ...fields } = clean;
  const rawId = identity.idField !== undefined ? fields[identity.idField] : undefined;
  const providerId = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
  const rest =
    providerId !== null && identity.idField !== undefined
      ? Object.fromEntries(Object.entries(fields).filter(([k]) => k !== identity.idField))
      : fields;
  const doc: ResultDocument = {
    url: firstString(clean, ['url', 'loadedUrl', 'request.url']),
    finalUrl: firstString(clean, ['loadedUrl', 'finalUrl', 'final_url']),
    httpStatus: firstStatus(clean, ['httpStatusCode', 'statusCode', 'status_code', 'crawl.httpStatusCode', 'status']),
    title: firstString(clean, ['title', 'metadata.title']),
    text: typeof text === 'string' ? text : null,
    markdown: typeof markdown === 'string' ? markdown : null,
    data: rest,
  };
  return { ...doc, identity: documentIdentity(doc, { providerId, position: identity.position }) };
}
