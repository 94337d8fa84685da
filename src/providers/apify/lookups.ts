/**
 * Reconciling a lost Apify submit (kind `apify`): what the run list and the runs' stored `INPUT`
 * prove ({@link APIFY_EVIDENCE}) and the read of them ({@link findSubmitted}). Shapes follow the
 * Apify API v2 OpenAPI (actor runs list, key-value store records); the call table and the sources
 * are in `adapter.ts`.
 */
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderError } from '../shared/errors.js';
import { path, type CallPhase, type ProviderHttp, type ProviderResponse } from '../shared/http.js';
import { lookupNotOffered, type CallContext, type FindContext } from '../adapter.js';
import type { ApifyEntry } from './config.js';
import { RunListSchema } from './runs.js';

/** What the lookups read through: the adapter's name, entry and exchange, and its answer mapping. */
export interface ApifyReads {
  /** Configured provider name (for notes). */
  name: string;
  entry: ApifyEntry;
  http: ProviderHttp;
  /** `/v2/actors/{actorId}` (or `/v2/acts/…`) + `rest`. */
  actorPath(rest: string): string;
  /** The classified error of a non-2xx Apify answer. */
  fail(res: ProviderResponse, phase: CallPhase, ctx: CallContext): ProviderError;
}

/** Most pages of the run list one reconcile read walks (runs not started through the API are skipped without an input read). */
const MAX_LIST_PAGES = 5;

/** The lookup a lost submit is reconciled with: the actor's runs, each API-started run's stored `INPUT` read for our reference. */
const RUN_LOOKUP = 'GET /v2/actors/{actorId}/runs + INPUT record';

/**
 * What Apify's lookups prove after a lost submit: runs have no idempotency key (a second start is a
 * second paid run); the actor's run list shows runs in every status (`READY` to `ABORTED`) until
 * the plan's data retention deletes them, and our reference is in each run's stored `INPUT`
 * (strong). The list is assumed to lag up to 30 s behind a start (a run read right after its
 * creation can `404`: replica lag). An `INPUT` that cannot be read (`404`: a run started without
 * input, a deleted record, a permission or replica-lag answer) proves nothing about whose run it is.
 */
export const APIFY_EVIDENCE: ReconcileEvidence = {
  replay: 'none',
  lookups: [
    { name: RUN_LOOKUP, shows: ['queued', 'running', 'finished'], finishedForMs: null, lagMs: 30_000, match: 'strong' },
  ],
  taskScope: 'credential',
  source: 'Apify API v2 OpenAPI (apify-docs, v2-2026-08-05T133145Z): actor runs list, key-value store records',
};

/**
 * {@link APIFY_EVIDENCE} of an entry whose actor's input takes no reference
 * (`input.clientRefField: null`): a run matches by URL and time only, so every match is weak.
 */
export const APIFY_EVIDENCE_NO_REF: ReconcileEvidence = {
  ...APIFY_EVIDENCE,
  lookups: APIFY_EVIDENCE.lookups.map((l) => ({ ...l, match: 'weak' as const })),
};

/**
 * Reads {@link RUN_LOOKUP} for the run a lost submit created: lists the actor's runs started
 * since `submittedAfter − reconcileList.marginMs` (oldest first, pages of `maxInputReads`) and
 * reads the stored `INPUT` of each run started through the API. A run whose input carries our
 * reference is `strong`; another reference (or none in a readable input) is `foreign`; a run
 * started otherwise (`meta.origin` not `API`) is `foreign`; an input that answers `404`, or a run
 * without a key-value store, is `unreadable`. Cost: at most 5 list pages and `maxInputReads`
 * (default 25) input reads; stopping at either bound makes the reading incomplete.
 */
export async function findSubmitted(apify: ApifyReads, ctx: FindContext): Promise<LookupReading[]> {
  const { marginMs, maxInputReads } = apify.entry.reconcileList;
  const startedAfter = new Date(Date.parse(ctx.submittedAfter) - marginMs).toISOString();
  const field = apify.entry.input.clientRefField;
  const candidates: Candidate[] = [];
  const reading = (complete: boolean, note?: string): LookupReading[] => [
    {
      lookup: RUN_LOOKUP,
      available: true,
      complete,
      candidates,
      at: new Date().toISOString(),
      ...(note ? { note } : {}),
    },
  ];
  const bound = (reads: number) =>
    reading(
      false,
      `more runs of actor ${apify.entry.actorId} started since ${startedAfter} than may be checked (${reads} inputs read; raise "providers.${apify.name}.reconcileList.maxInputReads")`,
    );
  let reads = 0;
  let offset = 0;
  for (let pages = 0; ; pages++) {
    if (pages >= MAX_LIST_PAGES) return bound(reads);
    const res = await apify.http.call(ctx, {
      method: 'GET',
      path: apify.actorPath('/runs'),
      query: { startedAfter, offset, limit: maxInputReads },
      phase: 'read',
    });
    // Not offered (a route or actor this key cannot list): the lookup proves nothing, and waiting does not help.
    if (res.status === 404)
      return [
        lookupNotOffered(RUN_LOOKUP, `the run list answered 404 (${apify.fail(res, 'read', ctx).message})`, candidates),
      ];
    if (!apify.http.isOk(res)) throw apify.fail(res, 'read', ctx);
    const list = apify.http.parse(res, RunListSchema, 'read', 'run list').data;
    for (const run of list.items) {
      const c = (match: Candidate['match'], why: string) =>
        candidates.push({ taskId: run.id, providerStatus: run.status, match, createdAt: run.startedAt ?? null, why });
      if (run.meta?.origin && run.meta.origin !== 'API') {
        c('foreign', `started by ${run.meta.origin}, not through the API`);
        continue;
      }
      if (!run.defaultKeyValueStoreId) {
        c('unreadable', 'the run has no key-value store, so its input cannot be read');
        continue;
      }
      if (reads >= maxInputReads) return bound(reads);
      reads++;
      const input = await apify.http.call(ctx, {
        method: 'GET',
        path: path`/v2/key-value-stores/${run.defaultKeyValueStoreId}/records/INPUT`,
        phase: 'read',
      });
      if (input.status === 404) {
        c(
          'unreadable',
          'its INPUT record answered 404 (started without input, deleted, not visible yet, or not readable with this key)',
        );
        continue;
      }
      if (!apify.http.isOk(input)) throw apify.fail(input, 'read', ctx);
      const body = input.body && typeof input.body === 'object' ? (input.body as Record<string, unknown>) : {};
      if (field === null) {
        // No reference sent: the URL is all there is to compare, and another job may have it too.
        if (inputUrlOf(body, apify.entry.input.urlField) === ctx.request.url)
          c('weak', `its INPUT has our URL; no reference is sent (input.clientRefField is null)`);
        else c('foreign', 'its INPUT has another URL');
        continue;
      }
      const ref = body[field];
      if (ref === ctx.clientRef) c('strong', `its INPUT carries our reference in "${field}"`);
      else
        c(
          'foreign',
          ref === undefined ? `its INPUT has no "${field}"` : `its INPUT carries another reference in "${field}"`,
        );
    }
    offset += list.items.length;
    if (list.items.length === 0 || offset >= list.total) return reading(true);
  }
}

/** The URL in input field `urlField` of a stored `INPUT`, whatever its format (`[{url}]`, `[url]`, or the URL). */
function inputUrlOf(input: Record<string, unknown>, urlField: string): string | undefined {
  const v = input[urlField];
  const first = Array.isArray(v) ? v[0] : v;
  if (typeof first === 'string') return first;
  const url = first && typeof first === 'object' ? (first as { url?: unknown }).url : undefined;
  return typeof url === 'string' ? url : undefined;
}
