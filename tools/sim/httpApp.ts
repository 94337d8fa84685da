/**
 * The sim's Fastify instance before its routes: request logging with every credential censored,
 * the JSON body parser (an empty body is "no body") and the error answers in the sim's shape
 * (`{"error": {"code", "message"}}`, see `answers.ts`) for malformed requests and unknown routes.
 * The routes are registered on it by `server.ts`.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { errorBody, HttpError } from './answers.js';
import type { ResolvedSimOptions } from './schemas.js';

/**
 * A Fastify instance configured from `opts` (`logger`, `logStream`): logging on when either is
 * set, connections closed forcibly on close, bodies up to 1 MiB.
 */
export function createSimFastify(opts: ResolvedSimOptions): FastifyInstance {
  const app = Fastify({
    logger:
      opts.logger || opts.logStream
        ? {
            level: 'info',
            ...(opts.logStream ? { stream: opts.logStream } : {}),
            // Request logs include the headers (useful when debugging clients), with every
            // credential censored: API keys never reach the log.
            serializers: {
              req: (req: { method: string; url: string; headers: Record<string, unknown> }) => ({
                method: req.method,
                url: req.url,
                headers: req.headers,
              }),
            },
            redact: {
              paths: [
                'req.headers.authorization',
                'req.headers["x-sim-admin"]',
                'req.headers.cookie',
                'headers.authorization',
                'headers["x-sim-admin"]',
              ],
              censor: '[REDACTED]',
            },
          }
        : false,
    forceCloseConnections: true,
    bodyLimit: 1024 * 1024,
  });

  // JSON bodies; an empty body is accepted as "no body" (e.g. DELETE with a JSON content type).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text) as unknown);
    } catch (err) {
      done(new HttpError(400, `request body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  });

  app.setErrorHandler((error: unknown, request, reply) => {
    const statusCode =
      typeof (error as { statusCode?: unknown }).statusCode === 'number'
        ? (error as { statusCode: number }).statusCode
        : 500;
    const message = error instanceof Error ? error.message : String(error);
    if (statusCode >= 500) request.log.error({ err: error }, 'sim internal error');
    const status = statusCode >= 400 && statusCode <= 599 ? statusCode : 500;
    let body: unknown;
    if (status === 400) body = errorBody('VALIDATION_ERROR', message, { issues: [] });
    else if (status === 413) body = errorBody('PAYLOAD_TOO_LARGE', message);
    else if (status === 415) body = errorBody('UNSUPPORTED_MEDIA_TYPE', message);
    else if (status >= 500) body = errorBody('INTERNAL', 'internal error');
    else body = errorBody('BAD_REQUEST', message);
    return reply.code(status).send(body);
  });

  app.setNotFoundHandler((_request, reply) => reply.code(404).send(errorBody('NOT_FOUND', 'route not found')));
  return app;
}
