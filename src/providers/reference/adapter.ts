/**
 * Adapter for the reference provider (`tools/sim`), which follows the provider contract of the
 * seed article “What asynchronous scraping is” (every job endpoint answers `202` with `job_id`;
 * status by `GET /api/jobs/:id`; cancel by `DELETE /api/jobs/:id/cancel`; `429 CONCURRENCY_LIMIT`), plus an
 * `Idempotency-Key` header and a list endpoint filtered by `client_ref`, each of which a profile
 * can switch off, and per-request webhooks (`tools/sim/webhooks.ts`). Credential: `Authorization:
 * Bearer <key>`.
 *
 * Status words: `queued`, `running`, `completed`, `failed`, `cancelled`; any other word (or another
 * case) is reported `unrecognised`. A `202`/`204` on a status read is "not ready" (`running`).
 */
import { z } from 'zod';
import type { LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderState } from '../../model/states.js';
import type { ScrapeRequest } from '../../model/types.js';
import { ProviderError } from '../shared/errors.js';
import { notReady, ProviderHttp, errorDetails, path, type ProviderResponse } from '../shared/http.js';
import {
  lookupNotOffered,
  type Accepted,
  type CallContext,
  type CancelAnswer,
  type FindContext,
  type ObservedState,
  type ProviderAdapter,
  type ProviderCapabilities,
  type ResultContext,
  type StatusObservation,
  type SubmitContext,
} from '../adapter.js';
import type { ProviderResult } from '../../model/results.js';
import { webhookCallback } from '../shared/webhook.js';
import type { ReferenceEntry } from './config.js';

const SubmitBody = z.looseObject({ job_id: z.string().min(1), status: z.string().default('queued') });
const KNOWN_STATUS: readonly ProviderState[] = ['queued', 'running', 'completed', 'failed', 'cancelled'];
const ResultBody = z.looseObject({
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
});
const JobBody = z.looseObject({
  job_id: z.string(),
  status: z.string().min(1),
  progress: z.looseObject({ pages_fetched: z.number().optional() }).optional(),
  credits_used: z.number().optional(),
  error: z.looseObject({ code: z.string().optional(), message: z.string().default('failed') }).nullish(),
  result: ResultBody.nullish(),
});
const ListBody = z.object({
  jobs: z.array(z.looseObject({ job_id: z.string(), status: z.string(), client_ref: z.string().nullish() })),
});
const CancelBody = z.looseObject({
  status: z.string().optional(),
  progress: z.looseObject({ pages_fetched: z.number().optional() }).optional(),
  credits_used: z.number().optional(),
  error: z.looseObject({ status: z.string().optional(), code: z.string().optional() }).optional(),
});

/** The reference provider's list filtered by our client reference. */
const LIST_LOOKUP = 'GET /api/jobs?client_ref';

/**
 * What the reference provider's replays and lookups prove (each part only when the deployment has
 * it, per the entry's `capabilities`): a replayed `Idempotency-Key` returns the same job; the list
 * filtered by `client_ref` shows jobs in every state until they are deleted an hour after they end
 * (the sim's default `resultTtlMs`), assumed to lag up to 10 s; `client_ref` is ours (strong).
 */
export function referenceEvidence(capabilities: { idempotency: boolean; list: boolean }): ReconcileEvidence {
  return {
    replay: capabilities.idempotency ? 'same-task' : 'none',
    lookups: capabilities.list
      ? [
          {
            name: LIST_LOOKUP,
            shows: ['queued', 'running', 'finished'],
            finishedForMs: 3_600_000,
            lagMs: 10_000,
            match: 'strong',
          },
        ]
      : [],
    taskScope: 'credential',
    source: "the seeds' provider contract (Idempotency-Key and GET /api/jobs?client_ref as tools/sim serves them)",
  };
}

/** Our state for a reference status word: exact words only; anything else is `unrecognised`. */
export function referenceState(word: string): ObservedState {
  return (KNOWN_STATUS as readonly string[]).includes(word) ? (word as ProviderState) : 'unrecognised';
}

/** The page of a completed job's `result` (`fallbackUrl` when it names none). */
function toPage(r: z.infer<typeof ResultBody>, fallbackUrl?: string): ProviderResult {
  return {
    url: r.url || (fallbackUrl ?? ''),
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

/** {@link ProviderAdapter} for the reference provider. */
export class ReferenceAdapter implements ProviderAdapter {
  readonly kind = 'reference';
  readonly capabilities: ProviderCapabilities;
  readonly evidence: ReconcileEvidence;
  private readonly http: ProviderHttp;

  constructor(
    readonly name: string,
    private readonly entry: ReferenceEntry,
  ) {
    this.capabilities = entry.capabilities;
    this.evidence = referenceEvidence(entry.capabilities);
    this.http = ProviderHttp.forEntry(name, entry, { in: 'header' });
  }

  /**
   * The `webhook` of a submit: `ctx.callbackUrl` (and `ctx.webhookSecret` when signed) as the
   * activity resolved them; when the activity passes none (before workflow v2), derived from the
   * entry for a signed entry (the URL needs no per-job token). Throws a permanent
   * {@link ProviderError} `NO_WEBHOOK_SECRET` when the secret variable is unset.
   */
  private webhookOf(ctx: SubmitContext): { url: string; secret?: string } | undefined {
    const hook =
      ctx.callbackUrl !== undefined
        ? { callbackUrl: ctx.callbackUrl, webhookSecret: ctx.webhookSecret }
        : webhookCallback(this.name, this.entry.webhook, this.entry.webhookSignature, undefined);
    if (!hook.callbackUrl) return undefined;
    return this.entry.webhookSignature && hook.webhookSecret
      ? { url: hook.callbackUrl, secret: hook.webhookSecret }
      : { url: hook.callbackUrl };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const webhook = this.webhookOf(ctx);
    const callCtx: SubmitContext = { ...ctx, callbackUrl: webhook?.url, webhookSecret: webhook?.secret };
    const res = await this.http.ok(callCtx, {
      method: 'POST',
      path: '/api/scrape',
      headers: this.capabilities.idempotency ? { 'idempotency-key': ctx.idempotencyKey } : {},
      // Our fields last: request options can never override the URL, the client reference or the webhook.
      json: {
        ...request.options,
        url: request.url,
        format: request.format,
        client_ref: ctx.clientRef,
        ...(webhook ? { webhook } : {}),
      },
      phase: 'submit',
    });
    const body = this.http.parse(res, SubmitBody, 'submit', 'submit body');
    return {
      taskId: body.job_id,
      providerStatus: body.status,
      replayed: res.headers.get('idempotent-replayed') === 'true',
    };
  }

  /** The job's status body, or `null` for a `202`/`204` "not ready" answer. */
  private async getJob(
    taskId: string,
    ctx: CallContext,
  ): Promise<{ res: ProviderResponse; job: z.infer<typeof JobBody> | null }> {
    const res = await this.http.ok(ctx, { method: 'GET', path: path`/api/jobs/${taskId}`, phase: 'read' });
    if (res.status === 202 || res.status === 204) return { res, job: null };
    if (res.status !== 200) throw this.http.error(res, 'read', ctx);
    return { res, job: this.http.parse(res, JobBody, 'read', 'status body') };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const { res, job } = await this.getJob(taskId, ctx);
    if (!job) return this.http.stillRunning(res);
    const retryAfterMs = this.http.retryAfterMs(res);
    const state = referenceState(job.status);
    return {
      state,
      // The completed answer embeds the page: written from here, no separate result read.
      result: state === 'completed' && job.result ? toPage(job.result) : undefined,
      providerStatus: job.status,
      progress: { pagesFetched: job.progress?.pages_fetched, creditsUsed: job.credits_used },
      ...(job.credits_used !== undefined ? { cost: job.credits_used } : {}),
      error:
        state === 'failed'
          ? { code: job.error?.code, message: job.error?.message ?? 'provider reported failure' }
          : undefined,
      retryAfterMs,
      evidence: state === 'failed' ? res.evidence : undefined,
    };
  }

  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const { res, job } = await this.getJob(taskId, ctx);
    if (!job || job.status !== 'completed' || !job.result) {
      throw notReady(`task ${taskId} is ${job?.status ?? `not ready (HTTP ${res.status})`}, no result yet`, res);
    }
    return toPage(job.result, ctx.url);
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    if (!this.capabilities.cancel)
      throw new ProviderError('unsupported', `provider ${this.name} has no cancel endpoint`, { code: 'NOT_SUPPORTED' });
    const res = await this.http.call(ctx, {
      method: 'DELETE',
      path: path`/api/jobs/${taskId}/cancel`,
      phase: 'cancel',
      timeoutMs: this.entry.readTimeoutMs,
    });
    const body = CancelBody.safeParse(res.body).data ?? {};
    const known = (w: string | undefined) =>
      w !== undefined && (KNOWN_STATUS as readonly string[]).includes(w) ? (w as ProviderState) : undefined;
    const progress = { pagesFetched: body.progress?.pages_fetched, creditsUsed: body.credits_used };
    if (res.status === 200 || res.status === 202)
      return {
        accepted: true,
        state: known(body.status),
        providerStatus: body.status,
        progress,
        ...(body.credits_used !== undefined ? { cost: body.credits_used } : {}),
      };
    if (res.status === 409)
      return {
        accepted: false,
        alreadyFinal: true,
        state: known(body.error?.status),
        providerStatus: body.error?.status,
      };
    const err = this.http.error(res, 'cancel', ctx);
    if (res.status === 404 && body.error?.code === 'NOT_SUPPORTED')
      throw new ProviderError('unsupported', err.message, err.details);
    throw err;
  }

  /** Reads {@link LIST_LOOKUP} (when the deployment has a list): every job carrying our `client_ref` is a strong candidate. */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    if (!this.capabilities.list) return [];
    const at = new Date().toISOString();
    const res = await this.http.call(ctx, {
      method: 'GET',
      path: '/api/jobs',
      query: { client_ref: ctx.clientRef, limit: 10 },
      phase: 'read',
    });
    if (res.status === 404)
      return [
        lookupNotOffered(
          LIST_LOOKUP,
          `answered 404 (${errorDetails(res).code ?? 'no list'}): not offered by this deployment`,
          [],
          at,
        ),
      ];
    if (!this.http.isOk(res)) throw this.http.error(res, 'read', ctx);
    const body = this.http.parse(res, ListBody, 'read', 'list body');
    const mine = body.jobs.filter((j) => j.client_ref === ctx.clientRef);
    return [
      {
        lookup: LIST_LOOKUP,
        available: true,
        complete: body.jobs.length < 10,
        candidates: mine.map((j) => ({
          taskId: j.job_id,
          providerStatus: j.status,
          match: 'strong' as const,
          why: 'its client_ref is ours',
        })),
        at,
      },
    ];
  }
}
