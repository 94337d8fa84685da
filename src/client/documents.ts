/**
 * Reading the documents of a multi-document result (crawl pages, dataset items, batch entries) for
 * the typed client (`ScrapeClient.getResultDocuments`), the HTTP API
 * (`GET /v1/scrapes/:id/documents`) and the CLI (`result <job> --documents`).
 */
import type { JobRow, Store } from '../store/index.js';
import type { StoredDocument } from '../model/results.js';
import { assertReadable } from './results.js';

/** Most documents one page may ask for. */
export const MAX_DOCUMENTS_PAGE = 1_000;

/** One page of a job's result documents. */
export interface ResultDocumentsPage {
  jobId: string;
  resultId: string;
  /** Documents of the result in all (0 for a single-page result). */
  total: number;
  /** Position of the first document of this page (0-based). */
  offset: number;
  /** Page size asked for. */
  limit: number;
  /** The page's documents, each with its position `seq`, its identity and what is known of its binary body (no bytes). */
  documents: StoredDocument[];
  /** `offset` of the next page, or null on the last one. */
  nextOffset: number | null;
}

/**
 * The page at `offset` (≥ 0, default 0) of `limit` (1..{@link MAX_DOCUMENTS_PAGE}, default 100)
 * documents of the job whose row is `row` (the caller has checked the account). Throws
 * {@link ResultNotReadyError} (with the state) when the job has no result,
 * {@link ResultExpiredError} (with the evidence that it ran) after retention purged it.
 */
export async function readResultDocuments(
  store: Store,
  row: JobRow,
  page: { offset?: number; limit?: number } = {},
): Promise<ResultDocumentsPage> {
  const offset = Math.max(0, Math.floor(page.offset ?? 0));
  const limit = Math.max(1, Math.min(Math.floor(page.limit ?? 100), MAX_DOCUMENTS_PAGE));
  const { result, total, documents } = await store.results.documents(row.id, { offset, limit });
  assertReadable(row, result);
  return {
    jobId: row.id,
    resultId: result.id,
    total,
    offset,
    limit,
    documents,
    nextOffset: offset + documents.length < total ? offset + documents.length : null,
  };
}
