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
 */
import { sanitizeBody } from '../lib/sanitize.js';
import type { ResultDocument } from './types.js';

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

/**
 * One {@link ResultDocument} from one dataset item (see the module table). A non-object item (a
 * bare string or number) is kept as `data: {value}` with no URL. `secrets`: values to redact.
 */
export function documentFromItem(item: unknown, secrets: readonly string[]): ResultDocument {
  if (!item || typeof item !== 'object' || Array.isArray(item)) {
    return { url: null, data: { value: sanitizeBody(item, secrets) } };
  }
  const clean = sanitizeBody(item, secrets) as Record<string, unknown>;
  const { text, markdown, ...rest } = clean;
  return {
    url: firstString(clean, ['url', 'loadedUrl', 'request.url']),
    finalUrl: firstString(clean, ['loadedUrl', 'finalUrl', 'final_url']),
    httpStatus: firstStatus(clean, ['httpStatusCode', 'statusCode', 'status_code', 'crawl.httpStatusCode', 'status']),
    title: firstString(clean, ['title', 'metadata.title']),
    text: typeof text === 'string' ? text : null,
    markdown: typeof markdown === 'string' ? markdown : null,
    data: rest,
  };
}
