/**
 * Removal of credentials from anything we record: URLs, headers, bodies and error messages.
 *
 * docs/design.md, “Rules”: secrets never enter workflow input, history, logs or error records.
 * Providers put keys in query strings (Crawlbase `?token=`, Apify `?token=`, Zyte `?apikey=`;
 * see each kind’s `CONTRACT.md` under `test/fixtures/providers/`), in headers (`Authorization`, `x-api-key`) and sometimes echo them in
 * bodies, so every recorded URL, header set and body goes through these functions first.
 */

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

/** `Bearer <token>` / `Basic <token>` as in a header: the capitalised word, then any token. */
const CREDENTIAL_CAPITALISED = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g;
/**
 * The same in any other spelling (`bearer`, `BEARER`), when the token has 8+ characters and a digit,
 * one of `._~+/=-` or a lower-upper case change (base64), so that prose such as "a basic example"
 * is left alone.
 */
// The keyword is spelled out case by case: an `i` flag would also fold the token's case test.
const CREDENTIAL_ANY_CASE =
  /\b([Bb][Ee][Aa][Rr][Ee][Rr]|[Bb][Aa][Ss][Ii][Cc])\s+(?=[A-Za-z0-9._~+/=-]*(?:[0-9._~+/=-]|[a-z][A-Z]))[A-Za-z0-9._~+/=-]{8,}/g;

/**
 * Credentials recognisable by their shape wherever they stand: a PEM private key block, a JWT
 * (three base64url parts, the first two JSON objects: `eyJ…`), GitHub tokens (`ghp_`, `gho_`,
 * `ghu_`, `ghs_`, `ghr_`, `github_pat_`), AWS access key IDs (`AKIA`/`ASIA` + 16), Slack tokens
 * (`xox[abpr]-`), Google API keys (`AIza` + 35).
 */
const SHAPED_CREDENTIALS = [
  /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/,
  /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/,
  /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/,
  /\bxox[abpr]-[A-Za-z0-9-]{10,}/,
  /\bAIza[0-9A-Za-z_-]{35}\b/,
];

/** True when `text` holds a `Bearer`/`Basic` credential of 8+ characters (either spelling above) or a credential of a known shape. */
function hasCredentialInText(text: string): boolean {
  return (
    /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/.test(text) ||
    new RegExp(CREDENTIAL_ANY_CASE.source).test(text) ||
    SHAPED_CREDENTIALS.some((re) => re.test(text))
  );
}

/** `value` with leading/trailing whitespace removed when it is an http(s) URL, else undefined. */
function asUrl(value: string): string | undefined {
  const t = value.trim();
  return /^https?:\/\//i.test(t) ? t : undefined;
}

/**
 * Parameter names (lower-case, separators removed) that are credentials whatever their value:
 * refusing a request that carries one is always right.
 */
const CREDENTIAL_NAMES = new Set([
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'clientsecret',
  'appsecret',
  'secretkey',
  'privatekey',
  'privatetoken',
  'accesstoken',
  'authtoken',
  'refreshtoken',
  'idtoken',
  'bearertoken',
  'apitoken',
  'apikey',
  'accesskey',
  'authkey',
  'subscriptionkey',
  'functionskey',
  'masterkey',
  'signingkey',
  'authorization',
  'credential',
  'credentials',
  'signature',
  'jwt',
  'oauthtoken',
  'oauthverifier',
  'oauthsignature',
  'oauthconsumerkey',
  'xamzsignature',
  'xamzcredential',
  'xamzsecuritytoken',
  'xgoogsignature',
  'xgoogcredential',
  'hmac',
  'xapikey',
  'cookie',
  'setcookie',
  'proxyauthorization',
  'secretaccesskey',
  'awssecretaccesskey',
  'sessiontoken',
  'awssessiontoken',
  'xauthtoken',
  'clientkey',
]);

/**
 * Names that are credentials only when the value looks like one (16+ characters, or 8+ with both
 * letters and digits): `token` (Crawlbase, Apify), `key` (Google `key=AIza…`), `sig` (Azure SAS),
 * so that `?token=eth` or `?key=shoes` on an ordinary site are not refused.
 */
const CREDENTIAL_NAMES_IF_SECRET_VALUE = new Set(['token', 'key', 'sig', 'code', 'otp', 'pw', 'pass', 'auth', 'xauth']);

function looksLikeSecretValue(value: string): boolean {
  return value.length >= 16 || (value.length >= 8 && /\d/.test(value) && /[A-Za-z]/.test(value));
}

/**
 * True when a parameter is a credential that must never be sent through workflow input: a name in
 * the credential list with a non-empty value, or a short generic name (`token`, `key`, `sig`,
 * `code`) with a value that looks like a secret. Narrower than {@link isSecretName}, which decides
 * what to redact in recorded evidence: tracking and session parameters of ordinary sites
 * (`sid`, `session`, `tokenId`, `passType`) are allowed in a target URL.
 */
export function isCredentialParam(name: string, value: string): boolean {
  if (value === '') return false;
  const n = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (CREDENTIAL_NAMES.has(n)) return true;
  return CREDENTIAL_NAMES_IF_SECRET_VALUE.has(n) && looksLikeSecretValue(value);
}

/**
 * The parts of a URL that carry a credential: user-info (`user:pass@`), and credential parameters
 * ({@link isCredentialParam}) in the query string or in a `#a=b&c=d` fragment (the OAuth implicit
 * flow puts `access_token` there). Empty when the URL carries none or does not parse.
 */
export function secretPartsOfUrl(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const found: string[] = [];
  if (u.username || u.password) found.push('user-info');
  for (const [name, value] of u.searchParams)
    if (isCredentialParam(name, value)) found.push(`query parameter "${name}"`);
  if (u.hash.length > 1) {
    for (const [name, value] of new URLSearchParams(u.hash.slice(1)))
      if (isCredentialParam(name, value)) found.push(`fragment parameter "${name}"`);
  }
  return found;
}

/**
 * The JSON path of the first secret in `value`: a credential field ({@link isCredentialParam}) with a
 * string value, or an object or array under a credential name (a number or boolean such as
 * `max_tokens: 100` is a setting, not a credential), a `Bearer`/`Basic` credential in a string, or
 * a URL carrying one
 * ({@link secretPartsOfUrl}). `undefined` when there is none. Used to refuse input that would put a
 * secret into workflow history.
 */
export function findSecret(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') {
    if (hasCredentialInText(value)) return path || '(value)';
    const url = asUrl(value);
    if (url && secretPartsOfUrl(url).length > 0) return path || '(value)';
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findSecret(value[i], `${path}[${i}]`);
      if (hit) return hit;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const here = path ? `${path}.${k}` : k;
      if (
        typeof v === 'string'
          ? isCredentialParam(k, v)
          : v !== null && typeof v === 'object' && CREDENTIAL_NAMES.has(k.toLowerCase().replace(/[^a-z0-9]/g, ''))
      )
        return here;
      const hit = findSecret(v, here);
      if (hit) return hit;
    }
  }
  return undefined;
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
  if (typeof value === 'string') {
    const url = asUrl(value);
    return url ? sanitizeUrl(url, secrets) : redactSecrets(value, secrets);
  }
  if (Array.isArray(value)) return value.map((v) => sanitizeBody(v, secrets));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSecretName(k) && v !== null && v !== undefined ? REDACTED : sanitizeBody(v, secrets);
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
    if (s && s.length >= 4) out = out.split(s).join(REDACTED);
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
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join(REDACTED);
  return out;
}

/** `url` with user-info and credential parameters ({@link isCredentialParam}) redacted, then known secret values removed. */
function redactCredentialsInUrl(url: string, secrets: readonly string[]): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return removeSecretValues(url, secrets);
  }
  if (secretPartsOfUrl(url).length === 0) return removeSecretValues(url, secrets);
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
