/**
 * Adapter for Apify actor runs. Contract: the Apify API v2 OpenAPI document
 * (github.com/apify/apify-docs, `apify-api/openapi`, version `v2-2026-08-05T133145Z`, read at commit
 * 4416da6 of 2026-08-07) and the platform pages "Runs and builds" (lifecycle, data retention) and
 * "Webhooks" (actions, ad-hoc webhooks, events) of the same repository. Calls:
 *
 * | what            | request                                                                         | answer                                    |
 * |-----------------|---------------------------------------------------------------------------------|-------------------------------------------|
 * | submit          | `POST /v2/actors/{actorId}/runs` (JSON body = the actor's input; `?build&timeout&memory&maxItems&maxTotalChargeUsd&webhooks`) | `201 {data: Run}` (`status: READY`) |
 * | status          | `GET /v2/actor-runs/{runId}`                                                    | `200 {data: Run}`                         |
 * | result          | `GET /v2/actor-runs/{runId}/dataset/items?offset&limit&format=json[&clean=1]`   | `200 [item, …]` + `X-Apify-Pagination-*`  |
 * | cancel          | `POST /v2/actor-runs/{runId}/abort[?gracefully=true]`                           | `200 {data: Run}` (a no-op once final)    |
 * | reconcile       | `GET /v2/actors/{actorId}/runs?startedAfter&limit&offset`, then `GET /v2/key-value-stores/{defaultKeyValueStoreId}/records/INPUT` per run | `{data: {total, items: RunShort[]}}`, the input JSON |
 *
 * The canonical prefix is `/v2/actors/`; `/v2/acts/` is "deprecated but still fully functional"
 * (OpenAPI introduction, "Legacy /v2/acts/ URL prefix"): entry `actorPath` chooses. The token goes
 * in `Authorization: Bearer` (recommended) or `?token=` (entry `tokenIn`).
 *
 * Statuses (`ActorJobStatus`): `READY` → queued; `RUNNING`, `TIMING-OUT`, `ABORTING` → running
 * (transitional); `SUCCEEDED` → completed; `FAILED` → failed; `TIMED-OUT` → failed (or completed,
 * entry `timedOutAs`); `ABORTED` → cancelled; any other word or case → `unrecognised`. A run in a
 * terminal state can be resurrected (back to `RUNNING`) by its owner; we stop tracking at the
 * first terminal answer.
 *
 * Awkward answers handled here:
 * - errors are `{error: {type, message}}`; a refusal because of the account's concurrent-run
 *   limit has type `concurrent-runs-limit-exceeded` whose HTTP status is undocumented (public
 *   client code shows `402`, an earlier reading of the docs said `400`): it is keyed on the type, whatever the
 *   status, and becomes a `cooldown` concurrency refusal (the limit stated in the message, e.g.
 *   "exceed your limit of 5 concurrent Actor runs", feeds the adaptive active-jobs limit);
 *   `actor-memory-limit-exceeded` (402: the account's memory is taken by running runs) is a
 *   `cooldown` too; `429 rate-limit-exceeded` is a key-wide cool-down (`Retry-After` honoured,
 *   else the default back-off); any other `402` (usage limit exceeded, not enough credits,
 *   payment required: `platform-feature-disabled`, `not-enough-usage-to-run-paid-actor`,
 *   `x402-payment-required`, …) is quota exhaustion (`QUOTA_EXHAUSTED`): on a submit the job
 *   fails and the key's other submits are held; on a dataset or record read, tracking is
 *   interrupted with the run kept (it ran; only reading it is refused);
 * - a `404` on a run is `not_found`: counted, and `expired` after the job's `notFoundLimit` in a
 *   row once the run is older than the kind's propagation window (a run read right after creation
 *   can briefly answer `404`: replica lag; runs beyond the latest ten are deleted with their
 *   storages after the plan's data retention);
 * - a `404` on the dataset of a run we saw `SUCCEEDED` is `expired` (its storage was deleted);
 * - dataset items have no default `limit` (we always send one) and `clean` filters after paging:
 *   `X-Apify-Pagination-Count` then reports the scanned window, not the items returned, so pages
 *   advance by the scanned window (never ending at a short or empty page while filtering);
 * - the dataset's item count (`X-Apify-Pagination-Total`) is updated with throttling and lags up
 *   to a few seconds after a run finishes (apify-client-python#118: their client stopped trusting
 *   `total` for it): reading ends when a window comes back short of its limit (the scanned count,
 *   or the items returned without `clean`), never at `total`. The largest `total` seen is then
 *   compared with what was read: a lagging count is only ever lower than the truth, so it never
 *   calls a complete read partial, and a read that ends below it is `partial`;
 * - aborting a finished run answers `200` with the run unchanged: reported as already final.
 *
 * The Run answers read: `runs.ts`; the reconcile lookups: `lookups.ts`.
 */
import type { z } from 'zod';
import type { LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ScrapeRequest } from '../../model/types.js';
import { ProviderError } from '../shared/errors.js';
import { ProviderHttp, callSecrets, path, type CallPhase, type ProviderResponse } from '../shared/http.js';
import { documentFromItem } from '../shared/itemDocuments.js';
import { completenessOf, paginateOffset, resultFromDocuments } from '../shared/pagination.js';
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
import type { ApifyEntry } from './config.js';
import { APIFY_EVIDENCE, APIFY_EVIDENCE_NO_REF, findSubmitted, type ApifyReads } from './lookups.js';
import { RunResponseSchema, type RunSchema } from './runs.js';

/** Ad-hoc webhook events we ask for: every terminal run event (events.md). */
const APIFY_WEBHOOK_EVENTS = [
  'ACTOR.RUN.SUCCEEDED',
  'ACTOR.RUN.FAILED',
  'ACTOR.RUN.ABORTED',
  'ACTOR.RUN.TIMED_OUT',
] as const;

/** Run statuses after which nothing changes (unless the owner resurrects the run). */
const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'TIMED-OUT', 'ABORTED']);

/** Our state for an Apify run status (see the module docs); exact words only. */
export function apifyState(word: string, timedOutAs: 'failed' | 'completed' = 'failed'): ObservedState {
  switch (word) {
    case 'READY':
      return 'queued';
    case 'RUNNING':
    case 'TIMING-OUT':
    case 'ABORTING':
      return 'running';
    case 'SUCCEEDED':
      return 'completed';
    case 'FAILED':
      return 'failed';
    case 'TIMED-OUT':
      return timedOutAs;
    case 'ABORTED':
      return 'cancelled';
    default:
      return 'unrecognised';
  }
}

/** The concurrent-run limit an Apify refusal states in its message ("… your limit of 5 concurrent Actor runs"), if any. */
export function statedRunLimit(message: string | undefined): number | undefined {
  const m = /limit of (\d{1,6}) concurrent/i.exec(message ?? '');
  const n = m ? Number(m[1]) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function intHeader(res: ProviderResponse, name: string): number | undefined {
  const v = res.headers.get(name);
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

/** {@link ProviderAdapter} for Apify actor runs (see the module docs for the contract). */
export class ApifyAdapter implements ProviderAdapter {
  readonly kind = 'apify';
  readonly capabilities: ProviderCapabilities = { idempotency: false, list: true, cancel: true, webhooks: true };
  readonly evidence: ReconcileEvidence;
  private readonly http: ProviderHttp;
  /** What `lookups.ts` reads through: this entry's exchange and answer mapping. */
  private readonly reads: ApifyReads;

  constructor(
    readonly name: string,
    private readonly entry: ApifyEntry,
  ) {
    this.http = ProviderHttp.forEntry(
      name,
      entry,
      entry.tokenIn === 'query' ? { in: 'query', name: 'token' } : { in: 'header' },
    );
    // Without our reference in the input, a run matches by URL only: weak evidence.
    this.evidence = entry.input.clientRefField === null ? APIFY_EVIDENCE_NO_REF : APIFY_EVIDENCE;
    this.reads = {
      name,
      entry,
      http: this.http,
      actorPath: (rest) => this.actorPath(rest),
      fail: (res, phase, ctx) => this.fail(res, phase, ctx),
    };
  }

  /** `/v2/actors/{actorId}` (or `/v2/acts/…`) + `rest`. */
  private actorPath(rest: string): string {
    return `/v2/${this.entry.actorPath}${path`/${this.entry.actorId}`}${rest}`;
  }

  /**
   * The classified error of a non-2xx Apify answer: the error `type` is the code; a concurrency or
   * memory refusal is a `cooldown` whatever its HTTP status, with the limit its message states.
   */
  private fail(res: ProviderResponse, phase: CallPhase, ctx: CallContext): ProviderError {
    const err = this.http.error(res, phase, ctx);
    const code = err.details.code;
    if (code === 'concurrent-runs-limit-exceeded') {
      const message = (res.body as { error?: { message?: unknown } } | undefined)?.error?.message;
      return new ProviderError('cooldown', err.message, {
        ...err.details,
        statedLimit: err.details.statedLimit ?? statedRunLimit(typeof message === 'string' ? message : undefined),
      });
    }
    if (code === 'actor-memory-limit-exceeded') return new ProviderError('cooldown', err.message, err.details);
    return err;
  }

  /** The actor input of `request`: defaults, then the job's options, then the URL and our reference (none with `clientRefField: null`). */
  buildInput(request: ScrapeRequest, clientRef: string): Record<string, unknown> {
    const { urlField, urlFormat, clientRefField, defaults } = this.entry.input;
    const url =
      urlFormat === 'requestList' ? [{ url: request.url }] : urlFormat === 'stringList' ? [request.url] : request.url;
    return {
      ...defaults,
      ...(request.options ?? {}),
      [urlField]: url,
      ...(clientRefField === null ? {} : { [clientRefField]: clientRef }),
    };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    // Ad-hoc webhook: a Base64 JSON array in the `webhooks` query parameter. It carries the per-job
    // token URL, so its encoded forms are secrets of this call (redacted from the recorded URL).
    const webhooks = ctx.callbackUrl
      ? Buffer.from(
          JSON.stringify([{ eventTypes: APIFY_WEBHOOK_EVENTS, requestUrl: ctx.callbackUrl }]),
          'utf8',
        ).toString('base64')
      : undefined;
    const callCtx: SubmitContext = webhooks
      ? { ...ctx, secrets: [...ctx.secrets, webhooks, encodeURIComponent(webhooks)] }
      : ctx;
    const run = this.entry.run;
    const res = await this.http.call(callCtx, {
      method: 'POST',
      path: this.actorPath('/runs'),
      query: {
        build: run.build,
        timeout: run.timeoutSecs,
        memory: run.memoryMbytes,
        maxItems: run.maxItems,
        maxTotalChargeUsd: run.maxTotalChargeUsd,
        webhooks,
      },
      json: this.buildInput(request, ctx.clientRef),
      phase: 'submit',
    });
    if (!this.http.isOk(res)) throw this.fail(res, 'submit', callCtx);
    const body = this.http.parse(res, RunResponseSchema, 'submit', 'run body');
    return { taskId: body.data.id, providerStatus: body.data.status, replayed: false };
  }

  /** `GET /v2/actor-runs/{runId}`: the run, or `null` for a `202`/`204` "not ready" answer. */
  private async getRun(
    taskId: string,
    ctx: CallContext,
  ): Promise<{ res: ProviderResponse; run: z.infer<typeof RunSchema> | null }> {
    const res = await this.http.call(ctx, { method: 'GET', path: path`/v2/actor-runs/${taskId}`, phase: 'read' });
    if (res.status === 202 || res.status === 204) return { res, run: null };
    if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
    return { res, run: this.http.parse(res, RunResponseSchema, 'read', 'run body').data };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const { res, run } = await this.getRun(taskId, ctx);
    const retryAfterMs = this.http.retryAfterMs(res);
    if (!run) return { state: 'running', providerStatus: `HTTP ${res.status}`, retryAfterMs };
    const state = apifyState(run.status, this.entry.timedOutAs);
    const failed = state === 'failed';
    return {
      state,
      providerStatus: run.status,
      ...(typeof run.usageTotalUsd === 'number' ? { cost: run.usageTotalUsd } : {}),
      error: failed
        ? {
            code: run.status,
            message:
              run.statusMessage ||
              `actor run ${run.status}${run.exitCode != null ? ` (exit code ${run.exitCode})` : ''}`,
          }
        : undefined,
      evidence: failed ? res.evidence : undefined,
      retryAfterMs,
    };
  }

  /**
   * Every item of the run's default dataset, page by page (`limits.pageSize` per request), as
   * documents, until a window comes back short of its limit (see the module docs: never at the
   * lagging `X-Apify-Pagination-Total`). Items have no ID of their own: an item's identity is its
   * URL with its position in the dataset (offset + index), except with `clean`, which filters each
   * window after paging (the positions of the items returned are then unknown: URL and content
   * hash). The read is compared with the largest `total` the pages reported (items read, or with
   * `clean` the positions scanned): fewer is a `partial` result. Throws `expired` when the dataset
   * is gone (`404`), `RESULT_TOO_LARGE` past the entry's limits, and the classified error of any
   * other refusal.
   */
  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const clean = this.entry.clean;
    const secrets = callSecrets(ctx);
    let counted: number | null = null;
    // Positions scanned (offset reached), when every window's size was known.
    let scannedTo: number | null = 0;
    const documents = await paginateOffset<unknown, ResultDocument>({
      provider: this.name,
      taskId,
      limits: ctx.limits,
      heartbeat: ctx.heartbeat,
      signal: ctx.signal,
      shortPagesContinue: true,
      emptyPagesContinue: true,
      fetch: async (offset, limit) => {
        const res = await this.http.call(ctx, {
          method: 'GET',
          path: path`/v2/actor-runs/${taskId}/dataset/items`,
          query: { offset, limit, format: 'json', clean: clean ? 1 : undefined },
          phase: 'read',
        });
        if (res.status === 404) {
          const err = this.fail(res, 'read', ctx);
          throw new ProviderError(
            'expired',
            `${err.message} (the dataset of run ${taskId} is gone: deleted after the plan's data retention, or by its owner)`,
            err.details,
          );
        }
        if (!this.http.isOk(res)) throw this.fail(res, 'read', ctx);
        if (!Array.isArray(res.body)) this.http.invalid(res, 'read', 'dataset items body: not a JSON array');
        const page = res.body as unknown[];
        // `X-Apify-Pagination-Count` is the window the API scanned: with `clean` it exceeds the items returned.
        const scanned = intHeader(res, 'x-apify-pagination-count');
        const total = intHeader(res, 'x-apify-pagination-total');
        if (total !== undefined) counted = Math.max(counted ?? 0, total);
        const known = scanned !== undefined && scanned >= page.length;
        const advance = known ? Math.min(scanned, limit) : clean ? limit : page.length;
        const nextOffset = offset + advance;
        scannedTo = known || !clean ? (scannedTo === null ? null : offset + advance) : null;
        // The dataset ends inside a window that comes back short of its limit. Under `clean`
        // without a scanned count, only an empty window past the reported count can say so.
        const short = known
          ? scanned < limit
          : clean
            ? page.length === 0 && (total === undefined || nextOffset >= total)
            : page.length < limit;
        return { items: page, done: advance === 0 || short, nextOffset, positions: !clean };
      },
      map: (it, position) => documentFromItem(it, secrets, { position }),
    });
    const result = resultFromDocuments(documents, ctx.url);
    // Under `clean` the items returned are fewer than the positions scanned: compare positions, when known.
    const kept = clean ? scannedTo : documents.length;
    const completeness =
      kept === null
        ? undefined
        : completenessOf(documents, counted, "Apify's dataset item count (`X-Apify-Pagination-Total`)", {
            kept,
            why: 'the dataset pages ended before it',
          });
    return completeness ? { ...result, completeness } : result;
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    const res = await this.http.call(ctx, {
      method: 'POST',
      path: path`/v2/actor-runs/${taskId}/abort`,
      query: { gracefully: this.entry.abortGracefully ? 'true' : undefined },
      phase: 'cancel',
    });
    if (!this.http.isOk(res)) throw this.fail(res, 'cancel', ctx);
    // Apify answers an abort with the run (`200 {data: Run}`); any other 2xx (a proxy's page, other
    // JSON) is not its word, and an acceptance is evidence: a later read that fails or 404s would
    // then be taken as the stop.
    const run = this.http.parse(res, RunResponseSchema, 'cancel', 'abort answer (the run)').data;
    const state = apifyState(run.status, this.entry.timedOutAs);
    const known = state === 'unrecognised' ? undefined : state;
    // Abort is a no-op on a finished run: the answer shows it unchanged.
    if (TERMINAL.has(run.status) && run.status !== 'ABORTED')
      return { accepted: false, alreadyFinal: true, state: known, providerStatus: run.status };
    return { accepted: true, state: known, providerStatus: run.status };
  }

  /** The lookups of a lost submit: see {@link findSubmitted}. */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    return findSubmitted(this.reads, ctx);
  }
}
