/**
 * Reconciling a submit whose answer was lost (workflows v2 and v3), on evidence only: the store first (an
 * answer recorded by an earlier attempt, however late), then what the provider kind declares its
 * replays and lookups can show (`src/model/evidence.ts`), read after their lag; a task is bound to
 * one job per provider account. The operator's way out of `unknown` (`adoptTask`) is in
 * `adopt.ts`.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import {
  decideReconcile,
  EXISTENCE_PROVEN,
  type Candidate,
  type ExistenceProof,
  type LookupEvidence,
  type LookupReading,
  type ReconcileEvidence,
  type ReconcileEvidenceRecord,
} from '../../model/evidence.js';
import { providerKeys } from '../../providers/shared/keys.js';
import { recordReconcile } from '../../observability/metrics.js';
import { attemptBudget, SETTLE_READ_MARGIN_MS, submitTimeoutOf } from './attempt.js';
import type { ActivityKit } from '../context.js';
import type { JobEventRow } from '../../store/index.js';
import { LATE_REPLAY_RETRIES, probeReplay, replaySoFar, replaysSent } from './replay.js';
import type { SubmitJobInput } from './submit.js';
import { FailureType } from '../failureTypes.js';
import { failedReadDelay, failedReadPolicy, failedReadsSpent, HELD_LOCALLY } from '../../model/schedule.js';
import { DEFAULT_POLL_POLICY, type JobError } from '../../model/types.js';
import { isProviderError, type ProviderError } from '../../providers/shared/errors.js';

/**
 * Outcome of `reconcileJob`: `found` (adopt the task), `absent` (proven: submit again under the
 * same key) or `unresolvable` (the evidence cannot decide: the job waits in `unknown` for an
 * operator, with `evidence` showing what was read).
 */
export type ReconcileOutcome =
  | { kind: 'found'; taskId: string; via: 'store' | 'idempotent-replay' | 'list'; lookup?: string }
  | { kind: 'absent'; via: 'list' }
  /**
   * Nothing decides: an operator's turn. `lookAgain`: the provider proved our job exists and a
   * lookup may yet show it, so the workflow reads the lookups again now and then while it waits.
   */
  | { kind: 'unresolvable'; reason: string; evidence?: ReconcileEvidenceRecord; lookAgain?: boolean };

/**
 * When the wait of a `reconcile_settling` event ends, epoch ms: `worker`, its time plus the recorded
 * `readAgainInMs` (the writing worker's clock; an event without one ends at its own time), and
 * `server`, the recorded `serverEndsAt` (the Temporal server's clock, when the worker knew it).
 */
function settlingEnds(e: Pick<JobEventRow, 'at' | 'detail'>): { worker: number; server?: number } {
  let waitMs = 0;
  let server: number | undefined;
  try {
    const d = e.detail ? (JSON.parse(e.detail) as { readAgainInMs?: unknown; serverEndsAt?: unknown }) : {};
    if (typeof d.readAgainInMs === 'number') waitMs = d.readAgainInMs;
    if (typeof d.serverEndsAt === 'number') server = d.serverEndsAt;
  } catch {
    // An unreadable detail records no wait.
  }
  return { worker: Date.parse(e.at) + waitMs, ...(server === undefined ? {} : { server }) };
}

/**
 * When the server scheduled this attempt, epoch ms by the server's clock (undefined outside an
 * activity: unit tests calling directly). Only ever compared with a time by the same clock: a
 * server clock ahead of the worker's must not end a wait early.
 */
function attemptScheduledAt(): number | undefined {
  try {
    return Context.current().info.currentAttemptScheduledTimestampMs;
  } catch {
    return undefined;
  }
}

/** Counts a reconcile outcome (`found_store`, `found_list`, `absent`, `unresolvable`, …) and returns it. */
function reconciled(out: ReconcileOutcome): ReconcileOutcome {
  recordReconcile(out.kind === 'found' ? `found_${out.via.replace('-', '_')}` : out.kind);
  return out;
}

/**
 * The job's own webhook deliveries as a lookup: a delivery the receiver verified for this job (its
 * signature and our echoed reference, or the per-job token) that names a task is a strong match.
 * Deliveries come only on the provider's events, so they never prove absence.
 */
const DELIVERIES_LOOKUP: LookupEvidence = {
  name: 'webhook deliveries of this job',
  shows: [],
  finishedForMs: null,
  lagMs: 0,
  match: 'strong',
};

/** `evidence` with the job's webhook deliveries as a lookup when the entry has webhooks. */
function withDeliveries(evidence: ReconcileEvidence, webhooks: boolean): ReconcileEvidence {
  return webhooks ? { ...evidence, lookups: [...evidence.lookups, DELIVERIES_LOOKUP] } : evidence;
}

/** How often a reconcile waiting (by retrying) for a replay still in flight reads the store again, ms. */
const REPLAY_STORE_RECHECK_MS = 5_000;

/** How often a waiting reconcile re-reads the job row for a late answer, ms. */
const STORE_WATCH_MS = 500;

/** Ends the attempt with a BENIGN retry: a replay may still answer for `waitMs` (ms); the store is read again after at most 5 s. */
function replayPending(waitMs: number): never {
  throw ApplicationFailure.create({
    type: 'Reconcile.replayPending',
    message: `the replay under our key sent by an earlier attempt may still answer (for ${waitMs} ms); the store is read again in ${Math.min(waitMs, REPLAY_STORE_RECHECK_MS)} ms`,
    nextRetryDelay: Math.max(1, Math.min(waitMs, REPLAY_STORE_RECHECK_MS)),
    category: ApplicationFailureCategory.BENIGN,
  });
}

/** The longest wait an attempt started at `startedAt` (epoch ms) may still spend in itself, ms. */
function inlineWaitMs(kit: ActivityKit, startedAt: number): number {
  return Math.min(
    kit.deps.inlineSettleMs ?? Number.POSITIVE_INFINITY,
    attemptBudget(startedAt) - SETTLE_READ_MARGIN_MS,
  );
}

/** Watches the store for `waitMs` (ms) for a task recorded on the job (a late submit answer); returns it, or undefined. */
async function watchForTask(kit: ActivityKit, jobId: string, waitMs: number): Promise<string | undefined> {
  const until = Date.now() + waitMs;
  for (;;) {
    const row = await kit.store.jobs.get(jobId);
    if (row?.task_id) return row.task_id;
    const left = until - Date.now();
    if (left <= 0 || kit.signal()?.aborted) return undefined;
    await new Promise((r) => setTimeout(r, Math.min(STORE_WATCH_MS, left)));
  }
}

/** What the verified webhook deliveries of this job say: each task they name is a strong candidate. */
async function deliveriesReading(kit: ActivityKit, jobId: string): Promise<LookupReading> {
  const rows = await kit.store.webhooks.listDeliveries({ jobId, limit: 50 });
  const candidates = [...new Map(rows.filter((d) => d.task_id).map((d) => [d.task_id!, d])).values()].map(
    (d): Candidate => ({
      taskId: d.task_id!,
      providerStatus: d.provider_status ?? 'delivered',
      match: 'strong',
      why: `a webhook delivery verified for this job (${d.event_type}) names it`,
    }),
  );
  return {
    lookup: DELIVERIES_LOOKUP.name,
    available: true,
    complete: true,
    candidates,
    at: new Date().toISOString(),
  };
}

/** The provider answers that proved this job exists, from every submit round (timeline `existence_proven`). */
async function existenceProofs(kit: ActivityKit, jobId: string): Promise<ExistenceProof[]> {
  return (await kit.store.findings.timeline(jobId))
    .filter((e) => e.type === EXISTENCE_PROVEN)
    .map((e) => {
      const d = JSON.parse(e.detail ?? '{}') as { error?: JobError };
      const status = d.error?.httpStatus ? `${d.error.httpStatus} ` : '';
      const code = d.error?.code ? `${d.error.code}: ` : '';
      return { at: e.at, detail: `${status}${code}${d.error?.message ?? 'refused as a duplicate'}`.trim() };
    });
}

/**
 * A lookup read failed. A refusal (`permanent`, `unsupported`: a credential the lookup does not
 * take, a route not offered) leaves the job for an operator with the reason; a failure that may
 * pass (timeout, 5xx, 429) follows the failed-read discipline: counted on the row, retried after
 * the back-off (never before the provider's `Retry-After`) by ending the attempt with that retry
 * delay, and once the budget is spent the job waits for an operator with the last error.
 */
async function lookupFailed(kit: ActivityKit, input: SubmitJobInput, e: ProviderError): Promise<ReconcileOutcome> {
  const error = e.toJobError();
  if (e.kind !== 'transient' && e.kind !== 'cooldown' && e.kind !== 'ambiguous') {
    const reason = `the provider refused the lookup (${error.message}); whether the lost submit created a job cannot be checked automatically`;
    await kit.store.findings.appendEvent(input.job.jobId, 'reconcile_undecided', 'unknown', { reason, error });
    return { kind: 'unresolvable', reason };
  }
  // A lookup the worker held back itself (the key's shared cool-down: nothing was sent) is no failed
  // read: it is read again when the cool-down lets it out, and the job says what it waits for.
  if (e.kind === 'cooldown' && e.details.code === HELD_LOCALLY) {
    const waitMs = Math.max(1, e.details.retryAfterMs ?? 1_000);
    await kit.store.polling.recordWait(input.job.jobId, {
      reason: 'cooldown',
      message: `the reconcile's lookups are held back: ${error.message}`,
      until: new Date(Date.now() + waitMs).toISOString(),
    });
    throw ApplicationFailure.create({
      type: 'Reconcile.lookupHeld',
      message: `lookup held back (nothing sent): ${error.message}`,
      nextRetryDelay: waitMs,
      category: ApplicationFailureCategory.BENIGN,
    });
  }
  const p = input.failedReads ?? failedReadPolicy(DEFAULT_POLL_POLICY);
  const streak = await kit.store.polling.recordReadError(
    input.job.jobId,
    error,
    (failures) => failedReadDelay(p, failures, e.details.retryAfterMs, Math.random()),
    { phase: 'lookup', ...(e.details.retryAfterMs !== undefined ? { retryAfterMs: e.details.retryAfterMs } : {}) },
  );
  if (failedReadsSpent(p, streak.failures, streak.since, Date.now())) {
    const minutes = Math.round((Date.now() - streak.since) / 60_000);
    const reason = `${streak.failures} lookups failed in a row over ${minutes} min (last: ${error.message}); whether the lost submit created a job is not known`;
    await kit.store.findings.appendEvent(input.job.jobId, 'reconcile_undecided', 'unknown', { reason, error });
    return { kind: 'unresolvable', reason };
  }
  throw ApplicationFailure.create({
    type: FailureType[e.kind],
    message: `lookup failed (${streak.failures} in a row of at most ${p.limit}): ${error.message}`,
    details: [error],
    nextRetryDelay: streak.delayMs,
  });
}

/** Records that the job waits for an operator, and why (its row: `status`, the API), and returns the outcome. */
async function forOperator(kit: ActivityKit, jobId: string, out: Extract<ReconcileOutcome, { kind: 'unresolvable' }>) {
  await kit.store.polling.recordWait(jobId, { reason: 'operator', message: out.reason });
  return reconciled(out);
}

/**
 * Reconciles an ambiguous submit before any new submission, on evidence only: the store first
 * (an answer recorded by an earlier attempt, however late), then — where the kind declares a
 * replay that answers — one replay under the same key per submit round, then every lookup the
 * kind declares; {@link decideReconcile} decides. `found` binds the task (a task bound to
 * another job of the same provider account is never adopted: that candidate is not ours, and
 * the collision is in the timeline); `absent` only when lookups able to show the job in every
 * state it could be in were read after their lag; a decision that a later read could still
 * change ends the attempt with a BENIGN retry at that time (the lag, or the submit's own
 * timeout, so that a late answer is seen first); anything else is `unresolvable` with the
 * evidence, for an operator. Every reading is in the timeline (`reconcile_*` events).
 */
export async function reconcileJob(kit: ActivityKit, input: SubmitJobInput): Promise<ReconcileOutcome> {
  const startedAt = Date.now();
  const { job } = input;
  const row = await kit.store.jobs.get(job.jobId);
  if (row?.task_id) return reconciled({ kind: 'found', taskId: row.task_id, via: 'store' });
  if (!row) throw new Error(`job ${job.jobId} is not registered`);
  const keys = providerKeys(job.account, job.key);
  const resolved = kit.deps.providers.resolve(job.provider, job.account);
  await kit.store.jobs.setProviderAccount(job.jobId, resolved.providerAccount, resolved.providerKey);
  const evidence = withDeliveries(resolved.adapter.evidence, resolved.entry.webhook !== undefined);
  const lastIntent = Date.parse(row.submit_intent_at ?? row.created_at);
  const createdBy = lastIntent + submitTimeoutOf(resolved);
  let replay = await replaySoFar(kit, job.jobId, lastIntent);
  // A replay still in flight is waited for before the lookups are read again (they cost requests).
  if (evidence.replay === 'same-task' && !replay) {
    const { inFlightUntil } = await replaysSent(kit, job.jobId, lastIntent);
    if (inFlightUntil && inFlightUntil - Date.now() > inlineWaitMs(kit, startedAt))
      replayPending(inFlightUntil - Date.now());
  }
  for (;;) {
    let readings: LookupReading[] = [];
    if (resolved.adapter.evidence.lookups.length) {
      try {
        readings = await kit.call(job.provider, job.account, (p) =>
          p.adapter.findSubmitted({
            apiKey: p.apiKey,
            secrets: kit.secrets(),
            signal: kit.signal(),
            clientRef: keys.clientRef,
            request: job.request,
            submittedAfter: row.created_at,
          }),
        );
      } catch (e) {
        if (!isProviderError(e)) throw e;
        const out = await lookupFailed(kit, input, e);
        return out.kind === 'unresolvable' ? forOperator(kit, job.jobId, out) : reconciled(out);
      }
      await kit.store.polling.clearReadErrors(job.jobId);
    }
    if (evidence !== resolved.adapter.evidence) readings.push(await deliveriesReading(kit, job.jobId));
    const again = await kit.store.jobs.get(job.jobId); // an answer may have landed while we read
    if (again?.task_id) return reconciled({ kind: 'found', taskId: again.task_id, via: 'store' });
    const now = Date.now();
    // This round already waited out the lags (in this attempt, or an earlier one whose retry
    // delay the server kept): a settling wait of this round that has ended, and that lasted
    // until every lookup's lag after the submit's timeout. One still running proves nothing
    // (another reconcile of the same job, the cancel path's, or an attempt retried early reads
    // the lookups before their lag), nor does one that only waited out the submit's timeout.
    const lagsEndAt =
      createdBy +
      Math.max(0, ...resolved.adapter.evidence.lookups.map((l) => resolved.entry.reconcile?.settleMs ?? l.lagMs));
    // Each end is compared with now by its own clock: the worker's, or the server's schedule of
    // this attempt for a wait whose end by the server's clock was recorded.
    const scheduledAt = attemptScheduledAt();
    const settled = (await kit.store.findings.timeline(job.jobId)).some((e) => {
      if (e.type !== 'reconcile_settling' || Date.parse(e.at) < lastIntent) return false;
      const ends = settlingEnds(e);
      const ended =
        ends.worker <= now || (ends.server !== undefined && scheduledAt !== undefined && ends.server <= scheduledAt);
      return ended && ends.worker >= lagsEndAt;
    });
    const decide = async () => {
      const taskIds = [
        ...readings.flatMap((r) => r.candidates.map((c) => c.taskId)),
        ...(replay && replay.kind !== 'conflict' ? [replay.taskId] : []),
      ];
      const boundElsewhere = await kit.store.jobs.tasksBoundElsewhere({
        providerAccount: resolved.providerAccount,
        provider: job.provider,
        taskIds,
        exceptJobId: job.jobId,
      });
      return decideReconcile({
        evidence,
        lagOverrideMs: resolved.entry.reconcile?.settleMs,
        readings,
        replay,
        existence: await existenceProofs(kit, job.jobId),
        createdBy,
        firstSubmitAt: Date.parse(row.created_at),
        now,
        boundElsewhere,
        settled,
      });
    };
    let d = await decide();
    // Lookups first; a replay only where the kind's key returns the same task (a probe that can
    // create nothing) and the lookups could not decide. A key that only refuses (`409`) is never
    // probed: a provider that misses it (a replica lag) would start a second paid job.
    // A replay an earlier attempt sent that may still answer is waited for, in the store where
    // its answer is recorded; one that never answers is decided on the rest of the evidence
    // after a few.
    if (evidence.replay === 'same-task' && !replay && d.kind !== 'found' && d.kind !== 'absent') {
      let sent = await replaysSent(kit, job.jobId, lastIntent);
      if (sent.inFlightUntil) {
        const waitMs = sent.inFlightUntil - Date.now();
        if (waitMs > inlineWaitMs(kit, startedAt)) replayPending(waitMs);
        const recorded = await watchForTask(kit, job.jobId, waitMs);
        if (recorded) return reconciled({ kind: 'found', taskId: recorded, via: 'store' });
        if (kit.signal()?.aborted) replayPending(waitMs); // the attempt is cancelled: nothing more from it
        // What the replay ended with, if anything was recorded meanwhile.
        replay = await replaySoFar(kit, job.jobId, lastIntent);
        sent = await replaysSent(kit, job.jobId, lastIntent);
        if (!replay && sent.inFlightUntil) replayPending(sent.inFlightUntil - Date.now());
      }
      if (!replay && sent.unanswered < LATE_REPLAY_RETRIES)
        replay = await probeReplay(kit, job, row, resolved, attemptBudget(startedAt));
      if (replay) d = await decide();
    }
    // Until the submit's own timeout has passed its answer may still come: nothing but a found
    // task is concluded before then.
    if (d.kind !== 'found' && !settled && now < createdBy)
      d = {
        kind: 'settling',
        readAt: Math.max(createdBy, d.kind === 'settling' ? d.readAt : 0),
        evidence: d.evidence,
      };
    if (d.evidence.collisions.length)
      await kit.store.findings.appendEvent(job.jobId, 'task_collision', 'unknown', {
        collisions: d.evidence.collisions,
      });
    switch (d.kind) {
      case 'found': {
        const bound = await kit.store.jobs.bindTask({
          jobId: job.jobId,
          taskId: d.taskId,
          providerStatus: d.providerStatus,
          source: `reconcile: ${d.via === 'replay' ? 'idempotent replay under our key' : `found by client reference in ${d.lookup}`}`,
          trackingDeadlineMs: input.trackingDeadlineMs,
          providerAccount: resolved.providerAccount,
          submitAnswer: d.submitAnswer,
        });
        if (bound.kind === 'collision') {
          const reason = `the task found (${d.taskId}) was bound to job ${bound.boundTo} meanwhile; it is not this job's`;
          await kit.store.findings.appendEvent(job.jobId, 'reconcile_undecided', 'unknown', {
            reason,
            evidence: d.evidence,
          });
          return forOperator(kit, job.jobId, { kind: 'unresolvable', reason, evidence: d.evidence });
        }
        if (bound.kind === 'final')
          return reconciled({
            kind: 'unresolvable',
            reason: `the job is already ${bound.state}; task ${d.taskId} is kept in its timeline`,
            evidence: d.evidence,
          });
        await kit.store.findings.appendEvent(job.jobId, 'reconcile_found', 'pending', {
          taskId: bound.taskId,
          via: d.via,
          lookup: d.lookup,
          note: d.note,
          evidence: d.evidence,
        });
        return reconciled({
          kind: 'found',
          taskId: bound.taskId,
          via: d.via === 'replay' ? 'idempotent-replay' : 'list',
          lookup: d.lookup,
        });
      }
      case 'absent':
        await kit.store.findings.appendEvent(job.jobId, 'reconcile_absent', 'unknown', {
          clientRef: keys.clientRef,
          evidence: d.evidence,
        });
        return reconciled({ kind: 'absent', via: 'list' });
      case 'settling': {
        const waitMs = Math.max(1_000, d.readAt - now);
        // Where the server's time is known, the wait's end by its clock too: a retry delay the
        // server keeps ends by that clock (skipped time in tests, which the worker's clock never sees).
        const serverEndsAt = kit.deps.serverTime ? (await kit.serverClock())() + waitMs : undefined;
        await kit.store.findings.appendEvent(job.jobId, 'reconcile_settling', 'unknown', {
          readAgainInMs: waitMs,
          ...(serverEndsAt === undefined ? {} : { serverEndsAt }),
          evidence: d.evidence,
        });
        recordReconcile('settling');
        await kit.store.polling.recordWait(job.jobId, {
          reason: 'evidence',
          message: `nothing found yet: the provider's lookups can lag, and the submit may still be answered; they are read again before anything is concluded`,
          until: new Date(Date.now() + waitMs).toISOString(),
        });
        // A wait that fits in this attempt is spent here watching the store, so that a late
        // answer recorded meanwhile is adopted at once; a longer one is the server's retry delay.
        if (waitMs <= inlineWaitMs(kit, startedAt)) {
          const recorded = await watchForTask(kit, job.jobId, waitMs);
          if (recorded) return reconciled({ kind: 'found', taskId: recorded, via: 'store' });
          continue;
        }
        throw ApplicationFailure.create({
          type: 'Reconcile.settling',
          message: `nothing found yet; the provider's lookups can lag and the submit may still be answered, so they are read again in ${waitMs} ms before anything is concluded`,
          nextRetryDelay: waitMs,
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      case 'undecided':
        await kit.store.findings.appendEvent(job.jobId, 'reconcile_undecided', 'unknown', {
          reason: d.reason,
          evidence: d.evidence,
        });
        return forOperator(kit, job.jobId, {
          kind: 'unresolvable',
          reason: d.reason,
          evidence: d.evidence,
          ...(d.evidence.existence?.length && resolved.adapter.evidence.lookups.length ? { lookAgain: true } : {}),
        });
    }
  }
}
