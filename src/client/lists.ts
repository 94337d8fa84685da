/**
 * Listing an account's jobs for the client, newest first, filtered by state and batch: all at once
 * (bounded) or page by page with an opaque cursor, each finished job with its result's note and
 * partial mark. Reads only the store; an invalid account has no jobs.
 */
import { AccountSchema } from '../model/schemas.js';
import type { Store } from '../store/index.js';
import { decodeCursor, encodeCursor } from './ids.js';
import type { JobRow } from '../store/index.js';
import { summarize, withResultFacts, type JobSummary } from './views.js';

/** `rows` as summaries, each finished one with what its stored result says of itself (one read for all). */
async function summaries(store: Store, rows: readonly JobRow[]): Promise<JobSummary[]> {
  const done = rows.filter((r) => r.state === 'completed' || r.state === 'expired').map((r) => r.id);
  const facts = await store.results.factsFor(done);
  return rows.map((r) => withResultFacts(summarize(r), facts.get(r.id)));
}

/** The jobs of `account`, newest first, filtered by state and batch (limit default 100, max 1000). */
export async function listJobs(
  store: Store,
  account: string,
  filter: { states?: string[]; batchId?: string; limit?: number } = {},
): Promise<JobSummary[]> {
  if (!AccountSchema.safeParse(account).success) return [];
  const rows = await store.jobs.list({
    account,
    states: filter.states,
    batchId: filter.batchId,
    limit: Math.min(filter.limit ?? 100, 1000),
  });
  return summaries(store, rows);
}

/**
 * One page of the jobs of `account`, newest first, filtered by state and batch. `limit` 1..1000
 * (default 100); `cursor` is the opaque `nextCursor` of the previous page. Throws
 * {@link InvalidInputError} for a malformed cursor.
 */
export async function listJobsPage(
  store: Store,
  account: string,
  filter: { states?: string[]; batchId?: string; limit?: number; cursor?: string } = {},
): Promise<{ jobs: JobSummary[]; nextCursor: string | null }> {
  if (!AccountSchema.safeParse(account).success) return { jobs: [], nextCursor: null };
  const limit = Math.max(1, Math.min(filter.limit ?? 100, 1000));
  const after = filter.cursor ? decodeCursor(filter.cursor) : undefined;
  const page = await store.jobs.page({
    account,
    states: filter.states,
    batchId: filter.batchId,
    limit,
    after,
  });
  const last = page.rows[page.rows.length - 1];
  return {
    jobs: await summaries(store, page.rows),
    nextCursor: page.more && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  };
}
