/**
 * What Scrapy Cloud's words mean (kind `zyte`): the job key format, the job states and the close
 * reasons of a finished job mapped to our states, and the provider status we record. The words
 * follow the Scrapy Cloud "Jobs API" and "Job metadata API" references; the table of meanings and
 * the sources are in `adapter.ts`.
 */
import type { ObservedState } from '../adapter.js';

/** A Scrapy Cloud job key, `project/spider/job` (digits each). */
export const JOB_ID = /^\d+\/\d+\/\d+$/;

/** What each known close reason of a finished job means (entry `closeReasons` overrides). */
const DEFAULT_CLOSE_REASONS: Readonly<Record<string, 'completed' | 'failed' | 'cancelled'>> = {
  finished: 'completed',
  closespider_timeout: 'completed',
  closespider_itemcount: 'completed',
  closespider_pagecount: 'completed',
  cancelled: 'cancelled',
  // A cancelled job that did not stop gracefully within Scrapy Cloud's grace period: the cancel
  // ended it all the same, so it is cancelled, never a failure of the crawl.
  cancel_timeout: 'cancelled',
  failed: 'failed',
  shutdown: 'failed',
  memusage_exceeded: 'failed',
  diskusage_exceeded: 'failed',
  closespider_errorcount: 'failed',
  closespider_timeout_no_item: 'failed',
  slybot_fewitems_scraped: 'failed',
  banned: 'failed',
};

/**
 * Our state for a Scrapy Cloud job state (and close reason when `finished`); `deleted` is not
 * mapped here (the adapter reports it as expiry). Exact words only; `overrides` from the entry.
 */
export function zyteState(
  state: string,
  closeReason: string | null | undefined,
  overrides: Record<string, 'completed' | 'failed' | 'cancelled'> = {},
): ObservedState {
  if (state === 'pending') return 'queued';
  if (state === 'running') return 'running';
  if (state !== 'finished' || !closeReason) return 'unrecognised';
  const table = { ...DEFAULT_CLOSE_REASONS, ...overrides };
  const base = closeReason.replace(/\s*\(.*\)\s*$/, '');
  return table[closeReason] ?? table[base] ?? 'unrecognised';
}

/** The status word we record: the state, or `finished/<close_reason>`. */
export function statusWord(state: string, closeReason: string | null | undefined): string {
  return state === 'finished' ? `finished/${closeReason ?? '—'}` : state;
}
