/**
 * The scrape job's state machine (docs/design.md, "The scrape workflow"): the job's state, the
 * transition table, and the only code that changes them. Every change goes through a method of
 * {@link ScrapeJob} that publishes it (view, search attributes, the Web UI's current details and,
 * for {@link ScrapeJob.record}, the store), so "where does the job's state change?" has one answer:
 * here. The phases (`acquire.ts`, `poll.ts`, `cancel.ts`) and the handlers (`workflow.ts`) only
 * call these methods. Deterministic code only.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { CancellationScope, condition, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { failedReadPolicy, scheduleDelay, type PollSchedule } from '../../model/schedule.js';
import { cancelMayReachTask, isFinalState, type JobState } from '../../model/states.js';
import {
  DEFAULT_POLL_POLICY,
  type CancelReport,
  type JobError,
  type JobView,
  type JobWait,
  type PollPolicy,
} from '../../model/types.js';
import type { SavedResult, SubmitJobInput, TaskRef } from '../../activities/index.js';
import { ScrapeState, ScrapeTaskId } from '../searchAttributes.js';
import { renderDetails } from './details.js';
import type { CancelRequest, Resolution } from './messages.js';
import { scrapeProxies, type ScrapeProxies } from './options.js';
import * as rules from './view.js';

/** One scrape job inside its workflow run: its state and every operation that changes it. */
export class ScrapeJob {
  readonly policy: PollPolicy;
  readonly acts: ScrapeProxies;
  private readonly v: JobView;
  private deadline?: string;
  /** Where an operator's resolution of `unknown` stands (the `resolve` Update). */
  private readonly res: rules.ResolutionState = { by: '' };
  /** The webhook wakes (the `wake` signal) and submit nudges (`submitNow`) received. */
  private readonly woken: rules.WakeState = { count: 0, lastAt: 0, quietUntil: 0, nudges: 0 };
  private lastGeneration = 0;
  /** The next check comes at once (see {@link checkSoon}). */
  private soon = false;
  /** Effects the provider reported (pages, documents, credits), for the cancel report. */
  private readonly effects: NonNullable<CancelReport['remainingEffects']> = {};
  /** The scope of the interruptible phases (acquire, poll): a cancel request cancels it. */
  private phases?: CancellationScope;
  private publishedState?: string;
  /** The store write of the last {@link record}, until it completed (a cancellation may interrupt it). */
  private unwritten?: rules.StateWrite;
  /** See {@link cancelAfterFinal}. */
  private late?: CancelReport;
  /** Search attribute updates held back for the next move's upsert (one upsert instead of two). */
  private deferred: SearchAttributeUpdatePair[] = [];

  constructor(readonly input: rules.ScrapeRunInput) {
    this.policy = { ...DEFAULT_POLL_POLICY, ...(input.policy ?? {}) };
    this.acts = scrapeProxies(this.policy);
    const now = new Date();
    this.deadline = rules.initialDeadline(input, now, this.policy.deadlineMs);
    this.v = rules.initialView(input, now, this.deadline);
  }

  /** The job as the workflow sees it (the `state` query); read-only: change it through the methods. */
  get view(): Readonly<JobView> {
    return this.v;
  }

  get state(): JobState {
    return this.v.state;
  }
  get final(): boolean {
    return isFinalState(this.v.state);
  }
  /** The cancel request, once any door asked (`via` says which). */
  get cancel(): Readonly<CancelReport> | undefined {
    return this.v.cancel;
  }

  /**
   * A cancel request this run hands to a run resumed to cancel instead of closing: it arrived as
   * the job went final in a state whose provider task it can still reach (`cancelMayReachTask`:
   * tracking stopped at its deadline or after failed reads while the task ran). Either it came
   * while the job was finishing ({@link handOverCancel}), or, by signal or native cancellation,
   * once the job was final (a cancel Update is refused then, and its client asks again).
   */
  get cancelAfterFinal(): Readonly<CancelReport> | undefined {
    return this.late;
  }

  /** UTC ISO-8601 tracking deadline, counted from the moment the task is known. */
  get deadlineAt(): string | undefined {
    return this.deadline;
  }

  /** Effects the provider reported so far (a copy). */
  remainingEffects(): NonNullable<CancelReport['remainingEffects']> {
    return { ...this.effects };
  }

  /** Upserts the search attributes the start did not set (a run started by the client has them all). */
  announce(): void {
    const present = workflowInfo().typedSearchAttributes;
    this.publishedState = present.get(ScrapeState);
    const missing = rules.missingAttributes(rules.announcedAttributes(this.input, this.v), present);
    if (missing.length) upsertSearchAttributes(missing);
    this.publishedState = this.v.state;
    this.publish();
  }

  /**
   * Moves to `state` (checked by {@link rules.checkMove} against the transition table; staying put is
   * allowed) and publishes it: view, `ScrapeState` (only when it changed: upserts are billable
   * history events), details. Throws on an illegal move — a bug, which fails the workflow task.
   */
  move(state: JobState, opts: rules.MoveOptions = {}, extra: SearchAttributeUpdatePair[] = []): void {
    const from = this.v.state;
    rules.checkMove(from, state, this.input.jobId);
    this.v.state = state;
    this.v.note = opts.note;
    if (opts.error) this.v.lastError = opts.error;
    if (opts.waiting) this.v.waiting = opts.waiting;
    if (isFinalState(state)) {
      this.v.finishedAt ??= new Date().toISOString();
      this.v.nextCheckAt = undefined;
    }
    const updates = rules.moveUpdates([...this.deferred.splice(0), ...extra], this.publishedState, state);
    if (updates.length) upsertSearchAttributes(updates);
    this.publishedState = state;
    this.publish();
  }

  /**
   * {@link move}, then records the transition in the store (a local activity). Inside the
   * interruptible phases a cancel request can interrupt that write after the move; a final state
   * left unwritten so is written by {@link writeInterruptedFinal} before the run closes.
   */
  async record(state: JobState, opts: rules.MoveOptions & { detail?: unknown } = {}): Promise<void> {
    this.move(state, opts);
    const write = rules.stateWrite(this.input, state, opts);
    this.unwritten = write;
    await this.acts.recorder.recordState(write);
    this.unwritten = undefined;
  }

  /**
   * Writes the final state whose store write a cancellation interrupted (call in a non-cancellable
   * scope). Without it a job whose submit was refused while a cancel request arrived closed with
   * the workflow saying `failed` and its store row still `submitting`. A no-op when nothing was
   * interrupted.
   */
  async writeInterruptedFinal(): Promise<void> {
    const write = this.unwritten;
    if (!write || !this.final || write.state !== this.state) return;
    await this.acts.recorder.recordState(write);
    this.unwritten = undefined;
  }

  /** Whether a store write of {@link record} was interrupted (see {@link writeInterruptedFinal}). */
  hasUnwrittenFinal(): boolean {
    return this.unwritten !== undefined;
  }

  /** A final state the store already holds (a stale resume, another writer): adopted as is, outside the transition table. */
  adoptFinal(state: JobState, note: string): void {
    this.v.state = state;
    this.v.note = note;
    upsertSearchAttributes([...this.deferred.splice(0), { key: ScrapeState, value: state }]);
    this.publishedState = state;
    this.publish();
  }

  /**
   * The task ID is known (submit answer, reconcile, operator): the deadline starts; `pending` unless
   * cancelling. `deferUpsert`: the job is about to move on (its submit attempt already saw it
   * final), so its search attributes go out with that move, in one upsert. `deadlineAt`: the
   * deadline the activity that learned the task counted (from the moment it did).
   */
  taskKnown(taskId: string, opts: { deferUpsert?: boolean; deadlineAt?: string } = {}): void {
    this.deadline ??= opts.deadlineAt ?? new Date(Date.now() + this.policy.deadlineMs).toISOString();
    this.v.deadlineAt = this.deadline;
    this.v.taskId = taskId;
    this.v.submittedAt ??= new Date().toISOString();
    const task = [{ key: ScrapeTaskId, value: taskId } as SearchAttributeUpdatePair];
    if (this.v.state === 'cancelling') upsertSearchAttributes(task);
    else if (opts.deferUpsert) {
      rules.checkMove(this.v.state, 'pending', this.input.jobId);
      this.deferred.push(...task);
      this.v.state = 'pending';
      this.publish();
    } else this.move('pending', {}, task);
  }

  /** The first checks of a submit that went on into them (`SubmitJobInput.track`) and the polling generation they used. */
  fastPath(): NonNullable<SubmitJobInput['track']> {
    return {
      generation: this.nextGeneration(),
      schedule: this.schedule(),
      firstDelayMs: this.firstDelay(),
      notFoundLimit: this.policy.notFoundLimit,
      failedReads: failedReadPolicy(this.policy),
      budgetMs: this.policy.fastPathMs,
      recordsOutcome: true, // settleOutcome records the move
    };
  }

  /** Shows `text` as the job's note (for an operator: why it waits, what was decided). */
  note(text: string): void {
    this.v.note = text;
    this.publish();
  }

  /** Shows why the job waits (`undefined`: it no longer does), in the view and the Web UI's details. */
  waiting(wait: JobWait | undefined): void {
    this.v.waiting = wait;
    this.publish();
  }

  /** Keeps `error` as the job's last error (shown; the state does not change). */
  noteError(error: JobError): void {
    this.v.lastError = error;
    this.publish();
  }

  /** Merges what an activity observed: the checks made, the provider's raw status word, the effects reported. */
  observe(o: rules.Observation): void {
    this.v.statusChecks = Math.max(this.v.statusChecks, o.checks);
    if (o.providerStatus) this.v.providerStatus = o.providerStatus;
    if (o.providerState) this.v.providerState = o.providerState;
    Object.assign(this.effects, rules.reportedEffects(o.progress));
    this.publish();
  }

  /** Keeps what was written for the completed task (the payload stays in the store). */
  keepResult(r: SavedResult): void {
    this.v.result = { resultId: r.resultId, title: r.title, httpStatus: r.httpStatus, finalUrl: r.finalUrl };
    this.publish();
  }

  /** The provider completed the task and the result was written once (by the activity, with the row): `completed`. */
  completed(r: SavedResult): void {
    this.v.providerState = 'completed';
    this.v.lastError = undefined;
    this.keepResult(r);
    // A result without usable content still completes the job (the provider did the work); the
    // note says so. The note is view state only: no new command.
    this.move('completed', r.contentNote ? { note: r.contentNote } : {});
  }

  /** The next status check is due in `delayMs` (shown as `nextCheckAt`). */
  scheduleCheck(delayMs: number): void {
    this.v.nextCheckAt = new Date(Date.now() + delayMs).toISOString();
    this.publish();
  }

  /** Makes the first check of the tracking phase come at once (a webhook delivery already said the task moved). */
  checkSoon(): void {
    this.soon = true;
  }

  /**
   * The poll schedule of this job (ms): {@link rules.pollSchedule} of its policy — for tracking (a
   * safety net with webhooks, learned when asked for), or with `confirming` the plain geometric
   * schedule of a cancel's confirmation checks.
   */
  schedule(confirming = false): PollSchedule {
    return rules.pollSchedule(this.policy, this.input.webhooks, !confirming);
  }

  /** The wait before the next check after the checks made so far, jittered (deterministic randomness), ms; 0 once after {@link checkSoon}. */
  firstDelay(): number {
    if (this.soon) {
      this.soon = false;
      return 0;
    }
    return scheduleDelay(this.schedule(), this.v.statusChecks, Math.random());
  }

  /** A new polling generation: the workflow time (epoch ms), strictly increasing (a newer activity supersedes older ones, across runs too). */
  nextGeneration(): number {
    this.lastGeneration = Math.max(this.lastGeneration + 1, Date.now());
    return this.lastGeneration;
  }

  /** A webhook hint arrived (the `wake` signal). */
  wake(): void {
    this.woken.count++;
    this.woken.lastAt = Date.now();
  }

  /** Workflow time (epoch ms) of the last wake, 0 before any. */
  lastWakeAt(): number {
    return this.woken.lastAt;
  }

  /** Wakes received so far; compare with a later value to see whether one arrived. */
  wakes(): number {
    return this.woken.count;
  }

  /** The `submitNow` signal (a slot granted, a budget raised): a wait to submit ends now. */
  nudgeSubmit(): void {
    this.woken.nudges++;
  }

  /** `submitNow` signals received so far; compare with a later value to see whether one arrived. */
  submitNudges(): number {
    return this.woken.nudges;
  }

  /** How long until a wake may trigger a check (ms; wakes within `initialDelayMs` of the last woken check are merged). */
  quietFor(): number {
    return this.woken.quietUntil - Date.now();
  }

  /** A wake made a check happen now: wakes in the next `initialDelayMs` are merged into the next one. */
  wakeHandled(): void {
    this.woken.quietUntil = Date.now() + this.policy.initialDelayMs;
  }

  /** Offers an operator's resolution of `unknown` (the `resolve` Update's handler). */
  offerResolution(r: Resolution): void {
    this.res.offered = r;
  }

  /** Whether a resolution waits to be applied. */
  hasResolution(): boolean {
    return this.res.offered !== undefined;
  }

  /** Whether a resolution is offered or being applied (a second one is refused meanwhile). */
  resolving(): boolean {
    return this.res.offered !== undefined || this.res.applying !== undefined;
  }

  /** Takes the offered resolution to apply it. Throws when none is offered (a bug). */
  takeResolution(): Resolution {
    const r = this.res.offered;
    if (!r) throw new Error(`no resolution offered for job ${this.input.jobId}`);
    this.res.offered = undefined;
    this.res.applying = r;
    this.res.by = r.by ?? '';
    return r;
  }

  /** Refuses resolution `r` with `reason` (shown in the note; the Update that offered it fails with it). The job stays in `unknown`. */
  refuseResolution(r: Resolution, reason: string): void {
    this.res.applying = undefined;
    this.res.refused = { of: r, reason };
    this.note(`the operator's resolution was refused: ${reason}. Still waiting for an operator.`);
  }

  /** Who asked for the last resolution taken (empty when unnamed). */
  lastResolutionBy(): string {
    return this.res.by;
  }

  /** Waits until resolution `r` was applied or refused; returns the refusal's reason, if any ({@link rules.resolutionOutcome}). */
  async resolutionSettled(r: Resolution): Promise<string | undefined> {
    await condition(() => this.state !== 'unknown' || this.res.refused?.of === r);
    const out = rules.resolutionOutcome(this.res, r, this.state, this.v.taskId);
    if (out.withdraw) this.res.offered = undefined;
    if (this.res.applying === r && !out.refused) this.res.applying = undefined;
    return out.refused;
  }

  /**
   * Records a cancel request from any door (a second one joins the first) and interrupts the
   * running phase at once: the request shows in the view and the details immediately.
   */
  requestCancel(req: CancelRequest, via: CancelReport['via']): void {
    if (this.v.cancel) return;
    if (this.final) {
      // Too late for this run, but not for the task: see `cancelAfterFinal`.
      if (this.taskReachable()) this.late ??= rules.cancelRequested(req, via, new Date().toISOString());
      return;
    }
    this.v.cancel = rules.cancelRequested(req, via, new Date().toISOString());
    this.publish();
    this.phases?.cancel();
  }

  /**
   * Hands the open cancel request of a job that went final meanwhile to a run resumed to cancel,
   * when its task may still run (see {@link cancelAfterFinal}). Returns whether it did; if not, the
   * request is settled with the state reached.
   */
  handOverCancel(): boolean {
    if (!this.v.cancel || this.v.cancel.outcome !== undefined || !this.final || !this.taskReachable()) return false;
    // A run resumed to cancel never hands its own request on (no chain of runs).
    if (this.input.pendingCancel) return false;
    this.late = this.v.cancel;
    return true;
  }

  /** Whether a cancel of this final job can still reach its provider task (`cancelMayReachTask`). */
  private taskReachable(): boolean {
    return cancelMayReachTask({ ...this.v, lastErrorKind: this.v.lastError?.kind });
  }

  /** A native cancellation (the Web UI's button, `temporal workflow cancel`) as a cancel request. */
  requestNativeCancel(): void {
    this.requestCancel({ reason: 'workflow cancellation requested', requestedBy: 'temporal' }, 'native');
  }

  /**
   * Records a native cancellation the moment it arrives, like a signal or an Update: a submit
   * refused while it was on its way must not turn it into a `Completed` run with no cancel report.
   */
  watchNativeCancel(): void {
    CancellationScope.current().cancelRequested.catch(() => {
      if (!this.cancel && !this.final) this.requestNativeCancel();
    });
  }

  /** One call to the provider's cancel endpoint was made (or may have reached it). */
  countCancelCall(): void {
    this.v.cancel!.providerCancelCalls++;
    this.publish();
  }

  /** Publishes the cancel's final report: only now is the outcome visible (the store already holds it). */
  reportCancel(report: CancelReport): void {
    Object.assign(this.v.cancel!, report);
    this.publish();
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

  /** The reference to the task that activities take. */
  taskRef(): TaskRef {
    return rules.taskRefOf(this.input, this.v.taskId!);
  }

  /** Refreshes the Web UI's current details. */
  private publish(): void {
    renderDetails(this.v);
  }
}
