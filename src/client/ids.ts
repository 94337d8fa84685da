/**
 * Job IDs, derived idempotency keys and the list cursor codec.
 *
 * - A job ID is `scrape:<account>:<key>`; it is also the workflow ID.
 * - A key the caller does not give is derived from the request: the target's host, a short slug
 *   of its path and a short hash, e.g. `example.com-articles-poll-politely-3fa9c1d2e4`, so that a
 *   list of jobs (CLI, Web UI) says which page each one is, and the same request always gets the
 *   same key. The URL is first put in its WHATWG serialisation ({@link canonicalUrl}), so
 *   `HTTP://Example.COM`, `http://example.com:80/` and `http://example.com/` are one address and
 *   one job.
 * - A derived key is a promise kept forever: the same request must find its job after an upgrade.
 *   So {@link pathSlug} is frozen (no library's transliteration table, which could change under
 *   us), and every earlier form stays valid: `<host>-<hash>` ({@link hostHashKey}), and before it
 *   `r-<32 hex>` by the client and `row-<32 hex>` by batch files ({@link legacyClientKey} /
 *   {@link legacyRowKey}). A repeat of a request whose job has one of those keys finds that job.
 */
import { z } from 'zod';
import { fingerprint } from '../lib/hash.js';
import { AccountSchema } from '../model/schemas.js';
import { JobNotFoundError, InvalidInputError } from './errors.js';

/** Hex characters of the request hash in a derived key (40 bits). */
const DERIVED_HASH_CHARS = 10;

/** Builds the job ID for (account, key). */
export function jobIdFor(account: string, key: string): string {
  return `scrape:${account}:${key}`;
}

/** Splits a job ID into account and key; undefined when it is not one of ours. */
export function parseJobId(jobId: string): { account: string; key: string } | undefined {
  const m = /^scrape:([A-Za-z0-9._-]{1,64}):([A-Za-z0-9._:-]{1,200})$/.exec(jobId);
  return m ? { account: m[1]!, key: m[2]! } : undefined;
}

/** A full job ID as given, or the job ID of `account` for a bare key. */
export function jobIdOf(idOrKey: string, account: string): string {
  return idOrKey.startsWith('scrape:') ? idOrKey : jobIdFor(account, idOrKey);
}

/**
 * Checks that `jobId` is one of ours and belongs to `account`; returns its parts. Throws
 * {@link JobNotFoundError} otherwise (another account's job is indistinguishable from a missing one).
 */
export function authorize(account: string, jobId: string): { account: string; key: string } {
  const ok = AccountSchema.safeParse(account).success ? parseJobId(jobId) : undefined;
  if (!ok || ok.account !== account) throw new JobNotFoundError(jobId);
  return ok;
}

/**
 * The WHATWG URL Standard serialisation of an absolute URL (what `new URL(url).href` gives): scheme
 * and host lower-cased, an internationalised host in punycode (`bücher.example` →
 * `xn--bcher-kva.example`), the scheme's default port dropped, an empty path made `/`, unsafe
 * characters percent-encoded. Throws a `TypeError` for a string that is not an absolute URL.
 */
export function canonicalUrl(url: string): string {
  return new URL(url).href;
}

/** The host part of a derived key: the URL's host name, IPv6 brackets dropped, other characters outside `A-Za-z0-9.-` as `-`, at most 100 characters. */
export function hostLabel(url: string): string {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/[^A-Za-z0-9.-]/g, '-');
  return host.slice(0, 100) || 'host';
}

/**
 * Most characters of the path slug in a derived key. 40 holds the last four to six words of a
 * path (`articles-poll-politely`, `europe-heat-wave-breaks-june-record`), which is what tells the
 * pages of one site apart, while a job ID stays short enough to read at a glance: with a host of
 * 25 characters and an account of 10 it is at most 25 + 10 + 40 + 20 = 95 characters, and the
 * host, the first thing a reader looks for, is never cut. A derived key is at most 100 (host) +
 * 1 + 40 + 1 + 10 = 152 characters, within the 200 of a key.
 */
export const PATH_SLUG_MAX_CHARS = 40;

/** A last path segment's extension that names a page type, not the page: dropped from the slug. */
const PAGE_EXTENSION = /\.(?:s?html?|xhtml|php\d?|aspx?|jspx?|cfm)$/i;

/** Latin letters that Unicode decomposition leaves whole, spelled in ASCII. */
const LETTERS: Readonly<Record<string, string>> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  ł: 'l',
  þ: 'th',
  ı: 'i',
};

/** `segment` with its percent-encoded runs decoded (a run that is not UTF-8 becomes a separator). */
function decodeSegment(segment: string): string {
  return segment.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return ' ';
    }
  });
}

/** The lower-case ASCII words of `text`: accents dropped (NFKD), other scripts and punctuation as separators. */
function asciiWords(text: string): string[] {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[ßæœøđðłþı]/g, (c) => LETTERS[c]!)
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/**
 * The path slug of a derived key: the words of the URL's path, lower-case ASCII joined by `-`, at
 * most {@link PATH_SLUG_MAX_CHARS} characters, e.g. `articles-poll-politely` for
 * `/articles/poll-politely.html`. Empty for the root path (and a path without Latin letters or
 * digits). Rules, frozen (a change would give a repeated request another key):
 * - only the path: the query and the fragment are left out (tracking parameters, session IDs; the
 *   hash tells such URLs apart), and so are the host and the user-info;
 * - percent-encoding is decoded, then accents dropped (`b%C3%BCcher` → `bucher`), a few letters
 *   spelled out (`ß` → `ss`), other characters (other scripts, punctuation, `/`) separate words;
 * - the last segment's page extension (`.html`, `.php`, `.aspx`, …) is dropped;
 * - when the words are longer than the bound, the last words that fit are kept (the end of a path
 *   names the page, its start is shared by the site's pages); a last word longer than the bound
 *   keeps its first {@link PATH_SLUG_MAX_CHARS} characters.
 * Throws a `TypeError` for a string that is not an absolute URL.
 */
export function pathSlug(url: string): string {
  const segments = new URL(url).pathname.split('/').filter(Boolean);
  const words = segments.flatMap((segment, i) => {
    const decoded = decodeSegment(segment);
    return asciiWords(i === segments.length - 1 ? decoded.replace(PAGE_EXTENSION, '') : decoded);
  });
  const kept: string[] = [];
  let length = -1;
  for (let i = words.length - 1; i >= 0; i--) {
    const word = words[i]!;
    if (length + 1 + word.length > PATH_SLUG_MAX_CHARS) {
      if (kept.length === 0) kept.push(word.slice(0, PATH_SLUG_MAX_CHARS));
      break;
    }
    kept.unshift(word);
    length += 1 + word.length;
  }
  return kept.join('-');
}

/**
 * A readable derived key: `<host>-<path slug>-<first 10 hex of hashHex>`, e.g.
 * `example.com-articles-poll-politely-3fa9c1d2e4` ({@link hostLabel}, {@link pathSlug}); for a
 * path without a slug (the root) `<host>-<hash>`, e.g. `example.com-3fa9c1d2e4`.
 */
export function derivedKey(url: string, hashHex: string): string {
  const slug = pathSlug(url);
  return `${hostLabel(url)}-${slug ? `${slug}-` : ''}${hashHex.slice(0, DERIVED_HASH_CHARS)}`;
}

/**
 * The key derived before path slugs, `<host>-<first 10 hex of hashHex>` (e.g.
 * `example.com-3fa9c1d2e4`): a former key of the request whose {@link derivedKey} has a slug.
 */
export function hostHashKey(url: string, hashHex: string): string {
  return `${hostLabel(url)}-${hashHex.slice(0, DERIVED_HASH_CHARS)}`;
}

/** The key the client derived before readable keys, from the URL as typed: `r-<32 hex>`. */
export function legacyClientKey(
  provider: string,
  request: { url: string; format: string; options: Record<string, unknown> },
): string {
  return `r-${fingerprint({ provider, request }).slice(0, 32)}`;
}

/** The key a batch row got before readable keys, from the URL as typed: `row-<32 hex>`. */
export function legacyRowKey(row: {
  url: string;
  format: string | null;
  provider: string | null;
  rest: Record<string, unknown>;
}): string {
  return `row-${fingerprint(row).slice(0, 32)}`;
}

/** Position in a job list ordered by (`created_at` desc, `id` asc). */
const CursorSchema = z.object({ createdAt: z.string().min(1).max(64), id: z.string().min(1).max(300) }).strict();
type Cursor = z.infer<typeof CursorSchema>;

/** The opaque `next_cursor` of a list page: base64url of `{createdAt, id}` of its last row. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify({ createdAt: c.createdAt, id: c.id })).toString('base64url');
}

/** Decodes a cursor made by {@link encodeCursor}; throws {@link InvalidInputError} for anything else. */
export function decodeCursor(cursor: string): Cursor {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    json = undefined;
  }
  const parsed = CursorSchema.safeParse(json);
  if (!parsed.success)
    throw new InvalidInputError(
      'invalid cursor: pass the next_cursor of the previous page unchanged',
      parsed.error.issues,
    );
  return parsed.data;
}
