/**
 * Reconciling a lost Firecrawl submit (kind `firecrawl`): what its replays and lookups prove
 * ({@link firecrawlEvidence}) and the read of those lookups ({@link findSubmitted}). Shapes follow
 * the Firecrawl v2 OpenAPI (`getActivity`) and, where it differs, the server source (the
 * `/v2/crawl/active` answer, the idempotency middleware); the call table and the sources are in
 * `adapter.ts`.
 */
import { z } from 'zod';
import { canonicalJson } from '../../lib/hash.js';
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import { lookupNotOffered, type FindContext } from '../adapter.js';
import type { FirecrawlReads } from './results.js';

/** How far a Firecrawl `created_at` may precede our submit intent and still be ours (clock skew between us and Firecrawl), ms. */
const RECONCILE_SKEW_MS = 120_000;

/** Most pages of `GET /v2/team/activity` read by one reconcile (100 entries each). */
const ACTIVITY_PAGES = 5;

const ListedCrawl = z.looseObject({
  id: z.string().min(1),
  url: z.string().nullish(),
  created_at: z.string().nullish(),
  options: z.record(z.string(), z.unknown()).nullish(),
});
/**
 * `GET /v2/crawl/active`. The source answers `{success, crawls: [{id, teamId, url, created_at,
 * options}]}`; the OpenAPI names the array `data` as required and lists a `status` it never sends.
 */
// The list is required (Firecrawl's controller always sends `crawls`): an answer without one proves
// nothing about our job, where reading it as empty would prove it absent.
const ActiveBody = z
  .looseObject({ crawls: z.array(ListedCrawl).nullish(), data: z.array(ListedCrawl).nullish() })
  .refine((b) => Array.isArray(b.crawls) || Array.isArray(b.data), { message: 'no list of crawls' });
/** `GET /v2/team/activity` (v2 OpenAPI `getActivity`: the last 24 h, newest first, cursor paging). */
const ActivityBody = z.looseObject({
  data: z.array(
    z.looseObject({
      id: z.string().min(1),
      endpoint: z.string().nullish(),
      created_at: z.string().nullish(),
      target: z.string().nullish(),
    }),
  ),
  cursor: z.string().nullish(),
  has_more: z.boolean().nullish(),
});

/** How long `GET /v2/team/activity` keeps a job: "the last 24 hours" (v2 OpenAPI `getActivity`), ms. */
const ACTIVITY_RETENTION_MS = 24 * 3_600_000;

/** Which of Firecrawl's evidence an entry has (see {@link firecrawlEvidence}). */
interface FirecrawlEvidenceShape {
  /** Crawl submits carry `x-idempotency-key` (the hosted API; a self-hosted server only with `selfHosted.idempotencyHeader`). */
  idempotencyKey: boolean;
  /** `GET /v2/team/activity` exists (the hosted API; never on a self-hosted server). */
  teamActivity: boolean;
}

/** The hosted API's evidence: the key on crawls, the team activity. */
const HOSTED_FIRECRAWL: FirecrawlEvidenceShape = { idempotencyKey: true, teamActivity: true };

/**
 * What Firecrawl's replays and lookups prove after a lost submit, per operation and deployment:
 * - a crawl's `x-idempotency-key` reused answers `409 Idempotency key already used` without the
 *   job ID (source `idempotencyMiddleware`, on `/v2/crawl` only): proof that a job with our key
 *   exists; a batch scrape takes no key, so a replay would be a second paid batch; an entry that
 *   sends no key (a self-hosted server without Supabase answers the key `500`) has no replay
 *   either;
 * - `GET /v2/crawl/active` lists running crawls only (never finished ones, never batch scrapes):
 *   it can prove a crawl absent only while the crawl could still be running;
 * - `GET /v2/team/activity` lists every crawl or batch scrape of the last 24 h, finished ones too,
 *   from a log written after the request (lag assumed 60 s), and may not be offered (`404`). A
 *   self-hosted server has no such route (it needs ClickHouse; `404` at 61e38dc, `501` in newer
 *   sources): such an entry declares no such lookup, so absence of a finished crawl is never
 *   proven and a batch scrape has no lookup at all (a lost batch submit waits for an operator);
 * - neither echoes anything of ours (webhook `metadata` is echoed only in deliveries): every match
 *   is weak (URL and creation time), so a listed job is never adopted on its own.
 */
export function firecrawlEvidence(
  operation: 'crawl' | 'batch',
  shape: FirecrawlEvidenceShape = HOSTED_FIRECRAWL,
): ReconcileEvidence {
  const activity = {
    name: 'GET /v2/team/activity',
    shows: ['queued', 'running', 'finished'] as const,
    finishedForMs: ACTIVITY_RETENTION_MS,
    lagMs: 60_000,
    match: 'weak' as const,
  };
  const active = {
    name: 'GET /v2/crawl/active',
    shows: ['queued', 'running'] as const,
    finishedForMs: null,
    lagMs: 30_000,
    match: 'weak' as const,
  };
  const lookups = [...(operation === 'crawl' ? [active] : []), ...(shape.teamActivity ? [activity] : [])];
  return {
    replay: operation === 'crawl' && shape.idempotencyKey ? 'conflict' : 'none',
    lookups,
    taskScope: 'credential',
    source: shape.teamActivity
      ? 'Firecrawl v2 OpenAPI (firecrawl-docs 2026-08-21) and server source apps/api (61e38dc): idempotency middleware on /v2/crawl, crawl/active, team/activity'
      : `Firecrawl's server source apps/api (61e38dc) run self-hosted without Supabase: x-idempotency-key answers 500 (services/idempotency/validate.ts)${shape.idempotencyKey ? ' unless the deployment has its table' : ''}, no /v2/team/activity route (404), /v2/crawl/active lists running crawls only (controllers/v2/crawl-ongoing.ts)`,
  };
}

/** A URL in one spelling (WHATWG serialisation), for matching listed jobs to ours; the input when it does not parse. */
function normalUrl(u: string | null | undefined): string | null {
  if (!u) return null;
  try {
    return new URL(u).href;
  } catch {
    return u;
  }
}

/**
 * Reads the lookups of {@link firecrawlEvidence} for the job of a lost submit: the active
 * crawls (crawl entries) and the team's activity of the last 24 h (crawl or batch scrape; a
 * deployment without it answers `404`: unavailable; a self-hosted entry never asks). A job with the submitted URL (one
 * spelling), created no earlier than our first submit intent minus {@link RECONCILE_SKEW_MS}
 * and, on the active list, with every crawl option we sent that the list echoes (`limit`
 * excepted: Firecrawl caps it by the remaining credits), is a **weak** candidate: another job of
 * ours or another client of the same team could fit as well. One whose options differ is
 * `foreign`. An activity read that reached {@link ACTIVITY_PAGES} pages is incomplete.
 */
export async function findSubmitted(reads: FirecrawlReads, ctx: FindContext): Promise<LookupReading[]> {
  const target = normalUrl(ctx.request.url);
  const since = Date.parse(ctx.submittedAfter) - RECONCILE_SKEW_MS;
  const recent = (at: string | null | undefined) => !at || Number.isNaN(Date.parse(at)) || Date.parse(at) >= since;
  const readings: LookupReading[] = [];
  if (reads.operation === 'crawl') {
    const res = await reads.http.call(ctx, { method: 'GET', path: '/v2/crawl/active', phase: 'read' });
    if (res.status === 404 || res.status === 501) {
      readings.push(lookupNotOffered('GET /v2/crawl/active', `answered ${res.status}: not offered by this deployment`));
    } else {
      if (!reads.http.isOk(res)) throw reads.fail(res, 'read', ctx);
      const body = reads.http.parse(res, ActiveBody, 'read', 'active crawls');
      const sent = Object.entries(ctx.request.options ?? {}).filter(
        ([k]) => !['scrapeOptions', 'webhook', 'limit', 'url'].includes(k),
      );
      const candidates: Candidate[] = [];
      for (const c of body.crawls ?? body.data ?? []) {
        if (normalUrl(c.url) !== target || !recent(c.created_at)) continue;
        const differs = sent.find(
          ([k, v]) => c.options && k in c.options && canonicalJson(c.options[k]) !== canonicalJson(v),
        );
        candidates.push(
          differs
            ? {
                taskId: c.id,
                providerStatus: 'scraping',
                match: 'foreign',
                createdAt: c.created_at ?? null,
                why: `same URL, but option "${differs[0]}" differs from ours`,
              }
            : {
                taskId: c.id,
                providerStatus: 'scraping',
                match: 'weak',
                createdAt: c.created_at ?? null,
                why: 'same URL, created since our submit; Firecrawl echoes nothing of ours',
              },
        );
      }
      readings.push({
        lookup: 'GET /v2/crawl/active',
        available: true,
        complete: true,
        candidates,
        at: new Date().toISOString(),
      });
    }
  }
  // A self-hosted server has no team activity: not asked (the entry's evidence declares none).
  if (!reads.teamActivity) return readings;
  const candidates: Candidate[] = [];
  let cursor: string | undefined;
  let complete = false;
  for (let page = 0; page < ACTIVITY_PAGES; page++) {
    const res = await reads.http.call(ctx, {
      method: 'GET',
      path: '/v2/team/activity',
      query: { endpoint: reads.operation === 'crawl' ? 'crawl' : 'batch_scrape', limit: 100, cursor },
      phase: 'read',
    });
    if ((res.status === 404 && !/expired/i.test(res.text)) || res.status === 501) {
      readings.push(
        lookupNotOffered('GET /v2/team/activity', `answered ${res.status}: not offered by this deployment`),
      );
      return readings;
    }
    if (!reads.http.isOk(res)) throw reads.fail(res, 'read', ctx);
    const body = reads.http.parse(res, ActivityBody, 'read', 'team activity');
    const items = body.data;
    for (const a of items) {
      if (normalUrl(a.target) === target && recent(a.created_at) && !candidates.some((c) => c.taskId === a.id)) {
        candidates.push({
          taskId: a.id,
          providerStatus: 'listed',
          match: 'weak',
          createdAt: a.created_at ?? null,
          why: 'same URL, created since our submit; Firecrawl echoes nothing of ours',
        });
      }
    }
    const oldest = items.at(-1)?.created_at;
    if (!body.has_more || !body.cursor || (oldest && !recent(oldest))) {
      complete = true;
      break;
    }
    cursor = body.cursor;
  }
  readings.push({
    lookup: 'GET /v2/team/activity',
    available: true,
    complete,
    candidates,
    at: new Date().toISOString(),
    ...(complete
      ? {}
      : { note: `more than ${ACTIVITY_PAGES} pages of activity since the submit: not read to the end` }),
  });
  return readings;
}
