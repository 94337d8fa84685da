/**
 * Adapter of the declarative `http` kind: any "submit, get an ID, poll" API described by its
 * entry (`config.ts`), with no code of its own. The contract is the entry: the adapter renders its
 * templates (`template.ts`), reads answers by JSON Pointer, maps status words by the entry's map
 * and errors by its `errors` (the one place they are classified: {@link HttpAdapter.fail}).
 *
 * - every call: its templates rendered with its context's variables (`calls.ts`: the task ID, the
 *   request, our reference, the kept fields of the submit's answer); a 2xx answer that
 *   `errors.errorWhen` matches is an error answer like a `400` (below);
 * - submit: any 2xx with a value at `submit.taskIdPath` is an acceptance (with the fields of its
 *   answer that later templates name, kept with the task ID); a 2xx without one is `ambiguous` (a
 *   job may exist); replays are recognised by `submit.replayedHeader`;
 * - status: `status.notReadyStatusCodes` (default `202`, `204`) → running; the word at
 *   `status.statusPath` through `status.map` (any case unless `matchCase: "exact"`), unknown words
 *   → `status.default` (`unrecognised`), a missing or null word → `status.missing` (`not_found`:
 *   counted like a `404`); a final answer that carries the page (`result` without `request`) is
 *   returned with it (no second read);
 * - result: the page at `result.pagePath` and/or every document at `result.documentsPath`, paged
 *   by offset, cursor or `next` link with heartbeats and the entry's result limits;
 * - cancel: a 2xx is accepted, `cancel.finalStatusCodes` already final; `cancel.completedMeans`
 *   is {@link HttpAdapter.completedAfterCancel};
 * - errors: a submit refused (a 4xx, or a 2xx error answer) → `permanent` (the job fails with the
 *   provider's words); `errors.terminalCodes` on a read → `task_failed`; `errors.expiredCodes` /
 *   `expiredStatusCodes` → `expired`; `404` → `not_found` (counted) or `expired` (`errors.notFound`),
 *   on the result read of a complete task `task_failed` with `errors.resultNotFound: "failed"`;
 *   `errors.concurrencyCodes` → a concurrency refusal; `errors.unsupportedCodes` on cancel/list →
 *   `unsupported`; the rest as `ProviderHttp` classifies them (`429` → cooldown, …).
 *
 * Reading the result: `results.ts`; the reconcile evidence and list lookup: `lookups.ts`.
 */
import type { LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderState } from '../../model/states.js';
import type { ScrapeRequest } from '../../model/types.js';
import { ProviderError } from '../shared/errors.js';
import {
  errorDetails,
  ProviderHttp,
  type CallPhase,
  type CredentialPlacement,
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
import type { HttpEntry } from './config.js';
import { answerBody, callOptions, isErrorAnswer, keptAnswer, keptFields, taskVars } from './calls.js';
import { findSubmitted, httpEvidence } from './lookups.js';
import { inlineResult, num, readResult, type HttpReads } from './results.js';
import { pick, pickString, type TemplateVars } from './template.js';

/** The credential placement of an entry's `auth`. */
function placementOf(auth: HttpEntry['auth']): CredentialPlacement {
  switch (auth.in) {
    case 'bearer':
      return { in: 'header' };
    case 'header':
      return { in: 'header', name: auth.name, scheme: auth.scheme };
    default:
      return auth;
  }
}

/** Our state for a provider word under the entry's `status` map (see the module docs). */
export function mapStatus(status: HttpEntry['status'], word: string): ObservedState {
  if (status.matchCase === 'exact') return status.map[word] ?? status.default;
  const lower = word.toLowerCase();
  for (const [k, v] of Object.entries(status.map)) if (k.toLowerCase() === lower) return v;
  return status.default;
}

/** {@link ProviderAdapter} of the declarative `http` kind. */
export class HttpAdapter implements ProviderAdapter {
  readonly kind = 'http';
  readonly capabilities: ProviderCapabilities;
  readonly evidence: ReconcileEvidence;
  /** What a `completed` word means after an accepted cancel: the entry's `cancel.completedMeans`. */
  readonly completedAfterCancel: 'completed' | 'stopped_or_completed';
  private readonly http: ProviderHttp;
  /** The fields of the submit's answer that later templates name (kept with the task ID). */
  private readonly kept: string[];
  /** What `results.ts` and `lookups.ts` read through: this entry's exchange and answer mapping. */
  private readonly reads: HttpReads;

  constructor(
    readonly name: string,
    private readonly entry: HttpEntry,
  ) {
    this.capabilities = {
      idempotency: entry.submit.idempotent,
      list: entry.list !== undefined,
      cancel: entry.cancel !== undefined,
      webhooks: entry.webhookScheme !== undefined,
    };
    this.evidence = httpEvidence(entry);
    this.completedAfterCancel = entry.cancel?.completedMeans ?? 'completed';
    this.kept = keptFields(entry);
    const errors = entry.errors;
    this.http = ProviderHttp.forEntry(name, entry, placementOf(entry.auth), {
      headers: entry.headers,
      errorDetails: (res) => {
        const usual = errorDetails(res);
        return {
          code: pickString(res.body, errors.codePath) ?? usual.code,
          message: pickString(res.body, errors.messagePath) ?? usual.message,
        };
      },
    });
    this.reads = {
      name,
      entry,
      http: this.http,
      mapStatus,
      readStatus: (taskId, ctx) => this.readStatus(taskId, ctx),
      ok: (res, phase, ctx, what) => this.ok(res, phase, ctx, what),
      call: (ctx, call, vars, phase) => this.http.call(ctx, callOptions(this.http, call, vars, phase)),
      body: (res, format) => answerBody(this.http, res, format),
      observe: (taskId, res) => this.observe(taskId, res),
    };
  }

  /**
   * The classified error of a non-2xx answer (see the module docs). `what` says which call, for
   * `unsupported` (cancel, list).
   */
  private fail(
    res: ProviderResponse,
    phase: CallPhase,
    ctx: CallContext,
    what: 'submit' | 'read' | 'cancel' | 'list' = phase === 'submit' ? 'submit' : 'read',
  ): ProviderError {
    const e = this.entry.errors;
    const err = this.http.error(res, phase, ctx);
    // A quota answer carries our code; the configured lists name the provider's own.
    const code = err.details.providerCode ?? err.details.code;
    const has = (list: string[]) => code !== undefined && list.includes(code);
    if ((what === 'cancel' || what === 'list') && has(e.unsupportedCodes))
      return new ProviderError('unsupported', err.message, err.details);
    if (has(e.concurrencyCodes))
      return new ProviderError('cooldown', err.message, {
        ...err.details,
        code: 'CONCURRENCY_LIMIT',
        quota: undefined,
        providerCode: undefined,
      });
    if (what === 'read') {
      if (has(e.terminalCodes)) return new ProviderError('task_failed', err.message, err.details);
      if (
        has(e.expiredCodes) ||
        e.expiredStatusCodes.includes(res.status) ||
        (res.status === 404 && e.notFound === 'expired')
      )
        return new ProviderError('expired', err.message, err.details);
    }
    return err;
  }

  /** Throws {@link fail} unless `res` is a 2xx that is no error answer (`errors.errorWhen`). */
  private ok(
    res: ProviderResponse,
    phase: CallPhase,
    ctx: CallContext,
    what?: 'submit' | 'read' | 'cancel' | 'list',
  ): ProviderResponse {
    if (!this.http.isOk(res) || isErrorAnswer(this.entry, res)) throw this.fail(res, phase, ctx, what);
    return res;
  }

  async submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted> {
    const s = this.entry.submit;
    const vars: TemplateVars = {
      url: request.url,
      format: request.format,
      options: request.options ?? {},
      clientRef: ctx.clientRef,
      idempotencyKey: ctx.idempotencyKey,
      callbackUrl: ctx.callbackUrl,
      webhookSecret: ctx.webhookSecret,
    };
    const res = await this.http.call(ctx, callOptions(this.http, s, vars, 'submit'));
    this.ok(res, 'submit', ctx);
    const taskId = pickString(res.body, s.taskIdPath);
    if (!taskId) this.http.invalid(res, 'submit', `submit answer: no task ID at ${JSON.stringify(s.taskIdPath)}`);
    const replayed = s.replayedHeader !== undefined && res.headers.get(s.replayedHeader)?.toLowerCase() === 'true';
    const submitAnswer = keptAnswer(res.body, this.kept);
    return {
      taskId,
      providerStatus: pickString(res.body, s.statusPath) ?? 'submitted',
      replayed,
      ...(submitAnswer ? { submitAnswer } : {}),
    };
  }

  /** The status answer of `taskId`, and whether it is ready (not a "not ready" code). */
  private async readStatus(taskId: string, ctx: CallContext): Promise<{ res: ProviderResponse; ready: boolean }> {
    const st = this.entry.status;
    const res = await this.reads.call(ctx, st, taskVars(taskId, ctx), 'read');
    this.ok(res, 'read', ctx);
    return { res, ready: !st.notReadyStatusCodes.includes(res.status) };
  }

  /**
   * The provider's word in a ready status answer and our state for it: through `status.map`, or
   * for a missing or null word `status.missing`. Throws `not_found` (`missing: "not_found"`: the
   * provider does not know the task) or `INVALID_RESPONSE` (no `missing` configured).
   */
  private observe(taskId: string, res: ProviderResponse): { word: string; state: ObservedState } {
    const st = this.entry.status;
    const word = pickString(res.body, st.statusPath);
    if (word !== undefined) return { word, state: mapStatus(st, word) };
    const raw = pick(res.body, st.statusPath);
    const seen = raw === null ? 'null' : raw === undefined ? 'no value' : `${typeof raw} ${JSON.stringify(raw)}`;
    if (st.missing === 'not_found')
      throw new ProviderError(
        'not_found',
        `${res.evidence.endpoint} answered ${res.status} with ${seen} at ${JSON.stringify(st.statusPath)}: the provider does not know task ${taskId}`,
        { code: 'TASK_UNKNOWN', httpStatus: res.status, evidence: res.evidence },
      );
    if (st.missing) return { word: raw === null ? 'null' : '(no status)', state: st.missing };
    return this.http.invalid(res, 'read', `status answer: ${seen} at ${JSON.stringify(st.statusPath)}`);
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const st = this.entry.status;
    const { res, ready } = await this.readStatus(taskId, ctx);
    const retryAfterMs = this.http.retryAfterMs(res);
    if (!ready)
      return {
        state: 'running',
        providerStatus: pickString(res.body, st.statusPath) ?? `HTTP ${res.status}`,
        retryAfterMs,
      };
    const { word, state } = this.observe(taskId, res);
    const p = st.progress;
    const figure = (ptr: string | undefined) =>
      ptr === undefined ? undefined : (num(pick(res.body, ptr)) ?? undefined);
    const cost = figure(p?.creditsUsed);
    return {
      state,
      providerStatus: word,
      ...(cost !== undefined ? { cost } : {}),
      progress: p
        ? { pagesFetched: figure(p.pagesFetched), creditsUsed: figure(p.creditsUsed), documents: figure(p.documents) }
        : undefined,
      result: state === 'completed' ? inlineResult(this.reads, taskId, res.body) : undefined,
      error:
        state === 'failed'
          ? {
              code: pickString(res.body, st.errorCodePath),
              message: pickString(res.body, st.errorMessagePath) ?? `provider reported status "${word}"`,
            }
          : undefined,
      retryAfterMs,
      evidence: state === 'failed' ? res.evidence : undefined,
    };
  }

  async cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer> {
    const c = this.entry.cancel;
    if (!c)
      throw new ProviderError(
        'unsupported',
        `provider ${this.name} has no cancel endpoint (no "cancel" in its configuration)`,
        { code: 'NOT_SUPPORTED' },
      );
    const res = await this.reads.call(ctx, c, taskVars(taskId, ctx), 'cancel');
    const known = (w: string | undefined): ProviderState | undefined => {
      if (w === undefined) return undefined;
      const s = mapStatus(this.entry.status, w);
      return s === 'unrecognised' ? undefined : s;
    };
    if (c.finalStatusCodes.includes(res.status)) {
      const word = pickString(res.body, c.finalStatusPath);
      return { accepted: false, alreadyFinal: true, state: known(word), providerStatus: word };
    }
    this.ok(res, 'cancel', ctx, 'cancel');
    const word = pickString(res.body, c.statusPath);
    return { accepted: true, state: known(word), providerStatus: word };
  }

  /** The result in the final status answer, or read by `result.request`: see {@link readResult}. */
  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    return readResult(this.reads, taskId, ctx);
  }

  /** The lookups of a lost submit: see {@link findSubmitted}. */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    return findSubmitted(this.reads, ctx);
  }
}
