/**
 * One status check of a provider task (`checkOnce`), the unit the polling loop (`track.ts`) repeats.
 * A final answer ends the check with its outcome, which the workflow records (the job's state
 * is the workflow's to move). The one exception is a completion: its result (inline in the final
 * status where the provider sends it, else read page by page) is written once here, atomically
 * with the move to `completed`, so that no run can see the one without the other and the payload
 * never enters history. The provider's evidence of a failure (the incident) is recorded here, where
 * the answer is, once per polling generation and content (an attempt retried after its worker died
 * that gets the same answer adds no second one). A non-final answer says when to check again.
 *
 * State between checks lives in the job row, not in history: the polling generation (a check of a
 * superseded activity stops without calling the provider), the successful-check count (the
 * schedule index), the 404 streak, the failed-read streak (count and start) and the earliest next
 * check.
 *
 * A read that fails is handled in `readErrors.ts`. A task the provider said is complete is asked
 * for its result only: a result read that fails is retried as a result read, so no successful
 * status read resets its streak.
 */
import type { JobError, JobView } from '../../model/types.js';
import { isProviderError } from '../../providers/shared/errors.js';
import { withBinaryText } from '../../providers/shared/binaryText.js';
import { enforceResultLimits } from '../../providers/shared/pagination.js';
import type { ProviderResult } from '../../model/results.js';
import type { StatusObservation } from '../../providers/adapter.js';
import { scheduleDelay as scheduleOf, type PollSchedule } from '../../model/schedule.js';
import type { JobRow } from '../../store/index.js';
import { type CheckStart } from '../../store/polling.js';
import type { ActivityKit } from '../context.js';
import { again, type TrackStatusInput, type CheckResult, type PollOutcome, type SavedResult } from './pollTypes.js';
import { incidentScope, onReadError } from './readErrors.js';
import { announceSlotReleased } from '../slots.js';
import { auditResubmit } from '../submit/resubmitAudit.js';
import { cancelIfOverrun } from '../shares.js';
import { recordForRetiredRun } from './retiredRun.js';
import { observeResultCommitLag, observeStatusCheck } from '../../observability/metrics.js';

/** The key's shared cool-down as read with the job's row, for the check's provider call (`CheckStart`'s `seen`). */
type CheckSeen = Extract<CheckStart, { kind: 'go' }>['seen'];

/** Delay n of `s`, with jitter, ms (see {@link scheduleOf}). */
function scheduleDelay(s: PollSchedule, n: number): number {
  return scheduleOf(s, n, Math.random());
}

/**
 * An attempt that found nothing to ask: a job already `completed` (another writer — an attempt of
 * an abandoned activity — wrote the result) answers `completed` with the stored result; anything
 * else is `stale` with the stored state.
 */
async function staleOutcome(kit: ActivityKit, start: Extract<CheckStart, { kind: 'stale' }>): Promise<PollOutcome> {
  const checks = Number(start.row?.status_checks ?? 0);
  const providerStatus = start.row?.provider_status ?? undefined;
  if (start.row?.state === 'completed') {
    const r = await kit.store.results.forJob(start.row.id);
    if (r)
      return {
        kind: 'completed',
        checks,
        providerStatus,
        result: {
          resultId: r.id,
          inserted: false,
          title: r.title,
          httpStatus: r.http_status,
          finalUrl: r.final_url,
          documents: Number(r.document_count),
          ...(r.content_note ? { contentNote: r.content_note } : {}),
        },
      };
  }
  return { kind: 'stale', reason: start.reason, state: start.row?.state, checks, providerStatus };
}

async function fetchResult(
  kit: ActivityKit,
  input: TrackStatusInput,
  row: JobRow,
  obs: StatusObservation | undefined,
  seen: CheckSeen,
): Promise<ProviderResult> {
  // An inline result passes the same limits as a paged read (`RESULT_TOO_LARGE`, permanent).
  if (obs?.result)
    return withBinaryText(
      enforceResultLimits(
        obs.result,
        kit.deps.providers.resolve(input.provider, input.account).resultLimits,
        input.provider,
        input.taskId,
      ),
    );
  // A binary body (a PDF) gets its text read here, once, whichever kind relayed it.
  return withBinaryText(
    await kit.call(
      input.provider,
      input.account,
      (p) =>
        p.adapter.result(input.taskId, {
          ...kit.taskCall(p, row, input.taskId),
          url: input.url,
          request: input.request,
          limits: p.resultLimits,
          heartbeat: (progress) => kit.heartbeat(progress),
        }),
      { seen },
    ),
  );
}

/**
 * The task is complete at the provider: reads its result (inline in `obs` where the final status
 * carried it; else every page, also when `obs` is undefined: a status said so at an earlier
 * check), writes it once with the move to `completed` and returns the outcome; a failed result
 * read follows the failed-read discipline, as a result read.
 */
async function completeTask(
  kit: ActivityKit,
  input: TrackStatusInput,
  row: JobRow,
  obs: StatusObservation | undefined,
  checks: number,
  until: number,
  seen: CheckSeen,
): Promise<CheckResult> {
  const observedAt = Date.now();
  let payload: ProviderResult;
  try {
    payload = await fetchResult(kit, input, row, obs, seen);
  } catch (e) {
    if (!isProviderError(e)) throw e;
    return onReadError(kit, input, row, e, 'result', checks, until);
  }
  await kit.deps.hooks?.beforeResultWrite?.(input.jobId, input.taskId);
  const out = await kit.store.results.writeOnce(
    input.jobId,
    input.provider,
    input.taskId,
    payload,
    kit.deps.resultRetentionMs,
  );
  if (out.refused !== undefined)
    return {
      outcome: {
        kind: 'stale',
        checks,
        reason: `the job is ${out.refused ?? 'gone'}, which cannot become completed: the result was not written`,
        ...(out.refused ? { state: out.refused } : {}),
      },
    };
  if (out.inserted) observeResultCommitLag(Date.now() - observedAt); // completion observed → result committed
  await kit.deps.hooks?.afterResultWritten?.(input.jobId, out.resultId);
  announceSlotReleased(kit.deps.providers.resolve(input.provider, input.account).limiter.label);
  const result: SavedResult = {
    resultId: out.resultId,
    inserted: out.inserted,
    title: payload.title,
    httpStatus: payload.httpStatus,
    finalUrl: payload.finalUrl,
    documents: out.documents,
    ...(out.contentNote ? { contentNote: out.contentNote } : {}),
  };
  const providerStatus = obs?.providerStatus ?? row.provider_status ?? undefined;
  const ambiguous =
    input.mode === 'confirm_cancel' &&
    kit.deps.providers.adapter(input.provider).completedAfterCancel === 'stopped_or_completed';
  return {
    outcome: {
      checks,
      providerStatus,
      progress: obs?.progress,
      kind: 'completed',
      result,
      ...(ambiguous ? { afterCancel: 'stopped_or_completed' as const } : {}),
    },
  };
}

/**
 * One status check (see {@link checkTask}), and for a run of the retired `scrapeWorkflowV4` its
 * final move, which that type does not record itself ({@link recordForRetiredRun}).
 */
export async function checkOnce(
  kit: ActivityKit,
  input: TrackStatusInput,
  checkPastDeadline: boolean,
): Promise<CheckResult> {
  return recordForRetiredRun(kit, input, await checkTask(kit, input, checkPastDeadline));
}

/**
 * One status check of the task: claims the job for `input.generation` (a superseded or final job
 * asks nothing: `stale`), calls the provider, records what it said, and when the task is final
 * returns the outcome (a completion with its result written once); otherwise says when to
 * check again (the next delay of the schedule, never shorter than the provider's `Retry-After`,
 * never past the deadline; a short backoff after a failed check). `checkPastDeadline`: check even
 * though the deadline has passed (a wake that came before it).
 */
async function checkTask(kit: ActivityKit, input: TrackStatusInput, checkPastDeadline: boolean): Promise<CheckResult> {
  const start = await kit.store.polling.beginCheck(
    input.jobId,
    input.generation,
    input.mode === 'confirm_cancel',
    input.mode === 'track' ? input.deadlineAt : undefined,
  );
  if (start.kind === 'stale') return { outcome: await staleOutcome(kit, start) };
  const row = start.row;
  const checks = Number(row.status_checks);
  const deadline = Date.parse(input.deadlineAt);
  const now = await kit.serverClock(); // the deadline is workflow (server) time
  // The job's end, however it comes, is the audit's last chance to look for a hidden first submission.
  const ending = async (r: CheckResult): Promise<CheckResult> => {
    if ('outcome' in r) await auditResubmit(kit, row, input, true);
    return r;
  };
  if (now() >= deadline && !checkPastDeadline)
    return ending({
      outcome: {
        kind: 'deadline',
        checks,
        providerStatus: row.provider_status ?? undefined,
        ...(row.provider_state ? { providerState: row.provider_state as JobView['providerState'] } : {}),
      },
    });
  const until = Math.max(1, deadline - now());

  // A task the provider already said is complete is asked for its result only (module docs).
  if (row.provider_state === 'completed')
    return ending(await completeTask(kit, input, row, undefined, checks, until, start.seen));

  let obs: StatusObservation;
  const askedAt = Date.now();
  try {
    obs = await kit.call(
      input.provider,
      input.account,
      (p) =>
        // The result limits ride along: a kind that answers a status with its result inline
        // (ScraperAPI, an `http` entry) reads that answer under the result's byte cap.
        p.adapter.status(input.taskId, {
          ...kit.taskCall(p, row, input.taskId),
          url: input.url,
          limits: p.resultLimits,
        }),
      { seen: start.seen },
    );
    observeStatusCheck(Date.now() - askedAt, obs.state);
  } catch (e) {
    if (!isProviderError(e)) throw e;
    observeStatusCheck(Date.now() - askedAt, `error_${e.kind}`);
    return ending(await onReadError(kit, input, row, e, 'status', checks, until));
  }
  const { evidence, ...seen } = obs;
  const n = await kit.store.polling.recordCheck(
    input.jobId,
    seen,
    input.schedule.initialDelayMs,
    seen.retryAfterMs,
    seen.state !== 'completed',
  );
  const base = { checks: n, providerStatus: seen.providerStatus, progress: seen.progress };
  if (seen.state !== 'completed' && input.mode === 'track') await cancelIfOverrun(kit, row, seen.cost);
  // A job submitted again after a proof of absence: is its first submission running beside it?
  // Read after this check's own outcome is recorded, so that it never delays the result.
  const audit = () =>
    auditResubmit(kit, row, input, seen.state === 'completed' || seen.state === 'failed' || seen.state === 'cancelled');
  if (seen.state !== 'completed' && seen.providerStatus !== row.provider_status) {
    await kit.store.findings.appendEvent(
      input.jobId,
      seen.state === 'unrecognised' ? 'unrecognised_status' : 'provider_status',
      null,
      {
        status: seen.providerStatus,
        state: seen.state,
      },
    );
  }

  if (seen.state === 'completed') return ending(await completeTask(kit, input, row, obs, n, until, undefined));
  if (seen.state === 'failed') {
    const error: JobError = {
      kind: 'provider_failed',
      code: seen.error?.code,
      message: seen.error?.message ?? 'provider reported failure',
      at: new Date().toISOString(),
    };
    await kit.store.findings.recordIncident({
      jobId: input.jobId,
      phase: 'status',
      kind: 'provider_failed',
      message: error.message,
      code: error.code,
      endpoint: evidence?.endpoint,
      httpStatus: evidence?.httpStatus,
      response: evidence?.body,
      headers: evidence?.headers,
      request: { taskId: input.taskId },
      at: evidence?.at,
      scope: incidentScope(input),
    });
    await audit();
    return { outcome: { ...base, kind: 'failed', error, note: 'the provider reported a terminal failure' } };
  }
  if (seen.state === 'cancelled') {
    await audit();
    return { outcome: { ...base, kind: 'cancelled' } };
  }
  if (now() >= deadline) return ending({ outcome: { ...base, kind: 'deadline' } });
  await audit();
  const delay = Math.min(Math.max(scheduleDelay(input.schedule, n), seen.retryAfterMs ?? 0), until);
  const what =
    seen.state === 'unrecognised'
      ? `unrecognised status "${seen.providerStatus}" (not final; polled on the normal schedule)`
      : `status "${seen.providerStatus}"`;
  return again(
    delay,
    `${what}; check ${n} done, next in ${(delay / 1000).toFixed(1)} s`,
    n,
    seen.providerStatus,
    seen.progress,
    seen.retryAfterMs ?? 0,
  );
}
