/**
 * Replays under our idempotency key during a reconcile (kinds whose key returns the same task: a
 * probe that can create nothing), and what the timeline records of them: each replay sent, its
 * answer, or its loss. A replay still in flight when its attempt ends goes on; its answer binds
 * the task in the store, and wakes the workflow if the reconcile was decided without it.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { ReplayReading } from '../../model/evidence.js';
import type { JobError } from '../../model/types.js';
import { isProviderError, ProviderError } from '../../providers/shared/errors.js';
import type { ResolvedProvider } from '../../providers/registry.js';
import type { JobRow } from '../../store/index.js';
import { settleReadMarginMs, submitAtProvider, submitTimeoutOf } from './attempt.js';
import { detachCall, type ActivityKit } from '../context.js';
import { wakeIfDecidedWithout } from './lateAnswer.js';
import type { SubmitJobInput } from './submit.js';

/** Replays of one submit round that may go unanswered within their answer window before the round is decided without one. */
export const LATE_REPLAY_RETRIES = 3;

/** Added to the submit timeout for a replay's answer window (the answer is recorded just after it arrives), ms. */
const REPLAY_ANSWER_MARGIN_MS = 1_000;

/** Retry delay of an attempt that ended with its replay in flight: the next one waits for the answer, ms. */
const REPLAY_RECHECK_MS = 1_000;

/**
 * What this submit round already knows from replays: a probe an earlier attempt of the round
 * made (`reconcile_replay`), else a refusal of the round's own submit as a reused key (a
 * `409` for our idempotency key: a job with it exists). Undefined when neither.
 */
export async function replaySoFar(
  kit: ActivityKit,
  jobId: string,
  lastIntent: number,
): Promise<ReplayReading | undefined> {
  const round = (await kit.store.findings.timeline(jobId)).filter((e) => Date.parse(e.at) >= lastIntent);
  const probe = round.filter((e) => e.type === 'reconcile_replay').at(-1);
  if (probe?.detail) return JSON.parse(probe.detail) as ReplayReading;
  for (const e of round) {
    if (e.type !== 'submit_ambiguous' || !e.detail) continue;
    const d = JSON.parse(e.detail) as { error?: JobError } & Partial<JobError>;
    const error = d.error ?? (d as JobError);
    if (error.kind === 'conflict')
      return { kind: 'conflict', detail: `${error.httpStatus ?? ''} ${error.message}`.trim() };
  }
  return undefined;
}

/**
 * The replays this submit round sent, as the timeline shows them (`reconcile_replay_sent`, each
 * closed by a `reconcile_replay` answer, a `reconcile_replay_lost` or a
 * `reconcile_replay_refused`): how many went unanswered (lost, or still open past their answer
 * window; a refusal is an answer that created nothing and does not count), and until when (epoch
 * ms) the last one may still answer, 0 when none is in flight.
 */
export async function replaysSent(
  kit: ActivityKit,
  jobId: string,
  lastIntent: number,
): Promise<{ unanswered: number; inFlightUntil: number }> {
  const round = (await kit.store.findings.timeline(jobId)).filter((e) => Date.parse(e.at) >= lastIntent);
  let unanswered = 0;
  let open: number | undefined;
  for (const e of round) {
    if (e.type === 'reconcile_replay_sent') {
      if (open !== undefined) unanswered++;
      open = Date.parse((JSON.parse(e.detail ?? '{}') as { answerBy?: string }).answerBy ?? '') || 0;
    } else if (e.type === 'reconcile_replay_lost') {
      if (open !== undefined) unanswered++;
      open = undefined;
    } else if (e.type === 'reconcile_replay' || e.type === 'reconcile_replay_refused') open = undefined;
  }
  if (open === undefined) return { unanswered, inFlightUntil: 0 };
  return open > Date.now() ? { unanswered, inFlightUntil: open } : { unanswered: unanswered + 1, inFlightUntil: 0 };
}

/**
 * Sends one replay under the same key (kinds whose key returns the same task: a probe that
 * costs no second job) and records it: `reconcile_replay_sent` with the time by which its answer
 * can come (the entry's submit timeout from the moment it leaves), then `reconcile_replay` with
 * the answer. A replay whose answer was lost (`reconcile_replay_lost`) is retried (transient). A
 * replay still in flight at the attempt's end goes on: its answer binds the task in the store
 * when it comes, and the retry this throws waits for it there.
 */
export async function probeReplay(
  kit: ActivityKit,
  job: SubmitJobInput['job'],
  row: JobRow,
  resolved: ResolvedProvider,
  budgetMs: number,
): Promise<ReplayReading> {
  let sentAt = Date.now();
  const call = submitAtProvider(kit, job, {
    onSend: async () => {
      const timeoutMs = submitTimeoutOf(resolved);
      const margin = Math.max(REPLAY_ANSWER_MARGIN_MS, timeoutMs / 10); // the record's own write, clocks
      const answerBy = new Date(Date.now() + timeoutMs + margin).toISOString();
      await kit.store.findings.appendEvent(job.jobId, 'reconcile_replay_sent', row.state, { answerBy });
      sentAt = Date.now();
    },
  }).then(
    (acc): ReplayReading => ({
      kind: 'same-task',
      taskId: acc.taskId,
      providerStatus: acc.providerStatus,
      ...(acc.submitAnswer ? { submitAnswer: acc.submitAnswer } : {}),
    }),
    (e: unknown): ReplayReading | Error => {
      if (isProviderError(e) && e.kind === 'conflict')
        return { kind: 'conflict', detail: `${e.details.httpStatus ?? ''} ${e.message}`.trim() };
      return e instanceof Error ? e : new Error(String(e));
    },
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>(
    (resolve) => (timer = setTimeout(() => resolve('late'), Math.max(1, budgetMs - settleReadMarginMs()))),
  );
  const first = await Promise.race([call, late]);
  clearTimeout(timer);
  if (first === 'late') {
    // Whatever the late replay ends with is recorded where the next attempt reads it: the task
    // (bound), a refusal of our key (a reading), or its loss (the wait for it ends there).
    detachCall(
      call
        .then((r) =>
          r instanceof Error
            ? closeUnanswered(kit, job.jobId, row.state, r)
            : r.kind === 'same-task'
              ? bindLate(kit, job, r, sentAt)
              : kit.store.findings.appendEvent(job.jobId, 'reconcile_replay', row.state, r),
        )
        .catch(() => undefined), // a store that cannot take it: the wait for the replay ends at its window
    );
    throw ApplicationFailure.create({
      type: 'Reconcile.replayPending',
      message: 'the replay under our key had not answered within the attempt; its answer is waited for',
      nextRetryDelay: REPLAY_RECHECK_MS,
      category: ApplicationFailureCategory.BENIGN,
    });
  }
  if (first instanceof Error) {
    await closeUnanswered(kit, job.jobId, row.state, first);
    if (isProviderError(first) && first.kind === 'ambiguous')
      throw new ProviderError('transient', `the replay's answer was lost too: ${first.message}`, first.details);
    throw first;
  }
  await kit.store.findings.appendEvent(job.jobId, 'reconcile_replay', row.state, first);
  return first;
}

/**
 * Closes a replay that brought no reading: `reconcile_replay_lost` when its answer may have been
 * lost (a timeout, a cut connection: it counts towards {@link LATE_REPLAY_RETRIES}), else
 * `reconcile_replay_refused` (the provider answered, and created nothing: a 429, a 5xx it
 * declares unprocessed, a refused credential). Only events the store took are recorded.
 */
async function closeUnanswered(kit: ActivityKit, jobId: string, state: string, e: Error): Promise<void> {
  const lost = !isProviderError(e) || e.kind === 'ambiguous';
  await kit.store.findings
    .appendEvent(jobId, lost ? 'reconcile_replay_lost' : 'reconcile_replay_refused', state, { message: e.message })
    .catch(() => undefined); // the wait for the replay then ends at its window
}

/**
 * Binds the task a replay answered after its attempt ended, and wakes the workflow when the
 * reconcile was decided without that answer meanwhile (the job waits for an operator): it then
 * reconciles again and adopts the task from the store.
 */
async function bindLate(
  kit: ActivityKit,
  job: SubmitJobInput['job'],
  r: Extract<ReplayReading, { kind: 'same-task' }>,
  sentAt: number,
): Promise<void> {
  const bound = await kit.store.jobs.bindTask({
    jobId: job.jobId,
    taskId: r.taskId,
    providerStatus: r.providerStatus,
    source: 'reconcile: idempotent replay under our key (answered late)',
    providerAccount: kit.deps.providers.resolve(job.provider, job.account).providerAccount,
    submitAnswer: r.submitAnswer,
  });
  if (bound.kind === 'collision') {
    // The answer is a reading all the same: the next attempt decides on it (a task of another job is not ours).
    await kit.store.findings.appendEvent(job.jobId, 'reconcile_replay', null, r);
    return;
  }
  if (bound.kind === 'bound' && bound.recorded)
    await wakeIfDecidedWithout(kit.store, kit.deps.temporal, { jobId: job.jobId, workflowId: job.workflowId }, sentAt);
}
