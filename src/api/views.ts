/**
 * How the HTTP API shows what the client returns: jobs, results, result documents and cancel
 * reports mapped onto the response schemas of `schemas.ts`, with each job's path and the polling
 * guidance a client should follow.
 */
import type { z } from 'zod';
import type { CancelResult, JobResult, JobSummary, ResultDocumentsPage } from '../client/index.js';
import { isFinalState } from '../model/states.js';
import type { CancelReport } from '../model/types.js';
import type { JobCost } from '../model/budgets.js';
import type { BodyInfo } from '../model/documents.js';
import type {
  BodySchema,
  CancelReportSchema,
  CancelResponseSchema,
  ResultDocumentsSchema,
  ResultSchema,
  ScrapeOut,
} from './schemas.js';

/** Path of a job: `/v1/scrapes/<URL-encoded job ID>` (the ID contains `:`). */
export function jobPath(jobId: string): string {
  return `/v1/scrapes/${encodeURIComponent(jobId)}`;
}

/**
 * Polling guidance for a job, seconds: null once final; else 2 s during its first minute, 10 s up
 * to 10 minutes, then 30 s (the workflow itself polls the provider; clients only read our store).
 */
export function pollAfterSeconds(summary: Pick<JobSummary, 'state' | 'createdAt'>, now = Date.now()): number | null {
  if (isFinalState(summary.state)) return null;
  const ageMs = now - Date.parse(summary.createdAt);
  if (!(ageMs >= 0) || ageMs < 60_000) return 2;
  if (ageMs < 600_000) return 10;
  return 30;
}

/** {@link JobSummary} → the API's {@link ScrapeSchema} shape. */
export function toScrapeOut(s: JobSummary, now = Date.now()): ScrapeOut {
  const path = jobPath(s.jobId);
  return {
    job_id: s.jobId,
    key: s.key,
    provider: s.provider,
    url: s.url,
    state: s.state,
    final: isFinalState(s.state),
    provider_status: s.providerStatus,
    task_id: s.taskId,
    batch_id: s.batchId,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    submitted_at: s.submittedAt,
    finished_at: s.finishedAt,
    deadline_at: s.deadlineAt,
    progress: { status_checks: s.statusChecks, failing_checks: s.failingChecks, last_checked_at: s.lastCheckedAt },
    last_error: s.lastError
      ? {
          kind: s.lastError.kind,
          code: s.lastError.code ?? null,
          message: s.lastError.message,
          http_status: s.lastError.httpStatus ?? null,
          at: s.lastError.at,
        }
      : null,
    waiting: s.waiting
      ? { reason: s.waiting.reason, message: s.waiting.message, until: s.waiting.until ?? null }
      : null,
    cost: costOut(s.cost),
    content_note: s.contentNote ?? null,
    partial: s.partial === true,
    expected_documents: s.expectedDocuments ?? null,
    poll_after_s: pollAfterSeconds(s, now),
    status_url: path,
    result_url: `${path}/result`,
    cancel_url: `${path}/cancel`,
  };
}

/** A job's cost at its provider ({@link JobCost}) → the API's `cost` member; null before its first submit. */
export function costOut(c: JobCost | null | undefined): ScrapeOut['cost'] {
  return c
    ? {
        unit: c.unit,
        estimated: c.estimated,
        reserved: c.reserved,
        settled: c.settled,
        reported: c.reported,
        source: c.source,
      }
    : null;
}

/** {@link JobResult} → {@link ResultSchema} shape. */
export function toResultOut(r: JobResult): z.infer<typeof ResultSchema> {
  return {
    job_id: r.jobId,
    result_id: r.resultId,
    provider: r.provider,
    task_id: r.taskId,
    url: r.url,
    final_url: r.finalUrl,
    http_status: r.httpStatus,
    title: r.title,
    byline: r.byline,
    excerpt: r.excerpt,
    lang: r.lang,
    site_name: r.siteName,
    published_time: r.publishedTime,
    text: r.text,
    markdown: r.markdown,
    links: r.links,
    content_length: r.contentLength,
    body: bodyOut(r.body),
    content_note: r.contentNote,
    partial: r.partial,
    expected_documents: r.expectedDocuments,
    written_at: r.writtenAt,
    expires_at: r.expiresAt,
  };
}

function bodyOut(b: BodyInfo | null): z.infer<typeof BodySchema> | null {
  return b ? { content_type: b.contentType, size: b.size, sha256: b.sha256 } : null;
}

/** {@link ResultDocumentsPage} → {@link ResultDocumentsSchema} shape. */
export function toDocumentsOut(p: ResultDocumentsPage): z.infer<typeof ResultDocumentsSchema> {
  return {
    job_id: p.jobId,
    result_id: p.resultId,
    total: p.total,
    offset: p.offset,
    limit: p.limit,
    documents: p.documents.map((d) => ({
      seq: d.seq,
      url: d.url,
      final_url: d.finalUrl ?? null,
      http_status: d.httpStatus ?? null,
      title: d.title ?? null,
      markdown: d.markdown ?? null,
      text: d.text ?? null,
      links: d.links ?? null,
      data: d.data ?? null,
      error: d.error ? { code: d.error.code ?? null, message: d.error.message } : null,
      identity: d.identity,
      body: bodyOut(d.body),
    })),
    next_offset: p.nextOffset,
  };
}

function toCancelReportOut(c: CancelReport | undefined): z.infer<typeof CancelReportSchema> | null {
  if (!c) return null;
  return {
    requested_by: c.requestedBy,
    reason: c.reason,
    via: c.via,
    requested_at: c.requestedAt,
    outcome: c.outcome ?? null,
    detail: c.detail ?? null,
    provider_cancel_calls: c.providerCancelCalls,
    remaining_effects: c.remainingEffects
      ? {
          pages_fetched: c.remainingEffects.pagesFetched ?? null,
          documents: c.remainingEffects.documents ?? null,
          credits_used: c.remainingEffects.creditsUsed ?? null,
        }
      : null,
  };
}

/** {@link CancelResult} → {@link CancelResponseSchema} shape. */
export function toCancelOut(jobId: string, r: CancelResult): z.infer<typeof CancelResponseSchema> {
  return {
    job_id: jobId,
    result: r.kind,
    state: r.state,
    cancel: r.kind === 'requested' || r.kind === 'not_running' ? null : toCancelReportOut(r.report),
    note: r.kind === 'requested' ? (r.note ?? null) : null,
    status_url: jobPath(jobId),
  };
}
