/**
 * A status or result read of a provider task that failed, as a check meets it (`poll.ts`): the
 * final answers it proves (the provider's failure or expiry, a refusal of our reads), or when to
 * read again.
 *
 * Failed reads follow one discipline (docs/design.md, "Failed reads"): a back-off that grows with
 * failures in a row, never shorter than the provider's `Retry-After` and kept on the row (so a
 * hand-over or a restart keeps it), and a budget whose end is `tracking_interrupted` with the last
 * error — never `failed`, never an endless loop. A read the worker held back itself (the key's
 * shared cool-down) is no failed read. A `404` for a task younger than its kind's propagation
 * window is "not visible yet" and never counted; expiry takes both the count and the age.
 */
import type { JobError } from '../../model/types.js';
import type { ProviderError } from '../../providers/shared/errors.js';
import { failedReadDelay, failedReadsSpent, HELD_LOCALLY } from '../../model/schedule.js';
import type { JobRow } from '../../store/index.js';
import type { ActivityKit } from '../context.js';
import { again, type CheckResult, type TrackStatusInput } from './pollTypes.js';
/**
 * Where a check's incidents are recorded once: its polling generation. An attempt retried after
 * its worker died asks the provider again; the same answer then adds no second incident, while a
 * different one, or the same one after a resume (a new generation), is recorded.
 */
export function incidentScope(input: TrackStatusInput): string {
  return `poll:${input.generation}`;
}

/** A result is read only once the provider reported the task completed: the outcome says so. */
function completedFirst(phase: 'status' | 'result'): { providerState?: 'completed' } {
  return phase === 'result' ? { providerState: 'completed' } : {};
}

/**
 * Handles a provider error of a status or result read of `row`'s task: an outcome to return, or
 * when to read again (the failed-read discipline of the module docs; `until`: ms left before the
 * deadline).
 */
export async function onReadError(
  kit: ActivityKit,
  input: TrackStatusInput,
  row: JobRow,
  e: ProviderError,
  phase: 'status' | 'result',
  checks: number,
  until: number,
): Promise<CheckResult> {
  // A check cut short because its attempt was stopped (cancelled, paused, superseded, handed
  // over) says nothing of the provider: it is not recorded as a failed check on a row another
  // loop may own, and the loop's wait, which sees the stop at once, ends the attempt as it must.
  if (kit.signal()?.aborted) return again(0, `${phase} read cut short: the attempt was stopped`, checks);
  const error = e.toJobError();
  if (e.kind === 'not_found') return onNotFound(kit, input, row, error, phase, checks, until);
  if (e.kind === 'expired') {
    const note = `the provider says task ${input.taskId} expired (${error.message})`;
    const endedAs = e.details.endedAs;
    return { outcome: { kind: 'expired', checks, error, note, ...(endedAs ? { endedAs } : {}) } };
  }
  if (e.kind === 'task_failed') {
    await kit.recordIncident(input.jobId, phase, e, incidentScope(input));
    // A final word that is the same for a stopped and a finished task, with no result behind it,
    // is told to the cancel's confirmation as such: it weighs it with the cancel's own answer.
    const afterCancel =
      phase === 'result' &&
      input.mode === 'confirm_cancel' &&
      kit.deps.providers.adapter(input.provider).completedAfterCancel === 'stopped_or_completed';
    return {
      outcome: {
        kind: 'failed',
        checks,
        error,
        note: `the provider says nothing will come for task ${input.taskId} (${error.code ?? error.message})`,
        ...(afterCancel ? { afterCancel: 'stopped_or_completed' as const } : {}),
      },
    };
  }
  if (e.kind === 'permanent' || e.kind === 'conflict' || e.kind === 'unsupported') {
    await kit.recordIncident(input.jobId, phase, e, incidentScope(input));
    const note = `${phase} reads refused (${error.message}); fix the cause and resume with the same task ID ${input.taskId}`;
    return { outcome: { kind: 'interrupted', checks, error, note, ...completedFirst(phase) } };
  }
  // A read the worker held back itself (the key's shared cool-down: nothing was sent) is no failed
  // read: it spends nothing of the failed-read budget, and the job says what it waits for.
  if (e.kind === 'cooldown' && e.details.code === HELD_LOCALLY) {
    const waitMs = Math.max(1, e.details.retryAfterMs ?? 1_000);
    await kit.store.polling.recordWait(input.jobId, {
      reason: 'cooldown',
      message: `${phase} reads are held back: ${error.message}`,
      until: new Date(Date.now() + waitMs).toISOString(),
    });
    return again(Math.min(waitMs, until), `${phase} read held back (nothing sent): ${error.message}`, checks);
  }
  // transient, cooldown, ambiguous: a failed read is not a failed task.
  const p = input.failedReads;
  const streak = await kit.store.polling.recordReadError(
    input.jobId,
    error,
    (failures) => failedReadDelay(p, failures, e.details.retryAfterMs, Math.random()),
    { phase, ...(e.details.retryAfterMs !== undefined ? { retryAfterMs: e.details.retryAfterMs } : {}) },
  );
  if (failedReadsSpent(p, streak.failures, streak.since, Date.now())) {
    await kit.recordIncident(input.jobId, phase, e, incidentScope(input));
    const minutes = Math.round((Date.now() - streak.since) / 60_000);
    const note = `${streak.failures} ${phase} reads failed in a row over ${minutes} min (last: ${error.message}); the task may still run: fix the cause and resume with the same task ID ${input.taskId}`;
    return { outcome: { kind: 'interrupted', checks, error, note, ...completedFirst(phase) } };
  }
  const retryAfter = e.details.retryAfterMs ? `, Retry-After ${(e.details.retryAfterMs / 1000).toFixed(1)} s` : '';
  return again(
    Math.min(streak.delayMs, until),
    `${phase} read failed (${streak.failures} in a row of at most ${p.limit} over ${Math.round(p.budgetMs / 60_000)} min${retryAfter}; task kept): ${error.message}`,
    checks,
  );
}

/**
 * A `404` for the known task. One while the task is younger than its kind's propagation window (a
 * provider may not show a task it just created) is "not visible yet": never counted, read again
 * after half the task's age (so the reads grow geometrically), the first time at the window's end.
 * Past the window each is counted, and the task is `expired` when the streak reaches the policy's
 * `notFoundLimit`; read again on the failed-read back-off meanwhile.
 */
async function onNotFound(
  kit: ActivityKit,
  input: TrackStatusInput,
  row: JobRow,
  error: JobError,
  phase: 'status' | 'result',
  checks: number,
  until: number,
): Promise<CheckResult> {
  // The cancel path reads its own evidence (an accepted cancel, then a 404: the task stopped).
  const graceMs =
    input.mode === 'track' ? kit.deps.providers.resolve(input.provider, input.account).notFoundGraceMs : 0;
  const ageMs = Date.now() - Date.parse(row.submitted_at ?? row.created_at);
  const counted = ageMs >= graceMs;
  const streak = await kit.store.polling.recordNotFound(input.jobId, error, { counted });
  await kit.store.findings.appendEvent(input.jobId, 'status_not_found', null, {
    phase,
    streak,
    counted,
    ageMs,
    graceMs,
    error,
  });
  if (counted && streak >= input.notFoundLimit) {
    const note = `provider answered 404 for known task ${input.taskId} ${streak} times in a row (${phase} read), the task ${Math.round(ageMs / 1000)} s old: expired or lost at the provider, not failed`;
    return { outcome: { kind: 'expired', checks, error, note } };
  }
  const first = failedReadDelay(input.failedReads, 1, undefined, Math.random());
  const delay = Math.min(
    until,
    counted
      ? failedReadDelay(input.failedReads, streak, undefined, Math.random())
      : Math.max(1, Math.min(graceMs - ageMs, Math.max(first, Math.round(ageMs / 2)))),
  );
  const why = counted
    ? `${streak} of ${input.notFoundLimit} before the task counts as expired`
    : `the task is ${Math.round(ageMs / 1000)} s old and this provider may not show a new task for ${Math.round(graceMs / 1000)} s: not visible yet, not counted`;
  return again(delay, `${phase} read answered 404 (${why})`, checks);
}
