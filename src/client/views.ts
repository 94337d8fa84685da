/**
 * What callers see of a job: store rows mapped to {@link JobSummary}, {@link JobResult} and the
 * incident, orphan and timeline views. Reads only the store (never Temporal).
 */
import type { JobState } from '../model/states.js';
import type { JobError, JobWait } from '../model/types.js';
import { bodyInfoOf, type BodyInfo } from '../model/documents.js';
import type { IncidentRow, JobEventRow, JobRow, OrphanRow, ResultRow, Store } from '../store/index.js';
import type { ResultPayload } from '../model/results.js';
import type { JobCost } from '../model/budgets.js';
import { jobCostOf } from '../store/ledger.js';
import { JobNotFoundError } from './errors.js';
import { authorize } from './ids.js';

/** A job as a caller sees it (store record + Temporal execution status). Times are UTC ISO-8601. */
export interface JobSummary {
  jobId: string;
  account: string;
  key: string;
  provider: string;
  /** The target in its WHATWG serialisation (what the provider gets and the key is derived from). */
  url: string;
  /** The URL as the caller typed it, when that differs from `url` (evidence). */
  typedUrl?: string;
  state: JobState;
  providerStatus: string | null;
  taskId: string | null;
  batchId: string | null;
  createdAt: string;
  updatedAt: string;
  submittedAt: string | null;
  finishedAt: string | null;
  deadlineAt: string | null;
  /** Successful status checks so far. */
  statusChecks: number;
  /** Failed status checks since the last successful one (the check being retried: see `lastError`). */
  failingChecks: number;
  /** When the provider last answered a status check (UTC ISO-8601), or null. */
  lastCheckedAt: string | null;
  lastError: JobError | null;
  /** Why the job waits, while it does (a free slot, a cool-down, a credential, an operator, a budget), else null. */
  waiting: JobWait | null;
  /**
   * What the job costs at its provider, in the provider's unit (docs/budgets.md): the estimate made
   * at its submit, what it holds reserved in its account's budgets, what it settled at, what the
   * provider reported; absent before its first submit.
   */
  cost?: JobCost;
  /** Temporal execution status of the latest run (`RUNNING`, `COMPLETED`, …), when asked for. */
  execution?: string;
  /**
   * The note of the job's stored result, when its content is empty or partial (`empty: the
   * provider returned no content`, `partial: kept 86 of the 121 documents Firecrawl's `completed`
   * counts (…)`): the job completed — the provider did the work — but there is nothing (or not
   * everything) to read.
   */
  contentNote?: string;
  /** True when the stored result holds fewer documents than the provider counts (`contentNote` says how many, and why). */
  partial?: boolean;
  /** The provider's own count of the stored result's documents, where it gave one. */
  expectedDocuments?: number;
}

/**
 * The stored result of a completed job: the extracted page plus where and when it was written,
 * what is known of a binary body (its bytes: `ScrapeClient.getResultBody`) and the note of an
 * empty or partial result.
 */
export interface JobResult extends Omit<ResultPayload, 'body' | 'contentNote'> {
  /** The target's binary body (a PDF, an image): media type, size (bytes) and SHA-256; null for a text page. */
  body: BodyInfo | null;
  /** Why the content is empty or partial (`empty: …`, `partial: kept N of the M documents …`, a PDF whose text could not be read), or null. */
  contentNote: string | null;
  /** True when the result holds fewer documents than the provider counts (`contentNote` says how many, and why). */
  partial: boolean;
  /** The provider's own count of the result's documents (Firecrawl's `completed`, a dataset's item count), or null where it gave none. */
  expectedDocuments: number | null;
  jobId: string;
  resultId: string;
  provider: string;
  taskId: string;
  /** UTC ISO-8601. */
  writtenAt: string;
  /** End of our retention (UTC ISO-8601), or null for no limit. */
  expiresAt: string | null;
}

/**
 * The job row of `jobId` when it belongs to `account`. Throws {@link JobNotFoundError} for a
 * missing job or another account's job.
 */
export async function ownedRow(store: Store, account: string, jobId: string): Promise<JobRow> {
  authorize(account, jobId);
  const row = await store.jobs.get(jobId);
  if (!row || row.account !== account) throw new JobNotFoundError(jobId);
  return row;
}

/** Maps a store row to a {@link JobSummary}. */
export function summarize(row: JobRow): JobSummary {
  const typedUrl = (parseJson(row.options) as { typedUrl?: unknown } | null)?.typedUrl;
  return {
    jobId: row.id,
    account: row.account,
    key: row.idem_key,
    provider: row.provider,
    url: row.url,
    ...(typeof typedUrl === 'string' && typedUrl !== row.url ? { typedUrl } : {}),
    state: row.state as JobState,
    providerStatus: row.provider_status,
    taskId: row.task_id,
    batchId: row.batch_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    submittedAt: row.submitted_at,
    finishedAt: row.finished_at,
    deadlineAt: row.deadline_at,
    statusChecks: Number(row.status_checks),
    failingChecks: Number(row.status_errors),
    lastCheckedAt: row.last_checked_at,
    lastError: row.last_error ? (JSON.parse(row.last_error) as JobError) : null,
    waiting: row.waiting ? (JSON.parse(row.waiting) as JobWait) : null,
    ...costOf(row),
  };
}

/** `{cost}` of a row that carries one, else nothing. */
function costOf(row: JobRow): { cost?: JobCost } {
  const cost = jobCostOf(row);
  return cost ? { cost } : {};
}

/**
 * `job` with what its stored result says of itself (`r`: its content note, partial mark and the
 * provider's count), for a job that completed (or whose result has since expired); `job` as it is
 * otherwise.
 */
export function withResultFacts(
  job: JobSummary,
  r: Pick<ResultRow, 'content_note' | 'partial' | 'expected_documents'> | undefined,
): JobSummary {
  if (!r || (job.state !== 'completed' && job.state !== 'expired')) return job;
  return {
    ...job,
    ...(r.content_note ? { contentNote: r.content_note } : {}),
    ...(Number(r.partial) === 1 ? { partial: true } : {}),
    ...(r.expected_documents !== null ? { expectedDocuments: Number(r.expected_documents) } : {}),
  };
}

/** Maps a result row to a {@link JobResult}. */
export function toResult(r: ResultRow): JobResult {
  return {
    jobId: r.job_id,
    resultId: r.id,
    provider: r.provider,
    taskId: r.task_id,
    url: r.url,
    finalUrl: r.final_url,
    httpStatus: r.http_status,
    title: r.title,
    byline: r.byline,
    excerpt: r.excerpt,
    lang: r.lang,
    siteName: r.site_name,
    publishedTime: r.published_time,
    text: r.text,
    markdown: r.markdown,
    links: r.links ? (JSON.parse(r.links) as string[]) : [],
    contentLength: r.content_length,
    body: bodyInfoOf(r),
    contentNote: r.content_note,
    partial: Number(r.partial) === 1,
    expectedDocuments: r.expected_documents === null ? null : Number(r.expected_documents),
    writtenAt: r.written_at,
    expiresAt: r.expires_at,
  };
}

/** An incident record as callers see it (JSON columns parsed). */
export function incidentView(i: IncidentRow) {
  return {
    at: i.at,
    phase: i.phase,
    kind: i.kind,
    endpoint: i.endpoint,
    httpStatus: i.http_status,
    code: i.code,
    message: i.message,
    request: parseJson(i.request),
    response: parseJson(i.response),
    headers: parseJson(i.headers),
  };
}

/** An orphan finding as callers see it. */
export function orphanView(o: OrphanRow & { state: string; url: string }) {
  return {
    jobId: o.job_id,
    kind: o.kind,
    state: o.state,
    url: o.url,
    detail: o.detail,
    suggestion: o.suggestion,
    firstSeenAt: o.first_seen_at,
    lastSeenAt: o.last_seen_at,
  };
}

/** A timeline event as callers see it (detail parsed). */
export function timelineView(e: JobEventRow) {
  return { at: e.at, type: e.type, state: e.state, detail: parseJson(e.detail) };
}

function parseJson(v: string | null): unknown {
  return v === null ? null : (JSON.parse(v) as unknown);
}
