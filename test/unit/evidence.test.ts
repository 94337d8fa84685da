/**
 * The reconcile evidence model (`src/model/evidence.ts`): the cases that went wrong against the
 * providers' published behaviour (absence concluded from lookups that cannot show the job,
 * presence concluded from a look-alike), then properties over every combination of readings:
 * a weak or unreadable match is never adopted, absence is never concluded from lookups that cannot
 * show the job in every phase after their lag, a task bound to another job is never adopted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideReconcile,
  describeEvidence,
  type Candidate,
  type LookupEvidence,
  type LookupReading,
  type ReconcileEvidence,
  type ReconcileFacts,
  type ReplayReading,
} from '../../src/model/evidence.js';
import { firecrawlEvidence } from '../../src/providers/firecrawl/lookups.js';
import { APIFY_EVIDENCE } from '../../src/providers/apify/lookups.js';
import { BRIGHTDATA_EVIDENCE } from '../../src/providers/brightdata/lookups.js';
import { ZYTE_EVIDENCE } from '../../src/providers/zyte/lookups.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

function facts(
  evidence: ReconcileEvidence,
  readings: LookupReading[],
  more: Partial<ReconcileFacts> = {},
): ReconcileFacts {
  return {
    evidence,
    readings,
    createdBy: T0,
    firstSubmitAt: T0 - 1_000,
    now: Math.max(T0, ...readings.map((r) => Date.parse(r.at))),
    boundElsewhere: new Map(),
    ...more,
  };
}

const reading = (
  lookup: string,
  afterMs: number,
  candidates: Candidate[] = [],
  o: Partial<LookupReading> = {},
): LookupReading => ({
  lookup,
  available: true,
  complete: true,
  candidates,
  at: at(afterMs),
  ...o,
});
const cand = (taskId: string, match: Candidate['match']): Candidate => ({
  taskId,
  providerStatus: 'x',
  match,
  why: match,
});

describe('reconcile decisions for the cases the providers really produce', () => {
  it('Firecrawl crawl: a 409 for our key proves a job exists; an active list without finished crawls and a missing activity log prove nothing: undecided, never absent', () => {
    const ev = firecrawlEvidence('crawl');
    const replay: ReplayReading = { kind: 'conflict', detail: '409 Idempotency key already used' };
    const d = decideReconcile(
      facts(
        ev,
        [
          reading('GET /v2/crawl/active', 120_000),
          reading('GET /v2/team/activity', 120_000, [], { available: false, complete: false }),
        ],
        { replay },
      ),
    );
    expect(d.kind).toBe('undecided');
    expect(d.kind === 'undecided' && d.reason).toMatch(/a job with our key exists/);
  });

  it('Firecrawl batch: no key and a missing activity log: undecided (no resubmit, so no second paid batch)', () => {
    const d = decideReconcile(
      facts(firecrawlEvidence('batch'), [
        reading('GET /v2/team/activity', 120_000, [], { available: false, complete: false }),
      ]),
    );
    expect(d.kind).toBe('undecided');
    expect(d.kind === 'undecided' && d.reason).toMatch(
      /absence cannot be proven.*not offered here: GET \/v2\/team\/activity/,
    );
  });

  it('Firecrawl batch: the activity log, read after its lag, empty: absent; read before its lag: read again later', () => {
    const ev = firecrawlEvidence('batch');
    expect(decideReconcile(facts(ev, [reading('GET /v2/team/activity', 61_000)])).kind).toBe('absent');
    const early = decideReconcile(facts(ev, [reading('GET /v2/team/activity', 5_000)]));
    expect(early).toMatchObject({ kind: 'settling', readAt: T0 + 60_000 });
  });

  it('Zyte: a list that shows a job of our tag without a job ID we can read proves nothing absent, and the reason says why it is incomplete', () => {
    const lookup = ZYTE_EVIDENCE.lookups[0]!.name;
    const note = '1 job(s) listed for tag ref:x without a job ID we can read';
    const d = decideReconcile(facts(ZYTE_EVIDENCE, [reading(lookup, 3_600_000, [], { complete: false, note })]));
    expect(d.kind).toBe('undecided');
    expect(d.kind === 'undecided' && d.reason).toContain(`read incompletely: ${lookup} (${note})`);
    expect(d.kind === 'undecided' && d.reason).not.toMatch(/bound/);
  });

  it('Firecrawl: a job with our URL in the activity log is only a weak match: never adopted', () => {
    const d = decideReconcile(
      facts(firecrawlEvidence('batch'), [reading('GET /v2/team/activity', 61_000, [cand('fc-1', 'weak')])]),
    );
    expect(d.kind).toBe('undecided');
    expect(d.kind === 'undecided' && d.reason).toMatch(/match only by URL and time \(fc-1\)/);
  });

  it('Apify: a run whose INPUT answered 404 is not "not ours": undecided; with the record carrying our reference: found', () => {
    const name = APIFY_EVIDENCE.lookups[0]!.name;
    const unreadable = decideReconcile(facts(APIFY_EVIDENCE, [reading(name, 31_000, [cand('run-1', 'unreadable')])]));
    expect(unreadable.kind).toBe('undecided');
    const found = decideReconcile(
      facts(APIFY_EVIDENCE, [reading(name, 1_000, [cand('run-1', 'strong'), cand('run-0', 'foreign')])]),
    );
    expect(found).toMatchObject({ kind: 'found', taskId: 'run-1', via: 'lookup' });
  });

  it('a list that lags longer than a short window: an empty read before the declared lag is never absence', () => {
    const name = APIFY_EVIDENCE.lookups[0]!.name;
    expect(decideReconcile(facts(APIFY_EVIDENCE, [reading(name, 15_000)])).kind).toBe('settling');
    expect(decideReconcile(facts(APIFY_EVIDENCE, [reading(name, 30_000)])).kind).toBe('absent');
    // The configuration can raise (or, for tests, lower) every lookup's lag.
    expect(decideReconcile(facts(APIFY_EVIDENCE, [reading(name, 30_000)], { lagOverrideMs: 90_000 })).kind).toBe(
      'settling',
    );
  });

  it("Bright Data: another job's snapshot with the same URL is a look-alike (weak): never adopted; bound to that job: not ours, and absence is proven", () => {
    const name = BRIGHTDATA_EVIDENCE.lookups[0]!.name;
    const lookalike = decideReconcile(facts(BRIGHTDATA_EVIDENCE, [reading(name, 61_000, [cand('sd_1', 'weak')])]));
    expect(lookalike.kind).toBe('undecided');
    const bound = decideReconcile(
      facts(BRIGHTDATA_EVIDENCE, [reading(name, 61_000, [cand('sd_1', 'weak')])], {
        boundElsewhere: new Map([['sd_1', 'scrape:acme:first']]),
      }),
    );
    expect(bound.kind).toBe('absent');
    expect(bound.evidence.collisions).toEqual([{ taskId: 'sd_1', boundTo: 'scrape:acme:first' }]);
  });

  it('two runs carry our reference: a duplicate exists, nothing is adopted', () => {
    const name = APIFY_EVIDENCE.lookups[0]!.name;
    const d = decideReconcile(
      facts(APIFY_EVIDENCE, [reading(name, 40_000, [cand('a', 'strong'), cand('b', 'strong')])]),
    );
    expect(d.kind === 'undecided' && d.reason).toMatch(/2 provider jobs carry our client reference/);
  });

  it('a lookup that keeps finished jobs for a day cannot prove a two-day-old fast job absent', () => {
    const ev = firecrawlEvidence('batch');
    const d = decideReconcile(
      facts(ev, [reading('GET /v2/team/activity', 61_000)], { firstSubmitAt: T0 - 2 * 86_400_000 }),
    );
    expect(d.kind).toBe('undecided');
  });

  it('the line of each evidence in docs/providers.md names the replay and every lookup', () => {
    expect(describeEvidence(firecrawlEvidence('crawl'))).toBe(
      'a `409` for our key proves a job exists (never probed: a missed key would start a second job); `GET /v2/crawl/active` (queued, running; lag 30 s; weak); `GET /v2/team/activity` (queued, running, finished ≤ 24 h; lag 1 min; weak)',
    );
  });
});

const phases = fc.subarray(['queued', 'running', 'finished'] as const);
const lookupArb: fc.Arbitrary<LookupEvidence> = fc.record({
  name: fc.constantFrom('A', 'B', 'C'),
  shows: phases,
  finishedForMs: fc.option(fc.integer({ min: 1, max: 10 * 86_400_000 }), { nil: null }),
  lagMs: fc.integer({ min: 0, max: 120_000 }),
  match: fc.constantFrom('strong' as const, 'weak' as const),
});
const evidenceArb: fc.Arbitrary<ReconcileEvidence> = fc.record({
  replay: fc.constantFrom('none' as const, 'same-task' as const, 'conflict' as const),
  lookups: fc.uniqueArray(lookupArb, { selector: (l) => l.name, maxLength: 3 }),
  taskScope: fc.constant('credential' as const),
  source: fc.constant('property test'),
});
const candidateArb = fc.record({
  taskId: fc.constantFrom('t1', 't2', 't3', 't4'),
  providerStatus: fc.constant('s'),
  match: fc.constantFrom('strong' as const, 'weak' as const, 'foreign' as const, 'unreadable' as const),
  why: fc.constant('w'),
});
const caseArb = evidenceArb.chain((evidence) =>
  fc.record({
    evidence: fc.constant(evidence),
    readings: fc.array(
      fc.record({
        lookup: evidence.lookups.length ? fc.constantFrom(...evidence.lookups.map((l) => l.name)) : fc.constant('A'),
        available: fc.boolean(),
        complete: fc.boolean(),
        candidates: fc.array(candidateArb, { maxLength: 3 }),
        afterMs: fc.integer({ min: 0, max: 200_000 }),
      }),
      { maxLength: 3 },
    ),
    replay: fc.option(
      fc.oneof(
        fc.record({ kind: fc.constant('conflict' as const), detail: fc.constant('409') }),
        fc.record({
          kind: fc.constant('same-task' as const),
          taskId: fc.constantFrom('t1', 't5'),
          providerStatus: fc.constant('s'),
        }),
      ),
      { nil: undefined },
    ),
    bound: fc.subarray(['t1', 't2', 't3', 't4', 't5']),
    ageMs: fc.integer({ min: 0, max: 3 * 86_400_000 }),
    settled: fc.boolean(),
  }),
);

describe('reconcile decisions: properties over every combination', () => {
  it('found only by a replay or a strong unique match of a task bound to no other job; absent only when nothing could be ours and every phase was covered after its lag', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const readings = c.readings.map((r) => ({
          ...reading(r.lookup, r.afterMs, r.candidates, { available: r.available, complete: r.complete }),
        }));
        const boundElsewhere = new Map(c.bound.map((t) => [t, `job-of-${t}`]));
        const f = facts(c.evidence, readings, {
          replay: c.replay,
          boundElsewhere,
          firstSubmitAt: T0 - c.ageMs,
          settled: c.settled,
        });
        const d = decideReconcile(f);
        const live = readings.flatMap((r) => r.candidates).filter((x) => !boundElsewhere.has(x.taskId));
        if (d.kind === 'found') {
          expect(boundElsewhere.has(d.taskId)).toBe(false);
          if (d.via === 'lookup') {
            const strong = new Set(live.filter((x) => x.match === 'strong').map((x) => x.taskId));
            expect([...strong]).toEqual([d.taskId]);
          } else {
            expect(c.replay?.kind).toBe('same-task');
          }
        }
        if (d.kind === 'absent') {
          expect(c.replay?.kind).not.toBe('conflict');
          expect(live.filter((x) => x.match !== 'foreign')).toEqual([]);
          for (const p of ['queued', 'running', 'finished'] as const) {
            const covering = readings.some((r) => {
              const l = c.evidence.lookups.find((x) => x.name === r.lookup);
              return (
                l &&
                r.available &&
                r.complete &&
                (c.settled || Date.parse(r.at) - f.createdBy >= l.lagMs) &&
                l.shows.includes(p) &&
                (p !== 'finished' || l.finishedForMs === null || l.finishedForMs >= Date.parse(r.at) - f.firstSubmitAt)
              );
            });
            expect(covering, `phase ${p} covered`).toBe(true);
          }
        }
        if (live.some((x) => x.match === 'weak' || x.match === 'unreadable') && !live.some((x) => x.match === 'strong'))
          expect(['undecided', 'found'].includes(d.kind) && (d.kind !== 'found' || d.via === 'replay')).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });
});
