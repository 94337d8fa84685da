/**
 * Reading a ready Bright Data snapshot (kind `brightdata`): its parts downloaded one by one
 * (`GET /datasets/v3/snapshot/{id}?format=json&batch_size&part`, `…/{id}/parts` when a part comes
 * back full), each row made a result document, and the download answers that are not `200` mapped
 * to errors (building, expired, empty). Shapes follow Bright Data's "Download Snapshot" and
 * "Management APIs" (delivery parts) pages; the contract and its sources are in `adapter.ts`.
 */
import { z } from 'zod';
import { ProviderError } from '../shared/errors.js';
import {
  errorDetails,
  notReady,
  path,
  type CallOptions,
  type ProviderHttp,
  type ProviderResponse,
} from '../shared/http.js';
import { completenessOf, paginateCursor, resultFromDocuments, withIdentity } from '../shared/pagination.js';
import type { CallContext, ResultContext } from '../adapter.js';
import type { ProviderResult, ResultDocument } from '../../model/results.js';
import type { ScrapeRequest } from '../../model/types.js';
import type { BrightDataEntry } from './config.js';

const PartsBody = z.looseObject({ parts: z.number().int().nonnegative() });
/** The counts of `GET /datasets/v3/progress/{id}` once ready: `records` (data rows) beside `errors` (seen on the live API; the OpenAPI lists neither). */
const CountsBody = z.looseObject({ records: z.number().int().nonnegative().nullish() });

/** What `results.ts` and `lookups.ts` read through: the adapter's name, entry, exchange and guarded call. */
export interface BrightDataReads {
  name: string;
  entry: BrightDataEntry;
  http: ProviderHttp;
  /** One call under the IP-block guard (a `429` is recorded and thrown as `cooldown`). */
  call(ctx: CallContext, o: CallOptions): Promise<ProviderResponse>;
  /** The input object of a job: entry `input`, then `options.input`, then the URL. */
  inputOf(request: ScrapeRequest): Record<string, unknown>;
}

/** One record of a snapshot as a result document: its URL (or its input's), title or name, the record as data, and its error. */
/**
 * One snapshot row as a {@link ResultDocument}, `position` its absolute position in the snapshot
 * ((part − 1) × batch size + index: Bright Data gives no record ID, so the identity is the URL
 * with that position).
 *
 * A data row's own fields fill the document where the dataset has them: `url` (else the input's),
 * `final_url`/`finalUrl`, `http_status`/`status_code`, `title`/`name`, `markdown`,
 * `text`/`html2text`, `links`; the whole row stays in `data`. A per-input error row (`{timestamp,
 * input, error, error_code}`, served with `include_errors=true`) is a per-document error with
 * Bright Data's code, its URL the input's, never data.
 */
function documentOf(record: unknown, position: number | null): ResultDocument {
  const r =
    record && typeof record === 'object' && !Array.isArray(record)
      ? (record as Record<string, unknown>)
      : { value: record };
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  const input = r.input && typeof r.input === 'object' ? (r.input as Record<string, unknown>) : {};
  const error = str(r.error) ?? str(r.error_message);
  if (error) {
    return withIdentity(
      { url: str(r.url) ?? str(input.url), error: { code: str(r.error_code) ?? undefined, message: error } },
      { position },
    );
  }
  const status = [r.http_status, r.status_code, r.statusCode].find(
    (v): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 100 && v <= 599,
  );
  const links = Array.isArray(r.links) ? r.links.filter((l): l is string => typeof l === 'string') : undefined;
  return withIdentity(
    {
      url: str(r.url) ?? str(input.url),
      finalUrl: str(r.final_url) ?? str(r.finalUrl),
      httpStatus: status ?? null,
      title: str(r.title) ?? str(r.name),
      markdown: str(r.markdown),
      text: str(r.text) ?? str(r.html2text),
      ...(links ? { links } : {}),
      data: r,
    },
    { position },
  );
}

/**
 * The refusal of a read that says nothing will ever come, or undefined for any other answer: a
 * `400` "Snapshot is expired" → `expired` (code `SNAPSHOT_EXPIRED` or the body's own), a `400`
 * "Snapshot is empty" → `task_failed` (`SNAPSHOT_EMPTY` or the body's own). The download page
 * documents both; progress may answer them too (the docs contradict each other on empty snapshots,
 * and a stand-in answered `400 {"error": {"code": "SNAPSHOT_EMPTY"}}` on progress), so both reads
 * use this.
 */
export function finalRefusal(res: ProviderResponse, taskId: string): ProviderError | undefined {
  if (res.status !== 400) return undefined;
  const d = errorDetails(res);
  const text = `${d.code ?? ''} ${d.message ?? ''} ${res.text.slice(0, 500)}`;
  if (/expired/i.test(text)) {
    return new ProviderError(
      'expired',
      `snapshot ${taskId} has expired at Bright Data (${d.message ?? 'Snapshot is expired'})`,
      {
        code: d.code ?? 'SNAPSHOT_EXPIRED',
        httpStatus: 400,
        evidence: res.evidence,
      },
    );
  }
  if (/empty/i.test(text)) {
    return new ProviderError(
      'task_failed',
      `snapshot ${taskId} is empty: the collection produced nothing (${d.message ?? 'Snapshot is empty'})`,
      {
        code: d.code ?? 'SNAPSHOT_EMPTY',
        httpStatus: 400,
        evidence: res.evidence,
      },
    );
  }
  return undefined;
}

/** Throws the error of a download answer that is not `200` (see the module docs). */
function downloadError(reads: BrightDataReads, res: ProviderResponse, taskId: string, ctx: CallContext): ProviderError {
  const d = errorDetails(res);
  if (res.status === 202 || res.status === 409) {
    const wait = reads.http.retryAfterMs(res) ?? reads.http.error(res, 'read', ctx).details.retryAfterMs;
    return notReady(
      `snapshot ${taskId} is not ready for download yet (HTTP ${res.status}${d.message ? `: ${d.message}` : ''})`,
      res,
      { retryAfterMs: wait },
    );
  }
  return finalRefusal(res, taskId) ?? reads.http.error(res, 'read', ctx);
}

/** The number of parts of a download with `batchSize` records each. */
async function partsOf(reads: BrightDataReads, taskId: string, ctx: CallContext, batchSize: number): Promise<number> {
  const res = await reads.call(ctx, {
    method: 'GET',
    path: path`/datasets/v3/snapshot/${taskId}/parts`,
    query: { format: 'json', batch_size: batchSize },
    phase: 'read',
  });
  if (res.status !== 200) throw downloadError(reads, res, taskId, ctx);
  return reads.http.parse(res, PartsBody, 'read', 'parts body').parts;
}

/**
 * The snapshot's own count of its data rows (`records` of its progress answer), or null when the
 * answer has none (the OpenAPI documents only `status`) or cannot be read: a count is evidence to
 * compare with, never a reason to fail a read that succeeded.
 */
async function recordCount(reads: BrightDataReads, taskId: string, ctx: CallContext): Promise<number | null> {
  const res = await reads.call(ctx, { method: 'GET', path: path`/datasets/v3/progress/${taskId}`, phase: 'read' });
  if (res.status !== 200) return null;
  return CountsBody.safeParse(res.body).data?.records ?? null;
}

/**
 * Every row of a ready snapshot, part by part (see the module docs), as documents, until a part
 * comes back short of the batch size or the last part `…/parts` announced. A snapshot of one data
 * row is the page itself: its markdown, text and title fill the result row. A snapshot whose rows
 * are all per-input errors produced nothing: `task_failed` with the first row's `error_code` and
 * the count (never `completed`). The data rows read are compared with the snapshot's `records`
 * count where its progress answer gives one: fewer is a `partial` result.
 */
export async function readResult(reads: BrightDataReads, taskId: string, ctx: ResultContext): Promise<ProviderResult> {
  const batchSize = reads.entry.download.batchSize;
  let parts: number | undefined;
  const documents = await paginateCursor<unknown, ResultDocument>({
    provider: reads.name,
    taskId,
    limits: ctx.limits,
    heartbeat: ctx.heartbeat,
    signal: ctx.signal,
    map: documentOf,
    fetch: async (cursor) => {
      const part = cursor === undefined ? 1 : Number(cursor);
      const start = (part - 1) * batchSize;
      const res = await reads.call(ctx, {
        method: 'GET',
        path: path`/datasets/v3/snapshot/${taskId}`,
        query: { format: 'json', batch_size: batchSize, part },
        phase: 'read',
      });
      if (res.status !== 200) throw downloadError(reads, res, taskId, ctx);
      if (res.body === undefined && res.text.trim() !== '') reads.http.invalid(res, 'read', 'snapshot part: not JSON');
      const items = Array.isArray(res.body) ? (res.body as unknown[]) : res.body === undefined ? [] : [res.body];
      if (items.length < batchSize) return { items, cursor: null, start };
      parts ??= await partsOf(reads, taskId, ctx, batchSize);
      return { items, cursor: part < parts ? String(part + 1) : null, start };
    },
  });
  if (documents.length > 0 && documents.every((d) => d.error)) {
    const f = documents[0]!.error!;
    throw new ProviderError(
      'task_failed',
      `every input of snapshot ${taskId} failed at Bright Data: ${documents.length} error row(s), none with data (first: ${f.code ? `${f.code}: ` : ''}${f.message})`,
      { code: f.code ?? 'ALL_INPUTS_FAILED' },
    );
  }
  const result = resultFromDocuments(documents, ctx.url, { singleFillsRow: true });
  const completeness = completenessOf(
    documents,
    await recordCount(reads, taskId, ctx),
    "Bright Data's snapshot `records`",
    { why: 'the snapshot parts ended before it' },
  );
  return completeness ? { ...result, completeness } : result;
}
