/**
 * Row mapping of the store, without I/O: a job row built from what the client and the workflow
 * know of the job and read back, a stored document as the model's {@link StoredDocument}, and a
 * timeline event row. Times are UTC ISO-8601 strings.
 */
import { randomUUID } from 'node:crypto';
import type { JobState } from '../model/states.js';
import { sanitizeBody } from '../lib/sanitize.js';
import { bodyInfoOf } from '../model/documents.js';
import type { StoredDocument } from '../model/results.js';
import type { CooldownState } from '../model/types.js';
import type { JobRow, NewJobRow, ResultDocumentRow } from './schema.js';

/** The current time, UTC ISO-8601. */
export const nowIso = (): string => new Date().toISOString();

/** A new job row as `store.jobs.insert` / `store.jobs.register` take it (times and state are set by the store). */
export type NewJobInput = Omit<NewJobRow, 'created_at' | 'updated_at' | 'state'> & { state?: JobState };

/** What a job row is made of (see {@link jobRow} and its inverse {@link jobInput}). */
export interface JobRowInput {
  jobId: string;
  account: string;
  key: string;
  provider: string;
  requestHash: string;
  request: { url: string; format: string; options: Record<string, unknown> };
  /** The caller's input row (evidence). */
  row?: Record<string, unknown>;
  /** Poll policy overrides (ms durations, see `PollPolicy`). */
  policy?: Record<string, unknown>;
  batchId?: string;
  /** The URL as the caller typed it (kept only when it differs from `request.url`). */
  typedUrl?: string;
  /** Order among the account's waiting jobs on one provider key (higher first; default 0). */
  priority?: number;
}

/**
 * The row of a new job, as `store.jobs.insert` / `store.jobs.register` take it, built from what the
 * client and the workflow know of the job. The JSON columns (`input`: the caller's row; `options`:
 * format, provider options, poll policy and, when it differs from `request.url`, the URL as the
 * caller typed it) are sanitised with `secrets` (known secret values) removed. {@link jobInput} is
 * the inverse.
 */
export function jobRow(
  j: JobRowInput & { workflowId: string; taskId?: string | null; deadlineAt?: string | null },
  secrets: readonly string[] = [],
): NewJobInput {
  const typed = j.typedUrl !== undefined && j.typedUrl !== j.request.url ? { typedUrl: j.typedUrl } : {};
  return {
    id: j.jobId,
    account: j.account,
    idem_key: j.key,
    provider: j.provider,
    request_hash: j.requestHash,
    url: j.request.url,
    input: JSON.stringify(sanitizeBody(j.row ?? {}, secrets)),
    // The typed URL is kept as typed (sanitising would re-serialise it); like `url`, it passed the
    // client's credential checks (TargetUrlSchema) before it got here.
    options: JSON.stringify({
      ...(sanitizeBody(
        { format: j.request.format, options: j.request.options, policy: j.policy ?? {} },
        secrets,
      ) as object),
      ...typed,
    }),
    batch_id: j.batchId ?? null,
    workflow_id: j.workflowId,
    task_id: j.taskId ?? null,
    deadline_at: j.deadlineAt ?? null,
    ...(j.priority ? { priority: j.priority } : {}),
  };
}

/** What {@link jobRow} was built from, read back from a stored row (JSON columns parsed; throws on malformed JSON). */
export function jobInput(row: JobRow): JobRowInput {
  const o = JSON.parse(row.options) as {
    format?: string;
    options?: Record<string, unknown>;
    policy?: Record<string, unknown>;
    typedUrl?: string;
  };
  return {
    jobId: row.id,
    account: row.account,
    key: row.idem_key,
    provider: row.provider,
    requestHash: row.request_hash,
    request: { url: row.url, format: o.format ?? 'markdown', options: o.options ?? {} },
    row: JSON.parse(row.input) as Record<string, unknown>,
    policy: o.policy ?? {},
    ...(row.batch_id ? { batchId: row.batch_id } : {}),
    ...(o.typedUrl ? { typedUrl: o.typedUrl } : {}),
    ...(Number(row.priority) ? { priority: Number(row.priority) } : {}),
  };
}

/** A stored document row (its bytes not read) as a {@link StoredDocument}; JSON columns parsed. */
export function toResultDocument(r: Omit<ResultDocumentRow, 'body'>): StoredDocument {
  const parse = <T>(v: string | null): T | undefined => (v === null ? undefined : (JSON.parse(v) as T));
  return {
    seq: Number(r.seq),
    identity: r.identity,
    body: bodyInfoOf(r),
    url: r.url,
    finalUrl: r.final_url,
    httpStatus: r.http_status === null ? null : Number(r.http_status),
    title: r.title,
    markdown: r.markdown,
    text: r.text,
    links: parse<string[]>(r.links),
    data: parse<Record<string, unknown>>(r.data),
    error: parse<{ code?: string; message: string }>(r.error),
  };
}

let seq = 0;

/**
 * A `job_events` row of job `jobId` (`detail` must already be sanitised; serialised as JSON, null
 * when absent). The id sorts in insertion order: time, a per-process counter, then randomness.
 */
export function eventRow(jobId: string, type: string, state: string | null, detail: unknown) {
  const id = `${Date.now().toString(36).padStart(9, '0')}-${(seq++ % 1_000_000).toString(36).padStart(4, '0')}-${randomUUID().slice(0, 8)}`;
  return {
    id,
    job_id: jobId,
    at: nowIso(),
    type,
    state,
    detail: detail === null || detail === undefined ? null : JSON.stringify(detail),
  };
}

/**
 * A cool-down row as {@link CooldownState} (epoch ms; `releaseNextMs` 0 when no release slot was
 * claimed); undefined for no row or a row without `until` (a left join that found none).
 */
export function cooldownOf(row: {
  until: string | null;
  reason: string | null;
  release_next: string | null;
}): CooldownState | undefined {
  if (row.until === null) return undefined;
  return {
    untilMs: Date.parse(row.until),
    reason: row.reason ?? '',
    releaseNextMs: row.release_next ? Date.parse(row.release_next) : 0,
  };
}
