/**
 * Adapter for the reference provider (`src/sim`), which follows the seeds' provider contract
 * (../shared/seeds/002_*: every job endpoint answers `202` with `job_id`; status by
 * `GET /api/jobs/:id`; cancel by `DELETE /api/jobs/:id/cancel`; `429 CONCURRENCY_LIMIT`), plus an
 * `Idempotency-Key` header and a list endpoint filtered by `client_ref`, each of which a profile
 * can switch off.
 */
import { z } from 'zod';
import type { ProviderState } from '../model/states.js';
import type { ScrapeRequest } from '../model/types.js';
import { ProviderError } from './errors.js';
import { httpError, providerFetch, type CallPhase, type ProviderResponse } from './http.js';
import type { Accepted, CallContext, CancelAnswer, FindContext, ProviderAdapter, ProviderCapabilities, ProviderResult, ResultContext, StatusObservation, SubmitContext } from './types.js';
import { parseRetryAfter } from '../lib/retryAfter.js';

/** Configuration of one reference-provider endpoint. Timeouts in ms. */
export const ReferenceConfigSchema = z.object({
  kind: z.literal('reference'),
  baseUrl: z.string().url(),
  submitTimeoutMs: z.number().int().positive().default(15_000),
  readTimeoutMs: z.number().int().positive().default(10_000),
  capabilities: z
    .object({ idempotency: z.boolean().default(true), list: z.boolean().default(true), cancel: z.boolean().default(true), webhooks: z.boolean().default(false) })
    .default({ idempotency: true, list: true, cancel: true, webhooks: false }),
  /**
   * Ask the provider to POST status events to our webhook receiver (`POST /v1/webhooks/<name>`
   * of the HTTP API). `secretEnv` names the environment variable holding the HMAC secret sent
   * with each submit (the provider signs events with it); it is read at call time on the worker,
   * so the secret never enters workflow input or history. Webhooks are hints: polling continues.
   */
  webhook: z.object({ url: z.string().url(), secretEnv: z.string().min(1).optional() }).strict().optional(),
});
export type ReferenceConfig = z.infer<typeof ReferenceConfigSchema>;

const ErrorBody = z.object({ error: z.object({ code: z.string().optional(), message: z.string().optional() }).passthrough() }).passthrough();
const SubmitBody = z.object({ job_id: z.string().min(1), status: z.string().default('queued') }).passthrough();
const StatusValue = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']);
const ResultBody = z
  .object({
    url: z.string(),
    final_url: z.string().nullish(),
    http_status: z.number().int().nullish(),
    title: z.string().nullish(),
    byline: z.string().nullish(),
    excerpt: z.string().nullish(),
    lang: z.string().nullish(),
    site_name: z.string().nullish(),
    published_time: z.string().nullish(),
    text: z.string().nullish(),
    markdown: z.string().nullish(),
    links: z.array(z.string()).default([]),
    content_length: z.number().int().nullish(),
  })
  .passthrough();
const JobBody = z
  .object({
    job_id: z.string(),
    status: StatusValue,
    progress: z.object({ pages_fetched: z.number().optional() }).passthrough().optional(),
    credits_used: z.number().optional(),
    error: z.object({ code: z.string().optional(), message: z.string().default('failed') }).passthrough().nullish(),
    result: ResultBody.nullish(),
  })
  .passthrough();
const ListBody = z.object({ jobs: z.array(z.object({ job_id: z.string(), status: z.string(), client_ref: z.string().nullish() }).passthrough()) });

/** {@link ProviderAdapter} for the reference provider. */
export class ReferenceAdapter implements ProviderAdapter {
  readonly kind = 'reference';
  readonly capabilities: ProviderCapabilities;

  constructor(
    readonly name: string,
    private readonly config: ReferenceConfig,
  ) {
    this.capabilities = config.capabilities;
  }

  private url(path: string): string {
    return new URL(path, this.config.baseUrl).toString();
  }

  private headers(ctx: CallContext): Record<string, string> {
    return { authorization: `Bearer ${ctx.apiKey}` };
  }

  private fail(res: ProviderResponse, phase: CallPhase, ctx: CallContext): ProviderError {
    const parsed = ErrorBody.safeParse(res.body);
    const code = parsed.success ? parsed.data.error.code : undefined;
    const message = parsed.success ? parsed.data.error.message : res.text.slice(0, 500) || undefined;
    const err = httpError(res, phase, code, message, [ctx.apiKey, ...ctx.secrets]);
    const stated = parsed.success ? (parsed.data.error as { limit?: unknown }).limit : undefined;
    if (typeof stated === 'number' && Number.isInteger(stated) && stated > 0) err.details.statedLimit = stated; // `429 CONCURRENCY_LIMIT` says the limit
    return err;
  }

  private invalid(res: ProviderResponse, what: string, error: z.ZodError): ProviderError {
    // A 2xx we cannot understand: for a submit we do not know whether a job exists.
    return new ProviderError('ambiguous', `${res.evidence.endpoint} answered ${res.status} with an unexpected ${what}: ${z.prettifyError(error)}`, {
      httpStatus: res.status,
      evidence: res.evidence,
      code: 'INVALID_RESPONSE',
    });
  }

  /**
   * The `webhook` field of a submit when the entry configures one: `{url, secret?}` with the
   * secret read from `process.env[secretEnv]` now. Throws a permanent {@link ProviderError}
   * (`NO_WEBHOOK_SECRET`) when that variable is not set, rather than submitting unsigned.
   */
  private webhookSpec(): { url: string; secret?: string } | undefined {
    const hook = this.config.webhook;
    if (!hook) return undefined;
    if (!hook.secretEnv) return { url: hook.url };
    const secret = process.env[hook.secretEnv];
    if (!secret) throw new ProviderError('permanent', `environment variable ${hook.secretEnv} (webhook secret of provider ${this.name}) is not set on the worker`, { code: 'NO_WEBHOOK_SECRET' });
    return { url: hook.url, secret };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const headers: Record<string, string> = this.headers(ctx);
    if (this.capabilities.idempotency) headers['idempotency-key'] = ctx.idempotencyKey;
    const webhook = this.webhookSpec();
    const res = await providerFetch({
      method: 'POST',
      url: this.url('/api/scrape'),
      headers,
      // Our fields last: request options can never override the URL, the client reference or the webhook.
      json: { ...request.options, url: request.url, format: request.format, client_ref: ctx.clientRef, ...(webhook ? { webhook } : {}) },
      timeoutMs: this.config.submitTimeoutMs,
      phase: 'submit',
      secrets: webhook?.secret ? [ctx.apiKey, webhook.secret, ...ctx.secrets] : [ctx.apiKey, ...ctx.secrets],
      signal: ctx.signal,
    });
    if (res.status < 200 || res.status >= 300) throw this.fail(res, 'submit', ctx);
    const body = SubmitBody.safeParse(res.body);
    if (!body.success) throw this.invalid(res, 'submit body', body.error);
    return { taskId: body.data.job_id, providerStatus: body.data.status, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  private async getJob(taskId: string, ctx: CallContext): Promise<{ res: ProviderResponse; job: z.infer<typeof JobBody> }> {
    const res = await providerFetch({
      method: 'GET',
      url: this.url(`/api/jobs/${encodeURIComponent(taskId)}`),
      headers: this.headers(ctx),
      timeoutMs: this.config.readTimeoutMs,
      phase: 'read',
      secrets: [ctx.apiKey, ...ctx.secrets],
      signal: ctx.signal,
    });
    if (res.status !== 200) throw this.fail(res, 'read', ctx);
    const job = JobBody.safeParse(res.body);
    if (!job.success) {
      throw new ProviderError('transient', `${res.evidence.endpoint} answered an unexpected status body: ${z.prettifyError(job.error)}`, {
        httpStatus: res.status,
        evidence: res.evidence,
        code: 'INVALID_RESPONSE',
      });
    }
    return { res, job: job.data };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const { res, job } = await this.getJob(taskId, ctx);
    return {
      state: job.status as ProviderState,
      providerStatus: job.status,
      progress: { pagesFetched: job.progress?.pages_fetched, creditsUsed: job.credits_used },
      error: job.status === 'failed' ? { code: job.error?.code, message: job.error?.message ?? 'provider reported failure' } : undefined,
      retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), Date.now()),
      evidence: job.status === 'failed' ? res.evidence : undefined,
    };
  }

  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const url = ctx.url;
    const { res, job } = await this.getJob(taskId, ctx);
    if (job.status !== 'completed' || !job.result) {
      throw new ProviderError('transient', `task ${taskId} is ${job.status}, no result yet`, { httpStatus: res.status, evidence: res.evidence, code: 'NOT_READY' });
    }
    const r = job.result;
    return {
      url: r.url || url,
      finalUrl: r.final_url ?? null,
      httpStatus: r.http_status ?? null,
      title: r.title ?? null,
      byline: r.byline ?? null,
      excerpt: r.excerpt ?? null,
      lang: r.lang ?? null,
      siteName: r.site_name ?? null,
      publishedTime: r.published_time ?? null,
      text: r.text ?? null,
      markdown: r.markdown ?? null,
      links: r.links,
      contentLength: r.content_length ?? null,
    };
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    if (!this.capabilities.cancel) throw new ProviderError('unsupported', `provider ${this.name} has no cancel endpoint`, { code: 'NOT_SUPPORTED' });
    const res = await providerFetch({
      method: 'DELETE',
      url: this.url(`/api/jobs/${encodeURIComponent(taskId)}/cancel`),
      headers: this.headers(ctx),
      timeoutMs: this.config.readTimeoutMs,
      phase: 'cancel',
      secrets: [ctx.apiKey, ...ctx.secrets],
      signal: ctx.signal,
    });
    const status = (res.body as { status?: string; error?: { status?: string; code?: string } } | undefined) ?? {};
    if (res.status === 200 || res.status === 202) {
      const s = StatusValue.safeParse(status.status);
      return { accepted: true, state: s.success ? s.data : undefined, providerStatus: status.status };
    }
    if (res.status === 409) {
      const s = StatusValue.safeParse(status.error?.status);
      return { accepted: false, alreadyFinal: true, state: s.success ? s.data : undefined, providerStatus: status.error?.status };
    }
    const err = this.fail(res, 'cancel', ctx);
    if (res.status === 404 && ErrorBody.safeParse(res.body).data?.error.code === 'NOT_SUPPORTED') {
      throw new ProviderError('unsupported', err.message, err.details);
    }
    throw err;
  }

  async findSubmitted(ctx: FindContext): Promise<Accepted | null> {
    const clientRef = ctx.clientRef;
    if (!this.capabilities.list) throw new ProviderError('unsupported', `provider ${this.name} has no list endpoint`, { code: 'NOT_SUPPORTED' });
    const u = new URL(this.url('/api/jobs'));
    u.searchParams.set('client_ref', clientRef);
    u.searchParams.set('limit', '10');
    const res = await providerFetch({ method: 'GET', url: u.toString(), headers: this.headers(ctx), timeoutMs: this.config.readTimeoutMs, phase: 'read', secrets: [ctx.apiKey, ...ctx.secrets], signal: ctx.signal });
    if (res.status !== 200) {
      const err = this.fail(res, 'read', ctx);
      if (res.status === 404) throw new ProviderError('unsupported', err.message, err.details);
      throw err;
    }
    const body = ListBody.safeParse(res.body);
    if (!body.success) throw new ProviderError('transient', `unexpected list body: ${z.prettifyError(body.error)}`, { evidence: res.evidence, code: 'INVALID_RESPONSE' });
    const matches = body.data.jobs.filter((j) => j.client_ref === clientRef);
    if (matches.length === 0) return null;
    // Newest first; more than one would mean duplicates already exist: adopt the oldest, the one
    // the first submit created, and leave the evidence in the job's timeline.
    const chosen = matches[matches.length - 1]!;
    return { taskId: chosen.job_id, providerStatus: chosen.status, replayed: true };
  }
}
