/**
 * The audit after a resubmit: a submit that reconcile proved absent is sent again, and that proof
 * holds only as long as the provider's lookups keep the lag they declare. A lookup that lags
 * longer hid the first job, which then still runs (and bills) beside the second. So once a job
 * submitted again has a task, its lookups are read once more, after the window the proof relied
 * on has passed a second time, and any other job they show for this request is reported:
 * - a **strong** match (our client reference read back) is our own first submission: a duplicate
 *   paid job. It is recorded (`duplicate_provider_job` event and incident, both task IDs, the
 *   readings) and asked to cancel at the provider (it is ours and its result is never read; a
 *   finished one answers that it is final; a cancel without an answer is asked again at the next
 *   checks, {@link CANCEL_RETRIES} times);
 * - a **weak** match (URL and time only), or one whose reference could not be read, may be
 *   another client's job: it is recorded as a `possible_duplicate` for an operator and nothing is
 *   done to it.
 * A failed read, or a lookup not offered or read only up to its bound, is recorded as inconclusive,
 * never as clean.
 * The lookups are read at the first check past that window and, unless that read found something,
 * once more at the job's end (a lag longer than the job's whole run goes unseen): at most two reads
 * per resubmitted job (`resubmit_audit` events). The audit never changes the job's own state or
 * result.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { JobRow } from '../../store/index.js';
import type { LookupReading } from '../../model/evidence.js';
import { recordReconcile } from '../../observability/metrics.js';
import { isProviderError } from '../../providers/shared/errors.js';
import { providerKeys } from '../../providers/shared/keys.js';
import type { ActivityKit } from '../context.js';
import type { TrackStatusInput } from '../tracking/pollTypes.js';
import { submitTimeoutOf } from './attempt.js';

/** What one audit concluded: `not_due` (nothing read yet), `skipped` (nothing to audit) or the audit recorded. */
export type ResubmitAuditOutcome =
  { kind: 'skipped' | 'not_due' } | { kind: 'audited'; duplicates: string[]; possible: string[] };

/** How many times a duplicate's cancel that got no answer is asked again (once per later status check). */
const CANCEL_RETRIES = 3;

/** The detail of a `resubmit_audit` event. */
interface AuditRecord {
  taskId?: string;
  /** Read at the job's end. */
  final?: boolean;
  /** Strong matches other than our task: our own first submissions. */
  duplicates?: string[];
  /** Weak or unreadable matches: an operator decides. */
  possible?: string[];
  /** Duplicates whose cancel got no answer yet. */
  cancelPending?: string[];
  /** A lookup was not offered or was read only up to its bound: nothing else found proves nothing. */
  inconclusive?: boolean;
  [k: string]: unknown;
}

/** Waits before a duplicate's unanswered cancel is asked again at the job's end, where no later check would, ms. */
const FINAL_CANCEL_BACKOFF_MS = [500, 2_000];

/** How many jobs' audit progress one worker remembers (the oldest is forgotten first; forgetting costs one timeline read). */
const MEMO_LIMIT = 20_000;

/**
 * Per job and task, what this worker (its kit) already knows, so that a status check of a job
 * submitted more than once (a refused submit sent again is one) reads the timeline only until that
 * is settled: `done` (nothing to audit, or audited for good) or `final` (only the read at the end is
 * left); and when its read past the window is due (epoch ms): no timeline read before then.
 */
const memos = new WeakMap<ActivityKit, { memo: Map<string, 'done' | 'final'>; notBefore: Map<string, number> }>();

/** The audit memo of `kit` (made on first use). */
function memoOf(kit: ActivityKit) {
  let m = memos.get(kit);
  if (!m) memos.set(kit, (m = { memo: new Map(), notBefore: new Map() }));
  return m;
}

/**
 * Asks the provider to cancel each of `taskIds` (ours, never read); returns the answers and the
 * tasks whose cancel got none. `final`: no check follows, so an unanswered cancel is asked again
 * here, after {@link FINAL_CANCEL_BACKOFF_MS}; a wait for that ends at once when the attempt is
 * stopped (`kit.signal()`), and the tasks not yet answered are returned as unanswered.
 */
async function cancelDuplicatesOf(
  kit: ActivityKit,
  input: TrackStatusInput,
  row: JobRow,
  taskIds: string[],
  final = false,
): Promise<{ answers: Map<string, unknown>; failed: string[] }> {
  const answers = new Map<string, unknown>();
  let failed: string[] = [];
  for (const [round, waitMs] of [0, ...(final ? FINAL_CANCEL_BACKOFF_MS : [])].entries()) {
    const ask = round === 0 ? taskIds : failed;
    if (ask.length === 0) break;
    if (waitMs > 0) {
      // A stopped attempt asks nothing more: what is unanswered stays pending for a later check.
      const stopped = await delay(waitMs, false, { signal: kit.signal() }).catch(() => true);
      if (stopped) break;
    }
    failed = [];
    for (const taskId of ask) {
      try {
        answers.set(
          taskId,
          await kit.call(input.provider, input.account, (p) => p.adapter.cancel(taskId, kit.taskCall(p, row, taskId))),
        );
      } catch (e) {
        if (!isProviderError(e)) throw e;
        answers.set(taskId, { error: e.toJobError() });
        failed.push(taskId);
      }
    }
  }
  return { answers, failed };
}

/**
 * Audits job `row` (its task `input.taskId` known) when it was submitted again after a reconcile
 * proved its lost submit absent (see the module docs). `final`: the check that called it saw the
 * job end, so the audit reads now even before its window has passed twice. Cheap when there is
 * nothing to audit: a job submitted once is skipped without a store read, and what is settled is
 * remembered. Never throws for a provider answer (a failed read is recorded as inconclusive).
 * Throws what the store throws, and an adapter's or limiter's error that is not a provider answer.
 */
export async function auditResubmit(
  kit: ActivityKit,
  row: JobRow,
  input: TrackStatusInput,
  final: boolean,
): Promise<ResubmitAuditOutcome> {
  if (Number(row.submit_attempts) < 2) return { kind: 'skipped' };
  const { store } = kit;
  const { memo, notBefore } = memoOf(kit);
  const remember = (key: string, v: 'done' | 'final') => {
    memo.delete(key);
    memo.set(key, v);
    if (memo.size > MEMO_LIMIT) memo.delete(memo.keys().next().value!);
  };
  const key = `${input.jobId}\n${input.taskId}`;
  const known = memo.get(key);
  if (known === 'done' || (known === 'final' && !final)) return { kind: 'skipped' };
  if (!final && (notBefore.get(key) ?? 0) > Date.now()) return { kind: 'not_due' };
  const skip = (v: 'done' | 'final'): ResubmitAuditOutcome => (remember(key, v), { kind: 'skipped' });
  const cancelDuplicates = async (ids: string[]) => (await cancelDuplicatesOf(kit, input, row, ids)).failed;
  const timeline = await store.findings.timeline(input.jobId);
  const audits = timeline
    .filter((e) => e.type === 'resubmit_audit')
    .map((e) => JSON.parse(e.detail ?? '{}') as AuditRecord);
  // A duplicate whose cancel was not answered is asked again at later checks, a few times.
  const pending = audits.at(-1)?.cancelPending ?? [];
  if (pending.length) {
    const tries = timeline.filter((e) => e.type === 'duplicate_cancel_retry').length;
    if (tries >= CANCEL_RETRIES) return skip('done');
    const still = await cancelDuplicates(pending);
    await store.findings.appendEvent(input.jobId, 'duplicate_cancel_retry', null, {
      taskIds: pending,
      stillPending: still,
    });
    if (still.length === 0)
      await store.findings.appendEvent(input.jobId, 'resubmit_audit', null, { ...audits.at(-1), cancelPending: [] });
    return { kind: 'skipped' };
  }
  // Once at its window, once more at the job's end unless the first found something.
  if (audits.some((a) => a.final || a.duplicates?.length || a.possible?.length)) return skip('done');
  if (!final && audits.length > 0) return skip('final');
  // The task is known, so a proof of absence that led to it is already in the timeline.
  const absent = timeline.filter((e) => e.type === 'reconcile_absent').at(-1);
  if (!absent) return skip('done');
  const resolved = kit.deps.providers.resolve(input.provider, input.account);
  const evidence = resolved.adapter.evidence;
  if (evidence.lookups.length === 0) return skip('done');
  // The window the proof of absence relied on: the declared lags (or the entry's override) and the submit's own timeout.
  const lagMs = resolved.entry.reconcile?.settleMs ?? Math.max(...evidence.lookups.map((l) => l.lagMs));
  const windowMs = Math.max(lagMs, submitTimeoutOf(resolved));
  // From the proof, or from when the task came, whichever is later (a later round may have bound a task the lookups found).
  const dueAt = Math.max(Date.parse(absent.at), Date.parse(row.submitted_at ?? absent.at) || 0) + windowMs;
  if (!final && Date.now() < dueAt) {
    notBefore.set(key, dueAt);
    if (notBefore.size > MEMO_LIMIT) notBefore.delete(notBefore.keys().next().value!);
    return { kind: 'not_due' };
  }

  let readings: LookupReading[];
  try {
    readings = await kit.call(input.provider, input.account, (p) =>
      p.adapter.findSubmitted({
        apiKey: p.apiKey,
        secrets: kit.secrets(),
        signal: kit.signal(),
        clientRef: providerKeys(row.account, row.idem_key).clientRef,
        request: input.request,
        submittedAfter: row.created_at,
      }),
    );
  } catch (e) {
    if (!isProviderError(e)) throw e;
    // One failed read uses up the read past the window (never a read at every check); the one at the end remains.
    remember(key, final ? 'done' : 'final');
    recordReconcile('audit_inconclusive');
    await store.findings.appendEvent(input.jobId, 'resubmit_audit', null, {
      taskId: input.taskId,
      final,
      error: e.toJobError(),
      note: final
        ? 'the lookups could not be read at the job’s end: a first submission hidden by a lookup lag would go unseen'
        : 'the lookups could not be read; they are read again at the job’s end',
    });
    return { kind: 'audited', duplicates: [], possible: [] };
  }
  const others = readings.flatMap((r) =>
    r.candidates.filter((c) => c.taskId !== input.taskId).map((c) => ({ ...c, lookup: r.lookup })),
  );
  const boundElsewhere = await store.jobs.tasksBoundElsewhere({
    providerAccount: row.provider_account ?? resolved.providerAccount,
    provider: input.provider,
    taskIds: others.map((c) => c.taskId),
    exceptJobId: input.jobId,
  });
  const unbound = others.filter((c) => !boundElsewhere.has(c.taskId));
  const uniq = (xs: string[]) => [...new Set(xs)];
  const duplicates = uniq(unbound.filter((c) => c.match === 'strong').map((c) => c.taskId));
  // A candidate whose reference could not be read may be ours as well: it is never taken for "not ours".
  const possible = uniq(
    unbound
      .filter((c) => (c.match === 'weak' || c.match === 'unreadable') && !duplicates.includes(c.taskId))
      .map((c) => c.taskId),
  );
  // A lookup not offered, or read only up to its bound, cannot show that nothing else is there.
  const inconclusive = readings.some((r) => !r.available || !r.complete);
  const early = Date.now() < dueAt;
  // Every duplicate is asked to cancel, finished or not: a finished one answers that it is final.
  const { answers, failed } = await cancelDuplicatesOf(kit, input, row, duplicates, final);
  for (const taskId of duplicates) {
    const listed = unbound.find((c) => c.taskId === taskId)!;
    const detail = {
      taskId,
      ours: input.taskId,
      lookup: listed.lookup,
      why: listed.why,
      cancel: answers.get(taskId),
    };
    await store.findings.appendEvent(input.jobId, 'duplicate_provider_job', null, detail);
    await store.findings.recordIncident({
      jobId: input.jobId,
      phase: 'reconcile',
      kind: 'duplicate_provider_job',
      message: `a lookup that lagged past its declared window hid our first submission (task ${taskId}, ${listed.why}); it was proved absent and submitted again as task ${input.taskId}`,
      request: { taskId },
      response: detail,
    });
  }
  if (possible.length)
    await store.findings.appendEvent(input.jobId, 'possible_duplicate', null, {
      taskIds: possible,
      ours: input.taskId,
      note: 'listed for this URL since our first submit, matched by URL and time only: our hidden first submission or another client’s job; an operator decides',
    });
  recordReconcile(
    duplicates.length
      ? 'duplicate_found'
      : possible.length
        ? 'possible_duplicate'
        : inconclusive
          ? 'audit_inconclusive'
          : 'audit_clean',
  );
  const record: AuditRecord = {
    taskId: input.taskId,
    final,
    duplicates,
    possible,
    cancelPending: failed,
    inconclusive,
    ...(early ? { note: 'read at the job’s end, before the window had passed twice' } : {}),
    readings: readings.map((r) => ({ lookup: r.lookup, available: r.available, complete: r.complete, at: r.at })),
  };
  await store.findings.appendEvent(input.jobId, 'resubmit_audit', null, record);
  if (!failed.length) remember(key, final || duplicates.length || possible.length ? 'done' : 'final');
  return { kind: 'audited', duplicates, possible };
}
