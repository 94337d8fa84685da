/**
 * Adapter for the Oxylabs Web Scraper API, Push-Pull integration. Contract: developers.oxylabs.io,
 * "Web Scraper API → Integration methods → Push-Pull", "Response Codes" and "Rate Limits" (read
 * 2026-11-30). What it says, and what this adapter does:
 *
 * - **Credential**: HTTP Basic, `user:password` (the entry's credential is that pair).
 * - **Submit** `POST /v1/queries` with the job parameters as JSON (`source`, `url`, `callback_url`,
 *   `client_notes`, `render`, `geo_location`, `parse`, …) → the job object `{id, status:
 *   "pending", …, _links}`; any 2xx with an `id` is an acceptance. `POST /v1/queries/batch` takes
 *   up to 5,000 `url`/`query` values and makes one job per value: the product maps **one scrape
 *   job to one Oxylabs query** (each has its own workflow, task ID, deadline and result), so the
 *   single-job endpoint is used and batches of the product are many single queries. Our client
 *   reference goes in `client_notes` (echoed in the job object and callbacks).
 * - **Status** `GET /v1/queries/{id}` → the job object: `pending` → running, `done` → completed
 *   (the result is read separately), `faulted` → failed (Oxylabs gave up; not billed); any other
 *   word → `unrecognised`. `202`/`204` → not ready.
 * - **Result** `GET /v1/queries/{id}/results` → `{results: [{content, type, page, url, job_id,
 *   status_code, …}], job}`; `204` = "job not completed yet" → not ready (a transient
 *   `NOT_READY`, retried; never a failure). One entry (the usual `universal` job) is the page
 *   itself (raw HTML extracted like the reference provider's); several (a multi-page query, several
 *   output types) are documents, in the provider's order, within the entry's `results` limits.
 * - **Expiry**: results stay retrievable "at least 24 hours" after the job finishes (a help page
 *   says job IDs are kept 48 h); afterwards `404` "the job ID you are looking for is no longer
 *   available" → counted, `notFoundLimit` in a row → `expired`, never failed, never resubmitted.
 * - **Cancel**: no endpoint → `unsupported` (the job is reported `cancel_unconfirmed`; Oxylabs
 *   finishes it and bills it).
 * - **No list endpoint and no idempotency key**: a lost submit waits in `unknown` until an
 *   operator resolves it.
 * - **Callback**: `callback_url` receives the job object when it completes; unsigned (Oxylabs
 *   documents the callback source IPs, `GET /v1/info/callbacker_ips`, for an allow-list), so the
 *   URL carries our per-job token.
 * - **Rate limits**: `429` (jobs per second per plan; also "access to {domain} has been limited to
 *   1 req/s" when a domain's success rate drops) → key-wide cool-down; no `Retry-After` is
 *   documented, so the default cool-down applies unless the message states a wait.
 */
import { z } from 'zod';
import type { LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderState } from '../../model/states.js';
import type { ScrapeRequest } from '../../model/types.js';
import { ProviderError } from '../shared/errors.js';
import { notReady, ProviderHttp, path, type ProviderResponse } from '../shared/http.js';
import { pageFromRaw } from '../shared/htmlPage.js';
import { enforceResultLimits, resultFromDocuments, withIdentity } from '../shared/pagination.js';
import type {
  Accepted,
  CallContext,
  CancelAnswer,
  FindContext,
  ObservedState,
  ProviderAdapter,
  ProviderCapabilities,
  ResultContext,
  StatusObservation,
  SubmitContext,
} from '../adapter.js';
import type { ProviderResult, ResultDocument } from '../../model/results.js';
import type { OxylabsEntry } from './config.js';

/** The job object of submit, status and callbacks (fields we read; more are allowed). */
const OxylabsJobSchema = z.looseObject({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  status: z.string().min(1),
  url: z.string().nullish(),
  client_notes: z.string().nullish(),
  statuses: z.array(z.unknown()).nullish(),
  created_at: z.string().nullish(),
  updated_at: z.string().nullish(),
});
type Job = z.infer<typeof OxylabsJobSchema>;

const ResultEntry = z.looseObject({
  content: z.unknown(),
  type: z.string().nullish(),
  page: z.number().int().nullish(),
  url: z.string().nullish(),
  status_code: z.number().int().nullish(),
  /** The target's answer as relayed for some sources (reported for `universal`, not documented): its `headers` may name the content type. */
  _response: z.unknown().optional(),
});
const ResultsBody = z.looseObject({ results: z.array(ResultEntry) });
type Entry = z.infer<typeof ResultEntry>;

/** Our state for an Oxylabs status word: `pending`, `done`, `faulted`; anything else `unrecognised`. */
export function oxylabsState(word: string): ObservedState {
  const known: Record<string, ProviderState> = { pending: 'running', done: 'completed', faulted: 'failed' };
  return known[word] ?? 'unrecognised';
}

/** The first eight bytes of every PNG file. */
const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');

/**
 * What an entry's `content` is: text, or bytes — for a `png` entry (a `render: png` screenshot,
 * always Base64, media type `image/png`) and for a job asked with `content_encoding: base64` (the
 * only documented way to get a binary target: images, PDFs), with the target's `content-type` when
 * the entry's `_response.headers` carry it (reported for `universal`, not documented; else the bytes
 * are sniffed).
 */
function contentOf(
  e: Entry,
  base64: boolean,
): { body: string | null; bytes: Buffer | null; contentType: string | null } {
  if (typeof e.content !== 'string') return { body: null, bytes: null, contentType: null };
  const headers = (e._response as { headers?: Record<string, unknown> } | undefined)?.headers;
  const type = headers ? Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1] : undefined;
  const contentType =
    typeof type === 'string' ? type : Array.isArray(type) && typeof type[0] === 'string' ? type[0] : null;
  if (e.content === '') return { body: e.content, bytes: null, contentType };
  if (e.type === 'png') {
    // A screenshot is Base64 of a PNG; anything else (an error text in its place) stays text, never mislabelled bytes.
    const bytes = Buffer.from(e.content, 'base64');
    if (bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return { body: null, bytes, contentType: 'image/png' };
    return { body: e.content, bytes: null, contentType: 'text/plain' };
  }
  if (!base64) return { body: e.content, bytes: null, contentType };
  return { body: null, bytes: Buffer.from(e.content, 'base64'), contentType };
}

/**
 * One result entry as a document. Identity: the entry's `page` and `type` (Oxylabs has no
 * document ID; one job's entries are its pages, per output type), else its index.
 */
function documentOf(e: Entry, fallbackUrl: string, index: number, base64: boolean): ResultDocument {
  const url = e.url ?? null;
  const meta = { page: e.page ?? null, type: e.type ?? null };
  const identity = {
    providerId: e.page !== null && e.page !== undefined ? `page ${e.page}${e.type ? ` ${e.type}` : ''}` : null,
    position: index,
  };
  if (typeof e.content === 'string') {
    const p = pageFromRaw({ url: url ?? fallbackUrl, ...contentOf(e, base64), httpStatus: e.status_code ?? null });
    return withIdentity(
      {
        url,
        httpStatus: e.status_code ?? null,
        title: p.title,
        text: p.text,
        markdown: p.markdown,
        links: p.links,
        data: meta,
        ...(p.body ? { body: p.body } : {}),
      },
      identity,
    );
  }
  return withIdentity({ url, httpStatus: e.status_code ?? null, data: { ...meta, content: e.content } }, identity);
}

/**
 * What Oxylabs Push-Pull's lookups prove after a lost submit: nothing — there is no list or search of jobs
 * and no idempotency key, so a lost submit always waits in `unknown` for an operator.
 */
export const OXYLABS_EVIDENCE: ReconcileEvidence = {
  replay: 'none',
  lookups: [],
  taskScope: 'credential',
  source: 'developers.oxylabs.io Push-Pull, read 2026-11-30: no list endpoint, no idempotency key',
};

/** True when the job asked for `content_encoding: base64` (its own options, else the entry's parameters). */
function asksBase64(request: ScrapeRequest, params: Record<string, unknown>): boolean {
  return (request.options.content_encoding ?? params.content_encoding) === 'base64';
}

/** {@link ProviderAdapter} for Oxylabs Push-Pull (see the module docs). */
export class OxylabsAdapter implements ProviderAdapter {
  readonly kind = 'oxylabs';
  readonly capabilities: ProviderCapabilities = { idempotency: false, list: false, cancel: false, webhooks: true };
  readonly evidence = OXYLABS_EVIDENCE;
  private readonly http: ProviderHttp;

  constructor(
    readonly name: string,
    private readonly entry: OxylabsEntry,
  ) {
    this.http = ProviderHttp.forEntry(name, entry, { in: 'basic' });
  }

  /** The job parameters: entry `params`, then the job's options, then ours (`source` from options or entry). */
  submitBody(request: ScrapeRequest, ctx: SubmitContext): Record<string, unknown> {
    const source =
      typeof request.options.source === 'string' && request.options.source ? request.options.source : this.entry.source;
    return {
      ...this.entry.params,
      ...request.options,
      source,
      url: request.url,
      client_notes: ctx.clientRef,
      ...(ctx.callbackUrl !== undefined ? { callback_url: ctx.callbackUrl } : {}),
    };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const res = await this.http.ok(ctx, {
      method: 'POST',
      path: '/v1/queries',
      json: this.submitBody(request, ctx),
      phase: 'submit',
    });
    const job = this.http.parse(res, OxylabsJobSchema, 'submit', 'job object');
    return { taskId: job.id, providerStatus: job.status, replayed: false };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const res = await this.http.ok(ctx, { method: 'GET', path: path`/v1/queries/${taskId}`, phase: 'read' });
    const retryAfterMs = this.http.retryAfterMs(res);
    if (res.status === 202 || res.status === 204)
      return { state: 'running', providerStatus: `HTTP ${res.status}`, retryAfterMs };
    const job: Job = this.http.parse(res, OxylabsJobSchema, 'read', 'job object');
    const state = oxylabsState(job.status);
    if (state !== 'failed') return { state, providerStatus: job.status, retryAfterMs };
    let codes = (job.statuses ?? [])
      .map((s) => (s && typeof s === 'object' ? ((s as { code?: unknown }).code ?? JSON.stringify(s)) : s))
      .filter((c) => c !== undefined);
    // Live jobs have been seen faulted with an empty `statuses` list and the code (612/613) only in
    // the result entry's `status_code`: read it there, best effort (the job failed either way).
    if (codes.length === 0) codes = await this.faultCodes(taskId, ctx);
    return {
      state,
      providerStatus: job.status,
      retryAfterMs,
      error: {
        code: codes.length > 0 ? String(codes[codes.length - 1]) : 'faulted',
        message: `Oxylabs could not complete the job (faulted${codes.length > 0 ? `; statuses ${codes.join(', ')}` : ''}); a faulted job is not billed`,
      },
      evidence: res.evidence,
    };
  }

  /** The `status_code`s of a faulted job's result entries (an empty list when they cannot be read). */
  private async faultCodes(taskId: string, ctx: CallContext): Promise<string[]> {
    try {
      const res = await this.http.call(ctx, {
        method: 'GET',
        path: path`/v1/queries/${taskId}/results`,
        phase: 'read',
      });
      if (res.status !== 200) return [];
      const parsed = ResultsBody.safeParse(res.body);
      return parsed.success
        ? parsed.data.results
            .map((e) => e.status_code)
            .filter((c): c is number => typeof c === 'number' && c >= 400)
            .map(String)
        : [];
    } catch {
      return [];
    }
  }

  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const res: ProviderResponse = await this.http.ok(ctx, {
      method: 'GET',
      path: path`/v1/queries/${taskId}/results`,
      phase: 'read',
    });
    if (res.status === 204 || res.status === 202) {
      throw notReady(`Oxylabs job ${taskId} has no results yet (HTTP ${res.status}: not completed)`, res, {
        retryAfterMs: this.http.retryAfterMs(res),
      });
    }
    const { results } = this.http.parse(res, ResultsBody, 'read', 'results body');
    ctx.heartbeat?.({ documents: results.length, pages: 1 });
    if (results.length === 0) throw notReady(`Oxylabs job ${taskId} answered with no results yet`, res);
    const first = results[0]!;
    const base64 = asksBase64(ctx.request, this.entry.params);
    const result: ProviderResult =
      results.length === 1 && typeof first.content === 'string'
        ? pageFromRaw({
            url: ctx.url,
            ...contentOf(first, base64),
            finalUrl: first.url && first.url !== ctx.url ? first.url : null,
            httpStatus: first.status_code ?? null,
          })
        : resultFromDocuments(
            results.map((e, i) => documentOf(e, ctx.url, i, base64)),
            ctx.url,
          );
    return enforceResultLimits(result, ctx.limits, this.name, taskId);
  }

  async cancel(_taskId: string, _ctx: CallContext): Promise<CancelAnswer> {
    throw new ProviderError(
      'unsupported',
      `provider ${this.name} (Oxylabs Push-Pull) has no cancel endpoint: the job runs to its end`,
      {
        code: 'NOT_SUPPORTED',
      },
    );
  }

  /** No lookup exists: nothing to read (the evidence model leaves a lost submit for an operator). */
  async findSubmitted(_ctx: FindContext): Promise<LookupReading[]> {
    return [];
  }
}
