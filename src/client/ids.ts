/**
 * Job IDs, derived idempotency keys and the list cursor codec.
 *
 * - A job ID is `scrape:<account>:<key>`; it is also the workflow ID.
 * - A key the caller does not give is derived from the request: the target's host and a short
 *   hash, e.g. `example.com-3fa9c1d2e4`, so that a list of jobs (CLI, Web UI) says which site each
 *   one is, and the same request always gets the same key. The URL is first put in its WHATWG
 *   serialisation ({@link canonicalUrl}), so `HTTP://Example.COM`, `http://example.com:80/` and
 *   `http://example.com/` are one address and one job.
 * - Keys derived before that (`r-<32 hex>` by the client, `row-<32 hex>` by batch files) stay valid
 *   job IDs; a repeat of such a request finds its job through {@link legacyClientKey} /
 *   {@link legacyRowKey}.
 */
import { z } from 'zod';
import { fingerprint } from '../lib/hash.js';
import { AccountSchema } from '../model/schemas.js';
import { JobNotFoundError, InvalidInputError } from './errors.js';

/** Hex characters of the request hash in a derived key (40 bits). */
export const DERIVED_HASH_CHARS = 10;

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

/** A readable derived key: `<host>-<first 10 hex of hashHex>`, e.g. `example.com-3fa9c1d2e4`. */
export function derivedKey(url: string, hashHex: string): string {
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
