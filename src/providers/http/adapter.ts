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
 */
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderState } from '../../model/states.js';
import type { ScrapeRequest } from '../../model/types.js';
import { resultLimitsOf } from '../shared/entry.js';
import { ProviderError } from '../shared/errors.js';
import {
  errorDetails,
  ProviderHttp,
  type CallPhase,
  type CredentialPlacement,
  type FormBody,
  type ProviderResponse,
} from '../shared/http.js';
import {
  enforceResultLimits,
  paginateCursor,
  paginateNextLink,
  paginateOffset,
  resultFromDocuments,
  withIdentity,
} from '../shared/pagination.js';
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
import type { HttpEntry } from './config.js';
import { pick, pickString, renderJson, renderMap, renderPath, type TemplateVars } from './template.js';

type Fields = HttpEntry['result']['fields'];

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

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);

/** The page of `doc` by the entry's field pointers (absent fields empty; `url` falls back to `fallbackUrl`). */
function toPage(doc: unknown, f: Fields, fallbackUrl: string): ProviderResult {
  const at = (p: string | undefined) => (p === undefined ? undefined : pick(doc, p));
  const links = at(f.links);
  return {
    url: str(at(f.url)) ?? fallbackUrl,
    finalUrl: str(at(f.finalUrl)),
    httpStatus: num(at(f.httpStatus)),
    title: str(at(f.title)),
    byline: str(at(f.byline)),
    excerpt: str(at(f.excerpt)),
    lang: str(at(f.lang)),
    siteName: str(at(f.siteName)),
    publishedTime: str(at(f.publishedTime)),
    text: str(at(f.text)),
    markdown: str(at(f.markdown)),
    links: Array.isArray(links) ? links.filter((l): l is string => typeof l === 'string') : [],
    contentLength: num(at(f.contentLength)),
  };
}

/**
 * One document by the entry's field pointers; the whole item is kept in `data`. Identity: the
 * value at `fields.id` when the entry declares it, else the URL with `position` (the item's
 * absolute position, when the paging knows it), else the URL with a hash of the item.
 */
function toDocument(item: unknown, f: Fields, position: number | null): ResultDocument {
  const p = toPage(item, f, '');
  const error = f.error === undefined ? undefined : pickString(item, f.error);
  const providerId = f.id === undefined ? null : str(pick(item, f.id));
  return withIdentity(
    {
      url: p.url || null,
      finalUrl: p.finalUrl,
      httpStatus: p.httpStatus,
      title: p.title,
      markdown: p.markdown,
      text: p.text,
      links: p.links,
      data:
        item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : { value: item },
      ...(error ? { error: { message: error } } : {}),
    },
    { providerId, position },
  );
}

/** {@link ProviderAdapter} of the declarative `http` kind. */
export class HttpAdapter implements ProviderAdapter {
  readonly kind = 'http';
  readonly capabilities: ProviderCapabilities;
  readonly evidence: ReconcileEvidence;
  private readonly http: ProviderHttp;

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
    return {
      state,
      providerStatus: word,
      progress: p
        ? { pagesFetched: figure(p.pagesFetched), creditsUsed: figure(p.creditsUsed), documents: figure(p.documents) }
        : undefined,
      result: state === 'completed' ? this.inlineResult(taskId, res.body) : undefined,
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

  /** The result carried by a final status answer (result without `request`, not paged), or undefined when it carries none. */
  private inlineResult(taskId: string, body: unknown): ProviderResult | undefined {
    const r = this.entry.result;
    if (r.request !== undefined) return undefined;
    return this.fromBody(taskId, body, '');
  }

  /** The result in one answer: the page, the documents, or both; undefined when the answer holds neither. */
  private fromBody(taskId: string, body: unknown, fallbackUrl: string): ProviderResult | undefined {
    const r = this.entry.result;
    const page = r.pagePath === undefined ? undefined : pick(body, r.pagePath);
    const items = r.documentsPath === undefined ? undefined : pick(body, r.documentsPath);
    const hasPage = page !== undefined && page !== null && typeof page === 'object';
    if (!hasPage && !Array.isArray(items)) return undefined;
    const docs = Array.isArray(items) ? items.map((i, n) => toDocument(i, r.fields, n)) : undefined;
    const result: ProviderResult = hasPage
      ? { ...toPage(page, r.fields, fallbackUrl), ...(docs ? { documents: docs } : {}) }
      : resultFromDocuments(docs!, fallbackUrl);
    return enforceResultLimits(result, resultLimitsOf(this.entry), this.name, taskId);
  }

  async result(taskId: string, ctx: ResultContext): Promise<ProviderResult> {
    const r = this.entry.result;
    const notReady = (res: ProviderResponse, what: string) =>
      new ProviderError('transient', `task ${taskId} is ${what}, no result yet`, {
        httpStatus: res.status,
        evidence: res.evidence,
        code: 'NOT_READY',
      });
    if (r.request === undefined) {
      const { res, ready } = await this.readStatus(taskId, ctx);
      const word = pickString(res.body, this.entry.status.statusPath);
      if (!ready || word === undefined || mapStatus(this.entry.status, word) !== 'completed')
        throw notReady(res, word ?? `not ready (HTTP ${res.status})`);
      const out = this.fromBody(taskId, res.body, ctx.url);
      if (!out) throw notReady(res, `${word} without a result`);
      return out;
    }
    const req = r.request;
    const first = this.http.url(renderPath(req.path, { taskId }), renderMap(req.query, { taskId }));
    const read = async (o: { url?: string; query?: Record<string, string | number | undefined> }) => {
      const res = await this.http.call(ctx, { method: req.method, url: o.url ?? first, query: o.query, phase: 'read' });
      this.ok(res, 'read', ctx);
      if (r.notReadyStatusCodes.includes(res.status)) throw notReady(res, `not ready (HTTP ${res.status})`);
      return res;
    };
    const pg = r.pagination;
    if (!pg) {
      const res = await read({});
      const out = this.fromBody(taskId, res.body, ctx.url);
      if (!out)
        this.http.invalid(res, 'read', `result answer: nothing at ${JSON.stringify(r.pagePath ?? r.documentsPath)}`);
      return out;
    }
    const itemsOf = (res: ProviderResponse): unknown[] => {
      const items = pick(res.body, r.documentsPath!);
      if (!Array.isArray(items))
        this.http.invalid(res, 'read', `result page: no array at ${JSON.stringify(r.documentsPath)}`);
      return items;
    };
    const common = { provider: this.name, taskId, limits: ctx.limits, heartbeat: ctx.heartbeat, signal: ctx.signal };
    const map = (i: unknown, position: number | null) => toDocument(i, r.fields, position);
    let documents: ResultDocument[];
    if (pg.style === 'offset') {
      documents = await paginateOffset({
        ...common,
        map,
        fetch: async (offset, limit) => ({
          items: itemsOf(await read({ query: { [pg.offsetParam]: offset, [pg.limitParam]: limit } })),
        }),
      });
    } else if (pg.style === 'cursor') {
      documents = await paginateCursor({
        ...common,
        map,
        fetch: async (cursor, limit) => {
          const res = await read({
            query: {
              ...(cursor ? { [pg.cursorParam]: cursor } : {}),
              ...(pg.limitParam ? { [pg.limitParam]: limit } : {}),
            },
          });
          return { items: itemsOf(res), cursor: pickString(res.body, pg.cursorPath) ?? null };
        },
      });
    } else {
      documents = await paginateNextLink({
        ...common,
        map,
        firstUrl: first,
        fetch: async (url) => {
          const res = await read({ url });
          const next = pickString(res.body, pg.nextPath);
          return { items: itemsOf(res), next: next ? new URL(next, url).toString() : null };
        },
      });
    }
    return resultFromDocuments(documents, ctx.url);
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

  /**
   * Reads the configured list once: every item whose `matchPath` equals the rendered `match` is a
   * candidate, strong when the template names `{{clientRef}}`, weak otherwise. A list answering
   * one of `errors.unsupportedCodes` is not offered here.
   */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    const l = this.entry.list;
    if (!l) return [];
    const at = new Date().toISOString();
    const name = listLookupName(this.entry);
    const vars: TemplateVars = { clientRef: ctx.clientRef, url: ctx.request.url, submittedAfter: ctx.submittedAfter };
    const res = await this.http.call(ctx, {
      method: l.method,
      path: renderPath(l.path, vars),
      query: renderMap(l.query, vars),
      phase: 'read',
    });
    try {
      this.ok(res, 'read', ctx, 'list');
    } catch (e) {
      if (e instanceof ProviderError && e.kind === 'unsupported')
        return [{ lookup: name, available: false, complete: false, candidates: [], at, note: e.message }];
      throw e;
    }
    const items = pick(res.body, l.itemsPath);
    if (!Array.isArray(items))
      this.http.invalid(res, 'read', `list answer: no array at ${JSON.stringify(l.itemsPath)}`);
    const want = renderMap({ m: l.match }, vars).m;
    const strong = l.match.includes('{{clientRef}}');
    const candidates: Candidate[] = [];
    for (const it of items) {
      if (pickString(it, l.matchPath) !== want) continue;
      const taskId = pickString(it, l.taskIdPath);
      if (!taskId) this.http.invalid(res, 'read', `list item: no task ID at ${JSON.stringify(l.taskIdPath)}`);
      candidates.push({
        taskId,
        providerStatus: pickString(it, l.statusPath) ?? 'listed',
        match: strong ? 'strong' : 'weak',
        why: strong
          ? `${l.matchPath} is our reference`
          : `${l.matchPath} equals ${l.match}, which another job could share`,
      });
    }
    return [{ lookup: name, available: true, complete: true, candidates, at }];
  }
}

/** The parts of an `http` entry its evidence follows from. */
type EvidenceParts = {
  submit: Pick<HttpEntry['submit'], 'idempotent'>;
  list?: Pick<NonNullable<HttpEntry['list']>, 'method' | 'path' | 'shows' | 'finishedForMs' | 'lagMs' | 'match'>;
  auth: Pick<HttpEntry['auth'], 'in'>;
};

/** The name of an entry's list lookup in evidence (`GET /path`). */
function listLookupName(entry: EvidenceParts): string {
  return entry.list ? `${entry.list.method} ${entry.list.path}` : 'list';
}

/** The evidence an `http` entry declares: a replay when `submit.idempotent`, the list as configured (see `ListSchema`). */
export function httpEvidence(entry: EvidenceParts): ReconcileEvidence {
  const l = entry.list;
  return {
    replay: entry.submit.idempotent ? 'same-task' : 'none',
    lookups: l
      ? [
          {
            name: listLookupName(entry),
            shows: l.shows,
            finishedForMs: l.finishedForMs,
            lagMs: l.lagMs,
            match: l.match.includes('{{clientRef}}') ? 'strong' : 'weak',
          },
        ]
      : [],
    taskScope: entry.auth.in === 'none' ? 'host' : 'credential',
    source: "the entry's own declaration (submit.idempotent, list)",
  };
}
