/**
 * The conformance fault matrix: every provider kind, through every point where a provider's answer
 * can be lost or arrive late, every lookup and replay behaviour its published contract allows,
 * look-alike jobs of another client, repeating and empty result pages, binary bodies and cancels,
 * checked against invariants instead of scripted answers. One {@link KindSpec} per provider entry
 * (kind plus configuration); `defineConformanceMatrix(spec)` declares the vitest suite of one entry.
 *
 * How a suite runs: one fixture (the kind's fixture server, `test/fixtures/providers/<kind>/`) and
 * one real stack (`startProviderScenario`: worker on the run's Temporal dev server, SQLite store)
 * for the whole suite. fast-check chooses, from a fixed seed, a plan of rounds (see
 * {@link planMatrix}): each round sets one environment at the fixture (lookup behaviour, replay
 * behaviour, page behaviour, how long jobs run) and runs a handful of independent cases at once,
 * each with its own target URL so that faults and provider records can be told apart. The plan
 * covers every value of every dimension the fixture's `conformance.supports` allows; which values
 * meet in one case is what the seed decides. `CONFORMANCE_SEED` replays another seed; every failure
 * names the seed, the round and the case.
 *
 * A case: optionally a look-alike job of another client for the same URL, a binary body, an
 * armed answer fault (submit, status, result page, cancel or lookup: reset, 502, late, or dropped
 * before the provider acts); the job is started, cancelled once or twice where the case says so,
 * and followed until it is final or waits in `unknown` for an operator; then the harness acts as
 * the operator, from the provider's own record only (one job of ours there: `resolve` with its task
 * ID; none: `resolve --resubmit`), and follows it again.
 *
 * Invariants checked after every round (see {@link checkRound}):
 * - at most one provider job per logical request, unless an operator resubmitted (one more each);
 * - no final state that contradicts the provider's own record (`completed` needs the provider's
 *   completed job of this request; `failed` needs a failed job, or, with no task, no job of ours
 *   at the provider; `cancelled` never for a job the provider completed or still runs; `expired`
 *   only for a job the provider no longer holds);
 * - no task bound to two jobs (the store's `jobs.task_id` per provider account);
 * - document rows unique (no row repeated), and as many as the provider produced;
 * - nothing stored empty without saying so (a completed result without title, text, markdown or
 *   body carries a `content_note`);
 * - a job that cannot be decided waits in `unknown` with the evidence read (`reconcile_undecided`),
 *   never bound to a guess, and the operator's `resolve` then completes it.
 *
 * Beyond the declared window: for entries whose lookups can lag, one more test gives the lookups a
 * lag past the reconcile window, where a lost submit is wrongly proved absent and sent again (only
 * an enforced key prevents the second job); the invariant is then that the second provider job is
 * never silent: the audit after the resubmit names it (`duplicate_provider_job`, cancelled while it
 * runs, or `possible_duplicate` for a weak match, left alone).
 *
 * `./invariants.test.ts` shows that each check fails on rows that break it. A combination that
 * fails because of a product defect owned elsewhere is declared in the entry's `knownDefects`: it
 * leaves the random rounds and runs on its own as `it.fails`, so the suite says when it is fixed.
 *
 * Test-only code.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CancelResult } from '../../src/client/index.js';
import { isFinalState } from '../../src/model/states.js';
import { providerKeys } from '../../src/providers/shared/keys.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import type { JobRow } from '../../src/store/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import type {
  AnswerFault,
  ConformanceControls,
  ConformanceOp,
  LookupBehaviour,
  PageBehaviour,
  ProviderJobRecord,
  ReplayBehaviour,
} from '../fixtures/providers/conformance.js';
import {
  SCENARIO_POLICY,
  startProviderScenario,
  waitFor,
  type Fixture,
  type Scenario,
} from '../fixtures/providers/harness.js';

/** A fixture that offers the shared conformance controls. */
export type ConformanceFixture = Fixture & { conformance: ConformanceControls };

/** The fault kinds of {@link AnswerFault}. */
export const FAULT_KINDS = ['reset', '502', 'late', 'before'] as const;
/** One of {@link FAULT_KINDS}. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * Timings every matrix entry is configured with (ms): the HTTP timeouts of submits and reads, the
 * reconcile settle window (which overrides every lookup's declared lag), how long a `late` answer is
 * held (longer than the timeouts) and the longest lookup lag a case may get (below the window,
 * where the product promises no duplicate).
 */
export const MATRIX_TIMING = {
  submitTimeoutMs: 1_500,
  readTimeoutMs: 1_500,
  settleMs: 900,
  lateMs: 2_600,
  maxLagMs: 600,
} as const;

/**
 * A lookup lag well past the reconcile window the matrix's entries are configured with (the longer
 * of the settle window and the submit timeout), so that the proof of absence is always wrong, yet
 * shorter than a job's run, so that the audit at the job's end sees the hidden job, ms.
 */
const LAG_PAST_WINDOW_MS = 5_000;

/** How long one case may take to settle (final, or waiting for an operator), ms; a known defect's case gets {@link DEFECT_SETTLE_MS}. */
const SETTLE_MS = 45_000;
const DEFECT_SETTLE_MS = 10_000;

/** One provider entry under the matrix. */
export interface KindSpec<F extends ConformanceFixture> {
  /** Label in test names, e.g. `firecrawl (crawl entry)`. */
  label: string;
  /** The provider kind. */
  kind: string;
  /** Starts the kind's fixture (its own start function). */
  fixture: () => Promise<F>;
  /** The entry's own fields for this fixture (the harness adds credentials; the matrix adds its timings). */
  entry: (fx: F) => Record<string, unknown>;
  /**
   * Narrows the fixture's `supports` for this entry, where the entry cannot meet a behaviour at
   * all (e.g. Firecrawl's batch scrape takes no idempotency key, so replays do not apply to it).
   */
  restrict?: Partial<Pick<ConformanceControls['supports'], 'lookups' | 'replays' | 'pages' | 'faults'>>;
  /** Request options sent with every job (e.g. a crawl's `limit`). */
  options?: Record<string, unknown>;
  /** Corpus page the target URLs point at (default `001`). */
  page?: string;
  /** The provider's record counts per-input error rows among its `documents` (default false: pages or items only). */
  documentsCountErrors?: boolean;
  /** Cases per round beyond the clean one (default 8). */
  faultsPerRound?: number;
  /**
   * Cases a product defect owned elsewhere makes fail, each run on its own as `it.fails` and left
   * out of the random rounds (see the report of the matrix for the diagnosis).
   */
  knownDefects?: KnownDefect[];
}

/** A combination a product defect makes fail: `matches` picks the cases, `why` says what is wrong (shown in the test name). */
export interface KnownDefect {
  why: string;
  matches: (c: Case, env: Env) => boolean;
  /** The combination run on its own as `it.fails`. */
  example: { env: Partial<Env>; case: Omit<Case, 'id'> };
}

/**
 * The known defect of several adapters: a lookup that answers `404` (a deployment or API that does
 * not offer it) throws from `findSubmitted` instead of returning a reading with `available: false`,
 * so `reconcileJob` is retried without end and a lost submit never reaches the operator with its
 * evidence. `where` names the adapter's method (for the test name).
 */
export function unavailableLookupDefect(where: string): KnownDefect {
  return {
    why: `a lookup answering 404 is retried without end instead of being read as not offered, so the job never reaches the operator (${where})`,
    matches: (c, env) => env.lookup?.kind === 'unavailable' && c.submitFault !== undefined,
    example: {
      env: { lookup: { kind: 'unavailable' } },
      case: { submitFault: 'reset', lookalike: false, binary: false, cancel: 'none' },
    },
  };
}

/** The fixture-wide behaviour of one round. */
export interface Env {
  lookup?: LookupBehaviour;
  replay?: ReplayBehaviour;
  pages?: PageBehaviour;
  /** Jobs created during the round finish this long after creation, ms. */
  runMs: number;
}

/** One logical request of a round and what happens to it. */
export interface Case {
  /** Unique token in the target URL (faults and provider records are matched by it). */
  id: string;
  /** The submit's answer is lost or late (or the call dropped before the provider acted). */
  submitFault?: FaultKind;
  /** Another answer lost or late. A `lookup` fault comes with a lost submit; a `cancel` fault with a cancel. */
  readFault?: { op: Exclude<ConformanceOp, 'submit'>; kind: FaultKind };
  /** Another client of the same credential created a job for the same URL first. */
  lookalike: boolean;
  /** The target is a binary body (a PDF). */
  binary: boolean;
  /** Cancel once, or twice at the same time, as soon as the job has a task or waits for an operator. */
  cancel: 'none' | 'once' | 'twice';
}

/** A round of the plan. */
export interface Round {
  index: number;
  env: Env;
  cases: Case[];
}

/** What a suite covers (every value the entry supports must appear). */
export interface Coverage {
  faults: string[];
  lookups: string[];
  replays: string[];
  pages: string[];
  lookalike: boolean;
  binary: boolean;
  cancels: string[];
}

/** The seed of the plan: `CONFORMANCE_SEED`, else a fixed one. */
export function matrixSeed(): number {
  const s = process.env.CONFORMANCE_SEED;
  if (s !== undefined && s !== '') {
    const n = Number(s);
    if (!Number.isInteger(n)) throw new Error(`CONFORMANCE_SEED must be an integer, got "${s}"`);
    return n;
  }
  return 20_261_201;
}

/** A permutation of `xs` (fast-check). */
const permutation = <T>(xs: readonly T[]) =>
  fc.shuffledSubarray([...xs], { minLength: xs.length, maxLength: xs.length });

/** The supports of an entry: the fixture's, narrowed by the spec. */
export function supportsOf(
  controls: ConformanceControls,
  restrict: KindSpec<ConformanceFixture>['restrict'] = {},
): ConformanceControls['supports'] {
  const s = controls.supports;
  const narrow = <T>(all: readonly T[], only?: readonly T[]) => (only ? all.filter((x) => only.includes(x)) : [...all]);
  return {
    ...s,
    lookups: narrow(s.lookups, restrict.lookups),
    replays: narrow(s.replays, restrict.replays),
    pages: narrow(s.pages, restrict.pages),
    faults: narrow(s.faults, restrict.faults),
  };
}

/**
 * The plan of rounds for `supports`, chosen by fast-check from `seed`: every (operation, fault
 * kind) pair the fixture can inject is one case; every lookup, replay and page behaviour is the
 * environment of at least one round; which case meets which environment, look-alike, binary body
 * and cancel is the seed's choice. At least one case has a look-alike with a lost submit, one a
 * binary body (where supported), one a single cancel and one a double cancel. `skip` leaves out
 * combinations run elsewhere (known defects).
 */
export function planMatrix(
  supports: ConformanceControls['supports'],
  seed: number,
  opts: { faultsPerRound?: number; skip?: (c: Case, env: Env) => boolean } = {},
): Round[] {
  const pairs = supports.faults.flatMap((op) => FAULT_KINDS.map((kind) => ({ op, kind })));
  const perRound = opts.faultsPerRound ?? 8;
  const rounds = Math.max(
    2,
    supports.lookups.length,
    supports.replays.length,
    supports.pages.length,
    Math.ceil(pairs.length / perRound),
  );
  const extra = fc.record({
    lookalike: fc.boolean(),
    binary: supports.binary ? fc.boolean() : fc.constant(false),
    cancel: fc.constantFrom('none', 'none', 'once', 'twice') as fc.Arbitrary<Case['cancel']>,
    lostSubmit: fc.constantFrom('reset', '502', 'late') as fc.Arbitrary<FaultKind>,
  });
  const arb = fc.record({
    pairOrder: permutation(pairs),
    lookupOrder: permutation(supports.lookups),
    replayOrder: permutation(supports.replays),
    pageOrder: permutation(supports.pages),
    lagMs: fc.array(fc.integer({ min: 100, max: MATRIX_TIMING.maxLagMs }), { minLength: rounds, maxLength: rounds }),
    runMs: fc.array(fc.constantFrom(400, 1_200, 2_500), { minLength: rounds, maxLength: rounds }),
    extras: fc.array(extra, { minLength: pairs.length, maxLength: pairs.length }),
    clean: fc.array(extra, { minLength: rounds, maxLength: rounds }),
  });
  const [p] = fc.sample(arb, { seed, numRuns: 1 });
  if (!p) throw new Error('fast-check produced no plan');
  const plan: Round[] = Array.from({ length: rounds }, (_, i) => {
    const kind = p.lookupOrder.length ? p.lookupOrder[i % p.lookupOrder.length]! : undefined;
    const lookup: LookupBehaviour | undefined =
      kind === undefined ? undefined : kind === 'lag' ? { kind, lagMs: p.lagMs[i]! } : ({ kind } as LookupBehaviour);
    return {
      index: i,
      env: {
        ...(lookup ? { lookup } : {}),
        ...(p.replayOrder.length ? { replay: p.replayOrder[i % p.replayOrder.length]! } : {}),
        ...(p.pageOrder.length ? { pages: p.pageOrder[i % p.pageOrder.length]! } : {}),
        runMs: p.runMs[i]!,
      },
      cases: [],
    };
  });
  p.pairOrder.forEach((pair, j) => {
    const x = p.extras[j]!;
    const c: Omit<Case, 'id'> = { lookalike: x.lookalike, binary: x.binary, cancel: x.cancel };
    if (pair.op === 'submit') c.submitFault = pair.kind;
    else c.readFault = { op: pair.op, kind: pair.kind };
    // A lookup is read only after a lost submit; a cancel answer exists only when we cancel.
    if (pair.op === 'lookup') c.submitFault = x.lostSubmit;
    if (pair.op === 'cancel' && c.cancel === 'none') c.cancel = 'once';
    plan[j % rounds]!.cases.push({ id: '', ...c });
  });
  plan.forEach((r, i) => {
    const x = p.clean[i]!;
    r.cases.push({ id: '', lookalike: x.lookalike, binary: x.binary, cancel: x.cancel });
  });
  // The few combinations every entry must meet at least once, whatever the seed.
  const all = plan.flatMap((r) => r.cases);
  const cleanOf = (i: number) => plan[i % rounds]!.cases.at(-1)!;
  if (!all.some((c) => c.cancel === 'twice')) cleanOf(0).cancel = 'twice';
  if (!all.some((c) => c.cancel === 'once')) cleanOf(1).cancel = 'once';
  if (supports.binary && !all.some((c) => c.binary)) cleanOf(0).binary = true;
  if (!all.some((c) => c.lookalike && c.submitFault && c.submitFault !== 'before')) {
    const lost =
      all.find((c) => c.submitFault === 'reset' || c.submitFault === '502') ?? all.find((c) => c.submitFault);
    if (lost) lost.lookalike = true;
  }
  if (!all.some((c) => c.lookalike && !c.submitFault)) cleanOf(1).lookalike = true;
  // A case a known defect makes fail in its round's environment moves to the next round where it
  // does not (the defect's own combination runs apart, as `it.fails`); one that fails everywhere is left out.
  for (const r of plan) {
    for (const c of r.cases.filter((x) => opts.skip?.(x, r.env))) {
      r.cases.splice(r.cases.indexOf(c), 1);
      const to = plan.find((q) => q !== r && !opts.skip?.(c, q.env));
      to?.cases.push(c);
    }
  }
  const run = randomBytes(2).toString('hex');
  for (const r of plan) r.cases.forEach((c, k) => (c.id = `cf${run}r${r.index}c${k}e`));
  return plan;
}

/** What the plan covers. */
export function coverageOf(plan: Round[]): Coverage {
  const cases = plan.flatMap((r) => r.cases);
  const uniq = (xs: (string | undefined)[]) => [...new Set(xs.filter((x): x is string => x !== undefined))].sort();
  return {
    faults: uniq(
      cases.flatMap((c) => [
        c.submitFault ? `submit:${c.submitFault}` : undefined,
        c.readFault ? `${c.readFault.op}:${c.readFault.kind}` : undefined,
      ]),
    ),
    lookups: uniq(plan.map((r) => r.env.lookup?.kind)),
    replays: uniq(plan.map((r) => r.env.replay)),
    pages: uniq(plan.map((r) => r.env.pages)),
    lookalike: cases.some((c) => c.lookalike),
    binary: cases.some((c) => c.binary),
    cancels: uniq(cases.map((c) => c.cancel)),
  };
}

/** A one-line description of a case, for messages. */
export function describeCase(c: Case): string {
  return (
    [
      c.submitFault ? `submit:${c.submitFault}` : null,
      c.readFault ? `${c.readFault.op}:${c.readFault.kind}` : null,
      c.lookalike ? 'look-alike' : null,
      c.binary ? 'binary' : null,
      c.cancel !== 'none' ? `cancel ${c.cancel}` : null,
    ]
      .filter(Boolean)
      .join(', ') || 'no fault'
  );
}

/** A one-line description of an environment. */
export function describeEnv(e: Partial<Env>): string {
  const lookup = e.lookup
    ? e.lookup.kind === 'lag'
      ? `lookups lag ${e.lookup.lagMs} ms`
      : `lookups ${e.lookup.kind}`
    : null;
  return [
    lookup,
    e.replay ? `replay ${e.replay}` : null,
    e.pages ? `pages ${e.pages}` : null,
    e.runMs !== undefined ? `jobs run ${e.runMs} ms` : null,
  ]
    .filter(Boolean)
    .join(', ');
}

/** How one case went, as observed by the harness. */
export interface CaseOutcome {
  case: Case;
  url: string;
  jobId: string;
  /** The idempotency key of the job (for its client reference). */
  key: string;
  /** Task IDs of the look-alike jobs made for it. */
  lookalikes: string[];
  /** Each time the job was found waiting for an operator: whether its latest reconcile reading kept the evidence. */
  waits: { evidence: boolean }[];
  /** Operator interventions: what the provider held and what was done. */
  operator: { at: string; resolved: 'task' | 'resubmit'; taskId?: string; evidence: boolean; refused?: string }[];
  cancels: (CancelResult | { error: string })[];
  /** The job row once settled, null when it never settled (see `error`). */
  row: JobRow | null;
  /** Why the harness could not follow the job to an end. */
  error?: string;
}

/** One broken invariant. */
export interface Violation {
  caseId: string;
  invariant: string;
  detail: string;
}

/** Everything one suite shares between rounds. */
interface Ctx<F extends ConformanceFixture> {
  s: Scenario<F>;
  pages: PageServer;
  spec: KindSpec<F>;
  seed: number;
}

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
  'latin1',
);

/** Sets the round's environment at the fixture (only what the entry supports). */
function applyEnv(fx: ConformanceControls, env: Env): void {
  if (env.lookup) fx.setLookup(env.lookup);
  if (env.replay) fx.setReplay(env.replay);
  if (env.pages) fx.setPages(env.pages);
  fx.setRunMs(env.runMs);
}

/** Provider jobs of this request: created for its URL, not a look-alike. */
function oursAt(fx: ConformanceControls, o: Pick<CaseOutcome, 'case' | 'lookalikes'>): ProviderJobRecord[] {
  return fx.providerJobs().filter((j) => j.url.includes(o.case.id) && !o.lookalikes.includes(j.id));
}

/** Where the job is: final, waiting for an operator, or still on its way. */
async function whereIs<F extends ConformanceFixture>(
  s: Scenario<F>,
  jobId: string,
): Promise<{ kind: 'final' | 'operator'; row: JobRow } | undefined> {
  const row = await s.store.jobs.get(jobId);
  if (!row) return undefined;
  if (isFinalState(row.state)) return { kind: 'final', row };
  if (row.state !== 'unknown') return undefined;
  const view = await s.client.getLiveView('acme', jobId).catch(() => undefined);
  return view?.state === 'unknown' && view.note?.startsWith('waiting for an operator')
    ? { kind: 'operator', row }
    : undefined;
}

/** Whether the job's latest reconcile reading is an undecided one that keeps its evidence. */
async function undecidedWithEvidence<F extends ConformanceFixture>(s: Scenario<F>, jobId: string): Promise<boolean> {
  const last = (await s.store.findings.timeline(jobId)).filter((e) => e.type.startsWith('reconcile_')).at(-1);
  if (last?.type !== 'reconcile_undecided' || !last.detail) return false;
  const d = JSON.parse(last.detail) as { reason?: unknown; evidence?: { readings?: unknown } };
  return (
    typeof d.reason === 'string' &&
    d.reason.length > 0 &&
    d.evidence !== undefined &&
    Array.isArray(d.evidence.readings)
  );
}

/** Runs one case to its end (see the module docs). Never throws: what went wrong is in `error`. */
async function runCase<F extends ConformanceFixture>(ctx: Ctx<F>, c: Case, settleMs = SETTLE_MS): Promise<CaseOutcome> {
  const { s } = ctx;
  const fx = s.fixture.conformance;
  const url = `${ctx.pages.pageUrl(ctx.spec.page ?? '001')}?cf=${c.id}`;
  const out: CaseOutcome = {
    case: c,
    url,
    jobId: '',
    key: '',
    lookalikes: [],
    waits: [],
    operator: [],
    cancels: [],
    row: null,
  };
  try {
    if (c.binary) fx.binaryBody(c.id, { contentType: 'application/pdf', bytes: PDF });
    if (c.lookalike) out.lookalikes.push(fx.createLookalike(url).id);
    const fault = (kind: FaultKind): AnswerFault => ({
      kind,
      urlContains: c.id,
      times: 1,
      ...(kind === 'late' ? { delayMs: MATRIX_TIMING.lateMs } : {}),
    });
    if (c.submitFault) fx.answerFault('submit', fault(c.submitFault));
    if (c.readFault) fx.answerFault(c.readFault.op, fault(c.readFault.kind));
    const ref = await s.start({
      url,
      key: c.id,
      ...(ctx.spec.options ? { options: ctx.spec.options } : {}),
      policy: SCENARIO_POLICY,
    });
    out.jobId = ref.jobId;
    out.key = ref.key;

    let cancelling: Promise<void> | undefined;
    if (c.cancel !== 'none') {
      cancelling = (async () => {
        // As soon as there is something to cancel: a task, or a job waiting for an operator.
        await waitFor(
          async () => (await s.store.jobs.get(ref.jobId))?.task_id || (await whereIs(s, ref.jobId)),
          settleMs,
          `${c.id}: a task or a settled job to cancel`,
        ).catch(() => undefined);
        const one = () =>
          s.client
            .cancelScrape('acme', ref.jobId, { reason: 'conformance matrix', requestedBy: 'matrix', timeoutMs: 20_000 })
            .catch((e: unknown) => ({ error: (e as Error).message }));
        out.cancels.push(...(await Promise.all(c.cancel === 'twice' ? [one(), one()] : [one()])));
      })();
    }

    for (let step = 0; ; step++) {
      const at = await waitFor(() => whereIs(s, ref.jobId), settleMs, `${c.id} to end or to wait for an operator`);
      if (at.kind === 'final') break;
      const evidence = await undecidedWithEvidence(s, ref.jobId);
      out.waits.push({ evidence });
      if (cancelling && out.cancels.length === 0) {
        // A cancel is on its way to this waiting job: let it act first.
        await cancelling;
        continue;
      }
      if (step >= 3) throw new Error(`${c.id} still waits for an operator after ${step} resolutions`);
      // The operator: from the provider's own record only.
      const mine = oursAt(fx, out);
      const held = mine.length === 1 ? mine[0]! : mine.filter((j) => j.state !== 'cancelled').at(-1);
      const act: CaseOutcome['operator'][number] = {
        at: new Date().toISOString(),
        resolved: held ? 'task' : 'resubmit',
        ...(held ? { taskId: held.id } : {}),
        evidence,
      };
      out.operator.push(act);
      try {
        await s.client.resolve(
          'acme',
          ref.jobId,
          held ? { taskId: held.id, by: 'matrix' } : { resubmit: true, by: 'matrix' },
        );
      } catch (e) {
        act.refused = (e as Error).message;
        break;
      }
      // The resolution is applied: the job leaves `unknown` (or ends) before it is looked at again.
      await waitFor(
        async () => {
          const r = await s.store.jobs.get(ref.jobId);
          return r && (r.state !== 'unknown' || r.task_id) ? r : undefined;
        },
        settleMs,
        `${c.id} to leave unknown after the resolve`,
      );
    }
    await cancelling;
    // A cancel that came after the end, or a late observation: read the row once more when it is final.
    out.row = (await waitFor(() => whereIs(s, ref.jobId), settleMs, `${c.id} settled`)).row;
  } catch (e) {
    out.row = out.jobId ? ((await s.store.jobs.get(out.jobId)) ?? null) : null;
    // Say where the job is: its state, last error and latest events.
    const events = out.jobId
      ? (await s.store.findings.timeline(out.jobId))
          .slice(-6)
          .map((ev) => `${ev.type}${ev.state ? `→${ev.state}` : ''}${ev.detail ? ` ${ev.detail.slice(0, 240)}` : ''}`)
      : [];
    const pending = out.jobId ? await pendingActivities(s, out.jobId) : '';
    out.error = `${(e as Error).message}; the job is ${out.row?.state ?? 'missing'} (last error ${out.row?.last_error?.slice(0, 300) ?? '—'}); ${pending ? `pending: ${pending}; ` : ''}latest events: ${events.join(' | ')}`;
  }
  return out;
}

/** The workflow's pending activities with their attempt and last failure, for a message (empty when none or unreadable). */
async function pendingActivities<F extends ConformanceFixture>(s: Scenario<F>, jobId: string): Promise<string> {
  try {
    const d = await s.temporal.workflow.getHandle(jobId).describe();
    return (d.raw.pendingActivities ?? [])
      .map(
        (a) =>
          `${a.activityType?.name ?? '?'} attempt ${a.attempt ?? '?'}: ${a.lastFailure?.message?.slice(0, 300) ?? 'no failure'}`,
      )
      .join(' / ');
  } catch {
    return '';
  }
}

/** The provider's states that say the job stopped (for a cancel we report as done). */
const STOPPED = new Set<ProviderJobRecord['state']>(['cancelled', 'failed', 'expired']);

/**
 * Checks every invariant of the module docs over the outcomes of one round and the provider's
 * record read now (a provider that stops cancelled jobs asynchronously is given a few seconds).
 */
export async function checkRound<F extends ConformanceFixture>(
  s: Scenario<F>,
  outcomes: CaseOutcome[],
  opts: { documentsCountErrors?: boolean } = {},
): Promise<Violation[]> {
  const fx = s.fixture.conformance;
  const v: Violation[] = [];
  const add = (o: CaseOutcome, invariant: string, detail: string) => v.push({ caseId: o.case.id, invariant, detail });

  // A provider may take a moment to stop a job it was asked to cancel.
  await waitFor(
    () =>
      outcomes.every(
        (o) =>
          o.row?.state !== 'cancelled' ||
          !o.row.task_id ||
          fx.providerJobs().find((j) => j.id === o.row!.task_id)?.state !== 'running',
      ),
    8_000,
    'cancelled jobs stopped at the provider',
  ).catch(() => undefined);
  const records = fx.providerJobs();
  const byId = new Map(records.map((r) => [r.id, r]));

  for (const o of outcomes) {
    if (o.error) add(o, 'the job reaches an end', o.error);
    const row = o.row;
    const mine = records.filter((j) => j.url.includes(o.case.id) && !o.lookalikes.includes(j.id));
    const resubmits = o.operator.filter((a) => a.resolved === 'resubmit').length;
    if (mine.length > 1 + resubmits) {
      add(
        o,
        'at most one provider job per logical request',
        `${mine.length} provider jobs for one request (${mine.map((j) => `${j.id} ${j.state}`).join(', ')}), operator resubmits: ${resubmits}`,
      );
    }
    if (o.waits.some((w) => !w.evidence) || o.operator.some((a) => !a.evidence)) {
      add(
        o,
        'an undecided job waits in unknown with evidence',
        `the job waited for an operator without a reconcile_undecided event carrying its evidence (timeline: ${(await s.store.findings.timeline(o.jobId)).map((e) => e.type).join(' → ')})`,
      );
    }
    for (const a of o.operator) {
      if (a.refused)
        add(
          o,
          'the operator’s resolve completes an undecided job',
          `resolve ${a.resolved === 'task' ? `with task ${a.taskId}` : '--resubmit'} (the provider’s own job of this request) was refused: ${a.refused}`,
        );
    }
    if (!row) continue;
    // Every provider job of the matrix completes unless it is cancelled: a resolved job must too.
    if (
      o.operator.length > 0 &&
      !o.operator.some((a) => a.refused) &&
      o.case.cancel === 'none' &&
      row.state !== 'completed'
    ) {
      add(
        o,
        'the operator’s resolve completes an undecided job',
        `after ${o.operator.map((a) => (a.resolved === 'task' ? `resolve with task ${a.taskId}` : 'resolve --resubmit')).join(', then ')} the job ended ${row.state} (last error ${row.last_error ?? '—'})`,
      );
    }
    const task = row.task_id ? byId.get(row.task_id) : undefined;
    const lastError = row.last_error
      ? (JSON.parse(row.last_error) as { kind?: string; code?: string; message?: string })
      : null;
    const ours = (rec: ProviderJobRecord) =>
      `${rec.id} (${rec.state}, raw ${rec.rawStatus}${o.lookalikes.includes(rec.id) ? ', a look-alike of another client' : ''}, ${rec.url})`;
    if (row.task_id && !task) {
      if (row.state !== 'expired')
        add(
          o,
          'no final state contradicts the provider',
          `our ${row.state} job is bound to task ${row.task_id}, which the provider never had`,
        );
    } else if (task) {
      const clientRef = providerKeys('acme', row.idem_key).clientRef;
      // The provider keeps our reference in its own form (a tag, a metadata field): it must contain ours.
      if (
        o.lookalikes.includes(task.id) ||
        !task.url.includes(o.case.id) ||
        (task.clientRef != null && !task.clientRef.includes(clientRef))
      ) {
        add(
          o,
          'no task of another job',
          `our ${row.state} job is bound to ${ours(task)}, which is not this request’s job`,
        );
      }
    }
    switch (row.state) {
      case 'completed':
        if (!task || task.state !== 'completed')
          add(
            o,
            'no final state contradicts the provider',
            `completed, but the provider’s record of the bound task is ${task ? ours(task) : 'missing'}`,
          );
        break;
      case 'failed':
        if (task && task.state !== 'failed')
          add(
            o,
            'no final state contradicts the provider',
            `failed (${lastError?.kind ?? '?'} ${lastError?.code ?? ''}: ${lastError?.message ?? ''}), but the provider holds ${ours(task)}`,
          );
        if (!task && mine.some((j) => j.state !== 'cancelled' && j.state !== 'failed')) {
          add(
            o,
            'no final state contradicts the provider',
            `failed without a task (${lastError?.kind ?? '?'}: ${lastError?.message ?? ''}) while the provider holds ${mine.map(ours).join(', ')}`,
          );
        }
        break;
      case 'cancelled':
        if (task && !STOPPED.has(task.state))
          add(o, 'no final state contradicts the provider', `cancelled, but the provider holds ${ours(task)}`);
        if (!task && mine.some((j) => !STOPPED.has(j.state)))
          add(
            o,
            'no final state contradicts the provider',
            `cancelled without a task while the provider holds ${mine.map(ours).join(', ')}`,
          );
        break;
      case 'expired':
        if (task && task.state !== 'expired')
          add(o, 'no final state contradicts the provider', `expired, but the provider still holds ${ours(task)}`);
        break;
      default:
        break;
    }
    if (row.state === 'completed')
      await checkResult(s, o, task, opts.documentsCountErrors === true, (inv, d) => add(o, inv, d));
  }

  // A task belongs to one job (per provider account), whichever case bound it.
  const twice = await s.store.db
    .selectFrom('jobs')
    .select(['provider_account', 'task_id'])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('task_id', 'is not', null)
    .groupBy(['provider_account', 'task_id'])
    .having((eb) => eb.fn.countAll(), '>', 1)
    .execute();
  for (const t of twice)
    v.push({
      caseId: '*',
      invariant: 'no task bound to two jobs',
      detail: `task ${t.task_id} (provider account ${t.provider_account}) is bound to ${t.n} jobs`,
    });
  return v;
}

/** Result rows, documents and content notes of a completed job. */
async function checkResult<F extends ConformanceFixture>(
  s: Scenario<F>,
  o: CaseOutcome,
  task: ProviderJobRecord | undefined,
  countErrors: boolean,
  add: (invariant: string, detail: string) => void,
): Promise<void> {
  // Every column, so that columns added meanwhile (a body, a content note) are seen.
  const results = (await s.store.db
    .selectFrom('results')
    .selectAll()
    .where('job_id', '=', o.jobId)
    .execute()) as unknown as Record<string, unknown>[];
  if (results.length !== 1)
    return add('the result is written once', `${results.length} result rows for a completed job`);
  const res = results[0]!;
  const docs = (await s.store.db
    .selectFrom('result_documents')
    .selectAll()
    .where('result_id', '=', String(res.id))
    .orderBy('seq')
    .execute()) as unknown as Record<string, unknown>[];
  // A repeated page is the same row again: every field that carries content (the product's own `identity` column may differ).
  const identity = (d: Record<string, unknown>) =>
    JSON.stringify([d.url, d.final_url, d.title, d.markdown, d.text, d.data, d.error, d.body_sha256]);
  const seen = new Map<string, number>();
  for (const d of docs) seen.set(identity(d), (seen.get(identity(d)) ?? 0) + 1);
  const repeated = [...seen.entries()].filter(([, n]) => n > 1);
  if (repeated.length)
    add(
      'documents unique per identity',
      `${repeated.length} document(s) stored more than once: ${repeated.map(([k, n]) => `${n} × ${String(JSON.parse(k)[0])}`).join(', ')}`,
    );
  const content = docs.filter((d) => d.error == null);
  // The provider's count is of documents (pages, items); whether it counts per-input error rows is the kind's (`documentsCountErrors`).
  const stored = countErrors ? seen.size : new Set(content.map(identity)).size;
  if (task?.documents !== undefined && task.documents > 0 && docs.length > 0 && stored !== task.documents) {
    add(
      'documents as the provider produced them',
      `the provider produced ${task.documents} document(s); ${stored} distinct ${countErrors ? 'rows' : 'rows without an error'} stored (${docs.length} rows, ${content.length} without an error)`,
    );
  }
  // Text with something in it, or bytes (a binary body is a blob).
  const filled = (x: unknown) =>
    typeof x === 'string' ? x.trim().length > 0 && x !== '{}' && x !== 'null' : x instanceof Uint8Array && x.length > 0;
  const hasContent =
    ['title', 'text', 'markdown', 'body'].some((k) => filled(res[k])) ||
    content.some((d) => ['title', 'text', 'markdown', 'data', 'body'].some((k) => filled(d[k])));
  if (!hasContent && !filled(res.content_note)) {
    add(
      'nothing stored empty without saying so',
      `a completed result with no title, text, markdown or body and ${'content_note' in res ? 'an empty content_note' : 'no content_note column in the results table'} (content type of the target: ${o.case.binary ? 'application/pdf' : 'text/html'})`,
    );
  }
}

/** Formats violations for an assertion message. */
function report(label: string, seed: number, round: Round, outcomes: CaseOutcome[], violations: Violation[]): string {
  const lines = violations.map((x) => {
    const o = outcomes.find((y) => y.case.id === x.caseId);
    return `  - [${x.invariant}] case ${x.caseId}${o ? ` (${describeCase(o.case)}; job ${o.jobId}, ${o.row?.state ?? 'no row'}${o.operator.length ? `, operator: ${o.operator.map((a) => a.resolved).join('+')}` : ''})` : ''}: ${x.detail}`;
  });
  return `${label}: ${violations.length} invariant(s) broken in round ${round.index} (${describeEnv(round.env)}); seed ${seed} (CONFORMANCE_SEED=${seed} replays it)\n${lines.join('\n')}`;
}

/** Runs one round: environment, cases at once, invariants. Returns the violations. */
async function runRound<F extends ConformanceFixture>(
  ctx: Ctx<F>,
  round: Round,
  settleMs = SETTLE_MS,
): Promise<{ outcomes: CaseOutcome[]; violations: Violation[] }> {
  applyEnv(ctx.s.fixture.conformance, round.env);
  const outcomes = await Promise.all(round.cases.map((c) => runCase(ctx, c, settleMs)));
  const violations = await checkRound(ctx.s, outcomes, { documentsCountErrors: ctx.spec.documentsCountErrors });
  return { outcomes, violations };
}

/** The round's outcome in one line per case (kept in the test output for the record). */
function summary(outcomes: CaseOutcome[]): string {
  return outcomes
    .map(
      (o) =>
        `${o.case.id}: ${describeCase(o.case)} → ${o.row?.state ?? 'no row'}${o.operator.length ? ` (operator: ${o.operator.map((a) => a.resolved).join('+')})` : ''}`,
    )
    .join('; ');
}

/**
 * Declares the vitest suite of one entry: a page server for the targets, the scenario (fixture and
 * stack) for the whole suite, one test per round of the plan, one `it.fails` per known defect, and
 * a test that the plan covers every behaviour the entry supports. Async because the plan needs the
 * fixture's `supports`: a fixture is started and closed once to read them, before the tests are
 * declared (call it with a top-level `await`).
 */
export async function defineConformanceMatrix<F extends ConformanceFixture>(spec: KindSpec<F>): Promise<void> {
  const seed = matrixSeed();
  const probe = await spec.fixture();
  const supports = supportsOf(probe.conformance, spec.restrict);
  await probe.close();
  const plan = planMatrix(supports, seed, {
    faultsPerRound: spec.faultsPerRound,
    skip: (c, env) => (spec.knownDefects ?? []).some((d) => d.matches(c, env)),
  });

  describe(`conformance matrix: ${spec.label}`, () => {
    let ctx: Ctx<F> | undefined;

    beforeAll(async () => {
      const pages = await startPageServer();
      const s = await startProviderScenario<F>({
        kind: spec.kind,
        fixture: spec.fixture,
        entry: (fx) => ({
          readTimeoutMs: MATRIX_TIMING.readTimeoutMs,
          submitTimeoutMs: MATRIX_TIMING.submitTimeoutMs,
          reconcile: { settleMs: MATRIX_TIMING.settleMs },
          limits: { activeJobs: { initial: 32 } },
          ...spec.entry(fx),
        }),
      });
      ctx = { s, pages, spec, seed };
    });

    afterAll(async () => {
      await ctx?.s.stop();
      await ctx?.pages.close();
    });

    it('the plan covers every behaviour the entry supports (faults at every operation, lookups, replays, pages, look-alikes, binary bodies, single and double cancels)', () => {
      // The known defects' own cases count: their combinations run, as `it.fails`.
      const defects: Round[] = (spec.knownDefects ?? []).map((d, i) => ({
        index: -1 - i,
        env: { runMs: 1_200, ...d.example.env },
        cases: [{ id: '', ...d.example.case }],
      }));
      const cov = coverageOf([...plan, ...defects]);
      expect(cov.faults).toEqual(supports.faults.flatMap((op) => FAULT_KINDS.map((k) => `${op}:${k}`)).sort());
      expect(cov.lookups).toEqual([...supports.lookups].sort());
      expect(cov.replays).toEqual([...supports.replays].sort());
      expect(cov.pages).toEqual([...supports.pages].sort());
      expect(cov.lookalike).toBe(true);
      expect(cov.binary).toBe(supports.binary);
      expect(cov.cancels).toEqual(expect.arrayContaining(['once', 'twice']));
    });

    for (const round of plan) {
      it(`round ${round.index} (${describeEnv(round.env)}; ${round.cases.length} cases; seed ${seed}): invariants hold`, async () => {
        const { outcomes, violations } = await runRound(ctx!, round);
        console.log(
          `[conformance ${spec.label}] round ${round.index} (${describeEnv(round.env)}): ${summary(outcomes)}`,
        );
        expect(violations, report(spec.label, seed, round, outcomes, violations)).toEqual([]);
      }, 180_000);
    }

    if (supports.lookups.includes('lag')) {
      it(`lookups that lag past the reconcile window (${LAG_PAST_WINDOW_MS} ms, the window ${Math.max(MATRIX_TIMING.settleMs, MATRIX_TIMING.submitTimeoutMs)} ms): a lost submit proved absent is sent again, and the first submission is never silent: the audit names it (a strong match is cancelled while it runs, a weak one is left to an operator); the job completes once with its own task`, async () => {
        const round: Round = {
          index: -2,
          env: {
            lookup: { kind: 'lag', lagMs: LAG_PAST_WINDOW_MS },
            ...(supports.replays.length ? { replay: supports.replays[0] } : {}),
            ...(supports.pages.includes('normal') ? { pages: 'normal' as const } : {}),
            runMs: 6_000,
          },
          cases: [
            {
              id: `cflp${randomBytes(2).toString('hex')}e`,
              submitFault: 'reset',
              lookalike: false,
              binary: false,
              cancel: 'none',
            },
          ],
        };
        const { outcomes, violations } = await runRound(ctx!, round);
        const o = outcomes[0]!;
        // The audit's last read (at the job's end, just after the result) is recorded a moment later: wait for it where a proof of absence was acted on.
        const timeline = () => (o.jobId ? ctx!.s.store.findings.timeline(o.jobId) : Promise.resolve([]));
        if ((await timeline()).some((e) => e.type === 'reconcile_absent'))
          await waitFor(
            async () =>
              (await timeline()).some((e) => {
                if (e.type !== 'resubmit_audit') return false;
                const d = JSON.parse(e.detail ?? '{}') as {
                  final?: boolean;
                  duplicates?: string[];
                  possible?: string[];
                };
                return d.final === true || (d.duplicates?.length ?? 0) > 0 || (d.possible?.length ?? 0) > 0;
              }),
            20_000,
            `${o.case.id}: the audit after its resubmit`,
          ).catch(() => undefined);
        const events = await timeline();
        const named = (type: string) =>
          events
            .filter((e) => e.type === type)
            .flatMap((e) => {
              const d = JSON.parse(e.detail ?? '{}') as { taskId?: string; taskIds?: string[] };
              return [...(d.taskIds ?? []), ...(d.taskId ? [d.taskId] : [])];
            });
        const duplicates = named('duplicate_provider_job');
        const possible = named('possible_duplicate');
        // A provider may take a moment to stop a job it was asked to cancel.
        await waitFor(
          () => oursAt(ctx!.s.fixture.conformance, o).every((j) => !duplicates.includes(j.id) || j.state !== 'running'),
          8_000,
          'reported duplicates stopped at the provider',
        ).catch(() => undefined);
        const mine = oursAt(ctx!.s.fixture.conformance, o);
        const extra = mine.filter((j) => j.id !== o.row?.task_id);
        const silent = extra.filter((j) => !duplicates.includes(j.id) && !possible.includes(j.id));
        const stillRunning = extra.filter((j) => duplicates.includes(j.id) && j.state === 'running');
        const touched = extra.filter((j) => possible.includes(j.id) && j.state === 'cancelled');
        console.log(
          `[conformance ${spec.label}] lag past the window: ${summary(outcomes)}; provider jobs: ${mine.map((j) => `${j.id} ${j.state}`).join(', ')}; reported: duplicate ${duplicates.join(', ') || '—'}, possible ${possible.join(', ') || '—'}`,
        );
        // A second job the audit reported is the one duplicate this lag can make; every other invariant holds.
        const rest = violations.filter(
          (x) =>
            x.invariant !== 'at most one provider job per logical request' || silent.length > 0 || extra.length > 1,
        );
        expect(
          {
            silent: silent.map((j) => j.id),
            reportedButRunning: stillRunning.map((j) => j.id),
            weakButCancelled: touched.map((j) => j.id),
            violations: rest,
          },
          `${report(spec.label, seed, round, outcomes, rest)}\ntimeline: ${events.map((e) => e.type).join(' → ')}`,
        ).toEqual({ silent: [], reportedButRunning: [], weakButCancelled: [], violations: [] });
      }, 180_000);
    }

    it('failed status reads (503 with Retry-After: 1 s) are read again no sooner than asked and the job completes once they stop; a streak that spends its failed-read budget ends tracking_interrupted with the last error, never failed, the task left running', async () => {
      const { s, pages } = ctx!;
      const fx = s.fixture.conformance;
      fx.setRunMs(2_500);
      const start = async (id: string, policy: Partial<PollPolicy>) => {
        const url = `${pages.pageUrl(spec.page ?? '001')}?cf=${id}`;
        const ref = await s.start({ url, key: id, ...(spec.options ? { options: spec.options } : {}), policy });
        return ref.jobId;
      };
      const readsFailed = async (jobId: string) =>
        (await s.store.findings.timeline(jobId))
          .filter((e) => e.type === 'read_failed')
          .map((e) => ({
            at: Date.parse(e.at),
            ...(JSON.parse(e.detail!) as { retryAfterMs?: number; failures: number }),
          }));

      // Four failed reads, then the provider answers: the job completes with its own task.
      const passing = `cfrp${randomBytes(2).toString('hex')}e`;
      fx.answerFault('status', { kind: '503', retryAfterS: 1, times: 4, urlContains: passing });
      const a = await start(passing, SCENARIO_POLICY);
      const done = await s.waitFor(a, ['completed', 'failed', 'tracking_interrupted', 'expired'], 60_000);
      expect(done.state, `${spec.label}: a job whose reads failed for a while`).toBe('completed');
      const failed = await readsFailed(a);
      expect(failed.length).toBeGreaterThanOrEqual(1);
      for (const f of failed) expect(f.retryAfterMs, 'the provider’s Retry-After is read').toBe(1_000);
      for (let i = 1; i < failed.length; i++)
        expect(
          failed[i]!.at - failed[i - 1]!.at,
          `read ${i + 1} came no sooner than Retry-After`,
        ).toBeGreaterThanOrEqual(950);

      // Reads that never recover, under a small budget: tracking_interrupted, the task kept.
      const failing = `cfrf${randomBytes(2).toString('hex')}e`;
      fx.answerFault('status', { kind: '503', retryAfterS: 1, times: 1_000, urlContains: failing });
      fx.setRunMs(120_000);
      const b = await start(failing, { ...SCENARIO_POLICY, failedReadLimit: 3, failedReadBudgetMs: 2_500 });
      const end = await s.waitFor(b, ['completed', 'failed', 'tracking_interrupted', 'expired'], 60_000);
      expect(end.state, `${spec.label}: a job whose reads keep failing`).toBe('tracking_interrupted');
      expect(end.task_id).toBeTruthy();
      expect(JSON.parse(end.last_error!)).toMatchObject({ httpStatus: 503 });
      const streak = await readsFailed(b);
      expect(streak.length).toBeGreaterThanOrEqual(3);
      expect(streak.at(-1)!.at - streak[0]!.at).toBeGreaterThanOrEqual(2_500 - 1_000);
      expect(fx.providerJobs().find((j) => j.id === end.task_id)?.state).not.toBe('failed');
      fx.setRunMs(1_200);
    }, 180_000);

    for (const d of spec.knownDefects ?? []) {
      it.fails(
        `known product defect: ${d.why} [${describeEnv(d.example.env)}; ${describeCase({ id: '', ...d.example.case })}]`,
        async () => {
          const round: Round = {
            index: -1,
            env: { runMs: 1_200, ...d.example.env },
            cases: [{ id: `cfkd${randomBytes(2).toString('hex')}e`, ...d.example.case }],
          };
          const { outcomes, violations } = await runRound(ctx!, round, DEFECT_SETTLE_MS);
          console.log(`[conformance ${spec.label}] known defect (${describeEnv(round.env)}): ${summary(outcomes)}`);
          expect(violations, report(spec.label, seed, round, outcomes, violations)).toEqual([]);
        },
        180_000,
      );
    }
  });
}
