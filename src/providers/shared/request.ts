/**
 * The parts of a provider request built before it is sent: its URL (the base URL joined keeping its
 * path prefix, path segments encoded, query parameters), a form body's shape, and where the
 * credential goes ({@link CredentialPlacement}). `http.ts` sends the request; it re-exports these.
 */
import { splitBasicCredential } from './credentials.js';
import { ProviderError } from './errors.js';

/** A form-encoded body: repeated keys by arrays (Zyte's `add_tag=a&add_tag=b`). */
export type FormBody = Record<string, string | number | boolean | readonly string[] | undefined>;

/**
 * Joins `path` to `baseUrl` keeping the base's path prefix (`new URL('/x', 'https://h/api/')`
 * would drop `/api`): `joinUrl('https://h/api/v2', '/jobs/1')` → `https://h/api/v2/jobs/1`.
 * Query parameters from `query` are appended (undefined values skipped, arrays repeated); the
 * base's own query parameters are kept. Path values must be encoded by the caller ({@link path}).
 */
export function joinUrl(baseUrl: string, relPath: string, query?: QueryParams): string {
  const u = new URL(baseUrl);
  const [p, q] = relPath.split('?', 2) as [string, string | undefined];
  const prefix = u.pathname.replace(/\/+$/, '');
  const rest = p.replace(/^\/+/, '');
  u.pathname = rest ? `${prefix}/${rest}` : prefix || '/';
  if (q) for (const [k, v] of new URLSearchParams(q)) u.searchParams.append(k, v);
  appendQuery(u, query);
  return u.toString();
}

/** Query parameters of a request: undefined values are skipped, arrays repeated. */
export type QueryParams = Record<string, string | number | boolean | readonly string[] | undefined>;

/** Appends `query` to `u`'s search parameters (undefined values skipped, arrays repeated). */
export function appendQuery(u: URL, query: QueryParams | undefined): void {
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, String(item));
    else u.searchParams.set(k, String(v));
  }
}

/**
 * Tagged template for request paths: every interpolated value is percent-encoded as one path
 * segment. `path\`/v2/crawl/${id}\`` with `id = "a/b"` gives `/v2/crawl/a%2Fb`.
 */
export function path(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(String(values[i])) : ''), '');
}

/**
 * Where a provider wants the credential (`CallContext.apiKey`):
 * - `header`: `<name>: <scheme> <key>` (default `Authorization: Bearer <key>`; `scheme: ''` for the
 *   bare key, e.g. `x-api-key`);
 * - `query`: `?<name>=<key>` (Crawlbase/Apify `token`, Zyte `apikey`, ScraperAPI `api_key`);
 * - `basic`: `Authorization: Basic base64(user:password)` — the credential must be `user:password`;
 * - `body`: field `<name>` of the JSON object body or of the form body (ScraperAPI async `apiKey`);
 * - `none`: not sent (ScraperAPI's status URL needs no key).
 */
export type CredentialPlacement =
  | { in: 'header'; name?: string; scheme?: string }
  | { in: 'query'; name: string }
  | { in: 'basic' }
  | { in: 'body'; name: string }
  | { in: 'none' };

/** Applies a {@link CredentialPlacement} to a request's URL, headers and body. */
export function placeCredential(
  req: { url: string; headers: Record<string, string>; json?: unknown; form?: FormBody },
  auth: CredentialPlacement,
  apiKey: string,
  provider: string,
): { url: string; headers: Record<string, string>; json?: unknown; form?: FormBody } {
  switch (auth.in) {
    case 'none':
      return req;
    case 'header': {
      const scheme = auth.scheme ?? 'Bearer';
      return {
        ...req,
        headers: {
          ...req.headers,
          [(auth.name ?? 'authorization').toLowerCase()]: scheme ? `${scheme} ${apiKey}` : apiKey,
        },
      };
    }
    case 'query': {
      const u = new URL(req.url);
      u.searchParams.set(auth.name, apiKey);
      return { ...req, url: u.toString() };
    }
    case 'basic': {
      const { user, password } = splitBasicCredential(apiKey, provider);
      return {
        ...req,
        headers: {
          ...req.headers,
          authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
        },
      };
    }
    case 'body': {
      if (req.form !== undefined) return { ...req, form: { ...req.form, [auth.name]: apiKey } };
      if (req.json === undefined) return { ...req, json: { [auth.name]: apiKey } };
      if (req.json !== null && typeof req.json === 'object' && !Array.isArray(req.json))
        return { ...req, json: { ...(req.json as Record<string, unknown>), [auth.name]: apiKey } };
      throw new ProviderError(
        'permanent',
        `provider ${provider}: the credential goes in the body, but this request's body is not a JSON object`,
        {
          code: 'BAD_REQUEST_SHAPE',
        },
      );
    }
  }
}
