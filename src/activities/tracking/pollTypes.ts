/**
 * What the polling activity (`trackStatus`, `track.ts`) takes and gives back: its input, the outcome the workflow learns when it ends, the
 * summary of a result written once, and what one status check led to. Times are UTC ISO-8601,
 * durations ms.
 */
import type { JobError, JobView, ScrapeRequest } from '../../model/types.js';
import type { FailedReadPolicy, PollSchedule } from '../../model/schedule.js';
import type { StatusObservation } from '../../providers/adapter.js';
import type { TaskRef } from '../context.js';

export type { PollSchedule };

/** Input of `trackStatus`. Times are UTC ISO-8601, durations ms. */
export interface TrackStatusInput extends TaskRef {
  url: string;
  request: ScrapeRequest;
  /** Generation of this polling activity: workflow time of its scheduling, epoch ms, increasing (a newer one supersedes it). */
  generation: number;
  schedule: PollSchedule;
  /** Wait before this activity's first check (the store's earliest-next-check time still applies). */
  firstDelayMs: number;
  /** A non-final answer at or after this time ends tracking with `deadline`. */
  deadlineAt: string;
  /** The first check happens even past the deadline (a wake that came before it). */
  checkPastDeadline?: boolean;
  /** Consecutive 404s (status or result read) that mean the provider forgot the task (once it is older than its kind's propagation window). */
  notFoundLimit: number;
  /** How failed reads are spaced and bounded (from the job's policy). */
  failedReads: FailedReadPolicy;
  /**
   * Waits (ms) before the checks that follow this activity's first one, while they answer "not
   * final", before the schedule resumes: a wake (a webhook that said the task moved) is a promise
   * to look again soon, since a provider may count its last page a moment after it says so. The
   * provider's `Retry-After` and the minimum gap still hold.
   */
  followUpMs?: number[];
  /** `track`: the job's own tracking; `confirm_cancel`: a cancel's confirmation (no 404 grace, no share overrun, completion weighed with the cancel's answer). */
  mode: 'track' | 'confirm_cancel';
  /**
   * `true` from a workflow that records a final outcome itself (`scrapeWorkflowV5` and later: the row is left
   * for its `recordState`). Absent from a run of `scrapeWorkflowV4`, which an earlier release's
   * worker serves beside a later one during an upgrade (docs/operations.md, "Upgrading") while its
   * activities may come to this worker: V4 only moves its own view, so the activity writes a
   * tracking outcome's final state for it, as V4's activity did. Goes with V4's last run.
   */
  recordsOutcome?: boolean;
}

/**
 * What the workflow learns when `trackStatus` ends, and records: every final outcome but
 * `completed` (written with its result) leaves the job's row as it was, for the workflow's move.
 * `note`: what the job's timeline and view say of it.
 */
export type PollOutcome = {
  checks: number;
  providerStatus?: string;
  /**
   * The provider's normalised state as the store holds it, where an outcome that is not its own
   * final word carries it (tracking stopped after the provider reported the task completed: its
   * result could not be read): a cancel then has nothing left to stop.
   */
  providerState?: JobView['providerState'];
  progress?: StatusObservation['progress'];
} &
  /**
   * `afterCancel`: a cancel's confirmation saw it, and the provider's `completed` cannot tell a
   * stopped task from a finished one (on `failed`: that final word came with no result at all).
   */
  (
    | { kind: 'completed'; result: SavedResult; afterCancel?: 'stopped_or_completed' }
    | { kind: 'failed'; error: JobError; note: string; afterCancel?: 'stopped_or_completed' }
    | { kind: 'cancelled' }
    /** `endedAs`: how the provider's record says the task ended before it was removed (`ProviderError`'s `endedAs`). */
    | {
        kind: 'expired';
        error: JobError;
        note: string;
        endedAs?: 'completed' | 'failed' | 'cancelled' | 'unrecognised';
      }
    | { kind: 'interrupted'; error: JobError; note: string }
    | { kind: 'deadline' }
    /** Superseded, or the store shows the job final or being cancelled (`state`): nothing was asked. */
    | { kind: 'stale'; reason: string; state?: string }
  );

/** What was written for a completed task (a summary; the payload stays in the store, not in history). */
export interface SavedResult {
  resultId: string;
  inserted: boolean;
  title: string | null;
  httpStatus: number | null;
  finalUrl: string | null;
  /** Documents stored (one per identity). */
  documents: number;
  /** Why the stored content is empty or partial (the result row's `content_note`), when it is. */
  contentNote?: string;
}

/** What one check led to: the outcome to return, or when to check again (with what it saw). */
export type CheckResult =
  | { outcome: PollOutcome }
  | {
      again: { delayMs: number; message: string };
      checks: number;
      /** Set when the provider answered (a check that failed has none). */
      providerStatus?: string;
      progress?: StatusObservation['progress'];
      /** The wait the provider's answer asked for (its Retry-After), ms; 0 when it asked for none (a check that failed has none). */
      retryAfterMs?: number;
    };

/** A {@link CheckResult} that says to check again in `delayMs` (ms), with `message` for the heartbeat and what the check saw. */
export function again(
  delayMs: number,
  message: string,
  checks: number,
  providerStatus?: string,
  progress?: StatusObservation['progress'],
  retryAfterMs?: number,
): CheckResult {
  return {
    again: { delayMs, message },
    checks,
    ...(providerStatus ? { providerStatus } : {}),
    ...(progress ? { progress } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}
