/**
 * Detection of credentials in input, so that a request that would carry one into workflow input
 * or history is refused: credential parameters and fields ({@link isCredentialParam}), URLs
 * carrying them ({@link secretPartsOfUrl}), `Bearer`/`Basic` credentials and credentials of a known
 * shape in any string ({@link findSecret}). It imports nothing else of the package, so the model's
 * schemas can use it; the redaction of recorded evidence built on it is `sanitize.ts`'s.
 */

/** `Bearer <token>` / `Basic <token>` as in a header: the capitalised word, then any token. */
export const CREDENTIAL_CAPITALISED = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g;
/**
 * The same in any other spelling (`bearer`, `BEARER`), when the token has 8+ characters and a digit,
 * one of `._~+/=-` or a lower-upper case change (base64), so that prose such as "a basic example"
 * is left alone.
 */
// The keyword is spelled out case by case: an `i` flag would also fold the token's case test.
export const CREDENTIAL_ANY_CASE =
  /\b([Bb][Ee][Aa][Rr][Ee][Rr]|[Bb][Aa][Ss][Ii][Cc])\s+(?=[A-Za-z0-9._~+/=-]*(?:[0-9._~+/=-]|[a-z][A-Z]))[A-Za-z0-9._~+/=-]{8,}/g;

/**
 * Credentials recognisable by their shape wherever they stand: a PEM private key block, a JWT
 * (three base64url parts, the first two JSON objects: `eyJ…`), GitHub tokens (`ghp_`, `gho_`,
 * `ghu_`, `ghs_`, `ghr_`, `github_pat_`), AWS access key IDs (`AKIA`/`ASIA` + 16 base32 characters, A–Z and 2–7, as AWS issues them), Slack tokens
 * (`xox[abpr]-`), Google API keys (`AIza` + 35).
 */
const SHAPED_CREDENTIALS = [
  /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/,
  /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/,
  /\b(?:AKIA|ASIA)[A-Z2-7]{16}\b/,
  /\bxox[abpr]-[A-Za-z0-9-]{10,}/,
  /\bAIza[0-9A-Za-z_-]{35}\b/,
];

/**
 * The same shapes, global, as far as each credential reaches (a PEM block to its END line, or to
 * the end of the text when it has none), for {@link redactShapedCredentials}.
 */
const SHAPED_CREDENTIALS_TO_REDACT = [
  /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----|$)/g,
  ...SHAPED_CREDENTIALS.slice(1).map((re) => new RegExp(re.source, 'g')),
];

/** `text` with every credential of a known shape (see {@link SHAPED_CREDENTIALS}) replaced by `replacement`. */
export function redactShapedCredentials(text: string, replacement: string): string {
  return SHAPED_CREDENTIALS_TO_REDACT.reduce((out, re) => out.replace(re, replacement), text);
}

/** True when `text` holds a `Bearer`/`Basic` credential of 8+ characters (either spelling above) or a credential of a known shape. */
function hasCredentialInText(text: string): boolean {
  return (
    /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/.test(text) ||
    new RegExp(CREDENTIAL_ANY_CASE.source).test(text) ||
    SHAPED_CREDENTIALS.some((re) => re.test(text))
  );
}

/** `value` with leading/trailing whitespace removed when it is an http(s) URL, else undefined. */
export function asUrl(value: string): string | undefined {
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
  // User-info needs an `@`, parameters a `?` or `#`: a URL with none of them has no part to look at.
  if (!/[@?#]/.test(url)) return [];
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
