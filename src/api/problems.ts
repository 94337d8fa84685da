/**
 * Errors of the HTTP API as `application/problem+json` (RFC 9457, "Problem Details for HTTP
 * APIs"). Every problem has a stable `type` (a URI reference `/problems/<slug>`, resolved against
 * the API's base URL, where `GET /problems/<slug>` describes it), a `title` fixed per type, the
 * HTTP `status`, a `detail` for this occurrence and, per type, extension members (documented in
 * the OpenAPI document). Problems never contain stack traces, API keys, signatures or secrets.
 */
import { z } from 'zod';

/** Every problem type: HTTP status, fixed title and what it means. */
export const PROBLEM_TYPES = {
  'invalid-request': {
    status: 400,
    title: 'The request is invalid',
    description:
      'The body, query, path or a header failed validation (including unknown fields and a malformed cursor). `errors` lists each problem with where it is (`in`: body, querystring, params, headers) and its path. Nothing was started.',
  },
  unauthorized: {
    status: 401,
    title: 'Missing or unknown API key',
    description:
      'Send `Authorization: Bearer <api key>`. The answer is the same for a missing, malformed or unknown key.',
  },
  'invalid-signature': {
    status: 401,
    title: 'The webhook signature is missing or does not match',
    description:
      'A provider webhook whose HMAC signature over the raw body did not verify. Nothing changed; the event was kept in quarantine for an operator.',
  },
  'invalid-webhook-token': {
    status: 401,
    title: 'The webhook callback token is missing or does not match',
    description:
      'A delivery of a provider that does not sign its webhooks must come to the per-job callback URL it was given (`/v1/webhooks/<provider>/<token>`), and the token must match the job the event names. Nothing changed; the event was kept in quarantine (its hash and size only) for an operator.',
  },
  'budget-exceeded': {
    status: 402,
    title: 'A budget of the account cannot take this job',
    description:
      'The job’s estimated cost, in its provider’s unit, would take a budget of the caller’s account past its amount in the current period, and the account refuses such jobs (its policy `refuse`; under `hold` the job is accepted and waits, `waiting.reason: "budget"`). Members: `budget` (its ID), `provider`, `unit`, `period` (`day`, `month`, `total`), `period_key`, `amount`, `reserved`, `spent`, `remaining` (what is left), `estimate` (this job’s), `renews_at` (UTC; null for `total`). `Retry-After` (seconds) when the period renews. Nothing was started or kept.',
  },
  'budget-not-found': {
    status: 404,
    title: 'No such budget',
    description: 'The caller’s account has no budget with this ID (`GET /v1/budgets` lists them).',
  },
  'not-found': {
    status: 404,
    title: 'No such job',
    description: "No job with this ID belongs to the caller's account. Another account's job answers exactly the same.",
  },
  'route-not-found': {
    status: 404,
    title: 'No such route',
    description: 'The method and path match no endpoint of this API (see /openapi.json).',
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    description:
      'The path exists but not with this method. `Allow` lists the methods it answers. Nothing was read or started.',
  },
  'unknown-provider': {
    status: 404,
    title: 'No such webhook receiver',
    description: 'The provider in `/v1/webhooks/<provider>` is not configured, or has no webhook configured.',
  },
  'result-not-ready': {
    status: 409,
    title: 'The job has no result',
    description:
      'The job exists but has no result: `state` says where it is and `final` whether one can still come. While the job runs, `Retry-After` (seconds) says when to ask again; `status_url` is the job.',
  },
  conflict: {
    status: 409,
    title: 'The request conflicts with the state of the job',
    description: 'The operation is not possible in the job’s current state (`state`).',
  },
  'result-expired': {
    status: 410,
    title: 'The result has expired',
    description:
      'The job ran and its result was purged after the retention period. The members `task_id`, `provider`, `finished_at`, `result_written_at`, `purged_at` and `title` are the evidence that it ran. Start a new request (a new Idempotency-Key) to scrape the page again.',
  },
  'payload-too-large': {
    status: 413,
    title: 'The request body is too large',
    description: 'The body exceeds the configured limit (`api.bodyLimitBytes`, default 1 MiB). Nothing was started.',
  },
  'unsupported-media-type': {
    status: 415,
    title: 'Unsupported content type',
    description: 'Request bodies must be `application/json`. Nothing was started.',
  },
  'idempotency-key-reused': {
    status: 422,
    title: 'The Idempotency-Key was used with another request',
    description:
      'This account already used the key with a different body (draft-ietf-httpapi-idempotency-key-header: 422 for a reused key with another payload). Repeat the original body to get its job, or use a new key. `job_id` is the job the key belongs to.',
  },
  'budget-unit': {
    status: 422,
    title: 'The budget’s unit does not fit',
    description:
      'A budget of one provider counts in its kind’s unit (`unit` may be left out, or must be that unit); a budget across providers names its unit. Members: `provider`, `unit` (as asked). Nothing was changed.',
  },
  'rate-limited': {
    status: 429,
    title: 'Too many requests',
    description:
      'The caller exceeded its own limit (per account; per client IP without a key; per provider and IP for webhooks). `Retry-After` (seconds) says when to try again.',
  },
  internal: {
    status: 500,
    title: 'Internal error',
    description: 'An unexpected error. It was logged with the request ID (`instance`); no details are returned.',
  },
  'service-unavailable': {
    status: 503,
    title: 'A service the API needs is unavailable',
    description:
      'Temporal or the result store did not answer. Retry after `Retry-After` seconds; an `Idempotency-Key` makes the retry safe.',
  },
} as const satisfies Record<string, { status: number; title: string; description: string }>;

/** A problem type slug (see {@link PROBLEM_TYPES}). */
export type ProblemSlug = keyof typeof PROBLEM_TYPES;

/** The stable `type` URI reference of a problem slug: `/problems/<slug>`. */
export function problemType(slug: ProblemSlug): string {
  return `/problems/${slug}`;
}

/** Media type of every error answer (RFC 9457 §3). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The problem document: the RFC 9457 members plus per-type extension members (looseObject: extra
 * members are allowed and kept).
 */
export const ProblemSchema = z
  .looseObject({
    type: z
      .string()
      .describe('Stable URI reference of the problem type, `/problems/<slug>`; GET it for a description.'),
    title: z.string().describe('Short summary, fixed per type.'),
    status: z.number().int().describe('The HTTP status code.'),
    detail: z.string().describe('What went wrong in this occurrence.'),
    instance: z.string().optional().describe('The request ID (also in the logs).'),
  })
  .meta({
    id: 'Problem',
    description: 'RFC 9457 problem details; extension members per type (see the `type` description).',
  });
/** See {@link ProblemSchema}. */
export type Problem = z.infer<typeof ProblemSchema>;

/**
 * An error the API answers as a problem document. Throw it from a handler or hook; the error
 * handler renders it with its status, `headers` (e.g. `Retry-After`) and extension members.
 */
export class ApiProblem extends Error {
  readonly status: number;

  constructor(
    readonly slug: ProblemSlug,
    readonly detail: string,
    /** Extension members (must be safe to show the caller: no secrets). */
    readonly extensions: Record<string, unknown> = {},
    /** Extra response headers. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ApiProblem';
    this.status = PROBLEM_TYPES[slug].status;
  }

  /** The problem document (`instance` = the request ID, when given). */
  toBody(requestId?: string): Problem {
    return {
      type: problemType(this.slug),
      title: PROBLEM_TYPES[this.slug].title,
      status: this.status,
      detail: this.detail,
      ...(requestId ? { instance: requestId } : {}),
      ...this.extensions,
    };
  }
}
