/**
 * The result store: jobs, results (written once per provider task) and each job's timeline.
 *
 * One Kysely query layer over SQLite (better-sqlite3, the embedded default) or PostgreSQL (`pg`).
 * Every write that must be atomic with a state transition runs in one transaction.
 */
import { recordCooldown, recordTransition } from '../observability/metrics.js';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { FINAL_STATES, type JobState } from '../model/states.js';
import type { JobError } from '../model/types.js';
import { sanitizeBody } from '../lib/sanitize.js';
import { bodyInfoOf, type BinaryBody } from '../model/documents.js';
import { contentNoteOf, EMPTY_NOTE_PREFIX, uniqueDocuments, type ResultWrite, type StoredDocument } from '../model/results.js';

export { bodyInfoOf };
import { migrationProvider } from './migrations.js';
import type { Database as DB, IncidentRow, JobEventRow, JobRow, NewJobRow, OrphanRow, OutboxRow, ResultDocumentRow, ResultRow } from './schema.js';

/** A new job row as `insertJob` / `registerJob` take it (times and state are set by the store). */
export type NewJobInput = Omit<NewJobRow, 'created_at' | 'updated_at' | 'state'> & { state?: JobState };

export type { BinaryBody, BodyInfo } from '../model/documents.js';
// The result shapes the store's methods take and return, for users of the package's `./store` entry.
export type { ResultDocument, ResultPayload, ResultWrite, StoredDocument } from '../model/results.js';
export type { JobRow, ResultRow, ResultDocumentRow, JobEventRow, IncidentRow, OrphanRow, OutboxRow, WebhookDeliveryRow, WebhookQuarantineRow, ApiIdempotencyRow } from './schema.js';

/** Where the store lives: `sqlite:<file>` / a bare file path, or `postgres://…`. */
export type StoreUrl = string;

/** Thrown when a job exists under the same (account, key) with a different request fingerprint. */
export class IdempotencyConflictStoreError extends Error {
  override readonly name = 'IdempotencyConflictStoreError';
  constructor(
    readonly jobId: string,
    readonly existingHash: string,
    readonly requestHash: string,
  ) {
    super(`job ${jobId} already exists with different parameters (idempotency key reused)`);
  }
}

/** Thrown when a task is already bound to another job of the same provider account: a task belongs to one job. */
export class TaskCollisionError extends Error {
  override readonly name = 'TaskCollisionError';
  constructor(
    readonly jobId: string,
    readonly taskId: string,
    readonly boundTo: string,
  ) {
    super(`task ${taskId} is already bound to job ${boundTo}; it cannot also belong to job ${jobId}`);
  }
}

/** Documents inserted per statement (16 parameters each: well under SQLite's and PostgreSQL's limits). */
const DOCUMENT_CHUNK = 400;

/** A stored document row (its bytes not read) as a {@link StoredDocument}. */
export function toResultDocument(r: Omit<ResultDocumentRow, 'body'>): StoredDocument {
  const parse = <T>(v: string | null): T | undefined => (v === null ? undefined : (JSON.parse(v) as T));
  return {
    seq: Number(r.seq),
    identity: r.identity,
    body: bodyInfoOf(r),
    url: r.url,
    finalUrl: r.final_url,
    httpStatus: r.http_status === null ? null : Number(r.http_status),
    title: r.title,
    markdown: r.markdown,
    text: r.text,
    links: parse<string[]>(r.links),
    data: parse<Record<string, unknown>>(r.data),
    error: parse<{ code?: string; message: string }>(r.error),
  };
}

/** Outcome of {@link Store.writeResultOnce}. */
export interface WriteOnceOutcome {
  resultId: string;
  /** True only for the call that inserted the row; a repeat returns the existing row's id. */
  inserted: boolean;
  /** Whether the job row moved to `completed` in this call. */
  transitioned: boolean;
  /** Documents of the stored result (one per identity). */
  documents: number;
  /** The stored result's content note (see {@link contentNoteOf}), or null when it has usable content. */
  contentNote: string | null;
}

/** What a job row is made of (see {@link Store.jobRow} and its inverse {@link Store.jobInput}). */
export interface JobRowInput {
  jobId: string;
  account: string;
  key: string;
  provider: string;
  requestHash: string;
  request: { url: string; format: string; options: Record<string, unknown> };
  /** The caller's input row (evidence). */
  row?: Record<string, unknown>;
  /** Poll policy overrides (ms durations, see `PollPolicy`). */
  policy?: Record<string, unknown>;
  batchId?: string;
  /** The URL as the caller typed it (kept only when it differs from `request.url`). */
  typedUrl?: string;
}

/** Position in a job list ordered by (`created_at` desc, `id` asc): the last row of a page. */
export interface JobCursor {
  createdAt: string;
  id: string;
}

/** Filters for {@link Store.listJobs}. */
export interface JobFilter {
  account?: string;
  states?: string[];
  batchId?: string;
  provider?: string;
  /** Only jobs updated before this UTC ISO-8601 time. */
  updatedBefore?: string;
  limit?: number;
}

const nowIso = () => new Date().toISOString();

/** Every column of `results` but the body's bytes (read only by {@link Store.resultBody}). */
const RESULT_COLUMNS = [
  'id', 'provider', 'task_id', 'job_id', 'url', 'final_url', 'http_status', 'title', 'byline', 'excerpt', 'lang', 'site_name', 'published_time', 'text', 'markdown', 'links',
  'content_length', 'written_at', 'expires_at', 'purged_at', 'document_count', 'content_type', 'body_size', 'body_sha256', 'content_note',
] as const;

/** Every column of `result_documents` but the body's bytes. */
const DOCUMENT_COLUMNS = ['result_id', 'seq', 'identity', 'url', 'final_url', 'http_status', 'title', 'markdown', 'text', 'links', 'data', 'error', 'content_type', 'body_size', 'body_sha256'] as const;

/**
 * Parses a store URL. `sqlite::memory:` gives an in-memory database (tests only);
 * `sqlite:/path/file.db` or `/path/file.db` a file; `postgres://` / `postgresql://` a server.
 */
export function parseStoreUrl(url: StoreUrl): { kind: 'sqlite'; file: string } | { kind: 'postgres'; connectionString: string } {
  if (/^postgres(ql)?:\/\//.test(url)) return { kind: 'postgres', connectionString: url };
  const file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  if (!file) throw new Error(`store URL "${url}" names no SQLite file`);
  return { kind: 'sqlite', file };
}

/**
 * Opens the store and applies pending migrations.
 *
 * SQLite runs in WAL mode with a 5 s busy timeout so that the worker, the CLI and the API can
 * share one file. Throws when the database cannot be opened or a migration fails.
 */
export async function openStore(url: StoreUrl): Promise<Store> {
  const parsed = parseStoreUrl(url);
  let db: Kysely<DB>;
  if (parsed.kind === 'sqlite') {
    if (parsed.file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(parsed.file)), { recursive: true });
    const sqlite = new Database(parsed.file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('synchronous = NORMAL');
    db = new Kysely<DB>({ dialect: new SqliteDialect({ database: sqlite }) });
  } else {
    db = new Kysely<DB>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: parsed.connectionString, max: 10 }) }),
    });
  }
  const store = new Store(db, parsed.kind, parsed.kind === 'sqlite' ? parsed.file : undefined);
  await store.migrate();
  return store;
}

/** Data access for jobs, results and job events. Construct with {@link openStore}. */
export class Store {
  constructor(
    /** The Kysely instance, for queries not covered by a method. */
    readonly db: Kysely<DB>,
    readonly kind: 'sqlite' | 'postgres',
    /** The SQLite file path, when `kind` is `sqlite`. */
    readonly file?: string,
  ) {}

  /**
   * Runs `fn` in one write transaction. On SQLite it begins with `BEGIN IMMEDIATE`: a deferred
   * transaction that reads and then writes fails at once with `SQLITE_BUSY_SNAPSHOT` when another
   * process wrote in between (the busy timeout cannot help then); taking the write lock first
   * makes it wait instead. On PostgreSQL it is an ordinary transaction.
   */
  async tx<T>(fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
    if (this.kind !== 'sqlite') return this.db.transaction().execute(fn);
    return this.db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn);
      try {
        const out = await fn(conn);
        await sql`commit`.execute(conn);
        return out;
      } catch (e) {
        await sql`rollback`.execute(conn).catch(() => undefined);
        throw e;
      }
    });
  }

  /** Applies pending migrations; throws with the failing migration's error. */
  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: migrationProvider });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error');
      throw new Error(`store migration ${failed?.migrationName ?? '?'} failed: ${String(error)}`);
    }
  }

  /** Closes connections. */
  async close(): Promise<void> {
    await this.db.destroy();
  }

  /**
   * The row of a new job, as `insertJob` / `registerJob` take it, built from what the client and
   * the workflow know of the job. The JSON columns (`input`: the caller's row; `options`: format,
   * provider options, poll policy and, when it differs from `request.url`, the URL as the caller
   * typed it) are sanitised with `secrets` (known secret values) removed. {@link Store.jobInput}
   * is the inverse.
   */
  static jobRow(j: JobRowInput & { workflowId: string; taskId?: string | null; deadlineAt?: string | null }, secrets: readonly string[] = []): NewJobInput {
    const typed = j.typedUrl !== undefined && j.typedUrl !== j.request.url ? { typedUrl: j.typedUrl } : {};
    return {
      id: j.jobId,
      account: j.account,
      idem_key: j.key,
      provider: j.provider,
      request_hash: j.requestHash,
      url: j.request.url,
      input: JSON.stringify(sanitizeBody(j.row ?? {}, secrets)),
      // The typed URL is kept as typed (sanitising would re-serialise it); like `url`, it passed the
      // client's credential checks (TargetUrlSchema) before it got here.
      options: JSON.stringify({ ...(sanitizeBody({ format: j.request.format, options: j.request.options, policy: j.policy ?? {} }, secrets) as object), ...typed }),
      batch_id: j.batchId ?? null,
      workflow_id: j.workflowId,
      task_id: j.taskId ?? null,
      deadline_at: j.deadlineAt ?? null,
    };
  }

  /** What {@link Store.jobRow} was built from, read back from a stored row (JSON columns parsed). */
  static jobInput(row: JobRow): JobRowInput {
    const o = JSON.parse(row.options) as { format?: string; options?: Record<string, unknown>; policy?: Record<string, unknown>; typedUrl?: string };
    return {
      jobId: row.id,
      account: row.account,
      key: row.idem_key,
      provider: row.provider,
      requestHash: row.request_hash,
      request: { url: row.url, format: o.format ?? 'markdown', options: o.options ?? {} },
      row: JSON.parse(row.input) as Record<string, unknown>,
      policy: o.policy ?? {},
      ...(row.batch_id ? { batchId: row.batch_id } : {}),
      ...(o.typedUrl ? { typedUrl: o.typedUrl } : {}),
    };
  }

  /**
   * Removes a job row that was created for a workflow start Temporal then refused, with its
   * events, so that nothing half-made is left (only while it is `submitting` without a task ID; a
   * workflow that does run re-creates its row in `registerJob`). Returns whether a row was removed.
   */
  async forgetUnstartedJob(jobId: string): Promise<boolean> {
    return this.tx(async (trx) => {
      const res = await trx.deleteFrom('jobs').where('id', '=', jobId).where('state', '=', 'submitting').where('task_id', 'is', null).executeTakeFirst();
      const removed = Number(res.numDeletedRows) > 0;
      if (removed) await trx.deleteFrom('job_events').where('job_id', '=', jobId).execute();
      return removed;
    });
  }

  /**
   * Inserts the job row if absent (rule 1: persist the reference before anything else) and returns
   * the stored row and whether this call inserted it. Throws {@link IdempotencyConflictStoreError}
   * when the row exists with another request fingerprint (same key, other parameters).
   */
  async insertJob(row: NewJobInput): Promise<{ row: JobRow; inserted: boolean }> {
    const at = nowIso();
    const res = await this.db
      .insertInto('jobs')
      .values({ ...row, state: row.state ?? 'submitting', created_at: at, updated_at: at })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    const inserted = Number(res.numInsertedOrUpdatedRows ?? 0n) > 0;
    const existing = await this.getJob(row.id);
    if (!existing) throw new Error(`job ${row.id} could not be registered`);
    if (existing.request_hash !== row.request_hash) {
      throw new IdempotencyConflictStoreError(row.id, existing.request_hash, row.request_hash);
    }
    if (inserted) await this.appendEvent(row.id, 'created', existing.state, { url: row.url, batchId: row.batch_id ?? null });
    return { row: existing, inserted };
  }

  /**
   * {@link insertJob}, then records this workflow run's deadline (UTC ISO-8601) on the row.
   * Returns the stored row.
   */
  async registerJob(row: NewJobInput): Promise<JobRow> {
    const { row: existing } = await this.insertJob(row);
    if (row.deadline_at && existing.deadline_at !== row.deadline_at) {
      await this.db.updateTable('jobs').set({ deadline_at: row.deadline_at }).where('id', '=', row.id).execute();
      return { ...existing, deadline_at: row.deadline_at };
    }
    return existing;
  }

  /** The job row, or undefined. */
  async getJob(id: string): Promise<JobRow | undefined> {
    return this.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The job row that holds `taskId` at `provider`, or undefined. */
  async getJobByTask(provider: string, taskId: string): Promise<JobRow | undefined> {
    return this.db.selectFrom('jobs').selectAll().where('provider', '=', provider).where('task_id', '=', taskId).executeTakeFirst();
  }

  /** Jobs matching `filter`, newest first (default limit 100). */
  async listJobs(filter: JobFilter = {}): Promise<JobRow[]> {
    let q = this.db.selectFrom('jobs').selectAll();
    if (filter.account) q = q.where('account', '=', filter.account);
    if (filter.states?.length) q = q.where('state', 'in', filter.states);
    if (filter.batchId) q = q.where('batch_id', '=', filter.batchId);
    if (filter.provider) q = q.where('provider', '=', filter.provider);
    if (filter.updatedBefore) q = q.where('updated_at', '<', filter.updatedBefore);
    return q.orderBy('created_at', 'desc').orderBy('id').limit(filter.limit ?? 100).execute();
  }

  /**
   * One page of an account's jobs, newest first (`created_at` desc, then `id`), strictly after
   * `after` when given. Returns up to `limit` rows and whether more follow.
   */
  async listJobsPage(f: { account: string; states?: string[]; batchId?: string; limit: number; after?: JobCursor }): Promise<{ rows: JobRow[]; more: boolean }> {
    let q = this.db.selectFrom('jobs').selectAll().where('account', '=', f.account);
    if (f.states?.length) q = q.where('state', 'in', f.states);
    if (f.batchId) q = q.where('batch_id', '=', f.batchId);
    const after = f.after;
    if (after) {
      q = q.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)])]));
    }
    const rows = await q.orderBy('created_at', 'desc').orderBy('id').limit(f.limit + 1).execute();
    return { rows: rows.slice(0, f.limit), more: rows.length > f.limit };
  }

  /** The number of jobs in each state, every account together (states with no job are absent). */
  async countJobsByState(): Promise<Record<string, number>> {
    const rows = await this.db.selectFrom('jobs').select(['state', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('state').execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  /** Answers when the database does (`select 1`); throws its connection error otherwise. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /**
   * Records the intent to submit (before the provider is called). Returns the row as it was
   * before, so that a retried submit attempt can see an earlier intent or an earlier answer.
   */
  async recordSubmitIntent(jobId: string): Promise<JobRow | undefined> {
    return this.tx(async (trx) => {
      const before = await trx.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
      if (!before || before.task_id) return before;
      const at = nowIso();
      await trx
        .updateTable('jobs')
        .set({ submit_intent_at: at, submit_attempts: sql`submit_attempts + 1`, updated_at: at })
        .where('id', '=', jobId)
        .execute();
      return before;
    });
  }

  /** Clears the submit intent after a definite rejection (nothing was created at the provider). */
  async clearSubmitIntent(jobId: string): Promise<void> {
    await this.db.updateTable('jobs').set({ submit_intent_at: null, updated_at: nowIso() }).where('id', '=', jobId).where('task_id', 'is', null).execute();
  }

  /**
   * Records the provider's task ID (the answer to a submit, or a task adopted by reconciliation)
   * and moves the job to `pending`, with the tracking deadline `trackingDeadlineMs` (ms) from now.
   * A task ID already recorded is never replaced: the stored one is returned instead. Throws
   * {@link TaskCollisionError} when the task is bound to another job of the same provider account
   * (see {@link bindTask}, which returns the collision instead).
   */
  async recordTaskId(jobId: string, taskId: string, providerStatus: string | null, source: string, trackingDeadlineMs?: number, providerAccount?: string | null): Promise<string> {
    const out = await this.bindTask({ jobId, taskId, providerStatus, source, trackingDeadlineMs, providerAccount });
    if (out.kind === 'collision') throw new TaskCollisionError(jobId, taskId, out.boundTo);
    return out.taskId;
  }

  /**
   * Binds `taskId` to job `jobId` (a task belongs to one job): in one transaction, unless the
   * job already holds a task (then that one is returned) or another job of the same provider
   * account — or, without `providerAccount`, of the same provider entry — holds `taskId` (then
   * nothing is written and the collision is returned, with a `task_collision` event on the job).
   * On success the job moves to `pending` with the tracking deadline `trackingDeadlineMs` (ms) from
   * now and a `task_recorded` event naming `source`.
   */
  async bindTask(b: { jobId: string; taskId: string; providerStatus: string | null; source: string; trackingDeadlineMs?: number; providerAccount?: string | null }): Promise<{ kind: 'bound'; taskId: string; recorded: boolean } | { kind: 'collision'; boundTo: string }> {
    const out = await this.tx(async (trx) => {
      const row = await trx.selectFrom('jobs').select(['task_id', 'state', 'provider', 'provider_account']).where('id', '=', b.jobId).executeTakeFirstOrThrow();
      if (row.task_id) return { kind: 'bound' as const, taskId: row.task_id, recorded: false };
      const account = b.providerAccount ?? row.provider_account;
      let q = trx.selectFrom('jobs').select('id').where('task_id', '=', b.taskId).where('id', '!=', b.jobId);
      q = account ? q.where((eb) => eb.or([eb('provider_account', '=', account), eb('provider', '=', row.provider)])) : q.where('provider', '=', row.provider);
      const other = await q.executeTakeFirst();
      if (other) {
        await trx.insertInto('job_events').values(event(b.jobId, 'task_collision', row.state, { taskId: b.taskId, boundTo: other.id, source: b.source })).execute();
        return { kind: 'collision' as const, boundTo: other.id };
      }
      const at = nowIso();
      const deadline = b.trackingDeadlineMs === undefined ? {} : { deadline_at: new Date(Date.now() + b.trackingDeadlineMs).toISOString() };
      await trx
        .updateTable('jobs')
        .set({ task_id: b.taskId, provider_status: b.providerStatus, state: 'pending', submit_intent_at: null, submitted_at: at, updated_at: at, ...(account ? { provider_account: account } : {}), ...deadline })
        .where('id', '=', b.jobId)
        .execute();
      await trx.insertInto('job_events').values(event(b.jobId, 'task_recorded', 'pending', { taskId: b.taskId, source: b.source, providerStatus: b.providerStatus })).execute();
      return { kind: 'bound' as const, taskId: b.taskId, recorded: true };
    });
    if (out.kind === 'bound' && out.recorded) recordTransition('pending');
    return out;
  }

  /** Records the provider's raw status word as an answer other than a status check reported it (a cancel answer), with its normalised state when known. */
  async recordProviderStatus(jobId: string, providerStatus: string, providerState?: string): Promise<void> {
    await this.db.updateTable('jobs').set({ provider_status: providerStatus, ...(providerState ? { provider_state: providerState } : {}), updated_at: nowIso() }).where('id', '=', jobId).execute();
  }

  /** Sets the provider account and key of a job whose row does not name them yet (the worker knows them at submit). */
  async setProviderAccount(jobId: string, providerAccount: string, providerKey: string): Promise<void> {
    await this.db.updateTable('jobs').set({ provider_account: providerAccount, provider_key: providerKey }).where('id', '=', jobId).where((eb) => eb.or([eb('provider_account', 'is', null), eb('provider_key', 'is', null)])).execute();
  }

  /**
   * Which of `taskIds` are bound to a job other than `exceptJobId` in provider account
   * `providerAccount` (or on provider entry `provider`): task ID → job ID.
   */
  async tasksBoundElsewhere(f: { providerAccount: string; provider: string; taskIds: readonly string[]; exceptJobId: string }): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (f.taskIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('jobs')
      .select(['id', 'task_id'])
      .where('task_id', 'in', [...new Set(f.taskIds)])
      .where('id', '!=', f.exceptJobId)
      .where((eb) => eb.or([eb('provider_account', '=', f.providerAccount), eb('provider', '=', f.provider)]))
      .execute();
    for (const r of rows) if (r.task_id) out.set(r.task_id, r.id);
    return out;
  }

  /** Records a successful status check (provider status, time, count) and clears the error count. */
  async recordStatusCheck(jobId: string, providerStatus: string): Promise<void> {
    const at = nowIso();
    await this.db
      .updateTable('jobs')
      .set({ provider_status: providerStatus, last_checked_at: at, status_checks: sql`status_checks + 1`, status_errors: 0, updated_at: at })
      .where('id', '=', jobId)
      .execute();
  }

  /**
   * Counts a failed status check (`status_errors`: failures since the last successful check, which
   * `status` shows and orphan detection reads) and, when given, keeps `error` (sanitised) as the
   * job's last error, in one statement.
   */
  async recordStatusError(jobId: string, error?: JobError): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set({ status_errors: sql`status_errors + 1`, updated_at: nowIso(), ...(error ? { last_error: JSON.stringify(error) } : {}) })
      .where('id', '=', jobId)
      .execute();
  }

  /**
   * Records an incident: a sanitised provider exchange that ended or explains the job
   * (`request`, `response`, `headers` must already be sanitised).
   */
  async recordIncident(i: { jobId: string; phase: string; kind: string; message: string; endpoint?: string; httpStatus?: number; code?: string; request?: unknown; response?: unknown; headers?: unknown; at?: string }): Promise<void> {
    await this.db
      .insertInto('incidents')
      .values({
        id: randomUUID(),
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
      .execute();
  }

  /** The job's incidents, oldest first. */
  async incidents(jobId: string): Promise<IncidentRow[]> {
    return this.db.selectFrom('incidents').selectAll().where('job_id', '=', jobId).orderBy('at').execute();
  }

  /** The outbox rows (downstream effects) of a job. */
  async outboxFor(jobId: string): Promise<OutboxRow[]> {
    return this.db.selectFrom('outbox').selectAll().where('job_id', '=', jobId).execute();
  }

  /** The shared cool-down of a provider key: epoch ms until which calls wait, or 0. */
  async getCooldown(label: string): Promise<number> {
    const row = await this.db.selectFrom('provider_cooldowns').select('until').where('label', '=', label).executeTakeFirst();
    return row ? Date.parse(row.until) : 0;
  }

  /**
   * The shared cool-down of a provider key as stored: its end (`untilMs`), its reason and the next
   * free release slot after it (`releaseNextMs`, 0 when none was claimed); epoch ms. Undefined when
   * the key never had one.
   */
  async readCooldown(label: string): Promise<{ untilMs: number; reason: string; releaseNextMs: number } | undefined> {
    const row = await this.db.selectFrom('provider_cooldowns').select(['until', 'reason', 'release_next']).where('label', '=', label).executeTakeFirst();
    return row ? { untilMs: Date.parse(row.until), reason: row.reason, releaseNextMs: row.release_next ? Date.parse(row.release_next) : 0 } : undefined;
  }

  /**
   * Starts or extends (never shortens) the shared cool-down of a provider key until `untilMs`
   * (epoch ms); the reason is the one of the cool-down that ends last.
   */
  async setCooldown(label: string, untilMs: number, reason: string): Promise<void> {
    const until = new Date(untilMs).toISOString();
    const at = nowIso();
    await this.db
      .insertInto('provider_cooldowns')
      .values({ label, until, reason, updated_at: at })
      .onConflict((oc) =>
        oc.column('label').doUpdateSet({
          until: sql`case when excluded.until > provider_cooldowns.until then excluded.until else provider_cooldowns.until end`,
          reason: sql`case when excluded.until > provider_cooldowns.until then excluded.reason else provider_cooldowns.reason end`,
          updated_at: at,
        }),
      )
      .execute();
    recordCooldown(label);
  }

  /**
   * Claims the next release slot of a provider key's cool-down, atomically (one write transaction;
   * the row locked on PostgreSQL), so that waiting callers leave one at a time: the slot is
   * `max(release_next, cool-down end, nowMs)` and `release_next` moves to the slot plus
   * `spacingMs`. The first claim after a cool-down gets its end (the probe). Returns the slot and
   * the cool-down it was claimed under (epoch ms), or undefined when the key has no cool-down row.
   */
  async claimRelease(label: string, nowMs: number, spacingMs: number): Promise<{ slotMs: number; untilMs: number; reason: string } | undefined> {
    return this.tx(async (trx) => {
      let q = trx.selectFrom('provider_cooldowns').select(['until', 'reason', 'release_next']).where('label', '=', label);
      if (this.kind === 'postgres') q = q.forUpdate();
      const row = await q.executeTakeFirst();
      if (!row) return undefined;
      const untilMs = Date.parse(row.until);
      const slotMs = Math.max(row.release_next ? Date.parse(row.release_next) : 0, untilMs, nowMs);
      await trx.updateTable('provider_cooldowns').set({ release_next: new Date(slotMs + Math.max(0, spacingMs)).toISOString() }).where('label', '=', label).execute();
      return { slotMs, untilMs, reason: row.reason };
    });
  }

  /**
   * Records one refusal that counts toward a provider's block of the caller (Bright Data: 25 × 429
   * in 5 min block the IP) at `atMs` under `scope` (`brightdata@<host>`), and deletes that scope's
   * refusals older than `pruneBeforeMs` (epoch ms).
   */
  async recordRefusal(scope: string, atMs: number, pruneBeforeMs: number): Promise<void> {
    await this.db.insertInto('provider_refusals').values({ id: randomUUID(), scope, at: new Date(atMs).toISOString() }).execute();
    await this.db.deleteFrom('provider_refusals').where('scope', '=', scope).where('at', '<', new Date(pruneBeforeMs).toISOString()).execute();
  }

  /** The times (epoch ms, oldest first) of the refusals recorded under `scope` after `sinceMs`. */
  async refusalsSince(scope: string, sinceMs: number): Promise<number[]> {
    const rows = await this.db.selectFrom('provider_refusals').select('at').where('scope', '=', scope).where('at', '>', new Date(sinceMs).toISOString()).orderBy('at').execute();
    return rows.map((r) => Date.parse(r.at));
  }

  /**
   * Purges result payloads whose retention ended before `now` (text, markdown, links and a binary
   * body's bytes set to null, `purged_at` set; the row with title, task ID, times and the body's
   * media type, size and SHA-256 stays as evidence that the job ran; its documents lose markdown,
   * text, links, data and bytes and keep URL, status, title and error)
   * and moves their jobs from `completed` to `expired`. At most `limit` results per call.
   */
  async purgeExpiredResults(now: Date, limit = 500): Promise<{ purged: number; jobsExpired: number }> {
    const at = now.toISOString();
    const due = await this.db.selectFrom('results').select(['id', 'job_id']).where('expires_at', 'is not', null).where('expires_at', '<=', at).where('purged_at', 'is', null).limit(limit).execute();
    let jobsExpired = 0;
    for (const r of due) {
      await this.tx(async (trx) => {
        await trx.updateTable('results').set({ text: null, markdown: null, links: null, body: null, purged_at: at }).where('id', '=', r.id).where('purged_at', 'is', null).execute();
        await trx.updateTable('result_documents').set({ markdown: null, text: null, links: null, data: null, body: null }).where('result_id', '=', r.id).execute();
        const upd = await trx.updateTable('jobs').set({ state: 'expired', updated_at: at }).where('id', '=', r.job_id).where('state', '=', 'completed').executeTakeFirst();
        if (Number(upd.numUpdatedRows) > 0) {
          jobsExpired++;
          await trx.insertInto('job_events').values(event(r.job_id, 'state', 'expired', { resultId: r.id, reason: 'result retention ended; payload purged, evidence kept' })).execute();
        }
      });
    }
    return { purged: due.length, jobsExpired };
  }

  /** Non-final jobs whose row has not changed since `before` (UTC ISO-8601), oldest first. */
  async staleJobs(before: string, limit = 500): Promise<JobRow[]> {
    return this.db.selectFrom('jobs').selectAll().where('state', 'not in', [...FINAL_STATES]).where('updated_at', '<', before).orderBy('updated_at').limit(limit).execute();
  }

  /** Non-final jobs with at least `threshold` failed status checks in a row. */
  async erroringJobs(threshold: number, limit = 500): Promise<JobRow[]> {
    return this.db.selectFrom('jobs').selectAll().where('state', 'not in', [...FINAL_STATES]).where('status_errors', '>=', threshold).limit(limit).execute();
  }

  /** Records (or refreshes) an orphan finding. */
  async upsertOrphan(jobId: string, kind: string, detail: string, suggestion: string, now = new Date()): Promise<void> {
    const at = now.toISOString();
    await this.db
      .insertInto('orphans')
      .values({ id: randomUUID(), job_id: jobId, kind, detail, suggestion, first_seen_at: at, last_seen_at: at, resolved_at: null })
      .onConflict((oc) => oc.columns(['job_id', 'kind']).doUpdateSet({ detail, suggestion, last_seen_at: at, resolved_at: null }))
      .execute();
  }

  /** Marks open findings not seen in the latest scan (`seenAt` earlier than `scanStart`) as resolved. */
  async resolveOrphansNotSeenSince(scanStart: Date): Promise<number> {
    const r = await this.db.updateTable('orphans').set({ resolved_at: scanStart.toISOString() }).where('resolved_at', 'is', null).where('last_seen_at', '<', scanStart.toISOString()).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Open orphan findings (optionally of one account), newest first. */
  async listOrphans(account?: string): Promise<(OrphanRow & { account: string; state: string; url: string })[]> {
    let q = this.db
      .selectFrom('orphans')
      .innerJoin('jobs', 'jobs.id', 'orphans.job_id')
      .selectAll('orphans')
      .select(['jobs.account', 'jobs.state', 'jobs.url'])
      .where('orphans.resolved_at', 'is', null);
    if (account) q = q.where('jobs.account', '=', account);
    return q.orderBy('orphans.last_seen_at', 'desc').execute();
  }

  /**
   * Moves the job to `state` unless it is already final (then nothing changes and false is
   * returned), records `error` as the last error and appends a timeline event. `force` allows
   * final → final moves that the design permits (`completed` → `expired`, resume of
   * `tracking_interrupted`).
   */
  async transition(jobId: string, state: JobState, opts: { error?: JobError | null; detail?: unknown; force?: boolean } = {}): Promise<boolean> {
    return this.tx(async (trx) => {
      const at = nowIso();
      let q = trx
        .updateTable('jobs')
        .set({
          state,
          updated_at: at,
          ...(opts.error !== undefined ? { last_error: opts.error ? JSON.stringify(opts.error) : null } : {}),
          ...((FINAL_STATES as readonly string[]).includes(state) ? { finished_at: at } : { finished_at: null }),
        })
        .where('id', '=', jobId);
      if (!opts.force) q = q.where('state', 'not in', [...FINAL_STATES]);
      const res = await q.executeTakeFirst();
      const changed = Number(res.numUpdatedRows) > 0;
      if (changed) {
        await trx.insertInto('job_events').values(event(jobId, 'state', state, opts.detail ?? (opts.error ? { error: opts.error } : null))).execute();
      }
      return changed;
    }).then((changed) => {
      if (changed) recordTransition(state);
      return changed;
    });
  }

  /**
   * Writes the result once, keyed by (provider, task ID), with every document of a
   * multi-document result (`payload.documents`), in the same transaction as the job's transition
   * to `completed` (rule 6). Documents are written once per identity (see {@link uniqueDocuments}:
   * the first occurrence wins, positions `seq` stay dense 0, 1, …), so a provider that repeats a
   * document across pages stores it once. A binary body is kept as bytes with its media type, size
   * and SHA-256. A result with no usable content still completes the job (the provider did the
   * work) but its row carries a `content_note` and the timeline gets a `result_empty` event (see
   * {@link contentNoteOf}). A second call for the same task, from a retried activity or another
   * worker, inserts nothing (neither the row nor a document) and returns the existing row's id,
   * document count and note. `retentionMs`: how long the payload is kept (null: forever).
   */
  async writeResultOnce(jobId: string, provider: string, taskId: string, payload: ResultWrite, retentionMs: number | null): Promise<WriteOnceOutcome> {
    const documents = uniqueDocuments(payload.documents ?? []);
    const note = contentNoteOf(payload, documents);
    return this.tx(async (trx) => {
      const at = nowIso();
      const id = randomUUID();
      const body = payload.body ?? null;
      const ins = await trx
        .insertInto('results')
        .values({
          id,
          provider,
          task_id: taskId,
          job_id: jobId,
          url: payload.url,
          final_url: payload.finalUrl,
          http_status: payload.httpStatus,
          title: payload.title,
          byline: payload.byline,
          excerpt: payload.excerpt,
          lang: payload.lang,
          site_name: payload.siteName,
          published_time: payload.publishedTime,
          text: payload.text,
          markdown: payload.markdown,
          links: JSON.stringify(payload.links),
          content_length: payload.contentLength,
          written_at: at,
          expires_at: retentionMs === null ? null : new Date(Date.now() + retentionMs).toISOString(),
          purged_at: null,
          document_count: documents.length,
          body: body?.bytes ?? null,
          content_type: body?.contentType ?? null,
          body_size: body?.size ?? null,
          body_sha256: body?.sha256 ?? null,
          content_note: note,
        })
        .onConflict((oc) => oc.columns(['provider', 'task_id']).doNothing())
        .executeTakeFirst();
      const inserted = Number(ins.numInsertedOrUpdatedRows ?? 0n) > 0;
      if (inserted) {
        for (let i = 0; i < documents.length; i += DOCUMENT_CHUNK) {
          const rows = documents.slice(i, i + DOCUMENT_CHUNK).map((d, j) => ({
            result_id: id,
            seq: i + j,
            identity: d.identity,
            url: d.url,
            final_url: d.finalUrl ?? null,
            http_status: d.httpStatus ?? null,
            title: d.title ?? null,
            markdown: d.markdown ?? null,
            text: d.text ?? null,
            links: d.links === undefined ? null : JSON.stringify(d.links),
            data: d.data === undefined ? null : JSON.stringify(d.data),
            error: d.error === undefined ? null : JSON.stringify(d.error),
            body: d.body?.bytes ?? null,
            content_type: d.body?.contentType ?? null,
            body_size: d.body?.size ?? null,
            body_sha256: d.body?.sha256 ?? null,
          }));
          await trx.insertInto('result_documents').values(rows).execute();
        }
      }
      const row = await trx.selectFrom('results').select(['id', 'document_count', 'content_note']).where('provider', '=', provider).where('task_id', '=', taskId).executeTakeFirstOrThrow();
      const storedNote = row.content_note;
      const upd = await trx
        .updateTable('jobs')
        .set({ state: 'completed', finished_at: at, updated_at: at, last_error: null }) // provider_status keeps the provider's own word
        .where('id', '=', jobId)
        .where('state', 'not in', ['completed', 'expired'])
        .executeTakeFirst();
      const transitioned = Number(upd.numUpdatedRows) > 0;
      if (inserted && storedNote?.startsWith(EMPTY_NOTE_PREFIX)) {
        await trx.insertInto('job_events').values(event(jobId, 'result_empty', null, { resultId: row.id, note: storedNote, documents: documents.length })).execute();
      }
      if (transitioned) {
        await trx.insertInto('job_events').values(event(jobId, 'state', 'completed', { resultId: row.id, inserted, ...(storedNote ? { note: storedNote } : {}) })).execute();
      }
      // The downstream effect of a completion: one outbox row per result, whoever writes.
      await trx
        .insertInto('outbox')
        .values({ id: randomUUID(), kind: 'result.completed', job_id: jobId, result_id: row.id, payload: JSON.stringify({ jobId, provider, taskId, resultId: row.id, title: payload.title, ...(storedNote ? { contentNote: storedNote } : {}) }), created_at: at, delivered_at: null })
        .onConflict((oc) => oc.columns(['kind', 'result_id']).doNothing())
        .execute();
      return { resultId: row.id, inserted, transitioned, documents: Number(row.document_count), contentNote: storedNote };
    }).then((out) => {
      if (out.transitioned) recordTransition('completed');
      return out;
    });
  }

  /** The job's result row (latest task) without its binary body's bytes (`body` null; see {@link resultBody}), or undefined. */
  async getResultForJob(jobId: string): Promise<ResultRow | undefined> {
    const r = await this.db.selectFrom('results').select(RESULT_COLUMNS).where('job_id', '=', jobId).orderBy('written_at', 'desc').executeTakeFirst();
    return r ? { ...r, body: null } : undefined;
  }

  /**
   * The binary body of a stored result (the job's latest result, or document `seq` of it): bytes,
   * media type, size and SHA-256; undefined when there is no such result or document or it has no
   * binary body (a text page), or once retention purged it.
   */
  async resultBody(jobId: string, seq?: number): Promise<BinaryBody | undefined> {
    const result = await this.db.selectFrom('results').select(['id']).where('job_id', '=', jobId).orderBy('written_at', 'desc').executeTakeFirst();
    if (!result) return undefined;
    const row =
      seq === undefined
        ? await this.db.selectFrom('results').select(['body', 'content_type', 'body_size', 'body_sha256']).where('id', '=', result.id).executeTakeFirst()
        : await this.db.selectFrom('result_documents').select(['body', 'content_type', 'body_size', 'body_sha256']).where('result_id', '=', result.id).where('seq', '=', seq).executeTakeFirst();
    if (!row?.body || row.body_sha256 === null) return undefined;
    const bytes = Buffer.isBuffer(row.body) ? row.body : Buffer.from(row.body as Uint8Array);
    return { bytes, contentType: row.content_type, size: Number(row.body_size ?? bytes.length), sha256: row.body_sha256 };
  }

  /**
   * One page of the documents of the job's result (latest task), in order: `offset` (0-based) and
   * `limit` (count) over `seq`. `result` is undefined when the job has no result yet; `total` is the
   * result's document count.
   */
  async resultDocuments(jobId: string, page: { offset: number; limit: number }): Promise<{ result: ResultRow | undefined; total: number; documents: StoredDocument[] }> {
    const result = await this.getResultForJob(jobId);
    if (!result) return { result, total: 0, documents: [] };
    const rows = await this.db
      .selectFrom('result_documents')
      .select(DOCUMENT_COLUMNS)
      .where('result_id', '=', result.id)
      .orderBy('seq')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return { result, total: Number(result.document_count), documents: rows.map(toResultDocument) };
  }

  /** Number of document rows of a result, or of every result of a job (tests assert exact counts). */
  async countResultDocuments(filter: { resultId?: string; jobId?: string }): Promise<number> {
    let q = this.db.selectFrom('result_documents').innerJoin('results', 'results.id', 'result_documents.result_id').select((eb) => eb.fn.countAll<number>().as('n'));
    if (filter.resultId) q = q.where('result_documents.result_id', '=', filter.resultId);
    if (filter.jobId) q = q.where('results.job_id', '=', filter.jobId);
    const r = await q.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Number of result rows for a provider task (tests assert it is exactly 1). */
  async countResults(filter: { jobId?: string; provider?: string; taskId?: string } = {}): Promise<number> {
    let q = this.db.selectFrom('results').select((eb) => eb.fn.countAll<number>().as('n'));
    if (filter.jobId) q = q.where('job_id', '=', filter.jobId);
    if (filter.provider) q = q.where('provider', '=', filter.provider);
    if (filter.taskId) q = q.where('task_id', '=', filter.taskId);
    const r = await q.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Appends a timeline event (detail must already be sanitised). */
  async appendEvent(jobId: string, type: string, state: string | null, detail: unknown): Promise<void> {
    await this.db.insertInto('job_events').values(event(jobId, type, state, detail)).execute();
  }

  /** The job's timeline, oldest first. */
  async timeline(jobId: string): Promise<JobEventRow[]> {
    return this.db.selectFrom('job_events').selectAll().where('job_id', '=', jobId).orderBy('at').orderBy('id').execute();
  }
}

let seq = 0;
function event(jobId: string, type: string, state: string | null, detail: unknown) {
  // A sortable id: time + a per-process counter + randomness, so events keep insertion order.
  const id = `${Date.now().toString(36).padStart(9, '0')}-${(seq++ % 1_000_000).toString(36).padStart(4, '0')}-${randomUUID().slice(0, 8)}`;
  return { id, job_id: jobId, at: nowIso(), type, state, detail: detail === null || detail === undefined ? null : JSON.stringify(detail) };
}
