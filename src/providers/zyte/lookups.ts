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
// `tags` is not: the reference's examples show it on every job (`[]` when none), but no field list
// says it is always there, and JobQ-shaped entries (`key`) carry none; a job listed for our tag
// without its tags may be ours (see `jobsByTag`).
/** Jobs asked of one `jobs/list.json` page (its `count`). */
const LIST_COUNT = 10;

const JobListSchema = z.looseObject({
  /** All jobs the filters match (`jobs` holds at most the `count` asked for). */
  total: z.number().optional(),
  jobs: z.array(
    z.looseObject({
      id: z.string().optional(),
      key: z.string().optional(),
      state: z.string().optional(),
      tags: z.array(z.string()).optional(),
    }),
  ),
});

/**
 * One job a tag list showed that may be ours: `taskId` its job key (null: none we can read), `state`
 * as listed (else the state asked), `tagged` whether its tags are listed and hold ours (false: the
 * entry has no `tags`, so only the list's `has_tag` filter says it is ours).
 */
interface ListedJob {
  taskId: string | null;
  state: string;
  tagged: boolean;
}

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
 * tag shows pending, running, finished and deleted jobs (asked state by state: a job that finished
 * and was deleted, by a user or after the plan's data retention, is listed only as `deleted`),
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
 * Every job listed for tag `tag` in `states` (one list request per state, in order) that may be
 * ours ({@link ListedJob}): a job whose listed tags leave ours out is not; one listed without tags
 * may be. Null when the list answers `404` (not offered). A `200` that is not
 * `{"status": "ok", "jobs": [...]}` throws.
 */
async function jobsByTag(
  reads: ZyteReads,
  ctx: CallContext,
  tag: string,
  states: readonly string[],
): Promise<{ jobs: ListedJob[]; cut: string[] } | null> {
  const out: ListedJob[] = [];
  const cut: string[] = [];
  for (const state of states) {
    const res = await reads.app.call(ctx, {
      method: 'GET',
      path: '/jobs/list.json',
      query: { project: reads.project, spider: reads.spider, has_tag: tag, state, count: LIST_COUNT },
      phase: 'read',
    });
    if (res.status === 404) return null; // not offered: the caller reports the lookup unavailable
    if (!reads.app.isOk(res) || (res.body as { status?: unknown } | undefined)?.status !== 'ok')
      throw reads.fail(reads.app, res, 'read', ctx);
    const list = reads.app.parse(res, JobListSchema, 'read', 'jobs/list.json answer');
    // A page with more behind it (its `total` above what it shows, or full without a `total`)
    // shows only some of the matching jobs: a job of ours may be among the others.
    if ((list.total ?? 0) > list.jobs.length || (list.total === undefined && list.jobs.length >= LIST_COUNT))
      cut.push(state);
    for (const j of list.jobs) {
      if (j.tags && !j.tags.includes(tag)) continue;
      const id = j.id ?? j.key ?? '';
      out.push({ taskId: JOB_ID.test(id) ? id : null, state: j.state ?? state, tagged: j.tags !== undefined });
    }
  }
  return { jobs: out, cut };
}

/**
 * What the list shows of the twin a duplicate refusal names (jobs tagged `tag` in `states`): `job`,
 * the first job listed with our tag and a job ID (ours: adopt it), else null; `unnamed`, how many
 * are listed with our tag but no job ID we can read (ours, so our job exists, but we cannot name
 * it); `untagged`, the job keys (or `?`) of jobs listed without their tags (maybe ours, unproven).
 * Only `job` null with both others empty shows no job of ours; a `404` list shows nothing either
 * way (`unnamed` 0, `untagged` empty, `offered` false).
 */
export async function findByTag(
  reads: ZyteReads,
  ctx: CallContext,
  tag: string,
  states: readonly string[],
): Promise<{ job: Accepted | null; unnamed: number; untagged: string[]; offered: boolean }> {
  const read = await jobsByTag(reads, ctx, tag, states);
  const listed = read?.jobs;
  const named = listed?.find((j) => j.tagged && j.taskId !== null);
  return {
    job: named ? { taskId: named.taskId!, providerStatus: named.state, replayed: true } : null,
    unnamed: listed?.filter((j) => j.tagged && j.taskId === null).length ?? 0,
    // A cut page may hide the twin: as a job listed without its tags, maybe ours, unproven.
    untagged: [
      ...new Set([
        ...(listed?.filter((j) => !j.tagged).map((j) => j.taskId ?? '?') ?? []),
        ...(read?.cut.length ? ['(jobs past the page shown)'] : []),
      ]),
    ],
    offered: read !== null,
  };
}

/**
 * Reads {@link TAG_LOOKUP}: the spider's jobs tagged `<tagPrefix><clientRef>` in state
 * `pending`, then `running`, `finished` and `deleted` (one request per state, at most four;
 * listings default to finished jobs only, so states are named). A deleted job of ours is ours all
 * the same: adopted, never taken as absence and submitted (and paid) again. Every job listed with our tag carries our
 * reference: a strong candidate; one listed without its tags is an `unreadable` candidate; one
 * without a job ID we can read leaves the reading incomplete.
 */
export async function findSubmitted(reads: ZyteReads, findCtx: FindContext): Promise<LookupReading[]> {
  const ctx = reads.auth(findCtx);
  const tag = reads.tagOf(ctx.clientRef);
  const read = await jobsByTag(reads, ctx, tag, ['pending', 'running', 'finished', 'deleted']);
  if (read === null) return [lookupNotOffered(TAG_LOOKUP, 'jobs/list.json answered 404: not offered')];
  // A job listed for our tag without its tags may be ours: a candidate whose reference could not
  // be read, never counted as "not ours".
  const listed = read.jobs;
  const candidates: Candidate[] = listed.flatMap((j): Candidate[] =>
    j.taskId === null
      ? []
      : [
          j.tagged
            ? { taskId: j.taskId, providerStatus: j.state, match: 'strong', why: `tagged ${tag}` }
            : {
                taskId: j.taskId,
                providerStatus: j.state,
                match: 'unreadable',
                why: `listed for tag ${tag} without its tags`,
              },
        ],
  );
  // A job that may be ours without a job ID we can read is one we cannot name: the list then
  // never proves our job absent (the note says why the read is incomplete).
  // So is a page with more jobs behind it than it shows.
  const unnamed = listed.filter((j) => j.taskId === null).length;
  const notes = [
    ...(unnamed ? [`${unnamed} job(s) listed for tag ${tag} without a job ID we can read`] : []),
    ...(read.cut.length ? [`more jobs for tag ${tag} than one page shows (${read.cut.join(', ')})`] : []),
  ];
  return [
    {
      lookup: TAG_LOOKUP,
      available: true,
      complete: notes.length === 0,
      candidates,
      at: new Date().toISOString(),
      ...(notes.length ? { note: notes.join('; ') } : {}),
    },
  ];
}
