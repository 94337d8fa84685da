/**
 * The evidence model of reconciliation: what each provider kind's lookups and replays can prove
 * about a submit whose answer was lost, and the one decision made from what they showed.
 *
 * A provider kind declares, per operation, a {@link ReconcileEvidence}: what a second submit under
 * the same idempotency key answers, and for each lookup (a list, a search, a stored input) which
 * job states it shows, how long a finished job stays in it, how long a new job may take to appear
 * and how strongly a listed job can be matched to ours. The reconcile activity reads the lookups and
 * hands the readings to {@link decideReconcile}, which knows only three outcomes:
 *
 * - **found**: exactly one job carries our client reference (a strong match), or a replay returned
 *   the task: adopt it;
 * - **absent**: lookups declared able to show this job in every state it could be in by now, each
 *   read after its declared lag, showed nothing that could be ours, and no replay proved that a
 *   job exists: the caller may submit again under the same key;
 * - **undecided**: anything else, with the evidence gathered, for an operator. A weak match (URL and
 *   time) is never adopted, an unreadable candidate is never counted as "not ours", and a lookup
 *   that cannot show finished jobs never proves that a fast job is absent.
 *
 * Pure code: no I/O, no clock (times come in as arguments); safe to import anywhere.
 */

/** The stages of a provider job a lookup may show; `finished` covers completed, failed and cancelled jobs. */
export type JobPhase = 'queued' | 'running' | 'finished';

/** Every phase a job may be in by the time it is looked up. */
const ALL_PHASES: readonly JobPhase[] = ['queued', 'running', 'finished'];

/** What one lookup of a provider can show about a job of this entry's type (see the module docs). */
export interface LookupEvidence {
  /** The lookup as the provider names it, e.g. `GET /v2/crawl/active` (shown in evidence and in docs/providers.md). */
  name: string;
  /** The phases of a job of this type that it lists (empty: it never shows this job type). */
  shows: readonly JobPhase[];
  /** How long a finished job stays visible, ms; null: as long as the provider keeps the job. */
  finishedForMs: number | null;
  /** How long after its creation a job may still be missing from the lookup, ms. */
  lagMs: number;
  /** `strong`: our client reference is read back from the provider's record; `weak`: only URL, inputs and time can be compared. */
  match: 'strong' | 'weak';
}

/**
 * What a second submit under the same idempotency key answers at this provider:
 * - `none`: there is no key (or it is ignored): a second submit is a second job;
 * - `same-task`: the same task ID comes back and nothing new is created;
 * - `conflict`: a refusal (`409`) without the task ID, which proves that a job with our key exists.
 *   Such a key is never probed by a replay (a provider that misses it, e.g. behind a replica lag,
 *   would start a second paid job): only the answers our own submits got count.
 */
export type ReplayEvidence = 'none' | 'same-task' | 'conflict';

/** A provider operation's declared evidence (per kind and operation; see the module docs). */
export interface ReconcileEvidence {
  replay: ReplayEvidence;
  lookups: readonly LookupEvidence[];
  /**
   * Which jobs share a task-ID space: `credential` (another credential cannot read the task, so
   * tasks are one account's) or `host` (status reads need no credential: every entry reaching the
   * same API host can read any task).
   */
  taskScope: 'credential' | 'host';
  /** The document (and version or date read) this declaration follows. */
  source: string;
}

/** How a listed job compares with ours. */
export type CandidateMatch =
  /** It carries our client reference. */
  | 'strong'
  /** URL, inputs and time fit, but nothing of ours is echoed: another job may fit as well. */
  | 'weak'
  /** Its reference or inputs were read and are not ours. */
  | 'foreign'
  /** Its reference or inputs could not be read (a 404 or refusal on the stored input): it may or may not be ours. */
  | 'unreadable';

/** One provider job a lookup showed that could be the one our lost submit created. */
export interface Candidate {
  taskId: string;
  /** The provider's raw status word, as listed. */
  providerStatus: string;
  match: CandidateMatch;
  /** The provider's creation time (UTC ISO-8601), when listed. */
  createdAt?: string | null;
  /** Why it matched as it did, for the evidence (e.g. `INPUT record answered 404`). */
  why: string;
}

/** What one read of one lookup showed. */
export interface LookupReading {
  /** {@link LookupEvidence.name} of the lookup read. */
  lookup: string;
  /** False when the provider answered that this lookup is not offered (e.g. a `404` route). */
  available: boolean;
  /** True when the read covered every job of the window (no page or read bound was reached). */
  complete: boolean;
  /** Jobs that could be ours (foreign ones included, for the evidence). */
  candidates: Candidate[];
  /** UTC ISO-8601 time of the read. */
  at: string;
  /** Anything else worth showing an operator (why a reading is incomplete: a bound reached, an entry unreadable; a 404 route). */
  note?: string;
}

/** What a replay under the same key answered (`submitAnswer`: what the adapter keeps of the answer, see `Accepted`). */
export type ReplayReading =
  | { kind: 'same-task'; taskId: string; providerStatus: string; submitAnswer?: Record<string, unknown> }
  /** The provider refused the key as used: a job with our key exists. */
  | { kind: 'conflict'; detail: string }
  /** The provider ignored the key and created a job: it is ours, and an earlier one may exist too. */
  | { kind: 'new-task'; taskId: string; providerStatus: string; submitAnswer?: Record<string, unknown> };

/**
 * The timeline event that records a provider answer proving our job exists (a submit refused as a
 * duplicate of our own: a `409` for our idempotency key, a refusal naming our reference). It is
 * read by every later reconcile, whichever submit round it came in.
 */
export const EXISTENCE_PROVEN = 'existence_proven';

/** A provider answer that proved our job exists: when, and what it said. */
export interface ExistenceProof {
  /** UTC ISO-8601. */
  at: string;
  /** The answer, as recorded (HTTP status, code, message). */
  detail: string;
}

/** The facts {@link decideReconcile} decides from. Times are epoch ms. */
export interface ReconcileFacts {
  evidence: ReconcileEvidence;
  /** The lag to assume for every lookup when the configuration overrides the declared ones, ms. */
  lagOverrideMs?: number;
  readings: readonly LookupReading[];
  replay?: ReplayReading;
  /** The latest moment our submit may have created the job: the last submit intent plus the submit's HTTP timeout. */
  createdBy: number;
  /** When our first submit could have created it (the first submit intent): how long a fast job may have been finished. */
  firstSubmitAt: number;
  /** Now. */
  now: number;
  /**
   * A settling wait of this submit round has ended, and it lasted until every lookup's lag after
   * the submit's timeout (the caller checks both from the recorded wait): every reading now counts
   * as read after its lag. A wait still running, or one that only waited out the submit's timeout,
   * is not this.
   */
  settled?: boolean;
  /** Task IDs already bound to another of our jobs in the same provider account: task ID → job ID. */
  boundElsewhere: ReadonlyMap<string, string>;
  /** Answers that proved our job exists, from any submit round: absence can then never be concluded. */
  existence?: readonly ExistenceProof[];
}

/** A summary of what was read, kept in the timeline and shown to an operator. */
export interface ReconcileEvidenceRecord {
  replay?: ReplayReading;
  /** Answers that proved our job exists (see {@link ExistenceProof}). */
  existence?: ExistenceProof[];
  /** Each reading, its candidates bound elsewhere marked `foreign`; `afterLag`: read after the lookup's lag. */
  readings: (LookupReading & { afterLag: boolean })[];
  /** Phases that reads taken after their lag could show (absence is proven only when all are covered). */
  covered: JobPhase[];
  /** Candidates that are bound to another job of ours (never adopted). */
  collisions: { taskId: string; boundTo: string }[];
}

/** Outcome of {@link decideReconcile}. */
type ReconcileDecision =
  | {
      kind: 'found';
      taskId: string;
      providerStatus: string;
      via: 'replay' | 'lookup';
      lookup?: string;
      /** What the adapter keeps of the replay's answer (a task found by a lookup has none). */
      submitAnswer?: Record<string, unknown>;
      evidence: ReconcileEvidenceRecord;
      note?: string;
    }
  | { kind: 'absent'; evidence: ReconcileEvidenceRecord }
  /** Absence may still be proven by reading again at `readAt` (epoch ms), once the lookups' lag has passed. */
  | { kind: 'settling'; readAt: number; evidence: ReconcileEvidenceRecord }
  | { kind: 'undecided'; reason: string; evidence: ReconcileEvidenceRecord };

/** Whether a kind's evidence allows any automatic reconciliation (a replay or at least one lookup). */
export function canReconcile(e: ReconcileEvidence): boolean {
  return e.replay !== 'none' || e.lookups.length > 0;
}

/**
 * Phases that `lookups`, read after their lag, can show for a job whose first submit was at
 * `firstSubmitAt`, looked up at `at`: a lookup that keeps finished jobs for a limited time covers
 * `finished` only while that time exceeds the job's possible age.
 */
function coverage(l: LookupEvidence, firstSubmitAt: number, at: number): JobPhase[] {
  return l.shows.filter((p) => p !== 'finished' || l.finishedForMs === null || l.finishedForMs >= at - firstSubmitAt);
}

/**
 * Decides a reconciliation from its facts (see the module docs). Candidates bound to another of
 * our jobs are never adopted and are reported as collisions; a candidate's reference that could
 * not be read keeps the job undecided unless exactly one candidate carries our reference.
 */
export function decideReconcile(f: ReconcileFacts): ReconcileDecision {
  const byName = new Map(f.evidence.lookups.map((l) => [l.name, l]));
  const collisions: ReconcileEvidenceRecord['collisions'] = [];
  const readings = f.readings.map((r) => {
    const l = byName.get(r.lookup);
    const afterLag =
      l !== undefined && (f.settled === true || Date.parse(r.at) - f.createdBy >= (f.lagOverrideMs ?? l.lagMs));
    const candidates = r.candidates.map((c) => {
      const boundTo = f.boundElsewhere.get(c.taskId);
      if (boundTo === undefined || c.match === 'foreign') return c;
      collisions.push({ taskId: c.taskId, boundTo });
      return { ...c, match: 'foreign' as const, why: `${c.why}; already bound to job ${boundTo}` };
    });
    return {
      lookup: r.lookup,
      available: r.available,
      complete: r.complete,
      at: r.at,
      afterLag,
      candidates,
      ...(r.note ? { note: r.note } : {}),
    };
  });
  const covered = new Set<JobPhase>();
  for (const r of readings) {
    const l = byName.get(r.lookup);
    if (l && r.available && r.complete && r.afterLag)
      for (const p of coverage(l, f.firstSubmitAt, Date.parse(r.at))) covered.add(p);
  }
  const evidence: ReconcileEvidenceRecord = {
    ...(f.replay ? { replay: f.replay } : {}),
    ...(f.existence?.length ? { existence: [...f.existence] } : {}),
    readings,
    covered: ALL_PHASES.filter((p) => covered.has(p)),
    collisions,
  };

  if (f.replay?.kind === 'same-task' || f.replay?.kind === 'new-task') {
    const boundTo = f.boundElsewhere.get(f.replay.taskId);
    if (boundTo !== undefined)
      return {
        kind: 'undecided',
        reason: `the replay under our key returned task ${f.replay.taskId}, which is bound to job ${boundTo}`,
        evidence,
      };
    const note =
      f.replay.kind === 'new-task'
        ? 'the provider ignored our idempotency key and created this task on the replay: an earlier task of this request may exist as well'
        : undefined;
    return {
      kind: 'found',
      taskId: f.replay.taskId,
      providerStatus: f.replay.providerStatus,
      via: 'replay',
      ...(f.replay.submitAnswer ? { submitAnswer: f.replay.submitAnswer } : {}),
      evidence,
      ...(note ? { note } : {}),
    };
  }

  const all = readings.flatMap((r) => r.candidates.map((c) => ({ ...c, lookup: r.lookup })));
  const strong = unique(all.filter((c) => c.match === 'strong'));
  if (strong.length === 1)
    return {
      kind: 'found',
      taskId: strong[0]!.taskId,
      providerStatus: strong[0]!.providerStatus,
      via: 'lookup',
      lookup: strong[0]!.lookup,
      evidence,
    };
  if (strong.length > 1) {
    return {
      kind: 'undecided',
      reason: `${strong.length} provider jobs carry our client reference (${strong.map((c) => c.taskId).join(', ')}): a duplicate exists; resolve with the task to keep and cancel the other`,
      evidence,
    };
  }
  const weak = unique(all.filter((c) => c.match === 'weak'));
  const unreadable = unique(all.filter((c) => c.match === 'unreadable'));
  if (weak.length > 0 || unreadable.length > 0) {
    const parts: string[] = [];
    if (weak.length)
      parts.push(
        `${weak.length} job(s) match only by URL and time (${weak.map((c) => c.taskId).join(', ')}), which another job could match too`,
      );
    if (unreadable.length)
      parts.push(
        `${unreadable.length} job(s) whose reference could not be read (${unreadable.map((c) => `${c.taskId}: ${c.why}`).join('; ')})`,
      );
    return {
      kind: 'undecided',
      reason: `${parts.join(', and ')}; never adopted automatically: resolve with the right task ID, or resubmit`,
      evidence,
    };
  }
  if (f.replay?.kind === 'conflict') {
    return {
      kind: 'undecided',
      reason: `the provider refused our idempotency key as already used (${f.replay.detail}): a job with our key exists, but no lookup shows which; resolve with its task ID`,
      evidence,
    };
  }
  // Durable: an empty lookup, however complete, never outweighs the provider's own answer.
  const proof = f.existence?.at(-1);
  if (proof) {
    return {
      kind: 'undecided',
      reason: `the provider's answer at ${proof.at} proved our job exists (${proof.detail}), but no lookup shows which task it is yet; nothing is submitted again: resolve with its task ID (or resubmit, if you know it is gone)`,
      evidence,
    };
  }
  if (f.evidence.lookups.length === 0) {
    return {
      kind: 'undecided',
      reason:
        'this provider has no lookup that can show a job and no idempotency key that answers a replay: whether the lost submit created a job cannot be checked automatically',
      evidence,
    };
  }
  if (ALL_PHASES.every((p) => covered.has(p))) return { kind: 'absent', evidence };

  // Not yet proven: will a read after the lag complete the coverage?
  const possible = new Set<JobPhase>();
  let readAt = 0;
  for (const l of f.evidence.lookups) {
    const reading = readings.find((r) => r.lookup === l.name);
    if (reading && (!reading.available || !reading.complete)) continue; // unavailable or bounded now: waiting does not help
    for (const p of coverage(l, f.firstSubmitAt, Math.max(f.now, f.createdBy + (f.lagOverrideMs ?? l.lagMs))))
      possible.add(p);
    readAt = Math.max(readAt, f.createdBy + (f.lagOverrideMs ?? l.lagMs));
  }
  if (ALL_PHASES.every((p) => possible.has(p)) && readAt > f.now && !f.settled)
    return { kind: 'settling', readAt, evidence };
  const missing = ALL_PHASES.filter((p) => !covered.has(p));
  const unavailable = readings.filter((r) => !r.available).map((r) => r.lookup);
  const bounded = readings
    .filter((r) => r.available && !r.complete)
    .map((r) => `${r.lookup} (${r.note ?? 'its listing ended at its bound'})`);
  const why = [
    `no lookup read after its lag can show a job that is ${missing.join(' or ')}`,
    ...(unavailable.length ? [`not offered here: ${unavailable.join(', ')}`] : []),
    ...(bounded.length ? [`read incompletely: ${bounded.join(', ')}`] : []),
  ];
  return {
    kind: 'undecided',
    reason: `absence cannot be proven (${why.join('; ')}); the job may exist at the provider`,
    evidence,
  };
}

function unique<T extends { taskId: string }>(xs: T[]): T[] {
  const seen = new Set<string>();
  return xs.filter((x) => (seen.has(x.taskId) ? false : (seen.add(x.taskId), true)));
}

/** One line per lookup for the evidence table of docs/providers.md: `GET /x (queued, running; lag 30 s; strong)`. */
export function describeEvidence(e: ReconcileEvidence): string {
  const replay =
    e.replay === 'none'
      ? 'no idempotency key'
      : e.replay === 'same-task'
        ? 'a replay under our key returns the task'
        : 'a `409` for our key proves a job exists (never probed: a missed key would start a second job)';
  const lookups = e.lookups.map((l) => {
    const shows =
      l.shows.length === 0
        ? 'never this job type'
        : l.shows
            .map((p) => (p === 'finished' && l.finishedForMs !== null ? `finished ≤ ${formatMs(l.finishedForMs)}` : p))
            .join(', ');
    return `\`${l.name}\` (${shows}; lag ${formatMs(l.lagMs)}; ${l.match})`;
  });
  return [replay, ...(lookups.length ? lookups : ['no lookup'])].join('; ');
}

function formatMs(ms: number): string {
  if (ms >= 2 * 86_400_000 && ms % 86_400_000 === 0) return `${ms / 86_400_000} days`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}
