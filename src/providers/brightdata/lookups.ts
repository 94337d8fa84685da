/**
 * Reconciling a lost Bright Data trigger (kind `brightdata`): what the snapshot list and the
 * snapshots' stored inputs prove ({@link BRIGHTDATA_EVIDENCE}) and the read of them
 * ({@link findSubmitted}): a matching input is only a weak candidate. Shapes follow Bright Data's
 * "Management APIs" (get snapshots, get snapshot input); the contract and its sources are in
 * `adapter.ts`.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import { errorDetails, path } from '../shared/http.js';
import { lookupNotOffered, type FindContext } from '../adapter.js';
import type { BrightDataReads } from './results.js';

const SnapshotList = z.array(
  z.looseObject({ id: z.string().min(1), created: z.string().nullish(), status: z.string().nullish() }),
);

/** The lookup of a lost trigger: the snapshot list, then each candidate's stored input. */
const SNAPSHOT_LOOKUP = 'GET /datasets/v3/snapshots + snapshot input';

/**
 * What Bright Data's lookups prove after a lost trigger: no idempotency key; the snapshot list
 * (filtered by dataset, date and trigger type) shows snapshots in every status while they are kept
 * (30 days per the limits page), assumed to lag up to 60 s; its inputs carry nothing of ours, so a
 * match is weak.
 */
export const BRIGHTDATA_EVIDENCE: ReconcileEvidence = {
  replay: 'none',
  lookups: [
    {
      name: SNAPSHOT_LOOKUP,
      shows: ['queued', 'running', 'finished'],
      finishedForMs: 16 * 86_400_000,
      lagMs: 60_000,
      match: 'weak',
    },
  ],
  taskScope: 'credential',
  source:
    'docs.brightdata.com, Management APIs (get snapshots, get snapshot input) and Scraper API limits, read 2026-11-30',
};

/** True when one CSV input row holds our input: the same `url`, and the same value for every other field both have. */
function matches(row: Record<string, string>, input: Record<string, unknown>): boolean {
  if ((row.url ?? '').trim() !== input.url) return false;
  return Object.entries(input).every(
    ([k, v]) => !(k in row) || v === null || typeof v === 'object' || String(v) === row[k]!.trim(),
  );
}

/**
 * Reads {@link SNAPSHOT_LOOKUP}: the dataset's API-triggered snapshots since a day before the
 * first submit (the filter is a date), those created since the submit minus `listing.marginMs`
 * (unknown creation times included), and the stored input of each, newest candidates first,
 * at most `listing.maxInputReads`. Matching input → `weak`; other input → `foreign`; input not
 * readable (`400` "does not exist", `404`) → `unreadable`. Candidates past the read bound, or a
 * list as long as `listing.limit`, make the reading incomplete.
 */
export async function findSubmitted(reads: BrightDataReads, ctx: FindContext): Promise<LookupReading[]> {
  const l = reads.entry.listing;
  const after = Date.parse(ctx.submittedAfter);
  const since = after - l.marginMs;
  const fromDate = new Date(since - 86_400_000).toISOString().slice(0, 10); // a day early: `from_date` is a date, in the provider's time zone
  const res = await reads.call(ctx, {
    method: 'GET',
    path: '/datasets/v3/snapshots',
    query: { dataset_id: reads.entry.datasetId, from_date: fromDate, trigger_type: 'API', limit: l.limit },
    phase: 'read',
  });
  // Not offered (a route or dataset this key cannot list): the lookup proves nothing, and waiting does not help.
  if (res.status === 404)
    return [
      lookupNotOffered(SNAPSHOT_LOOKUP, `the snapshot list answered 404 (${errorDetails(res).message ?? 'not found'})`),
    ];
  if (!reads.http.isOk(res)) throw reads.http.error(res, 'read', ctx);
  const listed = reads.http.parse(res, SnapshotList, 'read', 'snapshot list');
  const recent = listed
    .map((s) => ({ ...s, at: s.created ? Date.parse(s.created) : NaN }))
    .filter((s) => !(s.at < since)) // unknown creation times stay candidates
    // Ours was created after the first submit (the job row is written before any trigger): those
    // first, oldest first; then unknown creation times; then the clock-skew margin before it,
    // closest first. Unread ones leave the reading incomplete, whatever their rank.
    .map((s) => ({ ...s, rank: Number.isNaN(s.at) ? 1 : s.at >= after ? 0 : 2 }))
    .sort((a, b) => a.rank - b.rank || (a.rank === 0 ? a.at - b.at : b.at - a.at));
  const input = reads.inputOf(ctx.request);
  const candidates: Candidate[] = [];
  for (const s of recent.slice(0, l.maxInputReads)) {
    const c = (match: Candidate['match'], why: string) =>
      candidates.push({
        taskId: s.id,
        providerStatus: s.status ?? 'listed',
        match,
        createdAt: s.created ?? null,
        why,
      });
    const r = await reads.call(ctx, {
      method: 'GET',
      path: path`/datasets/v3/snapshot/${s.id}/input`,
      phase: 'read',
      headers: { accept: 'text/csv, application/json' },
    });
    if (r.status === 400 || r.status === 404) {
      c('unreadable', `its input answered ${r.status} (${errorDetails(r).message ?? 'no input'})`);
      continue;
    }
    if (r.status !== 200) throw reads.http.error(r, 'read', ctx);
    let rows: Record<string, string>[];
    try {
      rows = parseCsv(r.text, {
        columns: true,
        skip_empty_lines: true,
        relax_column_count: true,
        bom: true,
      }) as Record<string, string>[];
    } catch (e) {
      return reads.http.invalid(r, 'read', `snapshot input (CSV): ${(e as Error).message}`);
    }
    if (rows.some((row) => matches(row, input)))
      c('weak', 'its input has our URL and fields; Bright Data keeps no reference of ours');
    else c('foreign', 'its input differs from ours');
  }
  const complete = recent.length <= l.maxInputReads && listed.length < l.limit;
  const note = complete
    ? undefined
    : `${listed.length} snapshot(s) listed (limit ${l.limit}), ${recent.length} since ${new Date(since).toISOString()}; inputs read for at most ${l.maxInputReads} (listing.maxInputReads)`;
  return [
    {
      lookup: SNAPSHOT_LOOKUP,
      available: true,
      complete,
      candidates,
      at: new Date().toISOString(),
      ...(note ? { note } : {}),
    },
  ];
}
