/**
 * The one writer of a job's state (`jobs.state`). Every repository that moves a job — a recorded
 * transition (`jobs.transition`), a task bound (`jobs.bindTask`), a resume (`jobs.resume`), the
 * result written once (`results.writeOnce`), the retention purge (`results.purgeExpired`) — does it
 * through {@link moveJob}, inside its own transaction, so that the move and what goes with it (the
 * task ID, the result row) commit together or not at all.
 *
 * A move is a compare-and-set checked against the transition table (`TRANSITIONS` in
 * `src/model/states.ts`): the row changes only while its state is one the table lets move to the
 * target, so a move the table forbids — or one that lost a race to another writer — changes
 * nothing and says which state it met. The workflow checks the same table; the store no longer
 * trusts its callers to. A move into a final state settles what the job reserved in its account's
 * budgets, in the same transaction (`ledger.ts`).
 */
import type { Expression, ExpressionBuilder, Kysely, SqlBool, UpdateObject } from 'kysely';
import { FINAL_STATES, movesInto, type JobState } from '../model/states.js';
import type { Database, JobRow } from './schema.js';
import { eventRow, nowIso } from './rows.js';
import type { StoreConnection, StoreKind } from './connection.js';
import { settleIn } from './ledger.js';

/** The columns a final move reads back to settle the job's budgets. */
const SETTLE_COLUMNS = [
  'id',
  'state',
  'task_id',
  'cost_reported',
  'cost_estimated',
  'cost_ledgers',
  'cost_reserved',
  'cost_settled',
] as const;

/**
 * What {@link moveJob} did: `moved` from a state the table allows (`row`: the row as written, when
 * asked for), `same` (already there: only `set` applied), `refused` (the table forbids it from the
 * state met, or no such job), `unmet` (the caller's further condition did not hold: nothing
 * written, nothing read).
 */
export type MoveOutcome =
  { kind: 'moved'; row?: JobRow } | { kind: 'same' } | { kind: 'refused'; from: JobState | null } | { kind: 'unmet' };

/** Columns written with a move, beside the state (never `state`, `updated_at` or `finished_at`, which the move sets): values, or expressions over the row. */
export type MoveSet = Omit<UpdateObject<Database, 'jobs'>, 'state' | 'updated_at' | 'finished_at'>;

/** The illegal move a caller asked for: thrown where a refusal means a bug, never caught to retry. */
export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
  constructor(
    readonly jobId: string,
    readonly from: JobState | null,
    readonly to: JobState,
  ) {
    super(`job ${jobId}: the store refused ${from ?? '(no job)'} → ${to}; the transition table does not allow it`);
  }
}

/**
 * Moves job `jobId` to `to` in transaction `trx`, writing `set` with it, and appends a `state`
 * event with `detail` to its timeline (`event: false`: the caller appends its own record of the
 * move). Report the outcome with {@link reportMove} once the transaction committed. A job already
 * in `to` gets `set` only (no event). `only`: a further condition on the row, checked in the same
 * statement; a row that does not meet it is left alone (`unmet`). `returnRow`: the moved row comes
 * back with the move (`moved.row`). Never throws for a refused move: it returns the state it met.
 */
export async function moveJob(
  trx: Kysely<Database>,
  kind: StoreKind,
  jobId: string,
  to: JobState,
  opts: {
    set?: MoveSet;
    detail?: unknown;
    event?: false;
    only?: (eb: ExpressionBuilder<Database, 'jobs'>) => Expression<SqlBool>;
    returnRow?: boolean;
  } = {},
): Promise<MoveOutcome> {
  const at = nowIso();
  const from = movesInto(to);
  const final = (FINAL_STATES as readonly string[]).includes(to);
  const moving =
    from.length === 0
      ? undefined
      : trx
          .updateTable('jobs')
          .set({
            ...opts.set,
            state: to,
            updated_at: at,
            finished_at: final ? at : null,
            // A job that moves on no longer waits (submitting and unknown may wait again).
            ...(to !== 'submitting' && to !== 'unknown' ? { waiting: null } : {}),
          })
          .where('id', '=', jobId)
          .where('state', 'in', from);
  const update = moving && opts.only ? moving.where(opts.only) : moving;
  let moved = false;
  let written: JobRow | undefined;
  if (update && opts.returnRow) {
    written = await update.returningAll().executeTakeFirst();
    if (written && final) await settleIn(trx, kind === 'postgres', written);
    moved = written !== undefined;
  } else if (update && final) {
    // The row's cost columns come back with the move: a job's end settles its budgets.
    const row = await update.returning(SETTLE_COLUMNS).executeTakeFirst();
    if (row) await settleIn(trx, kind === 'postgres', row);
    moved = row !== undefined;
  } else if (update) moved = Number((await update.executeTakeFirst()).numUpdatedRows) > 0;
  if (moved) {
    if (opts.event !== false)
      await trx
        .insertInto('job_events')
        .values(eventRow(jobId, 'state', to, opts.detail ?? null))
        .execute();
    return { kind: 'moved', ...(written ? { row: written } : {}) };
  }
  if (opts.only) return { kind: 'unmet' };
  // Rarely reached (a repeat, a race, a bug): read what the move met.
  const row = await trx.selectFrom('jobs').select('state').where('id', '=', jobId).executeTakeFirst();
  if (row?.state === to) {
    if (opts.set && Object.keys(opts.set).length)
      await trx
        .updateTable('jobs')
        .set({ ...opts.set, updated_at: at })
        .where('id', '=', jobId)
        .execute();
    return { kind: 'same' };
  }
  return { kind: 'refused', from: (row?.state as JobState | undefined) ?? null };
}

/** Reports a committed move of `out` to `to` to the connection's metrics (call after the transaction committed). */
export function reportMove(conn: StoreConnection, out: MoveOutcome, to: JobState): void {
  if (out.kind === 'moved') conn.metrics.transition(to);
}
