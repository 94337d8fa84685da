/**
 * The results of the store (`store.results`): one row per (provider, task ID), written once in the
 * same transaction as the job's move to `completed`, with the documents of a multi-document
 * result and a binary body's bytes; payloads are purged when their retention ends, the row staying
 * as evidence. Times are UTC ISO-8601 strings, durations ms.
 */
import { randomUUID } from 'node:crypto';
import type { BinaryBody } from '../model/documents.js';
import {
  contentNoteOf,
  EMPTY_NOTE_PREFIX,
  isPartial,
  uniqueDocuments,
  type ResultWrite,
  type StoredDocument,
} from '../model/results.js';
import type { StoreConnection } from './connection.js';
import { eventRow, nowIso, toResultDocument } from './rows.js';
import type { ResultRow } from './schema.js';
import { moveJob } from './transitions.js';
import type { JobState } from '../model/states.js';

/** Documents inserted per statement (16 parameters each: well under SQLite's and PostgreSQL's limits). */
const DOCUMENT_CHUNK = 400;

/** Every column of `results` but the body's bytes (read only by {@link ResultsRepository.body}). */
const RESULT_COLUMNS = [
  'id',
  'provider',
  'task_id',
  'job_id',
  'url',
  'final_url',
  'http_status',
  'title',
  'byline',
  'excerpt',
  'lang',
  'site_name',
  'published_time',
  'text',
  'markdown',
  'links',
  'content_length',
  'written_at',
  'expires_at',
  'purged_at',
  'document_count',
  'content_type',
  'body_size',
  'body_sha256',
  'content_note',
  'expected_documents',
  'partial',
] as const;

/** What a result row says of itself, read back by {@link ResultsRepository.writeOnce}. */
const STORED_FACTS = ['id', 'document_count', 'content_note', 'expected_documents', 'partial'] as const;

/** Every column of `result_documents` but the body's bytes. */
const DOCUMENT_COLUMNS = [
  'result_id',
  'seq',
  'identity',
  'url',
  'final_url',
  'http_status',
  'title',
  'markdown',
  'text',
  'links',
  'data',
  'error',
  'content_type',
  'body_size',
  'body_sha256',
] as const;

/** Outcome of {@link ResultsRepository.writeOnce}. */
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
  /** True when the stored result holds fewer documents than the provider counts (the note says how many, and why). */
  partial: boolean;
  /** The provider's own count of the result's documents, where it gave one. */
  expectedDocuments: number | null;
  /**
   * Set when nothing was written: the job is in this state, from which the transition table does
   * not let it become `completed` (a job that ended otherwise meanwhile); the result row and the
   * move commit together or not at all.
   */
  refused?: JobState | null;
}

/** Rolls back a result write whose move to `completed` the store refused. */
class RefusedMove extends Error {
  constructor(readonly from: JobState | null) {
    super(`the move to completed was refused from ${from ?? '(no job)'}`);
  }
}

/** What a job's stored result says of itself (see {@link ResultsRepository.factsFor}). */
export type ResultFacts = Pick<ResultRow, 'content_note' | 'partial' | 'expected_documents'>;

/** The store's results. Reach it as `store.results`. */
export class ResultsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Writes the result once, keyed by (provider, task ID), with every document of a
   * multi-document result (`payload.documents`), in the same transaction as the job's transition
   * to `completed` (a result is written once). Documents are written once per identity (see {@link uniqueDocuments}:
   * the first occurrence wins, positions `seq` stay dense 0, 1, …), so a provider that repeats a
   * document across pages stores it once. A binary body is kept as bytes with its media type, size
   * and SHA-256. A result with no usable content still completes the job (the provider did the
   * work) but its row carries a `content_note` and the timeline gets a `result_empty` event (see
   * {@link contentNoteOf}). A second call for the same task, from a retried activity or another
   * worker, inserts nothing (neither the row nor a document) and returns the existing row's id,
   * document count and note. A result that the provider counts (`payload.completeness`) keeps
   * that count (`expected_documents`); one with fewer documents than it is `partial`: still
   * `completed` (what could be read is kept), with a `content_note` that says how many of how many
   * and why, and a `result_partial` timeline event. `retentionMs`: how long the payload is kept
   * (null: forever).
   */
  async writeOnce(
    jobId: string,
    provider: string,
    taskId: string,
    payload: ResultWrite,
    retentionMs: number | null,
  ): Promise<WriteOnceOutcome> {
    const documents = uniqueDocuments(payload.documents ?? []);
    const note = contentNoteOf(payload, documents);
    const completeness = payload.completeness ?? null;
    const partial = isPartial(completeness);
    return this.conn
      .tx(async (trx) => {
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
            expected_documents: completeness?.expected ?? null,
            partial: partial ? 1 : 0,
          })
          .onConflict((oc) => oc.columns(['provider', 'task_id']).doNothing())
          .returning(STORED_FACTS)
          .executeTakeFirst();
        const inserted = ins !== undefined;
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
        // What the stored row says of itself: this call's insert returned it; a repeat reads the first write's.
        const row =
          ins ??
          (await trx
            .selectFrom('results')
            .select(STORED_FACTS)
            .where('provider', '=', provider)
            .where('task_id', '=', taskId)
            .executeTakeFirstOrThrow());
        const storedNote = row.content_note;
        const storedPartial = Number(row.partial) === 1;
        const storedExpected = row.expected_documents === null ? null : Number(row.expected_documents);
        // provider_status keeps the provider's own word.
        const move = await moveJob(trx, this.conn.kind, jobId, 'completed', {
          set: { last_error: null },
          detail: {
            resultId: row.id,
            inserted,
            ...(storedNote ? { note: storedNote } : {}),
            ...(storedPartial ? { partial: true, expectedDocuments: storedExpected } : {}),
          },
        });
        if (move.kind === 'refused') throw new RefusedMove(move.from);
        const transitioned = move.kind === 'moved';
        if (inserted && storedNote?.startsWith(EMPTY_NOTE_PREFIX)) {
          await trx
            .insertInto('job_events')
            .values(
              eventRow(jobId, 'result_empty', null, {
                resultId: row.id,
                note: storedNote,
                documents: documents.length,
              }),
            )
            .execute();
        }
        if (inserted && partial) {
          await trx
            .insertInto('job_events')
            .values(
              eventRow(jobId, 'result_partial', null, {
                resultId: row.id,
                note: storedNote,
                kept: completeness!.kept,
                expected: completeness!.expected,
                counter: completeness!.counter,
                ...(completeness!.why ? { why: completeness!.why } : {}),
                documents: documents.length,
              }),
            )
            .execute();
        }
        // The downstream effect of a completion: one outbox row per result, whoever writes.
        await trx
          .insertInto('outbox')
          .values({
            id: randomUUID(),
            kind: 'result.completed',
            job_id: jobId,
            result_id: row.id,
            payload: JSON.stringify({
              jobId,
              provider,
              taskId,
              resultId: row.id,
              title: payload.title,
              ...(storedNote ? { contentNote: storedNote } : {}),
              ...(storedPartial ? { partial: true, expectedDocuments: storedExpected } : {}),
            }),
            created_at: at,
            delivered_at: null,
          })
          .onConflict((oc) => oc.columns(['kind', 'result_id']).doNothing())
          .execute();
        return {
          resultId: row.id,
          inserted,
          transitioned,
          documents: Number(row.document_count),
          contentNote: storedNote,
          partial: storedPartial,
          expectedDocuments: storedExpected,
        };
      })
      .then(
        (out) => {
          if (out.transitioned) this.conn.metrics.transition('completed');
          return out;
        },
        (e: unknown) => {
          if (!(e instanceof RefusedMove)) throw e;
          return {
            resultId: '',
            inserted: false,
            transitioned: false,
            documents: 0,
            contentNote: null,
            partial: false,
            expectedDocuments: null,
            refused: e.from,
          };
        },
      );
  }

  /** The job's result row (latest task) without its binary body's bytes (`body` null; see {@link body}), or undefined. */
  async forJob(jobId: string): Promise<ResultRow | undefined> {
    const r = await this.conn.db
      .selectFrom('results')
      .select(RESULT_COLUMNS)
      .where('job_id', '=', jobId)
      .orderBy('written_at', 'desc')
      .executeTakeFirst();
    return r ? { ...r, body: null } : undefined;
  }

  /**
   * What each of `jobIds` that has a result says of it (its latest result): the content note, the
   * partial mark and the provider's count of its documents (a list shows them without reading
   * each result).
   */
  async factsFor(jobIds: readonly string[]): Promise<Map<string, ResultFacts>> {
    const out = new Map<string, ResultFacts>();
    if (jobIds.length === 0) return out;
    const rows = await this.conn.db
      .selectFrom('results')
      .select(['job_id', 'content_note', 'partial', 'expected_documents'])
      .where('job_id', 'in', [...jobIds])
      .orderBy('written_at', 'asc')
      .execute();
    for (const r of rows) out.set(r.job_id, r);
    return out;
  }

  /**
   * The binary body of a stored result (the job's latest result, or document `seq` of it): bytes,
   * media type, size and SHA-256; undefined when there is no such result or document or it has no
   * binary body (a text page), or once retention purged it.
   */
  async body(jobId: string, seq?: number): Promise<BinaryBody | undefined> {
    const result = await this.conn.db
      .selectFrom('results')
      .select(['id'])
      .where('job_id', '=', jobId)
      .orderBy('written_at', 'desc')
      .executeTakeFirst();
    if (!result) return undefined;
    const row =
      seq === undefined
        ? await this.conn.db
            .selectFrom('results')
            .select(['body', 'content_type', 'body_size', 'body_sha256'])
            .where('id', '=', result.id)
            .executeTakeFirst()
        : await this.conn.db
            .selectFrom('result_documents')
            .select(['body', 'content_type', 'body_size', 'body_sha256'])
            .where('result_id', '=', result.id)
            .where('seq', '=', seq)
            .executeTakeFirst();
    if (!row?.body || row.body_sha256 === null) return undefined;
    const bytes = Buffer.isBuffer(row.body) ? row.body : Buffer.from(row.body as Uint8Array);
    return {
      bytes,
      contentType: row.content_type,
      size: Number(row.body_size ?? bytes.length),
      sha256: row.body_sha256,
    };
  }

  /**
   * One page of the documents of the job's result (latest task), in order: `offset` (0-based) and
   * `limit` (count) over `seq`. `result` is undefined when the job has no result yet; `total` is the
   * result's document count.
   */
  async documents(
    jobId: string,
    page: { offset: number; limit: number },
  ): Promise<{ result: ResultRow | undefined; total: number; documents: StoredDocument[] }> {
    const result = await this.forJob(jobId);
    if (!result) return { result, total: 0, documents: [] };
    const rows = await this.conn.db
      .selectFrom('result_documents')
      .select(DOCUMENT_COLUMNS)
      .where('result_id', '=', result.id)
      .orderBy('seq')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return { result, total: Number(result.document_count), documents: rows.map(toResultDocument) };
  }

  /**
   * Purges result payloads whose retention ended before `now` (text, markdown, links and a binary
   * body's bytes set to null, `purged_at` set; the row with title, task ID, times and the body's
   * media type, size and SHA-256 stays as evidence that the job ran; its documents lose markdown,
   * text, links, data and bytes and keep URL, status, title and error)
   * and moves their jobs from `completed` to `expired`. At most `limit` results per call.
   */
  async purgeExpired(now: Date, limit = 500): Promise<{ purged: number; jobsExpired: number }> {
    const at = now.toISOString();
    const due = await this.conn.db
      .selectFrom('results')
      .select(['id', 'job_id'])
      .where('expires_at', 'is not', null)
      .where('expires_at', '<=', at)
      .where('purged_at', 'is', null)
      .limit(limit)
      .execute();
    let jobsExpired = 0;
    for (const r of due) {
      await this.conn.tx(async (trx) => {
        await trx
          .updateTable('results')
          .set({ text: null, markdown: null, links: null, body: null, purged_at: at })
          .where('id', '=', r.id)
          .where('purged_at', 'is', null)
          .execute();
        await trx
          .updateTable('result_documents')
          .set({ markdown: null, text: null, links: null, data: null, body: null })
          .where('result_id', '=', r.id)
          .execute();
        const move = await moveJob(trx, this.conn.kind, r.job_id, 'expired', {
          detail: { resultId: r.id, reason: 'result retention ended; payload purged, evidence kept' },
        });
        if (move.kind === 'moved') jobsExpired++;
      });
    }
    return { purged: due.length, jobsExpired };
  }

  /**
   * Number of result rows, of every job or only of one job, provider entry or task (the demo's
   * summary; tests assert a task has exactly one).
   */
  async count(filter: { jobId?: string; provider?: string; taskId?: string } = {}): Promise<number> {
    let q = this.conn.db.selectFrom('results').select((eb) => eb.fn.countAll<number>().as('n'));
    if (filter.jobId) q = q.where('job_id', '=', filter.jobId);
    if (filter.provider) q = q.where('provider', '=', filter.provider);
    if (filter.taskId) q = q.where('task_id', '=', filter.taskId);
    const r = await q.executeTakeFirstOrThrow();
    return Number(r.n);
  }
}
