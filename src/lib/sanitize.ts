/**
 * Removal of credentials from anything we record: URLs, headers, bodies and error messages.
 *
 * docs/design.md, “Rules”: secrets never enter workflow input, history, logs or error records.
 * Providers put keys in query strings (Crawlbase `?token=`, Apify `?token=`, Zyte `?apikey=`;
 * see each kind’s `CONTRACT.md` under `test/fixtures/providers/`), in headers (`Authorization`, `x-api-key`) and sometimes echo them in
 * bodies, so every recorded URL, header set and body goes through these functions first. Finding a
 * secret in input (to refuse it) is `secretDetection.ts`'s.
 */
import {
  asUrl,
  CREDENTIAL_ANY_CASE,
  CREDENTIAL_CAPITALISED,
  isCredentialParam,
  redactShapedCredentials,
  secretPartsOfUrl,
} from './secretDetection.js';

/** Placeholder written where a secret was removed. */
export const REDACTED = '[REDACTED]';

/** Whole names that are secrets (compared lower-case). */
const SECRET_NAMES = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'key',
  'x-sim-admin',
  'x-idempotency-key-secret',
]);

/**
 * Name components (split on `-`, `_`, `.` and camelCase) that make a name a secret wherever they
 * stand: `auth_token`, `private_token` (GitLab), `X-Amz-Signature` / `X-Amz-Credential` (presigned
 * S3), `apiToken`, `sessionid`, `pass`, `client_secret`, `jwt`.
 */
const SECRET_PARTS = new Set([
  'token',
  'secret',
  'password',
  'passwd',
  'pass',
  'pwd',
  'passphrase',
  'signature',
  'sig',
  'credential',
  'credentials',
  'session',
  'sessionid',
  'sid',
  'jwt',
  'cookie',
  'authorization',
  'auth',
  'apikey',
  'accesskey',
  'privatekey',
  'secretkey',
]);

/**
 * Substrings of the name with separators removed that make it a secret however it is spelled:
 * `apitoken`, `accesstoken`, `refreshtoken`, `clientsecret`, `authkey`, `subscription-key` (Azure),
 * `x-functions-key`, `sessiontoken`, `passphrase`.
 */
const SECRET_SUBSTRINGS = [
  'token',
  'secret',
  'password',
  'passwd',
  'passphrase',
  'signature',
  'credential',
  'sessionid',
  'cookie',
  'authorization',
  'jwt',
  'apikey',
  'accesskey',
  'privatekey',
  'secretkey',
  'signingkey',
  'authkey',
  'clientkey',
  'subscriptionkey',
  'functionskey',
  'masterkey',
];

/**
 * True when a header, query-parameter or field name denotes a secret: a whole name such as
 * `Authorization` or `key` (Google's `?key=`); a component (split on `-`, `_`, `.` and camelCase)
 * such as `pass`, `pwd`, `sig`, `sid`, `session`, `auth`; or, with separators removed and in any
 * case, a name containing `token`, `secret`, `password`, `signature`, `credential`, `apikey`,
 * `accesskey`, `authkey`, `subscriptionkey` and the like (see `SECRET_SUBSTRINGS`).
 */
export function isSecretName(name: string): boolean {
  // The names met are few (a provider's fields and headers, recurring in every answer): each short
  // name is judged once and remembered, up to a bound past which the memory starts over.
  if (name.length > SECRET_NAME_MEMO_LENGTH) return judgeSecretName(name);
  const known = secretNameMemo.get(name);
  if (known !== undefined) return known;
  const secret = judgeSecretName(name);
  if (secretNameMemo.size >= SECRET_NAME_MEMO_SIZE) secretNameMemo.clear();
  secretNameMemo.set(name, secret);
  return secret;
}

/** Names {@link isSecretName} remembers at most (the memory is cleared when it is full). */
const SECRET_NAME_MEMO_SIZE = 4096;
/** Longest name {@link isSecretName} remembers, characters (longer ones are judged each time). */
const SECRET_NAME_MEMO_LENGTH = 64;
const secretNameMemo = new Map<string, boolean>();

/** {@link isSecretName} without the memory. */
function judgeSecretName(name: string): boolean {
  const lower = name.toLowerCase();
  if (SECRET_NAMES.has(lower)) return true;
  const parts = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[-_.\s[\]]+/)
    .filter(Boolean);
  if (parts.some((p) => SECRET_PARTS.has(p))) return true;
  const joined = lower.replace(/[^a-z0-9]/g, '');
  return SECRET_SUBSTRINGS.some((s) => joined.includes(s));
}

/**
 * Returns `url` with user-info and secret query and fragment parameters replaced by {@link REDACTED}.
 * A string that does not parse as a URL is passed through {@link redactSecrets} instead.
 */
export function sanitizeUrl(url: string, secrets: readonly string[] = []): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return redactSecrets(url, secrets);
  }
  if (u.username || u.password) {
    u.username = u.username ? REDACTED : '';
    u.password = u.password ? REDACTED : '';
  }
  for (const name of [...u.searchParams.keys()]) {
    if (isSecretName(name)) u.searchParams.set(name, REDACTED);
  }
  if (u.hash.length > 1) {
    const frag = new URLSearchParams(u.hash.slice(1));
    const names = [...frag.keys()].filter(isSecretName);
    if (names.length > 0) {
      for (const name of names) frag.set(name, REDACTED);
      u.hash = frag.toString();
    }
  }
  return removeSecretValues(u.toString(), secrets);
}

/** Returns a copy of `headers` with secret headers replaced by {@link REDACTED}. */
export function sanitizeHeaders(
  headers: Record<string, string | string[] | undefined>,
  secrets: readonly string[] = [],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const value = Array.isArray(v) ? v.join(', ') : v;
    out[k] = isSecretName(k) ? REDACTED : redactSecrets(value, secrets);
  }
  return out;
}

/**
 * Deep copy of a JSON-compatible value with secret-named fields redacted, URL-looking strings
 * sanitised and every known secret value (e.g. the configured API keys) removed from strings.
 */
export function sanitizeBody(value: unknown, secrets: readonly string[] = []): unknown {
  return sanitizeDeep(value, secrets, false);
}

/**
 * {@link sanitizeBody} for a caller's input kept as evidence (a batch file's row): also removes
 * every credential of a known shape (a GitHub or Slack token, an AWS access key ID, a Google API
 * key, a private key: the shapes `findSecret` refuses in `options`) from strings, whatever the
 * field's name, so that none enters the store or workflow input.
 */
export function sanitizeInput(value: unknown): unknown {
  return sanitizeDeep(value, [], true);
}

function sanitizeDeep(value: unknown, secrets: readonly string[], shapes: boolean): unknown {
  if (typeof value === 'string') {
    const url = asUrl(value);
    // A URL's query, path or fragment can carry a credential of a known shape under any name.
    const out = url ? sanitizeUrl(url, secrets) : redactSecrets(value, secrets);
    return shapes ? redactShapedCredentials(out, REDACTED) : out;
  }
  if (Array.isArray(value)) return value.map((v) => sanitizeDeep(v, secrets, shapes));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSecretName(k) && v !== null && v !== undefined ? REDACTED : sanitizeDeep(v, secrets, shapes);
    }
    return out;
  }
  return value;
}

/**
 * Replaces every occurrence of each known secret value in `text`, plus `Bearer <token>` and
 * `Basic <token>` credentials, with {@link REDACTED}. Secrets shorter than 4 characters are
 * ignored (they would redact ordinary words).
 */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  // Known values first: a pattern replaced first could cut a known value in two (a key with a
  // space or a line break inside), and its tail would then match nothing.
  let out = text;
  for (const s of secrets) {
    if (s && s.length >= 4 && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  return out.replace(CREDENTIAL_CAPITALISED, `$1 ${REDACTED}`).replace(CREDENTIAL_ANY_CASE, `$1 ${REDACTED}`);
}

/** Truncates a string to `max` characters (default 4000), marking the cut. */
export function truncate(text: string, max = 4000): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[truncated ${text.length - max} chars]`;
}

/**
 * Deep copy of a value that came from a provider (a status observation, a result, an error's code
 * and message): every string loses each known secret value (by value only: scraped text such as a
 * page titled "Basic tags" is left alone), and a URL-looking string also loses user-info and
 * credential parameters ({@link isCredentialParam}:
 * `?api_key=…`, `access_token`, a secret-looking `token`) — the narrow test, so that ordinary
 * links of scraped pages (`?sid=…`, `?session=…`) stay as they are. Field names are kept and values are not redacted by their name (scraped data may
 * use any names). Non-JSON values (functions, class instances other than plain objects and arrays)
 * are returned as they are. A provider may echo a caller’s key: every string from a provider passes here before it reaches
 * a workflow, a log, the store or the CLI.
 */
export function redactProviderValue<T>(value: T, secrets: readonly string[]): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const url = asUrl(v);
      return url ? redactCredentialsInUrl(url, secrets) : removeSecretValues(v, secrets);
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}

/** `text` with each known secret value (4 characters or more) replaced by {@link REDACTED}. */
function removeSecretValues(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4 && out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/** `url` with user-info and credential parameters ({@link isCredentialParam}) redacted, then known secret values removed. */
function redactCredentialsInUrl(url: string, secrets: readonly string[]): string {
  // Most URLs (a page's links) carry no credential: they are parsed once, to find that out.
  if (secretPartsOfUrl(url).length === 0) return removeSecretValues(url, secrets);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return removeSecretValues(url, secrets);
  }
  if (u.username || u.password) {
    u.username = u.username ? REDACTED : '';
    u.password = u.password ? REDACTED : '';
  }
  for (const [name, value] of [...u.searchParams])
    if (isCredentialParam(name, value)) u.searchParams.set(name, REDACTED);
  if (u.hash.length > 1) {
    const frag = new URLSearchParams(u.hash.slice(1));
    for (const [name, value] of [...frag]) if (isCredentialParam(name, value)) frag.set(name, REDACTED);
    u.hash = frag.toString();
  }
  return removeSecretValues(u.toString(), secrets);
}

/** An http(s) URL inside free text: the scheme, then everything up to whitespace, a quote or an angle bracket. */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/gi;

/**
 * `text` with the credentials of every http(s) URL in it replaced by {@link REDACTED}, for showing
 * to a person (the command line's tables, JSON and error lines): the whole user-info (`user:password@`
 * becomes `[REDACTED]@`: the user name alone is a key for some services) and the value of each
 * credential parameter of the query or fragment ({@link isCredentialParam}: `api_key`,
 * `access_token`, a secret-looking `token`, …). The rest is kept exactly as written (never
 * re-serialised), so the row stays recognisable; text without such a URL comes back unchanged.
 */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_IN_TEXT, (url) => {
    const scheme = url.indexOf('://') + 3;
    const authorityEnd = url.slice(scheme).search(/[/?#]/);
    const authority = authorityEnd === -1 ? url.slice(scheme) : url.slice(scheme, scheme + authorityEnd);
    const at = authority.lastIndexOf('@');
    const head =
      at === -1
        ? url.slice(0, scheme + authority.length)
        : `${url.slice(0, scheme)}${REDACTED}@${authority.slice(at + 1)}`;
    const rest = url.slice(scheme + authority.length);
    // Query (`?a=b&c=d`) and fragment (`#a=b`) parameters: only the values of credential names
    // change; a value ends at a comma too (a URL in a CSV line is followed by the next field).
    return (
      head +
      rest.replace(/([?&#])([^=&#,]*)=([^&#,]*)/g, (m, sep: string, name: string, value: string) => {
        const decode = (s: string) => {
          try {
            return decodeURIComponent(s.replace(/\+/g, ' '));
          } catch {
            return s;
          }
        };
        return isCredentialParam(decode(name), decode(value)) ? `${sep}${name}=${REDACTED}` : m;
      })
    );
  });
}
