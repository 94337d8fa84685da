/**
 * Adapter for Zyte Scrapy Cloud jobs. Contract: the Scrapy Cloud HTTP API reference at
 * docs.zyte.com/scrapy-cloud/usage/reference/http/ (pages "Scrapy Cloud API" (authentication,
 * pagination), "Jobs API" (`run.json`, `jobs/list.json`, `jobs/stop.json`), "Job metadata API",
 * "Items API", "JobQ API"; read 2026-11-30), with the parameter tables of the Jobs API as published
 * in the doc.scrapinghub.com sources (github.com/stummjr/doc.scrapinghub.com `api/jobs.rst`,
 * `api/overview.rst`), and the recorded answers of python-scrapinghub's test cassettes
 * (github.com/scrapinghub/python-scrapinghub, commit 9da80b9 of 2026-07-23) for the duplicate-job
 * refusal. Calls:
 *
 * | what      | request                                                                              | answer                                      |
 * |-----------|--------------------------------------------------------------------------------------|---------------------------------------------|
 * | submit    | `POST {baseUrl}/run.json` (form: `project`, `spider`, `add_tag`, spider arguments, …) | `200 {"status": "ok", "jobid": "P/S/J"}`    |
 * | status    | `GET {storageUrl}/jobs/P/S/J` (job metadata)                                         | `200 {state, close_reason?, scrapystats?, …}` |
 * | result    | `GET {storageUrl}/items/P/S/J?format=json&meta=_key&start=P/S/J/<offset>&count=<n>` | `200 [item, …]`                             |
 * | cancel    | `POST {baseUrl}/jobs/stop.json` (form: `project`, `job`)                             | `200 {"status": "ok"}`                      |
 * | reconcile | `GET {baseUrl}/jobs/list.json?project&spider&has_tag&state=<s>&count` per state       | `200 {"status": "ok", "jobs": [{id, state, tags, …}]}` |
 *
 * Credential: HTTP Basic with the key as user name and an empty password (default), or `?apikey=`.
 * What the states and close reasons mean: `states.ts`; the reconcile lookups: `lookups.ts`.
 *
 * States: `pending` → queued, `running` → running, `finished` → by `close_reason` (below),
 * `deleted` → `expired` (the job and its items were removed: by a user, or after the plan's data
 * retention); any other word → `unrecognised`. Close reasons (Scrapy's, plus Scrapy Cloud's
 * `cancelled (stalled)`, matched on the word before a parenthesis): `finished`,
 * `closespider_timeout`, `closespider_itemcount`, `closespider_pagecount` → completed (the last
 * three: a configured limit ended the crawl, its items are the result); `cancelled` and
 * `cancel_timeout` (cancelled, but not stopped gracefully within the grace period) → cancelled;
 * `failed`, `shutdown`, `memusage_exceeded`, `diskusage_exceeded`, `closespider_errorcount`,
 * `closespider_timeout_no_item`, `slybot_fewitems_scraped`, `banned` → failed with the close reason
 * as its code; an unknown close reason → `unrecognised` (entry `closeReasons` says what it means).
 * The provider status we record is the state, or `finished/<close_reason>`.
 *
 * Zyte refuses a second job of the same spider with the same arguments while one is pending or
 * running: `400 {"status": "error", "message": "<spider> already scheduled"}` (python-scrapinghub
 * raises `DuplicateJobError` on "already scheduled"). With our reference passed as a spider
 * argument (`refArgument`, default), that refusal can only mean our own job exists: the adapter
 * looks it up by tag and adopts it (`replayed`), or — not listed yet — reports the submit
 * `ambiguous` with the refusal as proof that the job exists (`provesExistence`): the workflow
 * reconciles by listing, and no empty list can then make it submit again. A job listed with our
 * tag but no job ID we can read proves the same. Without a reference argument the twin may be
 * someone else's job: the submit is retried later (`transient`, `ALREADY_SCHEDULED`), unless the
 * list shows a job for our tag without its tags (it may be ours: `ambiguous`, reconciled). This
 * dedupe holds only while the first job is pending or running, so it is not declared as
 * idempotency (a replay after the job finished would start a second job).
 */
import { z } from 'zod';
import { redactSecrets } from '../../lib/sanitize.js';
import type { LookupReading } from '../../model/evidence.js';
import type { ScrapeRequest } from '../../model/types.js';
import { credentialSecrets } from '../shared/credentials.js';
import { ProviderError } from '../shared/errors.js';
import {
  ProviderHttp,
  callSecrets,
  errorDetails,
  type CallPhase,
  type FormBody,
  type ProviderResponse,
} from '../shared/http.js';
import { documentFromItem } from '../shared/itemDocuments.js';
import { completenessOf, paginateOffset, resultFromDocuments } from '../shared/pagination.js';
import type {
  Accepted,
  CallContext,
  CancelAnswer,
  FindContext,
  ProviderAdapter,
  ProviderCapabilities,
  ResultContext,
  StatusObservation,
  SubmitContext,
} from '../adapter.js';
import type { ProviderResult, ResultDocument } from '../../model/results.js';
import { ZYTE_RESERVED_FIELDS, type ZyteEntry } from './config.js';
import { findByTag, findSubmitted, ZYTE_EVIDENCE, type ZyteReads } from './lookups.js';
import { JOB_ID, statusWord, zyteState } from './states.js';

const RunAnswerSchema = z.looseObject({
  status: z.literal('ok'),
  jobid: z.string().regex(JOB_ID, 'a job key "project/spider/job"'),
});
const JobMetaSchema = z.looseObject({
  state: z.string().min(1),
  close_reason: z.string().nullish(),
  scrapystats: z
    .looseObject({ item_scraped_count: z.number().optional(), response_received_count: z.number().optional() })
    .nullish(),
});

/** A form or query value for a spider argument: strings as they are, numbers and booleans as text, anything else as JSON. */
function argValue(name: string, v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null || v === undefined) {
    throw new ProviderError(
      'permanent',
      `option "${name}" is ${v === null ? 'null' : 'undefined'}: a Scrapy Cloud spider argument needs a value`,
      {
        code: 'BAD_OPTIONS',
      },
    );
  }
  return JSON.stringify(v);
}

/** Zyte's error bodies are `{"status": "error"|"badrequest", "message": …}`; "already scheduled" gets code `ALREADY_SCHEDULED`. */
function zyteErrorDetails(res: ProviderResponse): { code?: string; message?: string } {
  const d = errorDetails(res);
  return /already scheduled/i.test(d.message ?? '') ? { ...d, code: 'ALREADY_SCHEDULED' } : d;
}

/** {@link ProviderAdapter} for Zyte Scrapy Cloud (see the module docs for the contract). */
export class ZyteAdapter implements ProviderAdapter {
  readonly kind = 'zyte';
  readonly capabilities: ProviderCapabilities = { idempotency: false, list: true, cancel: true, webhooks: false };
  readonly evidence = ZYTE_EVIDENCE;
  /** Jobs API (`app.zyte.com/api`). */
  private readonly app: ProviderHttp;
  /** Storage API (`storage.zyte.com`): job metadata and items. */
  private readonly storage: ProviderHttp;
  /** What `lookups.ts` reads through: the Jobs API client, the entry's project and spider, and the answer mapping. */
  private readonly reads: ZyteReads;

  /** Throws an `Error` when `refArgument` and `urlArgument` name the same spider argument. */
  constructor(
    readonly name: string,
    private readonly entry: ZyteEntry,
  ) {
    if (entry.refArgument !== null && entry.refArgument === entry.urlArgument)
      throw new Error(`provider ${name}: refArgument and urlArgument must differ`);
    const auth = entry.auth === 'query' ? ({ in: 'query', name: 'apikey' } as const) : ({ in: 'basic' } as const);
    this.app = ProviderHttp.forEntry(name, entry, auth, { errorDetails: zyteErrorDetails });
    this.storage = ProviderHttp.forEntry(name, entry, auth, {
      errorDetails: zyteErrorDetails,
      baseUrl: entry.storageUrl,
    });
    this.reads = {
      app: this.app,
      project: entry.project,
      spider: entry.spider,
      auth: (ctx) => this.auth(ctx),
      tagOf: (clientRef) => this.tagOf(clientRef),
      fail: (http, res, phase, ctx) => this.fail(http, res, phase, ctx),
    };
  }

  /**
   * The call context with the credential in the form the placement needs: for Basic, `key:`
   * (the key is the user name, the password empty); the raw key and the Base64 of the pair stay
   * secrets of the call.
   */
  private auth<T extends CallContext>(ctx: T): T {
    if (this.entry.auth === 'query' || ctx.apiKey.includes(':')) return ctx;
    const pair = `${ctx.apiKey}:`;
    return {
      ...ctx,
      apiKey: pair,
      secrets: [...ctx.secrets, ...credentialSecrets(ctx.apiKey), Buffer.from(pair, 'utf8').toString('base64')],
    };
  }

  /** The tag that marks the jobs of client reference `clientRef`. */
  tagOf(clientRef: string): string {
    return `${this.entry.tagPrefix}${clientRef}`;
  }

  /**
   * Spider arguments of a job: the entry's `jobArgs`, then the job's `options`, then the URL and
   * our reference. Throws a permanent `BAD_OPTIONS` error for an option named like a `run.json`
   * field or with a null value (nothing is dropped silently).
   */
  spiderArgs(request: ScrapeRequest, clientRef: string): Record<string, string> {
    const out: Record<string, string> = { ...this.entry.jobArgs };
    for (const [k, v] of Object.entries(request.options ?? {})) {
      if ((ZYTE_RESERVED_FIELDS as readonly string[]).includes(k)) {
        throw new ProviderError(
          'permanent',
          `option "${k}" is a run.json field of Scrapy Cloud, not a spider argument; set it in the provider entry (units, priority, jobSettings)`,
          { code: 'BAD_OPTIONS' },
        );
      }
      out[k] = argValue(k, v);
    }
    if (this.entry.urlArgument) out[this.entry.urlArgument] = request.url;
    if (this.entry.refArgument) out[this.entry.refArgument] = clientRef;
    return out;
  }

  /** `/jobs/P/S/J`-style path of a job key; a permanent `BAD_TASK_ID` for anything else. */
  private jobPath(prefix: string, taskId: string): string {
    if (!JOB_ID.test(taskId))
      throw new ProviderError(
        'permanent',
        `"${taskId.slice(0, 100)}" is not a Scrapy Cloud job key (project/spider/job)`,
        { code: 'BAD_TASK_ID' },
      );
    return `/${prefix}/${taskId}`;
  }

  /**
   * The classified error of a non-2xx answer; a 2xx whose `status` is `error` or `badrequest` (the
   * legacy API's way of refusing) is `permanent` with Zyte's message and code. Any other 2xx that
   * is not `ok` (a proxy's page, an empty or cut body, JSON without `status`) is not Zyte's word:
   * `INVALID_RESPONSE`, ambiguous on a submit (the job may have been scheduled), transient otherwise.
   */
  private fail(http: ProviderHttp, res: ProviderResponse, phase: CallPhase, ctx: CallContext): ProviderError {
    if (!http.isOk(res)) return http.error(res, phase, ctx);
    const word = (res.body as { status?: unknown } | undefined)?.status;
    if (word !== 'error' && word !== 'badrequest')
      return http.invalidError(res, phase, `answer (status ${typeof word === 'string' ? `"${word}"` : 'missing'})`);
    const d = zyteErrorDetails(res);
    const message = redactSecrets(
      `${res.evidence.endpoint} answered ${res.status} with status "${String(word ?? 'none')}"${d.message ? `: ${d.message}` : ''}`,
      callSecrets(ctx),
    );
    return new ProviderError('permanent', message, { code: d.code, httpStatus: res.status, evidence: res.evidence });
  }

  async submit(request: ScrapeRequest, submitCtx: SubmitContext): Promise<Accepted> {
    const ctx = this.auth(submitCtx);
    const tag = this.tagOf(ctx.clientRef);
    const form: FormBody = {
      ...this.spiderArgs(request, ctx.clientRef),
      project: this.entry.project,
      spider: this.entry.spider,
      add_tag: [tag],
      priority: this.entry.priority,
      units: this.entry.units,
      job_settings: this.entry.jobSettings ? JSON.stringify(this.entry.jobSettings) : undefined,
    };
    const res = await this.app.call(ctx, { method: 'POST', path: '/run.json', form, phase: 'submit' });
    const ok = this.app.isOk(res) && (res.body as { status?: unknown } | undefined)?.status === 'ok';
    if (ok) {
      const body = this.app.parse(res, RunAnswerSchema, 'submit', 'run.json answer');
      return { taskId: body.jobid, providerStatus: 'pending', replayed: false };
    }
    const err = this.fail(this.app, res, 'submit', ctx);
    if (err.details.code !== 'ALREADY_SCHEDULED') throw err;
    // A pending or running job of this spider has the same arguments.
    let twin: Awaited<ReturnType<typeof findByTag>> | null = null;
    let unlisted = 'not listed yet';
    try {
      twin = await findByTag(this.reads, ctx, tag, ['pending', 'running']);
    } catch (e) {
      // With our reference among the arguments the refusal itself proves our job exists: a list
      // that cannot be read must not lose that proof (a plain retry would submit a second job).
      if (!this.entry.refArgument || !(e instanceof ProviderError)) throw e;
      unlisted = `not found, the list unreadable (${e.message})`;
    }
    if (twin?.job) return twin.job;
    // A job listed with our tag proves ours exists, even when its job ID cannot be read.
    if (twin?.unnamed) {
      throw new ProviderError(
        'ambiguous',
        `${err.message} — ${twin.unnamed} job(s) tagged ${tag} are listed without a job ID we can read: our job exists; reconciling by tag ${tag}`,
        { ...err.details, provesExistence: true },
      );
    }
    const untagged = twin?.untagged.length
      ? `; listed without their tags: ${twin.untagged.join(', ')}, which may be ours`
      : '';
    if (this.entry.refArgument) {
      throw new ProviderError(
        'ambiguous',
        `${err.message} — the twin carries our reference ${ctx.clientRef}, so our job exists but is ${unlisted}${untagged}; reconciling by tag ${tag}`,
        { ...err.details, provesExistence: true },
      );
    }
    // A job listed for our tag without its tags may be the twin and ours: not proven absent.
    if (untagged) {
      throw new ProviderError(
        'ambiguous',
        `${err.message} — no job is listed with our tag ${tag}${untagged}; reconciling by tag ${tag}`,
        err.details,
      );
    }
    throw new ProviderError(
      'transient',
      `${err.message} — another pending or running job of spider ${this.entry.spider} has the same arguments; submitting again later`,
      err.details,
    );
  }

  async status(taskId: string, callCtx: CallContext): Promise<StatusObservation> {
    const ctx = this.auth(callCtx);
    const res = await this.storage.call(ctx, { method: 'GET', path: this.jobPath('jobs', taskId), phase: 'read' });
    const retryAfterMs = this.storage.retryAfterMs(res);
    if (res.status === 202 || res.status === 204)
      return { state: 'running', providerStatus: `HTTP ${res.status}`, retryAfterMs };
    if (!this.storage.isOk(res)) throw this.fail(this.storage, res, 'read', ctx);
    const meta = this.storage.parse(res, JobMetaSchema, 'read', 'job metadata');
    if (meta.state === 'deleted') {
      // A deleted job keeps its close reason: how it ended before its data was removed.
      const ended = meta.close_reason ? zyteState('finished', meta.close_reason, this.entry.closeReasons) : undefined;
      const endedAs =
        ended === 'completed' || ended === 'failed' || ended === 'cancelled' || ended === 'unrecognised'
          ? ended
          : undefined;
      throw new ProviderError(
        'expired',
        `${res.evidence.endpoint}: job ${taskId} is deleted (by a user, or after the plan's data retention)${meta.close_reason ? ` after it closed ${meta.close_reason}` : ''}; its items are gone`,
        { code: 'JOB_DELETED', httpStatus: res.status, evidence: res.evidence, ...(endedAs ? { endedAs } : {}) },
      );
    }
    const state = zyteState(meta.state, meta.close_reason, this.entry.closeReasons);
    const stats = meta.scrapystats;
    return {
      state,
      providerStatus: statusWord(meta.state, meta.close_reason),
      progress: stats
        ? { documents: stats.item_scraped_count, pagesFetched: stats.response_received_count }
        : undefined,
      error:
        state === 'failed'
          ? {
              code: meta.close_reason ?? undefined,
              message: `the job finished with close reason "${meta.close_reason}"`,
            }
          : undefined,
      evidence: state === 'failed' ? res.evidence : undefined,
      retryAfterMs,
    };
  }

  /**
   * Every item of the job, page by page (`limits.pageSize` per request, `start=P/S/J/<offset>`),
   * as documents, until a page comes back short of its `count`; then the job's metadata once more,
   * whose `scrapystats.item_scraped_count` (Scrapy's count of the items the spider yielded, final
   * once the job finished) the items read are compared with: fewer is a `partial` result. Throws
   * `expired` when the items are gone (`404`), `RESULT_TOO_LARGE` past the entry's limits, and the
   * classified error of any other refusal.
   */
  async result(taskId: string, resultCtx: ResultContext): Promise<ProviderResult> {
    const ctx = this.auth(resultCtx);
    const itemsPath = this.jobPath('items', taskId);
    const secrets = callSecrets(ctx);
    // `meta=_key` adds each item's key `P/S/J/N` (N: its index in the job): the item's identity,
    // so an item served again (`start` is inclusive) is stored once.
    const documents = await paginateOffset<unknown, ResultDocument>({
      provider: this.name,
      taskId,
      limits: ctx.limits,
      heartbeat: ctx.heartbeat,
      signal: ctx.signal,
      map: (it, position) => documentFromItem(it, secrets, { idField: '_key', position }),
      fetch: async (offset, limit) => {
        const res = await this.storage.call(ctx, {
          method: 'GET',
          path: itemsPath,
          query: { format: 'json', meta: '_key', start: `${taskId}/${offset}`, count: limit },
          phase: 'read',
        });
        if (res.status === 404) {
          const err = this.fail(this.storage, res, 'read', ctx);
          throw new ProviderError('expired', `${err.message} (the items of job ${taskId} are gone)`, err.details);
        }
        if (!this.storage.isOk(res)) throw this.fail(this.storage, res, 'read', ctx);
        if (!Array.isArray(res.body)) this.storage.invalid(res, 'read', 'items body: not a JSON array');
        return { items: res.body as unknown[] };
      },
    });
    const result = resultFromDocuments(documents, ctx.url);
    const completeness = completenessOf(documents, await this.itemCount(taskId, ctx), "Zyte's `item_scraped_count`", {
      countErrors: true,
      why: 'the items pages ended before it',
    });
    return completeness ? { ...result, completeness } : result;
  }

  /** The job's `scrapystats.item_scraped_count` (its metadata read again), or null when the metadata has none. */
  private async itemCount(taskId: string, ctx: CallContext): Promise<number | null> {
    const res = await this.storage.call(ctx, { method: 'GET', path: this.jobPath('jobs', taskId), phase: 'read' });
    if (!this.storage.isOk(res)) throw this.fail(this.storage, res, 'read', ctx);
    return this.storage.parse(res, JobMetaSchema, 'read', 'job metadata').scrapystats?.item_scraped_count ?? null;
  }

  async cancel(taskId: string, callCtx: CallContext): Promise<CancelAnswer> {
    const ctx = this.auth(callCtx);
    this.jobPath('jobs', taskId);
    const res = await this.app.call(ctx, {
      method: 'POST',
      path: '/jobs/stop.json',
      form: { project: this.entry.project, job: taskId },
      phase: 'cancel',
    });
    const body = res.body as { status?: unknown; message?: unknown } | undefined;
    if (this.app.isOk(res) && body?.status === 'ok') return { accepted: true };
    const err = this.fail(this.app, res, 'cancel', ctx);
    // Only Zyte's own refusal (its error body, under a 2xx as the legacy API sends it or a 4xx) can
    // say the job is past stopping; a proxy's or gateway's answer saying "already" proves nothing.
    const zytes = body?.status === 'error' || body?.status === 'badrequest';
    if (
      zytes &&
      res.status < 500 &&
      res.status !== 404 &&
      /not running|already|finished|deleted/i.test(String(body?.message ?? ''))
    )
      return { accepted: false, alreadyFinal: true };
    throw err;
  }

  /** The lookups of a lost submit: see {@link findSubmitted}. */
  async findSubmitted(ctx: FindContext): Promise<LookupReading[]> {
    return findSubmitted(this.reads, ctx);
  }
}
