/**
 * Adapter for the Bright Data Web Scraper API (datasets v3). Contract: docs.brightdata.com, read
 * 2026-11-30 — "Scraper async requests" (OpenAPI `scraper-rest-api.json`, `POST
 * /datasets/v3/trigger`), "Management APIs" (monitor progress, get snapshots, get snapshot input,
 * cancel snapshot, delivery parts), "Download Snapshot", "Error codes by Endpoint", "Scraper API
 * error codes" (the 429 IP block), "Scraper API limits", "Troubleshooting". What it says, and what
 * this adapter does:
 *
 * - **Trigger** `POST /datasets/v3/trigger?dataset_id=…&include_errors=…&notify=…` (Bearer) with a
 *   JSON array of inputs (one input per job: `{...entry.input, ...options.input, url}`) → `200
 *   {snapshot_id}`; any 2xx with a `snapshot_id` is an acceptance. `400` (validation, "No data to
 *   trigger") → refused; `429` "You have too many running jobs for this dataset … Running jobs:
 *   N>=LIMIT" (5,000 per the limits page) → a concurrency refusal (the adaptive active-jobs limit
 *   learns LIMIT) that still counts toward the IP block, so it cools the whole key down too.
 * - **Progress** `GET /datasets/v3/progress/{id}` → `{snapshot_id, dataset_id, status}`: `starting`
 *   → queued, `running` → running, `ready` → completed (then downloaded), `failed` → failed (a
 *   failed job still answers `200`, with `error_message`); `canceled`/`cancelled` → cancelled
 *   (listed by Bright Data's own MCP server, not by the OpenAPI enum); any other word →
 *   `unrecognised`; `202`/`204` → not ready; a `400` saying the snapshot is empty or expired is
 *   final as on the download (below: `task_failed` / `expired`). `failed` with "Account is suspended" (a negative
 *   balance: no `402` exists for this API) is quota exhaustion (`task_failed`, `QUOTA_EXHAUSTED`):
 *   the job fails and the key's other submits are held.
 * - **Download** `GET /datasets/v3/snapshot/{id}?format=json&batch_size=B&part=n` (parts from 1;
 *   `GET …/{id}/parts` says how many, asked only when a part comes back full): `200` an array of
 *   records; `202 {status: "building", message: "Snapshot is building, try again in 10s"}` (also
 *   while progress already says `ready`) and the OpenAPI's `409` "Snapshot is not ready for
 *   download" → not ready (transient `NOT_READY`, the stated wait honoured); `400` "Snapshot is
 *   empty" → `task_failed` with code `SNAPSHOT_EMPTY` (or the body's own code) — the docs also say
 *   an empty result can be `200 []`, which completes with no documents; `400` "Snapshot is expired"
 *   → `expired` (kept 30 days per the limits page; the download page says 16 days); `404` → counted.
 *   Records are read part by part with heartbeats, within the entry's `results` limits.
 * - **Cancel** `POST /datasets/v3/snapshot/{id}/cancel` → `200 "OK"`; `400` when it is not running →
 *   already final.
 * - **Reconcile** a lost trigger: `GET /datasets/v3/snapshots?dataset_id&from_date&trigger_type=API
 *   &limit` (the list carries no inputs), then `GET /datasets/v3/snapshot/{id}/input` (CSV) of the
 *   candidates (created after the first submit first, then those within the clock-skew margin
 *   before it; bounded by `listing`), matched on the input's
 *   fields (the URL first). Bright Data keeps no reference of ours, so a snapshot whose input
 *   matches is only a **weak** candidate (another job with the same input fits too) and is never
 *   adopted automatically; one whose input differs is not ours; one whose input cannot be read
 *   leaves the question open. Absence is proven only when the list, read after its lag, shows no
 *   candidate at all; more candidates than the bounds allow make the reading incomplete, so the
 *   job waits in `unknown` for an operator instead of risking a duplicate.
 * - **Webhook**: `notify` receives `{snapshot_id, status}` — unsigned, so the URL carries our
 *   per-job token (`auth_header` could carry a secret too, but one per job is what the receiver
 *   checks).
 * - **Errors** are mostly plain text (only `validation_error`/`parse_error` are JSON).
 * - **Rate limits**: 25 × `429` within 5 minutes blocks the caller's IP until support clears it;
 *   `Retry-After` may be absent (then 2, 4, 8, 16, 32 s). Every call goes through the
 *   {@link RefusalWindow} guard (see `guard.ts` and the entry's `rateLimit`).
 *
 * Downloading a snapshot: `results.ts`; the reconcile lookups: `lookups.ts`.
 */
import { z } from 'zod';
import type { LookupReading } from '../../model/evidence.js';
import type { ProviderState } from '../../model/states.js';
import type { ScrapeRequest } from '../../model/types.js';
import { meansCancelled, ProviderError, quotaExhausted, saysQuotaExhausted } from '../shared/errors.js';
import {
  errorDetails,
  ProviderHttp,
  path,
  type CallOptions,
  type CallPhase,
  type ProviderResponse,
} from '../shared/http.js';
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
import type { ProviderResult } from '../../model/results.js';
import { BRIGHTDATA_BLOCK_AT, type BrightDataEntry } from './config.js';
import { RefusalGuard, RefusalWindow, refusalWindowFor } from './guard.js';
import { BRIGHTDATA_EVIDENCE, findSubmitted } from './lookups.js';
import { finalRefusal, readResult, type BrightDataReads } from './results.js';
import type { SharedRefusals } from '../shared/sharedState.js';

const TriggerBody = z.looseObject({ snapshot_id: z.string().min(1) });
const ProgressBody = z.looseObject({
  status: z.string().min(1),
  snapshot_id: z.string().nullish(),
  error_message: z.string().nullish(),
  error: z.string().nullish(),
  error_code: z.string().nullish(),
  records: z.number().nullish(),
});

/** Our state for a Bright Data progress word (see the module docs). */
export function brightDataState(word: string): ObservedState {
  const known: Record<string, ProviderState> = {
    starting: 'queued',
    running: 'running',
    ready: 'completed',
    failed: 'failed',
  };
  if (known[word]) return known[word];
  if (/^cancell?ed$/i.test(word)) return 'cancelled';
  return 'unrecognised';
}

/** The running-jobs limit a "too many running jobs" refusal states (`Running jobs: 12>=10` → 10). */
export function statedRunningJobsLimit(text: string): number | undefined {
  const m = /Running jobs:\s*(\d+)\s*>=\s*(\d+)/i.exec(text);
  const n = m ? Number(m[2]) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** {@link ProviderAdapter} for Bright Data datasets v3 (see the module docs). */
export class BrightDataAdapter implements ProviderAdapter {
  readonly kind = 'brightdata';
  readonly capabilities: ProviderCapabilities = { idempotency: false, list: true, cancel: true, webhooks: true };
  readonly evidence = BRIGHTDATA_EVIDENCE;
  private readonly http: ProviderHttp;
  private readonly guard: RefusalGuard;
  /** What `results.ts` and `lookups.ts` read through: this entry's exchange and guarded call. */
  private readonly reads: BrightDataReads;

  /** Throws an `Error` when `rateLimit.maxRefusals + limits.maxConcurrent` could reach Bright Data's block at 25. */
  constructor(
    readonly name: string,
    private readonly entry: BrightDataEntry,
  ) {
    const worst = entry.rateLimit.maxRefusals + entry.limits.maxConcurrent - 1;
    if (worst >= BRIGHTDATA_BLOCK_AT) {
      throw new Error(
        `provider "${name}": rateLimit.maxRefusals (${entry.rateLimit.maxRefusals}) + limits.maxConcurrent (${entry.limits.maxConcurrent}) − 1 = ${worst} refusals could reach Bright Data's IP block at ${BRIGHTDATA_BLOCK_AT} × 429 in 5 minutes; lower one of them`,
      );
    }
    this.http = ProviderHttp.forEntry(name, entry, { in: 'header' });
    const host = new URL(entry.baseUrl).host.toLowerCase();
    this.guard = new RefusalGuard(
      `brightdata@${host}`,
      refusalWindowFor(host, entry.rateLimit.windowMs, entry.rateLimit.maxRefusals),
    );
    this.reads = {
      name,
      entry,
      http: this.http,
      call: (ctx, o) => this.call(ctx, o),
      inputOf: (request) => this.inputOf(request),
    };
  }

  /**
   * Keeps the IP-block count in `shared` (the worker's store, scope `brightdata@<host>`), so that
   * every worker on the same API host and a restarted worker see each `429`; called once by the
   * registry. Without it the count is this process's alone.
   */
  shareState(shared: Partial<SharedRefusals>): void {
    if (typeof shared.recordRefusal === 'function' && typeof shared.refusalsSince === 'function')
      this.guard.share(shared as SharedRefusals);
  }

  /**
   * One call under the IP-block guard: refused locally (`cooldown`, code `IP_BLOCK_GUARD`, nothing
   * sent) while the window — the `429`s every worker recorded for this API host — is full; a `429`
   * answer is recorded and thrown as `cooldown` (see {@link refused}). Any other answer is
   * returned as is.
   */
  private async call(ctx: CallContext, o: CallOptions): Promise<ProviderResponse> {
    const held = await this.guard.heldForMs();
    if (held > 0) {
      throw new ProviderError(
        'cooldown',
        `no Bright Data call for ${Math.ceil(held / 1000)} s: ${await this.guard.count()} × 429 were recorded for ${this.guard.scope} in the last ${this.guard.windowMs / 60_000} min by the workers sharing this store (Bright Data blocks an IP at ${BRIGHTDATA_BLOCK_AT}); held back by provider ${this.name}'s rateLimit.maxRefusals = ${this.guard.threshold}`,
        { code: 'IP_BLOCK_GUARD', retryAfterMs: held },
      );
    }
    const res = await this.http.call(ctx, o);
    if (res.status === 429) throw await this.refused(res, o.phase, ctx);
    return res;
  }

  /**
   * The `cooldown` error of a `429` (or its quota exhaustion, when the text says so): recorded for
   * every worker; wait = max(stated wait, back-off doubled per refusal in the window, time the
   * guard now holds).
   */
  private async refused(res: ProviderResponse, phase: CallPhase, ctx: CallContext): Promise<ProviderError> {
    const n = await this.guard.record();
    const running = /too many running jobs/i.test(res.text);
    const err = this.http.error(res, phase, ctx, running ? { code: 'too-many-concurrent-runs' } : {});
    const backoff = RefusalWindow.backoffMs(n, this.entry.rateLimit.backoffMs, this.entry.rateLimit.maxBackoffMs);
    err.details.retryAfterMs = Math.max(err.details.retryAfterMs ?? 0, backoff, await this.guard.heldForMs());
    if (running) {
      err.details.statedLimit = statedRunningJobsLimit(res.text);
      err.details.keyWide = true;
    }
    return err;
  }

  /** {@link call}, throwing the classified error for any other non-2xx answer. */
  private async ok(ctx: CallContext, o: CallOptions): Promise<ProviderResponse> {
    const res = await this.call(ctx, o);
    if (!this.http.isOk(res)) throw this.http.error(res, o.phase, ctx);
    return res;
  }

  /** The input object of a job: entry `input`, then `options.input`, then the URL. */
  inputOf(request: ScrapeRequest): Record<string, unknown> {
    const own = request.options.input;
    return {
      ...this.entry.input,
      ...(own && typeof own === 'object' && !Array.isArray(own) ? (own as Record<string, unknown>) : {}),
      url: request.url,
    };
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const t = this.entry.trigger;
    const res = await this.ok(ctx, {
      method: 'POST',
      path: '/datasets/v3/trigger',
      query: {
        dataset_id: this.entry.datasetId,
        include_errors: t.includeErrors,
        type: t.type,
        discover_by: t.discoverBy,
        limit_per_input: t.limitPerInput,
        custom_output_fields: t.customOutputFields,
        notify: ctx.callbackUrl,
      },
      json: [this.inputOf(request)],
      phase: 'submit',
    });
    const body = this.http.parse(res, TriggerBody, 'submit', 'trigger answer');
    return { taskId: body.snapshot_id, providerStatus: 'triggered', replayed: false };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const res = await this.call(ctx, { method: 'GET', path: path`/datasets/v3/progress/${taskId}`, phase: 'read' });
    // An empty or expired snapshot is final on progress as on the download (`finalRefusal`).
    if (!this.http.isOk(res)) throw finalRefusal(res, taskId) ?? this.http.error(res, 'read', ctx);
    if (res.status === 202 || res.status === 204) return this.http.stillRunning(res);
    const retryAfterMs = this.http.retryAfterMs(res);
    const p = this.http.parse(res, ProgressBody, 'read', 'progress body');
    const state = brightDataState(p.status);
    const progress = p.records != null ? { documents: p.records } : undefined;
    const cost = p.records != null ? { cost: p.records } : {};
    if (state !== 'failed') return { state, providerStatus: p.status, progress, retryAfterMs, ...cost };
    const message = p.error_message ?? p.error ?? 'Bright Data reports the collection failed';
    // A cancelled collection reads `failed` with a reason that says so ("Collection was canceled").
    if (meansCancelled(message) || meansCancelled(p.error_code))
      return { state: 'cancelled', providerStatus: `${p.status}: ${message}`, progress, retryAfterMs };
    // "Account is suspended" is how a negative balance shows (no 402 exists for this API): the job
    // ends failed for credits, and the key's other submits are held instead of failing alike.
    if (saysQuotaExhausted(p.error_code, message)) {
      throw quotaExhausted(
        'task_failed',
        new ProviderError(
          'task_failed',
          `Bright Data failed snapshot ${taskId}: ${message} (the account's balance or quota is used up)`,
          {
            code: p.error_code ?? undefined,
            httpStatus: res.status,
            evidence: res.evidence,
          },
        ),
      );
    }
    return {
      state,
      providerStatus: p.status,
      progress,
      retryAfterMs,
      error: { code: p.error_code ?? undefined, message },
      evidence: res.evidence,
    };
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    const res = await this.call(ctx, {
      method: 'POST',
      path: path`/datasets/v3/snapshot/${taskId}/cancel`,
      phase: 'cancel',
    });
    // Bright Data answers an accepted cancel `200 "OK"` (text); any other 2xx (a proxy's page, JSON)
    // is not its word, and an acceptance is evidence that a later read is taken as the stop.
    if (this.http.isOk(res) && /^"?ok"?$/i.test(res.text.trim())) return { accepted: true };
    if (this.http.isOk(res)) throw this.http.invalidError(res, 'cancel', 'cancel answer (not "OK")');
    if (res.status === 400) return { accepted: false, alreadyFinal: true, providerStatus: errorDetails(res).message };
    throw this.http.error(res, 'cancel', ctx);
  }

  /** Every row of a ready snapshot: see {@link readResult}. */
  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    return readResult(this.reads, taskId, ctx);
  }

  /** The lookups of a lost trigger: see {@link findSubmitted}. */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    return findSubmitted(this.reads, ctx);
  }
}
