/**
 * Reconciling a lost Zyte submit (kind `zyte`): what Scrapy Cloud's lookups prove
 * ({@link ZYTE_EVIDENCE}) and the read of `jobs/list.json` by our tag, state by state
 * ({@link jobsByTag}, {@link findSubmitted}), also used by a submit refused as "already scheduled"
 * ({@link findByTag}). The list answer follows the Scrapy Cloud "Jobs API" reference; the call table
 * and the sources are in `adapter.ts`.
 */
import { z } from 'zod';
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import type { ProviderError } from '../shared/errors.js';
import type { CallPhase, ProviderHttp, ProviderResponse } from '../shared/http.js';
import { lookupNotOffered, type Accepted, type CallContext, type FindContext } from '../adapter.js';
import { JOB_ID } from './states.js';

// `jobs` is required: a list answer without it proves nothing about our job (an empty list is `[]`).
const JobListSchema = z.looseObject({
  jobs: z.array(
    z.looseObject({
      id: z.string().optional(),
      key: z.string().optional(),
      state: z.string().optional(),
      tags: z.array(z.string()).default([]),
    }),
  ),
});

/** What the lookups read through: the adapter's Jobs API client, its entry's project and spider, and its answer mapping. */
export interface ZyteReads {
  /** Jobs API client (`app.zyte.com/api`). */
  app: ProviderHttp;
  project: string;
  spider: string;
  /** The call context with the credential in the form the entry's placement needs. */
  auth<T extends CallContext>(ctx: T): T;
  /** The tag that marks the jobs of a client reference. */
  tagOf(clientRef: string): string;
  /** The classified error of an answer that is not `200 {"status": "ok"}`. */
  fail(http: ProviderHttp, res: ProviderResponse, phase: CallPhase, ctx: CallContext): ProviderError;
}

/** The lookup of a lost submit: the spider's jobs tagged with our reference, one list read per state. */
const TAG_LOOKUP = 'GET /jobs/list.json?has_tag&state';

/**
 * What Scrapy Cloud's lookups prove after a lost submit: no idempotency key (the duplicate-job
 * refusal holds only while the first job is pending or running); `jobs/list.json` filtered by our
 * tag shows pending, running and finished jobs (asked state by state) until the job is deleted,
 * assumed to lag up to 60 s; the tag carries our reference (strong).
 */
export const ZYTE_EVIDENCE: ReconcileEvidence = {
  replay: 'none',
  lookups: [
    { name: TAG_LOOKUP, shows: ['queued', 'running', 'finished'], finishedForMs: null, lagMs: 60_000, match: 'strong' },
  ],
  taskScope: 'credential',
  source:
    'Zyte Scrapy Cloud HTTP API reference (docs.zyte.com, Jobs API jobs/list.json has_tag and state), read 2026-11-30',
};

/**
 * Every job tagged `tag` in `states` (one list request per state, in order), and how many tagged
 * entries carried no job ID we can read (each is a job of ours we cannot name); null when the list
 * answers `404` (not offered). A `200` that is not `{"status": "ok", "jobs": [...]}` throws.
 */
async function jobsByTag(
  reads: ZyteReads,
  ctx: CallContext,
  tag: string,
  states: readonly string[],
): Promise<{ jobs: { taskId: string; state: string }[]; unreadable: number } | null> {
  const out: { taskId: string; state: string }[] = [];
  let unreadable = 0;
  for (const state of states) {
    const res = await reads.app.call(ctx, {
      method: 'GET',
      path: '/jobs/list.json',
      query: { project: reads.project, spider: reads.spider, has_tag: tag, state, count: 10 },
      phase: 'read',
    });
    if (res.status === 404) return null; // not offered: the caller reports the lookup unavailable
    if (!reads.app.isOk(res) || (res.body as { status?: unknown } | undefined)?.status !== 'ok')
      throw reads.fail(reads.app, res, 'read', ctx);
    const list = reads.app.parse(res, JobListSchema, 'read', 'jobs/list.json answer');
    for (const j of list.jobs) {
      if (!j.tags.includes(tag)) continue;
      if (JOB_ID.test(j.id ?? j.key ?? '')) out.push({ taskId: (j.id ?? j.key)!, state: j.state ?? state });
      else unreadable++;
    }
  }
  return { jobs: out, unreadable };
}

/** The first job tagged `tag` in `states`, or null. */
export async function findByTag(
  reads: ZyteReads,
  ctx: CallContext,
  tag: string,
  states: readonly string[],
): Promise<Accepted | null> {
  const [job] = (await jobsByTag(reads, ctx, tag, states))?.jobs ?? [];
  return job ? { taskId: job.taskId, providerStatus: job.state, replayed: true } : null;
}

/**
 * Reads {@link TAG_LOOKUP}: the spider's jobs tagged `<tagPrefix><clientRef>` in state
 * `pending`, then `running`, then `finished` (one request per state, at most three; listings
 * default to finished jobs only, so states are named). Every job found carries our reference:
 * a strong candidate.
 */
export async function findSubmitted(reads: ZyteReads, findCtx: FindContext): Promise<LookupReading[]> {
  const ctx = reads.auth(findCtx);
  const tag = reads.tagOf(ctx.clientRef);
  const listed = await jobsByTag(reads, ctx, tag, ['pending', 'running', 'finished']);
  if (listed === null) return [lookupNotOffered(TAG_LOOKUP, 'jobs/list.json answered 404: not offered')];
  const candidates: Candidate[] = listed.jobs.map((j) => ({
    taskId: j.taskId,
    providerStatus: j.state,
    match: 'strong',
    why: `tagged ${tag}`,
  }));
  // A tagged entry without a job ID we can read is a job of ours we cannot name: the list then
  // never proves our job absent (the note says why the read is incomplete).
  return [
    {
      lookup: TAG_LOOKUP,
      available: true,
      complete: listed.unreadable === 0,
      candidates,
      at: new Date().toISOString(),
      ...(listed.unreadable
        ? { note: `${listed.unreadable} job(s) tagged ${tag} listed without a job ID we can read` }
        : {}),
    },
  ];
}
