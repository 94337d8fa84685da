/**
 * Removal of credentials from anything we record: URLs, headers, bodies and error messages.
 *
 * Rule 8 of DESIGN.md: secrets never enter workflow input, history, logs or error records.
 * Providers put keys in query strings (Crawlbase `?token=`, Apify `?token=`, Zyte `?apikey=`;
 * see ../shared/providers.md), in headers (`Authorization`, `x-api-key`) and sometimes echo them in
 * bodies, so every recorded URL, header set and body goes through these functions first.
 */

/** Placeholder written where a secret was removed. */
export const REDACTED = '[REDACTED]';

/** Query-parameter, header and JSON-field names whose values are treated as secrets. */
const SECRET_NAME = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api[-_]?key|apikey|token|access[-_]?token|refresh[-_]?token|auth|secret|client[-_]?secret|password|passwd|pwd|signature|sig|x-idempotency-key-secret|x-sim-admin|private[-_]?key|session)$/i;

/** True when a header, query-parameter or field name denotes a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * Returns `url` with user-info and secret query parameters replaced by {@link REDACTED}.
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
  return redactSecrets(u.toString(), secrets);
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
    return /^https?:\/\//i.test(value) ? sanitizeUrl(value, secrets) : redactSecrets(value, secrets);
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
  let out = text.replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g, `$1 ${REDACTED}`);
  for (const s of secrets) {
    if (s && s.length >= 4) out = out.split(s).join(REDACTED);
  }
  return out;
}

/** Truncates a string to `max` characters (default 4000), marking the cut. */
export function truncate(text: string, max = 4000): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[truncated ${text.length - max} chars]`;
}
