/**
 * Adapter of the declarative `http` kind: any "submit, get an ID, poll" API described by its
 * entry (`config.ts`), with no code of its own. The contract is the entry: the adapter renders its
 * templates (`template.ts`), reads answers by JSON Pointer, maps status words by the entry's map
 * and errors by its `errors` (the one place they are classified: {@link HttpAdapter.fail}).
 *
 * - submit: any 2xx with a value at `submit.taskIdPath` is an acceptance; a 2xx without one is
 *   `ambiguous` (a job may exist); replays are recognised by `submit.replayedHeader`;
 * - status: `status.notReadyStatusCodes` (default `202`, `204`) → running; the word at
 *   `status.statusPath` through `status.map` (any case unless `matchCase: "exact"`), unknown words
 *   → `status.default` (`unrecognised`); a final answer that carries the page (`result` without
 *   `request`) is returned with it (no second read);
 * - result: the page at `result.pagePath` and/or every document at `result.documentsPath`, paged
 *   by offset, cursor or `next` link with heartbeats and the entry's result limits;
 * - errors: `errors.terminalCodes` on a read → `task_failed`; `errors.expiredCodes` /
 *   `expiredStatusCodes` → `expired`; `404` → `not_found` (counted) or `expired` (`errors.notFound`);
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
  type FormBody,
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
import { findSubmitted, httpEvidence } from './lookups.js';
import { inlineResult, num, readResult, type HttpReads } from './results.js';
import { pick, pickString, renderJson, renderMap, renderPath, type TemplateVars } from './template.js';

/** The credential placement of an entry's `auth`. */
export function placementOf(auth: HttpEntry['auth']): CredentialPlacement {
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
  private readonly http: ProviderHttp;
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
    const errors = entry.errors;
    this.http = new ProviderHttp({
      provider: name,
      baseUrl: entry.baseUrl,
      auth: placementOf(entry.auth),
      submitTimeoutMs: entry.submitTimeoutMs,
      readTimeoutMs: entry.readTimeoutMs,
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

  /** Throws {@link fail} unless `res` is 2xx. */
  private ok(
    res: ProviderResponse,
    phase: CallPhase,
    ctx: CallContext,
    what?: 'submit' | 'read' | 'cancel' | 'list',
  ): ProviderResponse {
    if (!this.http.isOk(res)) throw this.fail(res, phase, ctx, what);
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
    const body = s.body === undefined ? undefined : renderJson(s.body, vars);
    const res = await this.http.call(ctx, {
      method: s.method,
      path: renderPath(s.path, vars),
      query: renderMap(s.query, vars),
      headers: renderMap(s.headers, vars),
      ...(s.bodyEncoding === 'form' ? { form: body as FormBody | undefined } : { json: body }),
      phase: 'submit',
    });
    this.ok(res, 'submit', ctx);
    const taskId = pickString(res.body, s.taskIdPath);
    if (!taskId) this.http.invalid(res, 'submit', `submit answer: no task ID at ${JSON.stringify(s.taskIdPath)}`);
    const replayed = s.replayedHeader !== undefined && res.headers.get(s.replayedHeader)?.toLowerCase() === 'true';
    return { taskId, providerStatus: pickString(res.body, s.statusPath) ?? 'submitted', replayed };
  }

  /** The status answer of `taskId`, or `null` body for a "not ready" code. */
  private async readStatus(taskId: string, ctx: CallContext): Promise<{ res: ProviderResponse; ready: boolean }> {
    const st = this.entry.status;
    const res = await this.http.call(ctx, {
      method: st.method,
      path: renderPath(st.path, { taskId }),
      query: renderMap(st.query, { taskId }),
      phase: 'read',
    });
    this.ok(res, 'read', ctx);
    return { res, ready: !st.notReadyStatusCodes.includes(res.status) };
  }

  async status(taskId: string, ctx: CallContext): Promise<StatusObservation> {
    const st = this.entry.status;
    const { res, ready } = await this.readStatus(taskId, ctx);
    const retryAfterMs = this.http.retryAfterMs(res);
    const word = pickString(res.body, st.statusPath);
    if (!ready) return { state: 'running', providerStatus: word ?? `HTTP ${res.status}`, retryAfterMs };
    if (word === undefined)
      this.http.invalid(res, 'read', `status answer: no status word at ${JSON.stringify(st.statusPath)}`);
    const state = mapStatus(st, word);
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
    const res = await this.http.call(ctx, { method: c.method, path: renderPath(c.path, { taskId }), phase: 'cancel' });
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
