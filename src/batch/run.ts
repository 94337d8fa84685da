/**
 * Runs a batch of rows through the scrape client: starts one job per row (a bounded number of
 * starts in flight), then waits, reading job states from the store, until every job is final or
 * the wait times out. A timeout stops the waiting only: the jobs keep running in Temporal, and
 * running the same file again attaches to them (same keys → same jobs, nothing new created).
 */
import PQueue from 'p-queue';
import { ScrapeError, type ScrapeClient } from '../client/index.js';
import { isFinalState, type JobState } from '../model/states.js';
import type { PollPolicy } from '../model/types.js';
import type { Store } from '../store/index.js';
import type { BatchItem } from './input.js';

/** Outcome of one row. */
export interface BatchRowOutcome {
  line: number;
  url: string;
  jobId?: string;
  /** Local job state, or `rejected` when the row could not be started. */
  state: JobState | 'rejected' | 'not_started';
  title?: string | null;
  httpStatus?: number | null;
  error?: string;
  /** True when the row's job already existed (a re-run of the same row). */
  existed?: boolean;
}

/** Progress snapshot passed to `onProgress`. */
export interface BatchProgress {
  total: number;
  final: number;
  byState: Record<string, number>;
}

/** Options of {@link runBatch}. Durations in ms. */
export interface RunBatchOptions {
  account: string;
  batchId: string;
  provider?: string;
  policy?: Partial<PollPolicy>;
  /** Concurrent `startScrape` calls (default 16). */
  startConcurrency?: number;
  /** Stop waiting after this long (default 10 min); jobs keep running. */
  waitTimeoutMs?: number;
  /** Store polling interval while waiting (default 500 ms). */
  pollIntervalMs?: number;
  /** Whether to wait for the jobs to end (default true); without waiting, each outcome carries the job's state at the end of the starts. */
  wait?: boolean;
  onProgress?: (p: BatchProgress) => void;
}

/** Starts and (optionally) waits for every item; returns one outcome per item, in input order. */
export async function runBatch(
  client: ScrapeClient,
  store: Store,
  items: BatchItem[],
  opts: RunBatchOptions,
): Promise<BatchRowOutcome[]> {
  const outcomes: BatchRowOutcome[] = items.map((i) => ({ line: i.line, url: i.url, state: 'not_started' }));
  const queue = new PQueue({ concurrency: opts.startConcurrency ?? 16 });
  const report = (extraFinal = 0) => {
    const byState: Record<string, number> = {};
    for (const o of outcomes) byState[o.state] = (byState[o.state] ?? 0) + 1;
    const final = outcomes.filter((o) => o.state === 'rejected' || isFinalState(o.state)).length + extraFinal;
    opts.onProgress?.({ total: items.length, final, byState });
  };
  await Promise.all(
    items.map((item, idx) =>
      queue.add(async () => {
        try {
          const ref = await client.startScrape(
            {
              account: opts.account,
              url: item.url,
              key: item.key,
              format: item.format,
              provider: item.provider ?? opts.provider,
              row: item.row,
              batchId: opts.batchId,
              policy: opts.policy,
            },
            { formerKeys: item.formerKeys ?? [] },
          );
          outcomes[idx] = { ...outcomes[idx]!, jobId: ref.jobId, state: 'submitting', existed: !ref.created };
        } catch (e) {
          outcomes[idx] = {
            ...outcomes[idx]!,
            state: 'rejected',
            error: e instanceof ScrapeError ? e.message : `could not start: ${(e as Error).message}`,
          };
        }
        report();
      }),
    ),
  );
  const deadline = Date.now() + (opts.waitTimeoutMs ?? 10 * 60_000);
  const interval = opts.pollIntervalMs ?? 500;
  for (;;) {
    const pending = outcomes.filter((o) => o.jobId && !isFinalState(o.state));
    if (pending.length === 0) break;
    // Without waiting, one read still shows each job's state now (a re-run of finished rows shows them finished).
    const rows = new Map(
      (await store.jobs.list({ account: opts.account, batchId: opts.batchId, limit: items.length + 100 })).map((r) => [
        r.id,
        r,
      ]),
    );
    for (const o of pending) {
      const row = rows.get(o.jobId!) ?? (await store.jobs.get(o.jobId!)); // a row from an earlier batch keeps its batch ID
      if (!row) continue;
      o.state = row.state as JobState;
      if (row.last_error) o.error = (JSON.parse(row.last_error) as { message: string }).message;
      if (o.state === 'completed' || o.state === 'expired') {
        const res = await store.results.forJob(o.jobId!);
        o.title = res?.title ?? null;
        o.httpStatus = res?.http_status ?? null;
        o.error = undefined;
      }
    }
    report();
    if (opts.wait === false || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, interval));
  }
  return outcomes;
}
