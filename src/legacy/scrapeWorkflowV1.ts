/**
 * FROZEN — the v1 scrape workflow (`scrapeWorkflow`), kept only so that runs started before
 * workflow v2 (`src/workflows/scrape/`, type `scrapeWorkflowV2`) finish on the code they started
 * with; its recorded histories in `test/replay/histories/v1-*.json` must keep replaying. New jobs
 * never start it. Cut-over: once
 * `temporal workflow count --query 'WorkflowType="scrapeWorkflow" AND ExecutionStatus="Running"'`
 * answers 0 on every namespace, delete this file, `activityOptionsV1.ts`, `src/activities/legacy.ts`
 * and the v1 histories. Do not edit it otherwise.
 *
 * The v1 scrape workflow: one logical scrape request, from submit to a result written once.
 *
 * Deterministic code only: no I/O, no real clocks; `Date.now()`, `new Date()` and
 * `Math.random()` here are the SDK's deterministic versions. All I/O is in activities.
 *
 * States and transitions follow the state machine of docs/design.md (“The scrape workflow”):
 * `submitting → pending | unknown | failed`, `unknown → pending` (reconciled) or resubmit under
 * the same key, `pending → completed | failed | cancelled | expired | tracking_interrupted`,
 * any non-final → `cancelling → cancelled | completed | failed | cancel_unconfirmed`.
 *
 * Interfaces for operators and services:
 * - query `state` → {@link JobView};
 * - signal `cancel` ({@link CancelRequest}); Update `cancel` → {@link CancelReport} (rejected by its
 *   validator when the job is already final); native cancellation (Web UI button,
 *   `temporal workflow cancel`) — all three run the same cancel path;
 * - Update `resolve` ({@link Resolution}) for a job waiting in `unknown` (operator supplies the task
 *   ID or asks for an explicit resubmit under the same key);
 * - signal `wake` (a webhook hint): check status now instead of at the next timer.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ScrapeActivities } from '../activities/index.js';
import type { StatusOutcome } from './activities.js';
import { NON_RETRYABLE_TYPES } from '../activities/failureTypes.js';
import {
  cancelSignal,
  cancelUpdate,
  resolveUpdate,
  stateQuery,
  wakeSignal,
  type CancelRequest,
  type Resolution,
} from '../workflows/scrape/messages.js';
import { scrapeActivityOptions } from './activityOptionsV1.js';
import { isFinalState, type JobState } from '../model/states.js';
import {
  DEFAULT_POLL_POLICY,
  type CancelReport,
  type JobError,
  type JobView,
  type PollPolicy,
  type ScrapeWorkflowInput,
} from '../model/types.js';
import {
  ScrapeAccount,
  ScrapeBatchId,
  ScrapeHost,
  ScrapeProvider,
  ScrapeState,
  ScrapeTaskId,
} from '../workflows/searchAttributes.js';

/** Input carried across continue-as-new (absolute deadline, counters). */
interface Carry {
  deadlineAt: string;
  statusChecks: number;
  pollIndex: number;
}

/**
 * Runs one scrape. Returns the final {@link JobView}; rethrows native cancellation after the
 * cancel path ran, unless the provider finished first (then the view says `completed`).
 */
export async function scrapeWorkflow(input: ScrapeWorkflowInput & { carry?: Carry }): Promise<JobView> {
  const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, ...(input.policy ?? {}) };
  const info = workflowInfo();
  const startedAt = new Date().toISOString();
  // The tracking deadline runs from the moment the task is known (a backlog before the submit
  // does not eat into it); a continue-as-new run carries it over, a resumed run starts a new one.
  let deadlineAt: string | undefined =
    input.carry?.deadlineAt ?? (input.resume ? new Date(Date.now() + policy.deadlineMs).toISOString() : undefined);
  const deadlineEpochMs = () => Date.parse(deadlineAt!);

  const view: JobView = {
    jobId: input.jobId,
    account: input.account,
    provider: input.provider,
    key: input.key,
    state: 'submitting',
    url: input.request.url,
    statusChecks: input.carry?.statusChecks ?? 0,
    startedAt,
    deadlineAt,
    taskId: input.resume?.taskId,
  };
  let cancelReq: (CancelRequest & { via: CancelReport['via'] }) | undefined;
  let resolution: Resolution | undefined;
  let wakeCount = 0;
  let handledWakes = 0;
  let progress: { pagesFetched?: number; creditsUsed?: number } = {};

  // ---- activities ------------------------------------------------------------------------------
  const options = scrapeActivityOptions(policy);
  const store = proxyActivities<ScrapeActivities>(options.store);
  const submitter = proxyActivities<ScrapeActivities>(options.submitter);
  const reconciler = proxyActivities<ScrapeActivities>(options.reconciler);
  const checker = proxyActivities<ScrapeActivities>(options.checker);
  const writer = proxyActivities<ScrapeActivities>(options.writer);
  const canceller = proxyActivities<ScrapeActivities>(options.canceller);

  // ---- visibility ------------------------------------------------------------------------------
  function publish(): void {
    const lines = [
      `**State:** ${view.state}${view.providerStatus ? ` (provider: ${view.providerStatus})` : ''}`,
      `**URL:** ${view.url}`,
      `**Provider / account:** ${view.provider} / ${view.account}`,
      `**Task ID:** ${view.taskId ?? '—'}`,
      `**Status checks:** ${view.statusChecks}`,
      `**Deadline:** ${view.deadlineAt ?? 'starts when the task is known'}`,
    ];
    if (view.nextCheckAt && view.state === 'pending') lines.push(`**Next check:** ${view.nextCheckAt}`);
    if (view.note) lines.push(`**Note:** ${view.note}`);
    if (view.lastError)
      lines.push(
        `**Last error:** ${view.lastError.kind}${view.lastError.code ? ` ${view.lastError.code}` : ''}: ${view.lastError.message}`,
      );
    if (view.cancel) {
      lines.push(
        `**Cancel:** via ${view.cancel.via} by ${view.cancel.requestedBy} (${view.cancel.reason}); outcome: ${view.cancel.outcome ?? 'in progress'}; provider cancel calls: ${view.cancel.providerCancelCalls}`,
      );
      if (view.cancel.detail) lines.push(`**Cancel detail:** ${view.cancel.detail}`);
    }
    if (view.result)
      lines.push(
        `**Result:** ${view.result.resultId} (title: ${view.result.title ?? '—'}, HTTP ${view.result.httpStatus ?? '—'})`,
      );
    setCurrentDetails(lines.join('\n\n'));
  }

  // Search-attribute upserts are history events and billable Actions: only changes are sent.
  let publishedState: string | undefined = workflowInfo().typedSearchAttributes.get(ScrapeState);
  function setState(state: JobState, note?: string, extra: SearchAttributeUpdatePair[] = []): void {
    view.state = state;
    view.note = note;
    if (isFinalState(state)) view.finishedAt = new Date().toISOString();
    const updates = [
      ...extra,
      ...(publishedState === state ? [] : [{ key: ScrapeState, value: state } as SearchAttributeUpdatePair]),
    ];
    if (updates.length) upsertSearchAttributes(updates);
    publishedState = state;
    publish();
  }

  function setTask(taskId: string): void {
    deadlineAt ??= new Date(Date.now() + policy.deadlineMs).toISOString();
    view.deadlineAt = deadlineAt;
    view.taskId = taskId;
    view.submittedAt ??= new Date().toISOString();
    setState('pending', undefined, [{ key: ScrapeTaskId, value: taskId }]);
  }

  async function transition(
    state: JobState,
    opts: { error?: JobError; note?: string; detail?: unknown; force?: boolean } = {},
  ): Promise<void> {
    if (opts.error) view.lastError = opts.error;
    setState(state, opts.note);
    await store.recordState({
      jobId: input.jobId,
      state,
      error: opts.error,
      detail: opts.detail ?? (opts.note ? { note: opts.note } : undefined),
      force: opts.force,
    });
  }

  // ---- handlers --------------------------------------------------------------------------------
  function requestCancel(req: CancelRequest, via: CancelReport['via']): void {
    if (cancelReq || isFinalState(view.state)) return; // a second request joins the first
    cancelReq = { ...req, via };
    view.cancel = {
      requestedBy: req.requestedBy ?? 'unknown',
      reason: req.reason ?? 'no reason given',
      via,
      requestedAt: new Date().toISOString(),
      providerCancelCalls: 0,
    };
    publish();
  }

  setHandler(stateQuery, () => view);
  setHandler(cancelSignal, (req) => requestCancel(req ?? {}, 'signal'));
  setHandler(
    cancelUpdate,
    async (req) => {
      requestCancel(req ?? {}, 'update');
      // Shielded: a native cancellation arriving before or while this Update waits joins the same
      // path; it must not fail the Update with "Workflow cancelled".
      await CancellationScope.nonCancellable(() => condition(() => view.cancel?.outcome !== undefined));
      return view.cancel!;
    },
    {
      validator: (_req) => {
        if (isFinalState(view.state) && !view.cancel) {
          throw new Error(`job is already ${view.state}; cancelling changes nothing`);
        }
      },
    },
  );
  setHandler(
    resolveUpdate,
    async (r) => {
      resolution = r;
      await condition(() => view.state !== 'unknown');
      return view;
    },
    {
      validator: (r) => {
        if (view.state !== 'unknown') throw new Error(`job is ${view.state}, not unknown; nothing to resolve`);
        if (resolution) throw new Error('a resolution is already being applied');
        const hasTask = 'taskId' in r && typeof r.taskId === 'string' && r.taskId.length > 0;
        const resubmit = 'resubmit' in r && r.resubmit === true;
        if (hasTask === resubmit) throw new Error('give exactly one of taskId or resubmit: true');
      },
    },
  );
  setHandler(wakeSignal, (hint) => {
    wakeCount++;
    log.info('woken by provider hint', { eventId: hint?.eventId, providerStatus: hint?.providerStatus });
  });

  // ---- the run ---------------------------------------------------------------------------------
  // The client sets these at start; a run started otherwise (a Schedule, `temporal workflow start`,
  // continue-as-new) gets whatever is missing, in one upsert.
  const present = workflowInfo().typedSearchAttributes;
  const initial: SearchAttributeUpdatePair[] = [
    { key: ScrapeState, value: view.state },
    { key: ScrapeProvider, value: input.provider },
    { key: ScrapeAccount, value: input.account },
    { key: ScrapeHost, value: hostOf(input.request.url) },
    ...(input.batchId ? [{ key: ScrapeBatchId, value: input.batchId }] : []),
    ...(view.taskId ? [{ key: ScrapeTaskId, value: view.taskId }] : []),
  ].filter((u) => present.get(u.key as never) !== u.value) as SearchAttributeUpdatePair[];
  if (initial.length) upsertSearchAttributes(initial);
  publishedState = view.state;
  publish();

  // A resumed job that was `cancelling` when its previous run stopped finishes that cancel.
  if (input.pendingCancel)
    requestCancel(
      {
        reason: input.pendingCancel.reason ?? 'cancel under way before resume',
        requestedBy: input.pendingCancel.requestedBy ?? 'unknown',
      },
      'signal',
    );

  let nativeCancel: unknown;
  try {
    await run();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    nativeCancel = err;
    // Native cancellation (Web UI, `temporal workflow cancel`): the same path, shielded.
    requestCancel({ reason: 'workflow cancellation requested', requestedBy: 'temporal' }, 'native');
    await CancellationScope.nonCancellable(() => cancelPath());
  }
  // A native cancellation that never threw (it arrived while a shielded step finished the job, or
  // while the path of an earlier signal/Update ran) is recorded and ends the run the same way.
  if (!nativeCancel && CancellationScope.current().consideredCancelled) {
    nativeCancel = new CancelledFailure('workflow cancellation requested');
    view.cancel ??= {
      requestedBy: 'temporal',
      reason: 'workflow cancellation requested',
      via: 'native',
      requestedAt: new Date().toISOString(),
      providerCancelCalls: 0,
    };
  }
  await CancellationScope.nonCancellable(() => settleLateCancel());
  if (nativeCancel && view.state !== 'completed') throw nativeCancel;
  return view;

  async function run(): Promise<void> {
    const reg = await store.registerJob({ ...input, workflowId: info.workflowId, deadlineAt });
    if (
      input.resume &&
      isFinalState(reg.state) &&
      reg.state !== 'tracking_interrupted' &&
      patched('resume-of-finished-job')
    ) {
      // A stale resume (the job finished or was purged meanwhile): nothing to track, no provider call.
      setState(reg.state as JobState, `resume found the job already ${reg.state}; nothing to do`);
      return;
    }
    if (reg.taskId) {
      setTask(reg.taskId);
    } else {
      const acquired = await acquireTask();
      if (!acquired) return;
    }
    await pollUntilFinal();
  }

  /**
   * A cancel that arrived while the job was finishing (e.g. during the shielded result write)
   * found nothing left to stop: report the state actually reached, with no provider call.
   */
  async function settleLateCancel(): Promise<void> {
    if (!view.cancel || view.cancel.outcome) return;
    const s = view.state;
    const final: CancelReport = {
      ...view.cancel,
      outcome:
        s === 'completed'
          ? 'completed'
          : s === 'failed'
            ? 'failed'
            : s === 'cancelled'
              ? 'cancelled'
              : 'cancel_unconfirmed',
      detail: `the job reached ${s} before the cancel request could act; nothing was sent to the provider`,
      remainingEffects: { ...progress },
    };
    await store.recordCancelOutcome({ jobId: input.jobId, report: final });
    Object.assign(view.cancel, final);
    publish();
  }

  /** Submits (or reconciles) until a task ID is known. False when the job ended without one. */
  async function acquireTask(): Promise<boolean> {
    let afterReconcile = false;
    let absentRounds = 0;
    for (;;) {
      if (cancelReq) {
        await cancelPath();
        return false;
      }
      let out: Awaited<ReturnType<ScrapeActivities['submitScrape']>>;
      try {
        // Shielded: a cancel arriving mid-submit waits for the answer, so that the task it may have
        // created is known and can be cancelled (never "cancelled" while a submit is in flight).
        out = await CancellationScope.nonCancellable(() =>
          submitter.submitScrape({
            jobId: input.jobId,
            provider: input.provider,
            account: input.account,
            key: input.key,
            request: input.request,
            afterReconcile,
            trackingDeadlineMs: policy.deadlineMs,
          }),
        );
      } catch (e) {
        if (isCancellation(e)) throw e;
        const error = jobErrorOf(e, 'submit failed');
        if (isDefiniteRejection(e)) {
          await transition('failed', { error, note: `submit rejected: ${error.message}` });
          return false;
        }
        // A timed-out or crashed attempt is not proof that nothing happened: reconcile on evidence first.
        out = { kind: 'ambiguous', error: { ...error, kind: 'ambiguous' } };
      }
      if (out.kind === 'accepted') {
        setTask(out.taskId);
        return true;
      }
      // Ambiguous: a timeout is not proof that nothing happened. Reconcile first.
      await transition('unknown', {
        error: out.error,
        note: 'submit outcome unknown; reconciling before any new submission',
      });
      let rec: Awaited<ReturnType<ScrapeActivities['reconcileSubmit']>>;
      try {
        rec = await CancellationScope.nonCancellable(() =>
          reconciler.reconcileSubmit({
            jobId: input.jobId,
            provider: input.provider,
            account: input.account,
            key: input.key,
            request: input.request,
            trackingDeadlineMs: policy.deadlineMs,
          }),
        );
      } catch (e) {
        if (isCancellation(e)) throw e;
        // Reconciliation itself was refused (credentials, validation): stay in `unknown` with the
        // evidence for an operator. Never resubmit silently, never call it failed.
        const error = jobErrorOf(e, 'reconciliation failed');
        view.lastError = error;
        rec = { kind: 'unresolvable', reason: `reconciliation was refused (${error.message})` };
      }
      if (rec.kind === 'found') {
        // Before any await: a cancel arriving now must know that the task exists.
        setTask(rec.taskId);
        await transition('pending', { note: `reconciled: adopted task ${rec.taskId} via ${rec.via}`, detail: rec });
        return true;
      }
      if (rec.kind === 'absent') {
        afterReconcile = true;
        absentRounds++;
        if (patched('bounded-resubmits')) {
          // Each round was proven to leave no task behind; a provider that keeps losing our
          // submits gets backed-off attempts, then a failure with the evidence (no task exists,
          // nothing runs or bills at the provider), never an endless loop.
          if (absentRounds >= policy.submitRounds) {
            await transition('failed', {
              error: {
                ...out.error,
                kind: 'submit_unacknowledged',
                message: `${absentRounds} submissions went unanswered and each time the provider's list showed no task (last: ${out.error.message})`,
              },
              note: `no task exists at the provider after ${absentRounds} unanswered submissions; nothing is running there`,
            });
            return false;
          }
          const delayMs = nextSubmitDelay(absentRounds);
          await store.recordState({
            jobId: input.jobId,
            state: 'submitting',
            detail: {
              note: `reconciled: provider list proves no task exists; resubmitting under the same key in ${delayMs} ms (round ${absentRounds + 1} of ${policy.submitRounds})`,
            },
          });
          setState(
            'submitting',
            `reconciled: no task exists at the provider; resubmitting under the same key in ${delayMs} ms`,
          );
          await condition(() => cancelReq !== undefined, delayMs);
          continue;
        }
        await store.recordState({
          jobId: input.jobId,
          state: 'submitting',
          detail: { note: 'reconciled: provider list proves no task exists; resubmitting under the same key' },
        });
        setState('submitting', 'reconciled: no task exists at the provider; resubmitting under the same key');
        continue;
      }
      // Neither idempotency nor list: wait for an operator. Never resubmit silently.
      view.note = `waiting for an operator: ${rec.reason}. Resolve with the \`resolve\` Update (a task ID, or resubmit: true).`;
      publish();
      if (policy.onDeadline === 'cancel') {
        // Stuck in `unknown` past the job's maximum duration (counted from its start here, since
        // no task is known): the cancel-on-deadline policy applies too.
        const left = Date.parse(startedAt) + policy.deadlineMs - Date.now();
        const decided = left > 0 && (await condition(() => resolution !== undefined || cancelReq !== undefined, left));
        if (!decided) {
          await onDeadline();
          return false;
        }
      } else {
        await condition(() => resolution !== undefined || cancelReq !== undefined);
      }
      if (cancelReq && !resolution) {
        await cancelPath();
        return false;
      }
      const r = resolution!;
      resolution = undefined;
      if ('taskId' in r) {
        const taskId = await store.adoptTask({
          jobId: input.jobId,
          taskId: r.taskId,
          by: r.by ?? 'operator',
          trackingDeadlineMs: policy.deadlineMs,
        });
        // A task ID the worker refused (bound to another job, unreadable with the job's
        // credential, or for another request): the job stays in `unknown` for another resolution.
        if (typeof taskId !== 'string') continue;
        setTask(taskId);
        return true;
      }
      afterReconcile = true;
      await store.recordState({
        jobId: input.jobId,
        state: 'submitting',
        detail: { note: `operator ${r.by ?? ''} asked to resubmit under the same key` },
      });
      setState('submitting', 'operator asked to resubmit under the same key');
    }
  }

  /** Backoff before resubmitting after round `round` (1-based) was proven absent: 2 s × 2^(round−1), at most 60 s, jittered; ms. */
  function nextSubmitDelay(round: number): number {
    const base = Math.min(60_000, 2_000 * Math.pow(2, round - 1));
    return Math.round(base * (1 - policy.jitter + 2 * policy.jitter * Math.random()));
  }

  function nextDelay(index: number, floorMs: number): number {
    const slow = input.webhooks ? policy.webhookSlowdown : 1;
    const base = slow * Math.min(policy.maxDelayMs, policy.initialDelayMs * Math.pow(policy.multiplier, index));
    const jittered = base * (1 - policy.jitter + 2 * policy.jitter * Math.random());
    return Math.max(Math.round(jittered), floorMs, 1);
  }

  /** Polls on durable timers until the task is final, the deadline passes or a cancel arrives. */
  async function pollUntilFinal(): Promise<void> {
    let index = input.carry?.pollIndex ?? 0;
    let notFound = 0;
    let floorMs = 0;
    /** When the last status check started (ms since epoch, workflow time); none yet in this run. */
    let lastCheckAtMs: number | undefined;
    for (;;) {
      const left = deadlineEpochMs() - Date.now();
      if (left <= 0) {
        await onDeadline();
        return;
      }
      if (workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof scrapeWorkflow>({
          ...input,
          resume: { taskId: view.taskId! },
          carry: { deadlineAt: deadlineAt!, statusChecks: view.statusChecks, pollIndex: index },
        });
      }
      const delay = Math.min(nextDelay(index, floorMs), left);
      view.nextCheckAt = new Date(Date.now() + delay).toISOString();
      publish();
      // A wake that arrived at any time since the last check (even before polling began, e.g. a
      // webhook during the submit) makes the next check happen now.
      const woken = await condition(() => cancelReq !== undefined || wakeCount !== handledWakes, delay);
      handledWakes = wakeCount;
      let lastChance = false;
      if (woken && !cancelReq && lastCheckAtMs !== undefined && patched('wake-min-gap')) {
        // Wakes are hints and may come in floods (progress events, redeliveries): a woken check
        // still keeps the provider's Retry-After and at least `initialDelayMs` after the last
        // check. Wakes arriving meanwhile are merged into this one check. A wake that came before
        // the deadline gets its check even when that falls just past it (the provider's wait
        // wins over our own tracking budget); the deadline applies right after.
        const earliest = lastCheckAtMs + Math.max(floorMs, policy.initialDelayMs);
        lastChance = earliest >= deadlineEpochMs();
        const wait = earliest - Date.now();
        if (wait > 0) await condition(() => cancelReq !== undefined, wait);
        handledWakes = wakeCount;
      }
      if (cancelReq) {
        await cancelPath();
        return;
      }
      if (Date.now() >= deadlineEpochMs() && !lastChance) {
        await onDeadline();
        return;
      }
      index++;
      floorMs = 0;
      lastCheckAtMs = Date.now();
      let s: StatusOutcome;
      try {
        s = await checker.checkStatus(taskRef());
      } catch (e) {
        if (isCancellation(e)) throw e;
        const error = jobErrorOf(e, 'status check failed');
        if (isNonRetryable(e)) {
          // Credentials or permission refused on a read: the task may still run; we cannot track it.
          await transition('tracking_interrupted', {
            error,
            note: `status checks refused (${error.message}); fix the cause and resume with the same task ID`,
          });
          return;
        }
        // A failed status check is not a failed task: keep the task, poll again later.
        view.lastError = error;
        await store.recordStatusFailure({ jobId: input.jobId, error });
        publish();
        continue;
      }
      if (s.kind === 'not_found') {
        notFound++;
        view.lastError = s.error;
        if (notFound >= policy.notFoundLimit) {
          await transition('expired', {
            error: s.error,
            note: `provider answered 404 for known task ${view.taskId} ${notFound} times: expired or lost at the provider, not failed`,
          });
          return;
        }
        publish();
        continue;
      }
      notFound = 0;
      view.statusChecks++;
      view.providerStatus = s.providerStatus;
      view.providerState = s.state;
      if (s.progress) progress = { ...progress, ...definedOnly(s.progress) };
      floorMs = s.retryAfterMs ?? 0;
      if (s.state === 'completed') {
        const error = await saveResult();
        if (error?.kind === 'not_found') {
          await transition('expired', {
            error,
            note: `the provider reported task ${view.taskId} completed but no longer serves its result (404 at attempt ${policy.notFoundLimit} of the result read)`,
          });
        } else if (error) {
          await transition('tracking_interrupted', {
            error,
            note: `the provider reported task ${view.taskId} completed but its result could not be read (${error.message}); fix the cause and resume with the same task ID`,
          });
        }
        return;
      }
      if (s.state === 'failed') {
        const error: JobError = {
          kind: 'provider_failed',
          code: s.error?.code,
          message: s.error?.message ?? 'provider reported failure',
          at: new Date().toISOString(),
        };
        await transition('failed', { error, note: 'provider reported a terminal failure' });
        return;
      }
      if (s.state === 'cancelled') {
        await transition('cancelled', { note: 'the provider reports the task cancelled (not by this workflow)' });
        return;
      }
      publish();
    }
  }

  /**
   * Reads the result and writes it once. Undefined when written (the row is `completed`); else
   * the error — the read was refused (credentials), the result is gone (still 404 at the
   * `notFoundLimit`-th attempt) or the write budget ran out — and the caller records the final
   * state that fits it (never a failed workflow with a non-final row).
   */
  async function saveResult(): Promise<JobError | undefined> {
    let saved: Awaited<ReturnType<ScrapeActivities['saveResult']>>;
    try {
      // The write finishes or does not start: a cancel arriving now waits for it (never half).
      saved = await CancellationScope.nonCancellable(() =>
        writer.saveResult({ ...taskRef(), url: input.request.url, notFoundLimit: policy.notFoundLimit }),
      );
    } catch (e) {
      if (isCancellation(e)) throw e;
      // Runs of earlier code failed the workflow here: replaying their histories must too.
      if (!patched('result-read-failure-recorded')) throw e;
      const error = jobErrorOf(e, 'result read failed');
      view.lastError = error;
      return error;
    }
    view.result = {
      resultId: saved.resultId,
      title: saved.title,
      httpStatus: saved.httpStatus,
      finalUrl: saved.finalUrl,
    };
    view.lastError = undefined;
    setState('completed');
    return undefined;
  }

  async function onDeadline(): Promise<void> {
    if (policy.onDeadline === 'cancel' && !cancelReq) {
      requestCancel(
        {
          reason: `deadline ${deadlineAt ?? new Date(Date.parse(startedAt) + policy.deadlineMs).toISOString()} passed`,
          requestedBy: 'deadline policy',
        },
        'deadline',
      );
      await cancelPath();
      return;
    }
    await transition('tracking_interrupted', {
      note: `deadline ${deadlineAt} passed while the provider task may still run; resume with the same task ID ${view.taskId}`,
    });
  }

  /**
   * The one cancellation path (signal, Update and native cancel alike): mark `cancelling`, ask the provider in a shielded scope,
   * then poll until the provider reports a final state, bounded by the cancel deadline, and
   * report the outcome actually observed.
   */
  async function cancelPath(): Promise<void> {
    const report = view.cancel!;
    const finish = async (outcome: NonNullable<CancelReport['outcome']>, detail: string, error?: JobError) => {
      const final: CancelReport = { ...report, outcome, detail, remainingEffects: { ...progress } };
      if (outcome === 'completed') {
        // The result write already moved the row to `completed`; record the outcome beside it.
        setState('completed', detail);
        await store.recordCancelOutcome({ jobId: input.jobId, report: final });
      } else {
        await transition(outcome, { note: detail, error, detail: { cancel: final } });
      }
      // Only now is the outcome visible (Update result, query): the store already holds it.
      Object.assign(report, final);
      publish();
    };
    await CancellationScope.nonCancellable(async () => {
      if (isFinalState(view.state)) return;
      // A task may exist without our knowing its ID: after an ambiguous submit (`unknown`), or in a
      // run resumed mid-cancel without a task ID (its predecessor may have submitted). Reconcile first.
      const wasUnknown = view.state === 'unknown' || (input.pendingCancel !== undefined && !view.taskId);
      await transition('cancelling', {
        note: `cancel requested via ${report.via} by ${report.requestedBy}: ${report.reason}`,
        detail: { cancel: report },
      });
      if (!view.taskId && wasUnknown) {
        let rec: Awaited<ReturnType<ScrapeActivities['reconcileSubmit']>>;
        try {
          rec = await reconciler.reconcileSubmit({
            jobId: input.jobId,
            provider: input.provider,
            account: input.account,
            key: input.key,
            request: input.request,
          });
        } catch (e) {
          if (!patched('cancel-reconcile-failure-recorded')) throw e; // earlier code failed the workflow here
          const error = jobErrorOf(e, 'reconciliation failed');
          return finish(
            'cancel_unconfirmed',
            `could not determine whether a provider task exists: reconciliation was refused (${error.message}); nothing was cancelled at the provider`,
            error,
          );
        }
        if (rec.kind === 'found') {
          setTask(rec.taskId);
          setState('cancelling');
        } else if (rec.kind === 'absent')
          return finish('cancelled', 'reconciled before cancelling: no task exists at the provider, nothing to stop');
        else
          return finish(
            'cancel_unconfirmed',
            `could not determine whether a provider task exists (${rec.reason}); nothing was cancelled at the provider`,
          );
      }
      if (!view.taskId)
        return finish('cancelled', 'cancelled before any task was submitted; nothing ran at the provider');

      let answer;
      try {
        answer = await canceller.cancelTask(taskRef());
      } catch (e) {
        report.providerCancelCalls++;
        const error = jobErrorOf(e, 'cancel call failed');
        return finish('cancel_unconfirmed', `the provider did not accept the cancel request (${error.message})`, error);
      }
      if (answer.kind === 'answered' || answer.reachedProvider) report.providerCancelCalls++;
      publish();
      if (answer.kind === 'unsupported') {
        return finish(
          'cancel_unconfirmed',
          `provider "${input.provider}" has no cancel endpoint; the task may still run (last provider status: ${view.providerStatus ?? 'unknown'})`,
          answer.error,
        );
      }
      const until = Date.now() + policy.cancelConfirmDeadlineMs;
      let delay = Math.min(policy.initialDelayMs, 2_000);
      for (;;) {
        let s: StatusOutcome | undefined;
        try {
          s = await checker.checkStatus(taskRef());
        } catch (e) {
          view.lastError = jobErrorOf(e, 'status check during cancel failed');
        }
        if (s?.kind === 'status') {
          view.providerStatus = s.providerStatus;
          view.providerState = s.state;
          if (s.progress) progress = { ...progress, ...definedOnly(s.progress) };
          if (s.state === 'cancelled')
            return finish('cancelled', `the provider confirmed the task stopped (status ${s.providerStatus})`);
          if (s.state === 'completed') {
            const error = await saveResult();
            if (error)
              return finish(
                'cancel_unconfirmed',
                `the provider finished the task before the cancel took effect, but its result could not be read (${error.message})`,
                error,
              );
            return finish(
              'completed',
              'the provider finished the task before the cancel took effect: the result was kept and written once; the cancel came too late',
            );
          }
          if (s.state === 'failed') {
            const error: JobError = {
              kind: 'provider_failed',
              code: s.error?.code,
              message: s.error?.message ?? 'provider reported failure',
              at: new Date().toISOString(),
            };
            return finish('failed', 'the provider reported the task failed while cancelling', error);
          }
        } else if (s?.kind === 'not_found') {
          return finish(
            'cancel_unconfirmed',
            'the provider no longer knows the task (404) after the cancel request',
            s.error,
          );
        }
        if (Date.now() + delay > until) {
          return finish(
            'cancel_unconfirmed',
            `the provider did not confirm the cancel within ${policy.cancelConfirmDeadlineMs} ms (last status: ${view.providerStatus ?? 'unknown'})`,
          );
        }
        await sleepMs(delay);
        delay = Math.min(delay * 2, 15_000);
      }
    });
  }

  function taskRef() {
    return { jobId: input.jobId, provider: input.provider, account: input.account, taskId: view.taskId! };
  }
}

async function sleepMs(ms: number): Promise<void> {
  await condition(() => false, ms);
}

function hostOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#:]+)/i.exec(url);
  return m?.[1]?.toLowerCase() ?? 'unknown';
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * True when a submit failure proves the provider created nothing: an application failure our
 * activity raised after a definite answer (permanent rejection, or cool-downs/transient refusals
 * until the budget ran out; the activity cleared its intent in those cases). Timeouts and other
 * failures are ambiguous.
 */
function isDefiniteRejection(e: unknown): boolean {
  const cause = e instanceof ActivityFailure ? e.cause : e;
  return (
    cause instanceof ApplicationFailure &&
    typeof cause.type === 'string' &&
    cause.type.startsWith('Provider.') &&
    cause.type !== 'Provider.ambiguous'
  );
}

function isNonRetryable(e: unknown): boolean {
  const cause = e instanceof ActivityFailure ? e.cause : e;
  return cause instanceof ApplicationFailure && (cause.nonRetryable || NON_RETRYABLE_TYPES.includes(cause.type ?? ''));
}

/** Extracts the sanitised JobError an activity attached to its failure. */
function jobErrorOf(e: unknown, fallback: string): JobError {
  const cause = e instanceof ActivityFailure ? e.cause : e;
  if (cause instanceof ApplicationFailure) {
    const d = cause.details?.[0] as JobError | undefined;
    if (d && typeof d === 'object' && 'message' in d) return d;
    return { kind: cause.type ?? 'internal', message: cause.message, at: new Date().toISOString() };
  }
  const msg =
    e instanceof Error ? `${e.message}${cause instanceof Error && cause !== e ? `: ${cause.message}` : ''}` : String(e);
  return { kind: 'internal', message: `${fallback}: ${msg}`, at: new Date().toISOString() };
}
