/**
 * The pure rules behind `ScrapeJob`'s state (`machine.ts`): what it checks, builds and keeps.
 * Nothing here reads a clock, draws randomness or issues a workflow command: the callers hand in
 * the workflow time, so that `ScrapeJob` stays the one place where the job's state changes.
 */
import type { SearchAttributeUpdatePair, TypedSearchAttributes } from '@temporalio/common';
import type { TaskRef } from '../../activities/index.js';
import type { PollSchedule } from '../../model/schedule.js';
import { canMove, type JobState } from '../../model/states.js';
import type { CancelReport, JobError, JobView, JobWait, PollPolicy, ScrapeWorkflowInput } from '../../model/types.js';
import {
  ScrapeAccount,
  ScrapeBatchId,
  ScrapeHost,
  ScrapeProvider,
  ScrapeState,
  ScrapeTaskId,
} from '../searchAttributes.js';
import type { CancelRequest, Resolution } from './messages.js';

/**
 * Checks the move `from` → `to` of job `jobId` against the transition table (`TRANSITIONS` in
 * `src/model/states.ts`; staying put is allowed). Throws an `Error` naming the move when it is
 * illegal: a bug, which fails the workflow task rather than record a wrong state.
 */
export function checkMove(from: JobState, to: JobState, jobId: string): void {
  if (to !== from && !canMove(from, to)) throw new Error(`illegal transition ${from} → ${to} for job ${jobId}`);
}

/** Options of a move: a note for the reader, the error that caused it. */
export interface MoveOptions {
  note?: string;
  error?: JobError;
  /** What the job waits for after the move, shown in the view and on the row. */
  waiting?: JobWait;
}

/** What an activity observed at the provider: checks made, the raw status word and the effects so far. */
export interface Observation {
  checks: number;
  providerStatus?: string;
  providerState?: JobView['providerState'];
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
 * The poll schedule (ms) of policy `p`, slowed down when the provider sends `webhooks`. `tracking`:
 * the tracking phase's schedule — with webhooks a safety net (every `maxDelayMs × webhookSlowdown`),
 * learned from the provider key's recent jobs when the policy asks (`learnSchedule`); otherwise the
 * plain geometric schedule (a cancel's confirmation checks).
 */
export function pollSchedule(p: PollPolicy, webhooks: boolean | undefined, tracking: boolean): PollSchedule {
  const base = {
    initialDelayMs: p.initialDelayMs,
    maxDelayMs: p.maxDelayMs,
    multiplier: p.multiplier,
    jitter: p.jitter,
    slowdown: webhooks ? p.webhookSlowdown : 1,
  };
  if (!tracking) return base;
  return { ...base, ...(webhooks ? { safetyNet: true } : {}), ...(p.learnSchedule ? { learn: true } : {}) };
}

/** The lower-cased host of `url` (`unknown` when it has none), for the `ScrapeHost` search attribute. */
function hostOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#:]+)/i.exec(url);
  return m?.[1]?.toLowerCase() ?? 'unknown';
}

/**
 * The tracking deadline (UTC ISO-8601) a run of `input` starts with at `now` (workflow time): the
 * one a continued-as-new run carries over, else `deadlineMs` (ms) from `now` for a resumed job
 * (its task is known), else none until the task is known.
 */
export function initialDeadline(input: ScrapeRunInput, now: Date, deadlineMs: number): string | undefined {
  return input.carry?.deadlineAt ?? (input.resume ? new Date(now.getTime() + deadlineMs).toISOString() : undefined);
}

/** The updates among `updates` that the run's search attributes `present` do not show yet. */
export function missingAttributes(
  updates: SearchAttributeUpdatePair[],
  present: TypedSearchAttributes,
): SearchAttributeUpdatePair[] {
  return updates.filter((u) => present.get(u.key as never) !== u.value);
}

/**
 * The search attribute upsert of a move to `state`: `held` (updates held back for it, then the
 * move's own) and `ScrapeState`, only when `published` (the state the run last upserted) is
 * another one: upserts are billable history events.
 */
export function moveUpdates(
  held: SearchAttributeUpdatePair[],
  published: string | undefined,
  state: JobState,
): SearchAttributeUpdatePair[] {
  return [...held, ...(published === state ? [] : [{ key: ScrapeState, value: state } as SearchAttributeUpdatePair])];
}

/** A transition of job `jobId` as the store records it (the `recordState` activity's input). */
export interface StateWrite {
  jobId: string;
  state: JobState;
  /** The job's provider and account (a final move frees its slot under the key's limit). */
  provider: string;
  account: string;
  error?: JobError;
  /** The timeline event's detail. */
  detail?: unknown;
  waiting?: JobWait;
}

/**
 * The store write of a move of job `job` to `state` with `opts`: the detail given, else the note and
 * the error as `{ note, error }` (the timeline keeps the provider's answer that made the move, as
 * it did when the polling activity wrote it).
 */
export function stateWrite(
  job: { jobId: string; provider: string; account: string },
  state: JobState,
  opts: MoveOptions & { detail?: unknown },
): StateWrite {
  return {
    jobId: job.jobId,
    provider: job.provider,
    account: job.account,
    state,
    error: opts.error,
    ...(opts.waiting ? { waiting: opts.waiting } : {}),
    detail:
      opts.detail ??
      (opts.note || opts.error
        ? { ...(opts.note ? { note: opts.note } : {}), ...(opts.error ? { error: opts.error } : {}) }
        : undefined),
  };
}

/** The effects (pages, documents, credits) `progress` reports: only those it names. */
export function reportedEffects(progress: Observation['progress']): NonNullable<CancelReport['remainingEffects']> {
  const out: NonNullable<CancelReport['remainingEffects']> = {};
  if (progress?.pagesFetched !== undefined) out.pagesFetched = progress.pagesFetched;
  if (progress?.documents !== undefined) out.documents = progress.documents;
  if (progress?.creditsUsed !== undefined) out.creditsUsed = progress.creditsUsed;
  return out;
}

/**
 * The cancel report of request `req` that came through door `via` at `at` (UTC ISO-8601, workflow
 * time): who asked (`unknown` when unnamed) and why (`no reason given`), no provider cancel call
 * made yet, no outcome yet.
 */
export function cancelRequested(req: CancelRequest, via: CancelReport['via'], at: string): CancelReport {
  return {
    requestedBy: req.requestedBy ?? 'unknown',
    reason: req.reason ?? 'no reason given',
    via,
    requestedAt: at,
    providerCancelCalls: 0,
  };
}

/** The reference to task `taskId` of the job of `input` that activities take. */
export function taskRefOf(input: ScrapeRunInput, taskId: string): TaskRef {
  return { jobId: input.jobId, provider: input.provider, account: input.account, taskId };
}

/** Where an operator's resolution of `unknown` stands (the `resolve` Update), as `ScrapeJob` keeps it. */
export interface ResolutionState {
  /** A pending resolution, until the acquisition takes it. */
  offered?: Resolution;
  /** The resolution being applied (taken, not yet adopted or refused). */
  applying?: Resolution;
  /** The last refused resolution and why (the Update that offered it fails with the reason). */
  refused?: { of: Resolution; reason: string };
  /** Who asked for the last resolution taken (empty when unnamed). */
  by: string;
}

/**
 * What the `resolve` Update that offered `r` answers once the job left `unknown` (now `state`, task
 * `taskId`) or `r` was refused: the refusal's reason, if any. A job that left `unknown` by other
 * means before `r` was taken (a late answer adopted on a wake) did not apply it: a refusal too, and
 * the offer is to be withdrawn (`withdraw`).
 */
export function resolutionOutcome(
  res: ResolutionState,
  r: Resolution,
  state: JobState,
  taskId: string | undefined,
): { refused?: string; withdraw: boolean } {
  if (state === 'unknown' || res.refused?.of === r) return { refused: res.refused?.reason, withdraw: false };
  if (res.applying === r) return { withdraw: false };
  return {
    refused: `the job left unknown (now ${state}${taskId ? `, task ${taskId}` : ''}) before this resolution was applied; it was not applied`,
    withdraw: res.offered === r,
  };
}

/** The webhook wakes (the `wake` signal) and submit nudges (`submitNow`) a job received, as `ScrapeJob` keeps them. Times are workflow time, epoch ms. */
export interface WakeState {
  /** Wakes received so far. */
  count: number;
  /** Time of the last wake (0 before any). */
  lastAt: number;
  /** Earliest time of the next wake-triggered check; wakes before it are merged into it. */
  quietUntil: number;
  /** `submitNow` signals received so far (a slot granted, a budget raised): a wait to submit ends when it moves. */
  nudges: number;
}
