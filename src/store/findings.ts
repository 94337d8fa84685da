/**
 * What the store keeps about a job beside its row (`store.findings`): its timeline of events, the
 * incidents (sanitised provider exchanges that ended or explain it) and the orphan findings of the
 * maintenance scan. Every detail written here must already be sanitised. Times are UTC ISO-8601.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { StoreConnection } from './connection.js';
import { eventRow, nowIso } from './rows.js';
import type { IncidentRow, JobEventRow, OrphanRow } from './schema.js';

/** An incident as {@link FindingsRepository.recordIncident} takes it; `request`, `response` and `headers` are stored as JSON. */
export interface IncidentInput {
  jobId: string;
  /** The phase of the job it happened in (`submit`, `status`, `result`, `cancel`). */
  phase: string;
  /** What kind of failure (`provider_failed`, `permanent`, …). */
  kind: string;
  message: string;
  endpoint?: string;
  httpStatus?: number;
  /** The provider's own error code. */
  code?: string;
  request?: unknown;
  response?: unknown;
  headers?: unknown;
  /** When the exchange happened (UTC ISO-8601; default now). */
  at?: string;
  /**
   * Where the same incident is recorded once (a polling generation's checks: `poll:<generation>`).
   * Within one scope an incident with the same content (phase, kind, code, endpoint, HTTP status,
   * message, request and response; not its time or headers, which every exchange changes) is
   * recorded once: an attempt retried after its worker died, given the same answer, adds nothing.
   * Without a scope every call records.
   */
  scope?: string;
}

/**
 * The id of an incident of `i.scope`: the SHA-256 of the scope and the content that makes two
 * incidents the same, shaped as a UUID (version 8, RFC 9562) like the unscoped ones' random ids.
 */
function scopedId(i: IncidentInput & { scope: string }): string {
  const content = [
    i.jobId,
    i.scope,
    i.phase,
    i.kind,
    i.code,
    i.endpoint,
    i.httpStatus,
    i.message,
    i.request,
    i.response,
  ];
  const h = createHash('sha256')
    .update(JSON.stringify(content.map((v) => v ?? null)))
    .digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The store's timelines, incidents and orphan findings. Reach it as `store.findings`. */
export class FindingsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /** Appends a timeline event (detail must already be sanitised). */
  async appendEvent(jobId: string, type: string, state: string | null, detail: unknown): Promise<void> {
    await this.conn.db
      .insertInto('job_events')
      .values(eventRow(jobId, type, state, detail))
      .execute();
  }

  /** The job's timeline, oldest first. */
  async timeline(jobId: string): Promise<JobEventRow[]> {
    return this.conn.db
      .selectFrom('job_events')
      .selectAll()
      .where('job_id', '=', jobId)
      .orderBy('at')
      .orderBy('id')
      .execute();
  }

  /**
   * Records an incident: a sanitised provider exchange that ended or explains the job
   * (`request`, `response`, `headers` must already be sanitised). One already recorded in the
   * same `scope` with the same content is kept as it is (see {@link IncidentInput.scope}).
   */
  async recordIncident(i: IncidentInput): Promise<void> {
    await this.conn.db
      .insertInto('incidents')
      .values({
        id: i.scope === undefined ? randomUUID() : scopedId({ ...i, scope: i.scope }),
        job_id: i.jobId,
        at: i.at ?? nowIso(),
        phase: i.phase,
        kind: i.kind,
        endpoint: i.endpoint ?? null,
        http_status: i.httpStatus ?? null,
        code: i.code ?? null,
        message: i.message,
        request: i.request === undefined ? null : JSON.stringify(i.request),
        response: i.response === undefined ? null : JSON.stringify(i.response),
        headers: i.headers === undefined ? null : JSON.stringify(i.headers),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /** The job's incidents, oldest first. */
  async incidents(jobId: string): Promise<IncidentRow[]> {
    return this.conn.db.selectFrom('incidents').selectAll().where('job_id', '=', jobId).orderBy('at').execute();
  }

  /** Records (or refreshes, reopening it) the orphan finding `kind` of job `jobId`, seen at `now`. */
  async upsertOrphan(jobId: string, kind: string, detail: string, suggestion: string, now = new Date()): Promise<void> {
    const at = now.toISOString();
    await this.conn.db
      .insertInto('orphans')
      .values({
        id: randomUUID(),
        job_id: jobId,
        kind,
        detail,
        suggestion,
        first_seen_at: at,
        last_seen_at: at,
        resolved_at: null,
      })
      .onConflict((oc) =>
        oc.columns(['job_id', 'kind']).doUpdateSet({ detail, suggestion, last_seen_at: at, resolved_at: null }),
      )
      .execute();
  }

  /** Marks open findings not seen in the latest scan (last seen before `scanStart`) as resolved. Returns how many. */
  async resolveOrphansNotSeenSince(scanStart: Date): Promise<number> {
    const r = await this.conn.db
      .updateTable('orphans')
      .set({ resolved_at: scanStart.toISOString() })
      .where('resolved_at', 'is', null)
      .where('last_seen_at', '<', scanStart.toISOString())
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Open orphan findings (optionally of one account) with their job's account, state and URL, newest first. */
  async orphans(account?: string): Promise<(OrphanRow & { account: string; state: string; url: string })[]> {
    let q = this.conn.db
      .selectFrom('orphans')
      .innerJoin('jobs', 'jobs.id', 'orphans.job_id')
      .selectAll('orphans')
      .select(['jobs.account', 'jobs.state', 'jobs.url'])
      .where('orphans.resolved_at', 'is', null);
    if (account) q = q.where('jobs.account', '=', account);
    return q.orderBy('orphans.last_seen_at', 'desc').execute();
  }
}
