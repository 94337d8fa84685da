/**
 * How the reference provider answers: an {@link Outcome} (status, JSON body, headers) built by the
 * route handlers, and the error shape of its whole API, `{"error": {"code", "message", …extra}}`.
 */
import type { FastifyReply } from 'fastify';
import type { z } from 'zod';
import type { FaultRule, Profile } from './schemas.js';

/** One answer of the API: HTTP status, body (JSON, or text for a plain server error) and extra headers. */
export interface Outcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** An error with the HTTP status the error handler answers with (a body parser's `400`). */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** The API's error body: `{"error": {"code", "message", …extra}}`. */
export function errorBody(
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
): { error: Record<string, unknown> } {
  return { error: { code, message, ...extra } };
}

/** An {@link Outcome} (without a `headers` key when there are none). */
export function outcome(status: number, body: unknown, headers?: Record<string, string>): Outcome {
  return headers ? { status, body, headers } : { status, body };
}

/** `400 VALIDATION_ERROR` with the issues found. */
export function validationError(message: string, issues: unknown[]): Outcome {
  return outcome(400, errorBody('VALIDATION_ERROR', message, { issues }));
}

/** A zod error's issues as the API lists them: dotted path, message, code. */
export function zodIssues(err: z.ZodError): Array<{ path: string; message: string; code: string }> {
  return err.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message, code: i.code }));
}

/** `404 NOT_FOUND`: no such job for this account (another account's job included). */
export const NOT_FOUND = (): Outcome => outcome(404, errorBody('NOT_FOUND', 'job not found'));

/** `404 NOT_SUPPORTED`: the account's profile switched the feature `what` off. */
export const NOT_SUPPORTED = (what: string): Outcome =>
  outcome(404, errorBody('NOT_SUPPORTED', `${what} is not supported by this provider`));

/**
 * The wait announcement per `retryAfterStyle`: the `Retry-After` header (seconds), or the wait in
 * the message (`"Rate limit exceeded. Please retry after 7 seconds."`), or nothing.
 */
export function retryAfter(
  profile: Profile,
  seconds: number,
  plainMessage: string,
): { headers: Record<string, string>; message: string } {
  switch (profile.retryAfterStyle) {
    case 'header':
      return { headers: { 'retry-after': String(seconds) }, message: plainMessage };
    case 'message':
      return { headers: {}, message: `Rate limit exceeded. Please retry after ${seconds} seconds.` };
    case 'none':
      return { headers: {}, message: plainMessage };
  }
}

/** The HTML page a load balancer sends for `status` (e.g. `502 Bad Gateway`). */
export function proxyErrorPage(status: number): string {
  const words = status === 502 ? 'Bad Gateway' : status === 504 ? 'Gateway Timeout' : 'Service Unavailable';
  return `<html>\r\n<head><title>${status} ${words}</title></head>\r\n<body>\r\n<center><h1>${status} ${words}</h1></center>\r\n</body>\r\n</html>\r\n`;
}

/**
 * The answer of an `error_5xx` fault: the API's JSON error (default `503 UPSTREAM_UNAVAILABLE`),
 * or with `plain` the HTML page a load balancer sends (default `502 Bad Gateway`); with
 * `retryAfterSeconds`, a `Retry-After` header of that many seconds.
 */
export function serverError(fault: FaultRule): Outcome {
  const wait: Record<string, string> | undefined =
    fault.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(fault.retryAfterSeconds) };
  if (fault.plain) {
    const status = fault.status ?? 502;
    return { status, body: proxyErrorPage(status), headers: { 'content-type': 'text/html', ...wait } };
  }
  return outcome(
    fault.status ?? 503,
    errorBody(
      fault.code ?? 'UPSTREAM_UNAVAILABLE',
      fault.message ?? 'The service is temporarily unavailable (simulated).',
    ),
    wait,
  );
}

/** Sends `o` on `reply`. */
export function send(reply: FastifyReply, o: Outcome): FastifyReply {
  reply.code(o.status);
  if (o.headers) for (const [k, v] of Object.entries(o.headers)) reply.header(k, v);
  return reply.send(o.body);
}
