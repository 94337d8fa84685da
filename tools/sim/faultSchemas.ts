/**
 * Fault rules of the reference provider ("the sim"): which endpoint a rule targets, what it does
 * (drop the answer before or after commit, delay it, answer 5xx or 429, mark the created job) and
 * how a rule is given (in-process, admin HTTP, the per-request `X-Sim-Fault` header). Re-exported
 * by `schemas.ts`, with the rest of the sim's boundaries.
 */
import { z } from 'zod';

/** The endpoints a fault rule can target; `any` matches every endpoint the action applies to. */
export const FaultEndpointSchema = z.enum(['submit', 'status', 'logs', 'cancel', 'list', 'any']);
/** See {@link FaultEndpointSchema}. */
export type FaultEndpoint = z.infer<typeof FaultEndpointSchema>;

/** The five counted API endpoints. */
export type Endpoint = Exclude<FaultEndpoint, 'any'>;
/** The five counted API endpoints, in a stable order. */
export const ENDPOINTS: readonly Endpoint[] = ['submit', 'status', 'logs', 'cancel', 'list'];

/**
 * Fault actions.
 *
 * Request-level (at most one fires per request):
 * - `drop_before_commit`: destroy the socket without doing anything.
 * - `drop_after_commit`: handle the request normally (create the job, record the idempotency key,
 *   perform the cancel, ...) and then destroy the socket without answering.
 * - `delay`: wait `delayMs` (ms) then handle normally. Does not block other requests. With
 *   `commit: true` the request is handled first and only the answer is held `delayMs` (an answer
 *   that outlives the client's timeout although the job exists).
 * - `error_5xx`: answer `status` (default 503) `{error:{code: code ?? "UPSTREAM_UNAVAILABLE"}}`;
 *   with `commit: true` the request is handled first (e.g. the job is created) and then the 5xx
 *   replaces the answer; with `plain: true` the body is a proxy's `text/html` page (`502 Bad
 *   Gateway`) instead of the JSON error body; with `retryAfterSeconds` the answer carries a
 *   `Retry-After: <s>` header (whatever the account's `retryAfterStyle`).
 * - `rate_limit`: answer `429 RATE_LIMITED` with the wait per the account's `retryAfterStyle`.
 * - `not_found` (status, logs, cancel only): answer `404 NOT_FOUND` although the job exists.
 * - `cancel_pending` (cancel only): answer `202 {job_id, status}` and cancel only after `delayMs`
 *   (default 1000 ms), unless the job has finished by then.
 *
 * Job-level (submit only; every matching rule marks the created job):
 * - `fail_job`: after the fetch the job ends `failed` with `code ?? "TARGET_BLOCKED"`.
 * - `never_finish`: the job stays `running` until cancelled (it never fetches).
 * - `hold`: the job is held in `holdIn` (default `queued`) until `sim.release(jobId)` or
 *   `POST /_sim/jobs/:id/release`.
 * - `forget`: the job is deleted `delayMs` (default 0 ms) after it finishes: status answers 404.
 * - `drop_webhook`: the job's webhook events are lost (never sent; counted as `dropped`).
 * - `duplicate_webhook`: each webhook event of the job is delivered twice (same `event_id`, same
 *   body and signature), as providers that deliver "at least once" do (providers.md: Apify).
 * - `bad_result`: the job completes, but its result cannot be read: the first status answer that
 *   says `completed` carries no `result` (as a provider that serves status and result apart), and
 *   every later one carries, where the page object belongs, a proxy's HTML error text that no
 *   client can parse as a page.
 */
export const FaultActionSchema = z.enum([
  'drop_before_commit',
  'drop_after_commit',
  'delay',
  'error_5xx',
  'rate_limit',
  'not_found',
  'cancel_pending',
  'fail_job',
  'never_finish',
  'hold',
  'forget',
  'drop_webhook',
  'duplicate_webhook',
  'bad_result',
]);
/** See {@link FaultActionSchema}. */
export type FaultAction = z.infer<typeof FaultActionSchema>;

/** Actions that mark the job created by a matching submit instead of changing the HTTP answer. */
export const JOB_LEVEL_ACTIONS: ReadonlySet<FaultAction> = new Set<FaultAction>([
  'fail_job',
  'never_finish',
  'hold',
  'forget',
  'drop_webhook',
  'duplicate_webhook',
  'bad_result',
]);

/** Endpoints each action can apply to (a rule for another endpoint never fires). */
export const ACTION_ENDPOINTS: Readonly<Record<FaultAction, readonly Endpoint[]>> = {
  drop_before_commit: ENDPOINTS,
  drop_after_commit: ENDPOINTS,
  delay: ENDPOINTS,
  error_5xx: ENDPOINTS,
  rate_limit: ENDPOINTS,
  not_found: ['status', 'logs', 'cancel'],
  cancel_pending: ['cancel'],
  fail_job: ['submit'],
  never_finish: ['submit'],
  hold: ['submit'],
  forget: ['submit'],
  drop_webhook: ['submit'],
  duplicate_webhook: ['submit'],
  bad_result: ['submit'],
};

const faultRuleShape = {
  /** Optional stable id; a rule added with an existing id replaces that rule. */
  id: z.string().min(1).max(100).optional(),
  /** Account name the rule is limited to; absent = every account. */
  account: z.string().min(1).max(100).optional(),
  /** Endpoint the rule is limited to (default `any`). */
  endpoint: FaultEndpointSchema.default('any'),
  /** Substring of the target URL (the submit body's `url`, or the job's `url`). */
  urlContains: z.string().min(1).optional(),
  action: FaultActionSchema,
  /** Probability in [0, 1] that a matching request triggers the rule (default 1). */
  probability: z.number().min(0).max(1).default(1),
  /** How many more times the rule may fire; absent = unlimited. Decremented when it fires. */
  times: z.number().int().min(1).optional(),
  /** ms: wait for `delay`, cancel delay for `cancel_pending`, deletion delay for `forget`. */
  delayMs: z.number().int().min(0).optional(),
  /** HTTP status for `error_5xx` (500..599, default 503). */
  status: z.number().int().min(500).max(599).optional(),
  /**
   * Seconds announced by `rate_limit` (default: the account's `retryAfterSeconds`), and by
   * `error_5xx` in a `Retry-After` header (default: none).
   */
  retryAfterSeconds: z.number().int().min(0).max(86_400).optional(),
  /** Error code for `error_5xx` / `fail_job`. */
  code: z.string().min(1).max(100).optional(),
  /** Error message for `error_5xx` / `rate_limit` / `fail_job`. */
  message: z.string().max(1000).optional(),
  /** `error_5xx` and `delay`: handle the request (commit) first, then answer 5xx / answer late. */
  commit: z.boolean().optional(),
  /** `error_5xx` only: answer a proxy's `text/html` page instead of the JSON error body. */
  plain: z.boolean().optional(),
  /** `hold` only: the status the job is held in (default `queued`). */
  holdIn: z.enum(['queued', 'running']).optional(),
};

/**
 * A fault rule, as given to `sim.faults.add()`, `POST /_sim/faults` or (without `account` and
 * `endpoint`) the `X-Sim-Fault` header. Unknown fields are rejected.
 */
export const FaultRuleSchema = z.strictObject(faultRuleShape);

/** Input type of a fault rule (defaults not yet applied). */
export type FaultRuleInput = z.input<typeof FaultRuleSchema>;
/** A parsed fault rule (defaults applied). */
export type FaultRule = z.infer<typeof FaultRuleSchema>;

/**
 * A per-request fault in the `X-Sim-Fault` header: a rule without `account`, `endpoint` or `id`.
 * It applies to that request only (probability honoured, `times` ignored).
 */
export const HeaderFaultSchema = z.strictObject({
  urlContains: faultRuleShape.urlContains,
  action: faultRuleShape.action,
  probability: faultRuleShape.probability,
  times: faultRuleShape.times,
  delayMs: faultRuleShape.delayMs,
  status: faultRuleShape.status,
  retryAfterSeconds: faultRuleShape.retryAfterSeconds,
  code: faultRuleShape.code,
  message: faultRuleShape.message,
  commit: faultRuleShape.commit,
  plain: faultRuleShape.plain,
  holdIn: faultRuleShape.holdIn,
});
