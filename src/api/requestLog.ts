/**
 * What the API's request log may show: method, URL and headers, with the per-job webhook token,
 * secret-named query parameters (`?api_key=`, `?access_token=`, `?key=`), secret headers
 * (`Authorization`, cookies, signatures, anything `isSecretName` calls a secret) and any header
 * whose value is a credential (an auth scheme such as `Bearer …`, or a shape `findSecret` knows)
 * redacted.
 */
import type { FastifyServerOptions } from 'fastify';
import { isSecretName, sanitizeUrl } from '../lib/sanitize.js';
import { findSecret } from '../lib/secretDetection.js';

/** Header names whose values never reach the log. */
const REDACT_HEADER =
  /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|.*signature.*|.*secret.*|.*token.*)$/i;

/** A request URL with the per-job webhook token (`/v1/webhooks/<provider>/<token>`) redacted. */
export function redactCallbackToken(url: string): string {
  // Any spelling the router might see (repeated slashes, another case): a token never reaches the log.
  return url.replace(/^(\/+v1\/+webhooks\/+[^/?#]+\/+)[^/?#]+/i, '$1[REDACTED]');
}

/** Request headers as logged (secret ones redacted). */
function logHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(headers)) {
    // A header carrying a URL or a path (Referer, X-Original-URL) is cleaned as the request URL is.
    // A credential under any header name (`X-Access: Bearer …`, a JWT, a cloud key) is redacted too.
    const secretValue =
      typeof v === 'string' &&
      (/^\s*(bearer|basic|token|digest|aws4-hmac-sha256)\s/i.test(v) || findSecret(v) !== undefined);
    out[k] =
      REDACT_HEADER.test(k) || isSecretName(k) || secretValue
        ? '[REDACTED]'
        : typeof v === 'string' && /^(https?:\/\/|\/)/i.test(v)
          ? logUrl(v)
          : typeof v === 'string'
            ? withoutSecretParameters(v)
            : v;
  }
  return out;
}

/** A header value with every secret-named parameter (`text/plain; token=…`) redacted. */
function withoutSecretParameters(value: string): string {
  return value.replace(/(;\s*)([^=;\s]+)(\s*=\s*)("[^"]*"|[^;]*)/g, (m, sep: string, name: string, eq: string) =>
    isSecretName(name) ? `${sep}${name}${eq}[REDACTED]` : m,
  );
}

/** A request URL as logged: the per-job callback token and every secret-named query parameter (`?api_key=`, `?access_token=`, `?key=`) redacted. */
function logUrl(url: string): string {
  if (/^https?:\/\//i.test(url)) return sanitizeUrl(url);
  const redacted = redactCallbackToken(url);
  return redacted.includes('?')
    ? sanitizeUrl(`http://log.invalid${redacted}`).slice('http://log.invalid'.length)
    : redacted;
}

/**
 * The Fastify logger option of `buildApi`: `false`/absent (no log), `true` (JSON lines to stdout)
 * or a destination stream with a level; request lines carry the redacted URL and headers.
 */
export function requestLogger(
  logger: boolean | { stream: NodeJS.WritableStream; level?: string } | undefined,
): FastifyServerOptions['logger'] {
  return logger === undefined || logger === false
    ? false
    : {
        level: logger === true ? 'info' : (logger.level ?? 'info'),
        ...(logger === true ? {} : { stream: logger.stream }),
        serializers: {
          req: (req: { method: string; url: string; headers: Record<string, unknown>; id: string }) => ({
            id: req.id,
            method: req.method,
            url: logUrl(req.url),
            headers: logHeaders(req.headers),
          }),
        },
        redact: {
          paths: [
            'req.headers.authorization',
            'req.headers.cookie',
            'req.headers["x-sim-signature"]',
            'req.headers["x-firecrawl-signature"]',
            'headers.authorization',
          ],
          censor: '[REDACTED]',
        },
      };
}
