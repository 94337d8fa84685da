/**
 * Error mapping, done once for the whole API: anything a hook, handler, the router or a body
 * parser throws becomes an `application/problem+json` answer (`problems.ts`), never a stack or a
 * secret. A missing job and another account's job give the same `404`.
 */
import { isGrpcServiceError } from '@temporalio/client';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ScrapeError } from '../client/index.js';
import { StrictJsonError } from '../lib/json.js';
import { isFinalState } from '../model/states.js';
import { ApiProblem, PROBLEM_CONTENT_TYPE } from './problems.js';
import { jobPath, pollAfterSeconds } from './views.js';

/** Maps anything thrown by a hook or handler to a problem (never leaking a stack or a secret). */
export function toProblem(error: unknown, request: FastifyRequest): ApiProblem {
  if (error instanceof ApiProblem) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const where = (error as { validationContext?: string }).validationContext ?? 'body';
    const errors = error.validation.map((v) => ({
      in: where,
      path: dotted(v.instancePath),
      message: v.message ?? 'invalid',
    }));
    const summary = errors.map((e) => `${e.path ? `${e.path}: ` : ''}${e.message}`).join('; ');
    return new ApiProblem('invalid-request', `invalid ${where}: ${summary}`, { errors });
  }
  if (error instanceof ScrapeError) {
    const d = error.details;
    switch (error.code) {
      case 'not_found':
        if (d.budget) return new ApiProblem('budget-not-found', 'no such budget for this account');
        // Identical for a missing job and another account's job: no ID, no hint.
        return new ApiProblem('not-found', 'no such job for this account');
      case 'invalid':
        return new ApiProblem('invalid-request', error.message, {
          errors: ((d.issues as { path?: unknown[]; message?: string }[] | undefined) ?? []).map((i) => ({
            in: 'body',
            path: (i.path ?? []).join('.'),
            message: i.message ?? 'invalid',
          })),
        });
      case 'not_ready': {
        const state = String(d.state);
        const final = isFinalState(state);
        const jobId = String(d.jobId);
        const retry = final
          ? undefined
          : pollAfterSeconds({ state: state as never, createdAt: new Date().toISOString() });
        return new ApiProblem(
          'result-not-ready',
          final ? `the job ended ${state} without a result` : `the job is ${state}; the result is not ready yet`,
          { job_id: jobId, state, final, status_url: jobPath(jobId) },
          retry ? { 'retry-after': String(retry) } : {},
        );
      }
      case 'expired':
        return new ApiProblem(
          'result-expired',
          'the result was purged after its retention period; the job did run (see the evidence members)',
          {
            job_id: d.jobId,
            state: d.state,
            provider: d.provider,
            task_id: d.taskId,
            finished_at: d.finishedAt,
            result_written_at: d.resultWrittenAt,
            purged_at: d.purgedAt,
            title: d.title,
          },
        );
      case 'conflict':
        return new ApiProblem('conflict', error.message, d.state ? { state: d.state } : {});
      case 'budget_exceeded':
        return budgetProblem(error.message, d);
    }
  }
  const e = error as FastifyError & { code?: string; statusCode?: number };
  if (e && typeof e === 'object') {
    // No ID, slug, provider or token is that long: an invalid parameter like any other (400).
    if (e.code === 'FST_ERR_MAX_PARAM_LENGTH')
      return invalid('a path parameter exceeds 400 characters', 'params', 'longer than 400 characters');
    if (e instanceof StrictJsonError && e.reason === 'prototype')
      return invalid(
        'the body contains a forbidden "__proto__" or "constructor.prototype" key',
        'body',
        'forbidden prototype property',
      );
    if (e instanceof StrictJsonError && e.reason === 'duplicate-key')
      return invalid(`the body is ambiguous: ${e.message}`, 'body', e.message, dotted(e.path));
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return new ApiProblem(
        'payload-too-large',
        `the body exceeds the limit of ${request.routeOptions.bodyLimit ?? 'the configured'} bytes`,
      );
    if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      // The media type only: a parameter (`; token=…`) is never echoed.
      const type = String(request.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .slice(0, 100);
      return new ApiProblem(
        'unsupported-media-type',
        `content type ${JSON.stringify(type)} is not supported; send application/json`,
      );
    }
    if (
      e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
      e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
      e.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' ||
      (e.statusCode === 400 && e instanceof SyntaxError)
    )
      return invalid(
        `the body is not valid JSON${e instanceof SyntaxError ? `: ${e.message}` : ''}`,
        'body',
        'not valid JSON',
      );
    // Fastify's message quotes the whole URL, query string included (where a caller may have put a credential).
    if (e.code === 'FST_ERR_BAD_URL')
      return invalid(
        `the path ${JSON.stringify(request.url.split('?')[0]!.slice(0, 200))} is not valid percent-encoding`,
        'params',
        'invalid percent-encoding',
      );
    if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
      return new ApiProblem('invalid-request', withoutQueryStrings(e.message).slice(0, 300), { errors: [] });
    }
  }
  const grpc = isGrpcServiceError(error)
    ? error
    : isGrpcServiceError((error as { cause?: unknown })?.cause)
      ? ((error as { cause: unknown }).cause as { code?: number })
      : undefined;
  const unavailable = grpc
    ? grpc.code === 14 /* UNAVAILABLE */ || grpc.code === 4 /* DEADLINE_EXCEEDED */
    : error instanceof Error && /ECONNREFUSED|SQLITE_BUSY|Connection terminated|connect ECONN/i.test(error.message);
  if (unavailable) {
    request.log.error({ err: error }, 'a service the API needs is unavailable');
    return new ApiProblem(
      'service-unavailable',
      'Temporal or the result store did not answer; retry later',
      {},
      { 'retry-after': '5' },
    );
  }
  request.log.error({ err: error }, 'unexpected error');
  return new ApiProblem('internal', 'an unexpected error happened; it was logged under the instance ID');
}

/** Sends a problem with its headers (`Retry-After` on every 429); a 404 carries no instance ID. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, p: ApiProblem): FastifyReply {
  for (const [k, v] of Object.entries(p.headers)) reply.header(k, v);
  if (p.status === 429 && !reply.getHeader('retry-after')) reply.header('retry-after', '1');
  return reply
    .code(p.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(p.toBody(p.slug === 'not-found' ? undefined : request.id));
}

/** The `budget-exceeded` problem of a refusal's details (see `BudgetExceededError`), with `Retry-After` until the period renews. */
function budgetProblem(message: string, d: Record<string, unknown>): ApiProblem {
  const renewsAt = typeof d.renewsAt === 'string' ? d.renewsAt : null;
  const retry = renewsAt ? Math.max(1, Math.ceil((Date.parse(renewsAt) - Date.now()) / 1000)) : undefined;
  return new ApiProblem(
    'budget-exceeded',
    message,
    {
      budget: d.budget,
      provider: d.provider,
      unit: d.unit,
      period: d.period,
      period_key: d.periodKey,
      amount: d.amount,
      reserved: d.reserved,
      spent: d.spent,
      remaining: d.remaining,
      estimate: d.estimate,
      renews_at: renewsAt,
    },
    retry ? { 'retry-after': String(retry) } : {},
  );
}

/** An `invalid-request` problem with one entry in `errors`: where (`body`, `params`), the field's dotted path, why. */
function invalid(message: string, where: string, why: string, path = ''): ApiProblem {
  return new ApiProblem('invalid-request', message, { errors: [{ in: where, path, message: why }] });
}

/** A JSON pointer (`/a/0/b`) as a dotted path (`a.0.b`). */
function dotted(pointer: string): string {
  return pointer.replace(/^\//, '').replace(/\//g, '.');
}

/** A framework message with every quoted query string cut off (`/a?key=…` → `/a?…`): callers put credentials there. */
function withoutQueryStrings(message: string): string {
  return message.replace(/\?[^\s'"]*/g, '?…');
}
