/**
 * The scrape job's state machine (DESIGN.md "The scrape workflow"): the job's state, the transition
 * table, and one `move`/`record` path that updates the view, the search attributes, the Web UI's
 * current details and (for `record`) the store together. Deterministic code only.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { CancellationScope, condition, patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { isFinalState, type JobState } from '../../model/states.js';
import { DEFAULT_POLL_POLICY, type CancelReport, type JobError, type JobView, type PollPolicy, type ScrapeWorkflowInput } from '../../model/types.js';
import { ScrapeAccount, ScrapeBatchId, ScrapeHost, ScrapeProvider, ScrapeState, ScrapeTaskId } from '../searchAttributes.js';
import type { PollSchedule } from '../../activities/index.js';
import { renderDetails } from './details.js';
import { PATCH_REWRITE_INTERRUPTED_FINAL } from './patches.js';
import type { CancelRequest, Resolution } from './messages.js';
import { scrapeProxies, type ScrapeProxies } from './options.js';

/** Allowed moves between local states; a final state allows none (DESIGN.md's table). */
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

/** Options of a move: a note for the reader, the error that caused it. */
export interface MoveOptions {
  note?: string;
  error?: JobError;
}

/** One scrape job inside its workflow run: its state and the operations every phase shares. */
export class ScrapeJob {
  readonly policy: PollPolicy;
  readonly view: JobView;
  readonly acts: ScrapeProxies;
  /** UTC ISO-8601 tracking deadline, counted from the moment the task is known. */
  deadlineAt?: string;
  /** A pending resolution of `unknown` (the `resolve` Update), until the acquisition takes it. */
  private resolution?: Resolution;
  /** The resolution being applied (taken, not yet adopted or refused). */
  private applying?: Resolution;
  /** The last refused resolution and why (the Update that offered it fails with the reason). */
  private refused?: { of: Resolution; reason: string };
  /** Who asked for the last resolution taken. */
  private resolvedBy = '';
  /** Webhook wakes received so far (count). */
  wakes = 0;
  /** Earliest workflow time (epoch ms) of the next wake-triggered check; wakes before it are merged into it. */
  wakeQuietUntil = 0;
  private lastGeneration = 0;
  /** The next check comes at once (see {@link checkSoon}). */
  private soon = false;
  /** Effects the provider reported (pages, credits), for the cancel report. */
  progress: NonNullable<CancelReport['remainingEffects']> = {};
  /** The scope of the interruptible phases (acquire, poll): a cancel request cancels it. */
  private phases?: CancellationScope;
  private publishedState?: string;
  /** The store write of the last {@link record}, until it completed (a cancellation may interrupt it). */
  private unwritten?: { jobId: string; state: JobState; error?: JobError; detail?: unknown };

  constructor(readonly input: ScrapeWorkflowInput & { carry?: { deadlineAt: string; statusChecks: number } }) {
    this.policy = { ...DEFAULT_POLL_POLICY, ...(input.policy ?? {}) };
    this.acts = scrapeProxies(this.policy);
    const now = new Date();
    this.deadlineAt = input.carry?.deadlineAt ?? (input.resume ? new Date(now.getTime() + this.policy.deadlineMs).toISOString() : undefined);
    this.view = {
      jobId: input.jobId,
      account: input.account,
      provider: input.provider,
      key: input.key,
      state: 'submitting',
      url: input.request.url,
      statusChecks: input.carry?.statusChecks ?? 0,
      startedAt: now.toISOString(),
      deadlineAt: this.deadlineAt,
      taskId: input.resume?.taskId,
    };
  }

  get state(): JobState {
    return this.view.state;
  }

  get final(): boolean {
    return isFinalState(this.view.state);
  }

  /** The cancel request, once any door asked (`via` says which). */
  get cancel(): CancelReport | undefined {
    return this.view.cancel;
  }

  /** Upserts the search attributes the start did not set (a run started by the client has them all). */
  announce(): void {
    const present = workflowInfo().typedSearchAttributes;
    this.publishedState = present.get(ScrapeState);
    const wanted: SearchAttributeUpdatePair[] = [
      { key: ScrapeState, value: this.view.state },
      { key: ScrapeProvider, value: this.input.provider },
      { key: ScrapeAccount, value: this.input.account },
      { key: ScrapeHost, value: hostOf(this.input.request.url) },
      ...(this.input.batchId ? [{ key: ScrapeBatchId, value: this.input.batchId }] : []),
      ...(this.view.taskId ? [{ key: ScrapeTaskId, value: this.view.taskId }] : []),
    ] as SearchAttributeUpdatePair[];
    const missing = wanted.filter((u) => present.get(u.key as never) !== u.value);
    if (missing.length) upsertSearchAttributes(missing);
    this.publishedState = this.view.state;
    this.publish();
  }

  /**
   * Moves to `state` (checked against {@link TRANSITIONS}; staying put is allowed) and publishes it:
   * view, `ScrapeState` (only when it changed: upserts are billable history events), details.
   * Throws on an illegal move — a bug, which fails the workflow task rather than record a wrong state.
   */
  move(state: JobState, opts: MoveOptions = {}, extra: SearchAttributeUpdatePair[] = []): void {
    const from = this.view.state;
    if (state !== from && !TRANSITIONS[from].includes(state)) throw new Error(`illegal transition ${from} → ${state} for job ${this.input.jobId}`);
    this.view.state = state;
    this.view.note = opts.note;
    if (opts.error) this.view.lastError = opts.error;
    if (isFinalState(state)) {
      this.view.finishedAt ??= new Date().toISOString();
      this.view.nextCheckAt = undefined;
    }
    const updates = [...extra, ...(this.publishedState === state ? [] : [{ key: ScrapeState, value: state } as SearchAttributeUpdatePair])];
    if (updates.length) upsertSearchAttributes(updates);
    this.publishedState = state;
    this.publish();
  }

  /**
   * {@link move}, then records the transition in the store (a local activity). Inside the
   * interruptible phases a cancel request can interrupt that write after the move; a final state
   * left unwritten so is written by {@link writeInterruptedFinal} before the run closes.
   */
  async record(state: JobState, opts: MoveOptions & { detail?: unknown } = {}): Promise<void> {
    this.move(state, opts);
    const write = { jobId: this.input.jobId, state, error: opts.error, detail: opts.detail ?? (opts.note ? { note: opts.note } : undefined) };
    this.unwritten = write;
    await this.acts.recorder.recordState(write);
    this.unwritten = undefined;
  }

  /**
   * Writes the final state whose store write a cancellation interrupted (call in a non-cancellable
   * scope). Without it a job whose submit was refused while a cancel request arrived closed with
   * the workflow saying `failed` and its store row still `submitting`. Guarded by
   * {@link PATCH_REWRITE_INTERRUPTED_FINAL}; a no-op when nothing was interrupted.
   */
  async writeInterruptedFinal(): Promise<void> {
    const write = this.unwritten;
    if (!write || !this.final || write.state !== this.state) return;
    if (!patched(PATCH_REWRITE_INTERRUPTED_FINAL)) return;
    await this.acts.recorder.recordState(write);
    this.unwritten = undefined;
  }

  /**
   * A final state the store already holds (a stale resume found the job finished): adopted as is,
   * outside the transition table.
   */
  adoptFinal(state: JobState, note: string): void {
    this.view.state = state;
    this.view.note = note;
    upsertSearchAttributes([{ key: ScrapeState, value: state }]);
    this.publishedState = state;
    this.publish();
  }

  /** The task ID is known (submit answer, reconcile, operator): the deadline starts; `pending` unless cancelling. */
  taskKnown(taskId: string): void {
    this.deadlineAt ??= new Date(Date.now() + this.policy.deadlineMs).toISOString();
    this.view.deadlineAt = this.deadlineAt;
    this.view.taskId = taskId;
    this.view.submittedAt ??= new Date().toISOString();
    const task = [{ key: ScrapeTaskId, value: taskId } as SearchAttributeUpdatePair];
    if (this.view.state === 'cancelling') upsertSearchAttributes(task);
    else this.move('pending', {}, task);
  }

  /**
   * Records a cancel request from any door (a second one joins the first) and interrupts the
   * running phase at once: the request shows in the view and the details immediately.
   */
  requestCancel(req: CancelRequest, via: CancelReport['via']): void {
    if (this.view.cancel || this.final) return;
    this.view.cancel = { requestedBy: req.requestedBy ?? 'unknown', reason: req.reason ?? 'no reason given', via, requestedAt: new Date().toISOString(), providerCancelCalls: 0 };
    this.publish();
    this.phases?.cancel();
  }

  /** Offers an operator's resolution of `unknown` (the `resolve` Update's handler). */
  offerResolution(r: Resolution): void {
    this.resolution = r;
  }

  /** Whether a resolution waits to be applied. */
  hasResolution(): boolean {
    return this.resolution !== undefined;
  }

  /** Whether a resolution is offered or being applied (a second one is refused meanwhile). */
  resolving(): boolean {
    return this.resolution !== undefined || this.applying !== undefined;
  }

  /** Takes the offered resolution to apply it. Throws when none is offered (a bug). */
  takeResolution(): Resolution {
    const r = this.resolution;
    if (!r) throw new Error(`no resolution offered for job ${this.input.jobId}`);
    this.resolution = undefined;
    this.applying = r;
    this.resolvedBy = r.by ?? '';
    return r;
  }

  /** Refuses resolution `r` with `reason` (shown in the note; the Update that offered it fails with it). The job stays in `unknown`. */
  refuseResolution(r: Resolution, reason: string): void {
    this.applying = undefined;
    this.refused = { of: r, reason };
    this.view.note = `the operator's resolution was refused: ${reason}. Still waiting for an operator.`;
    this.publish();
  }

  /** Who asked for the last resolution taken (empty when unnamed). */
  lastResolutionBy(): string {
    return this.resolvedBy;
  }

  /** Waits until resolution `r` was applied (the job left `unknown`) or refused; returns the refusal's reason, if any. */
  async resolutionSettled(r: Resolution): Promise<string | undefined> {
    await condition(() => this.state !== 'unknown' || this.refused?.of === r);
    if (this.state === 'unknown' || this.refused?.of === r) return this.refused?.reason;
    this.applying = undefined;
    return undefined;
  }

  /** Runs the interruptible phases in a scope that a cancel request cancels. */
  async interruptible(fn: () => Promise<void>): Promise<void> {
    this.phases = new CancellationScope();
    try {
      await this.phases.run(fn);
    } finally {
      this.phases = undefined;
    }
  }

  /** Merges provider-reported progress (pages, credits) into the effects kept for the cancel report. */
  noteProgress(p?: { pagesFetched?: number; documents?: number; creditsUsed?: number }): void {
    if (p?.pagesFetched !== undefined) this.progress.pagesFetched = p.pagesFetched;
    if (p?.documents !== undefined) this.progress.documents = p.documents;
    if (p?.creditsUsed !== undefined) this.progress.creditsUsed = p.creditsUsed;
  }

  /** A new polling generation: the workflow time (epoch ms), strictly increasing (a newer activity supersedes older ones, across runs too). */
  nextGeneration(): number {
    this.lastGeneration = Math.max(this.lastGeneration + 1, Date.now());
    return this.lastGeneration;
  }

  /** The poll schedule of this job (ms), slowed down when the provider sends webhooks. */
  schedule(): PollSchedule {
    const p = this.policy;
    return { initialDelayMs: p.initialDelayMs, maxDelayMs: p.maxDelayMs, multiplier: p.multiplier, jitter: p.jitter, slowdown: this.input.webhooks ? p.webhookSlowdown : 1 };
  }

  /** Makes the first check of the tracking phase come at once (a webhook delivery already said the task moved). */
  checkSoon(): void {
    this.soon = true;
  }

  /** The wait before the next check after `statusChecks` checks, jittered (deterministic randomness), ms; 0 once after {@link checkSoon}. */
  firstDelay(): number {
    if (this.soon) {
      this.soon = false;
      return 0;
    }
    const s = this.schedule();
    const base = s.slowdown * Math.min(s.maxDelayMs, s.initialDelayMs * Math.pow(s.multiplier, this.view.statusChecks));
    return Math.max(1, Math.round(base * (1 - s.jitter + 2 * s.jitter * Math.random())));
  }

  /** Refreshes the Web UI's current details. */
  publish(): void {
    renderDetails(this.view);
  }

  /** The reference to the task that activities take. */
  taskRef(): { jobId: string; provider: string; account: string; taskId: string } {
    return { jobId: this.input.jobId, provider: this.input.provider, account: this.input.account, taskId: this.view.taskId! };
  }
}

function hostOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#:]+)/i.exec(url);
  return m?.[1]?.toLowerCase() ?? 'unknown';
}
