/**
 * The pure rules behind {@link ScrapeJob}'s state: the transition table, the job's first view, the
 * search attributes a run announces, and the poll schedule a job's policy gives. Nothing here
 * reads a clock, draws randomness or issues a workflow command: the callers hand in the workflow
 * time, so that `ScrapeJob` (`machine.ts`) stays the one place where the job's state changes.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { PollSchedule } from '../../model/schedule.js';
import type { JobState } from '../../model/states.js';
import type { CancelReport, JobError, JobView, PollPolicy, ScrapeWorkflowInput } from '../../model/types.js';
import {
  ScrapeAccount,
  ScrapeBatchId,
  ScrapeHost,
  ScrapeProvider,
  ScrapeState,
  ScrapeTaskId,
} from '../searchAttributes.js';

/** Allowed moves between local states; a final state allows none (docs/design.md, “The scrape workflow: a small explicit state machine”). */
export const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  submitting: ['pending', 'unknown', 'failed', 'cancelling'],
  unknown: ['pending', 'submitting', 'failed', 'cancelling'],
  pending: ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted', 'cancelling'],
  cancelling: ['cancelled', 'completed', 'failed', 'cancel_unconfirmed'],
  completed: [],
  failed: [],
  cancelled: [],
  cancel_unconfirmed: [],
  tracking_interrupted: [],
  expired: [],
};

/**
 * Checks the move `from` → `to` of job `jobId` against {@link TRANSITIONS} (staying put is allowed).
 * Throws an `Error` naming the move when it is illegal: a bug, which fails the workflow task rather
 * than record a wrong state.
 */
export function checkMove(from: JobState, to: JobState, jobId: string): void {
  if (to !== from && !TRANSITIONS[from].includes(to))
    throw new Error(`illegal transition ${from} → ${to} for job ${jobId}`);
}

/** Options of a move: a note for the reader, the error that caused it. */
export interface MoveOptions {
  note?: string;
  error?: JobError;
}

/** What an activity observed at the provider: checks made, the raw status word and the effects so far. */
export interface Observation {
  checks: number;
  providerStatus?: string;
  progress?: { pagesFetched?: number; documents?: number; creditsUsed?: number };
}

/** The outcome a cancel came to (the cancel report's `outcome`). */
export type CancelOutcome = NonNullable<CancelReport['outcome']>;

/** Input of a run: the workflow input plus what a continued-as-new run carries over. */
export type ScrapeRunInput = ScrapeWorkflowInput & { carry?: { deadlineAt: string; statusChecks: number } };

/**
 * The view a run starts from: `submitting`, the checks a continued run carries over, `startedAt`
 * at `now` (workflow time) and the tracking deadline `deadlineAt` (UTC ISO-8601) when one is known.
 */
export function initialView(input: ScrapeRunInput, now: Date, deadlineAt: string | undefined): JobView {
  return {
    jobId: input.jobId,
    account: input.account,
    provider: input.provider,
    key: input.key,
    state: 'submitting',
    url: input.request.url,
    statusChecks: input.carry?.statusChecks ?? 0,
    startedAt: now.toISOString(),
    deadlineAt,
    taskId: input.resume?.taskId,
  };
}

/** The search attributes a run of `input` shows with `view` (state, provider, account, host, and batch and task when known). */
export function announcedAttributes(input: ScrapeRunInput, view: Readonly<JobView>): SearchAttributeUpdatePair[] {
  return [
    { key: ScrapeState, value: view.state },
    { key: ScrapeProvider, value: input.provider },
    { key: ScrapeAccount, value: input.account },
    { key: ScrapeHost, value: hostOf(input.request.url) },
    ...(input.batchId ? [{ key: ScrapeBatchId, value: input.batchId }] : []),
    ...(view.taskId ? [{ key: ScrapeTaskId, value: view.taskId }] : []),
  ] as SearchAttributeUpdatePair[];
}

/**
 * The poll schedule (ms) of policy `p`, slowed down when the provider sends `webhooks`. `current`:
 * runs whose polling is in one activity — with webhooks it is then a safety net (every
 * `maxDelayMs × webhookSlowdown`), and it may be learned from the provider key's recent jobs (the
 * policy's `learnSchedule`).
 */
export function pollSchedule(p: PollPolicy, webhooks: boolean | undefined, current: boolean): PollSchedule {
  const base = {
    initialDelayMs: p.initialDelayMs,
    maxDelayMs: p.maxDelayMs,
    multiplier: p.multiplier,
    jitter: p.jitter,
    slowdown: webhooks ? p.webhookSlowdown : 1,
  };
  if (!current) return base;
  return { ...base, ...(webhooks ? { safetyNet: true } : {}), ...(p.learnSchedule ? { learn: true } : {}) };
}

/** The lower-cased host of `url` (`unknown` when it has none), for the `ScrapeHost` search attribute. */
export function hostOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#:]+)/i.exec(url);
  return m?.[1]?.toLowerCase() ?? 'unknown';
}
