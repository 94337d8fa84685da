/**
 * Submit reservations of the store (`store.slots`): a job's slot under its provider key's adaptive
 * limit of active jobs, given by the key's fair queue between accounts (`fairQueue.ts`), and its
 * estimated cost reserved in its account's budgets (`ledger.ts`), all in the one write
 * transaction that records the submit intent. The limit itself, learned from the provider's
 * answers, is `limits.ts`'s. Times are UTC ISO-8601 strings.
 */
import { sql } from 'kysely';
import { isFinalState } from '../model/states.js';
import type { StoreConnection } from './connection.js';
import type { ActiveJobsLimits } from './limits.js';
import {
  ACTIVE_STATES,
  applyFairPlan,
  GRANT_LEASE_MS,
  holdsSlot,
  planFair,
  waitsForSlot,
  weightIn,
  type JobsEb,
  type SlotGrant,
} from './fairQueue.js';
import { reserveIn, type BudgetRefusal, type SubmitCost } from './ledger.js';
import type { CooldownState } from '../model/types.js';
import { cooldownOf, nowIso } from './rows.js';
import type { JobRow } from './schema.js';

/** Which jobs share one provider key: every job whose row names it (`provider_key`, set by the worker at submit). */
export interface KeyScope {
  /** The provider key (`<kind>@<host>#<credential fingerprint>`). */
  label: string;
}

/** How a reservation shares the key and counts the money (see {@link SlotsRepository.reserveSubmit}). */
export interface ReserveOptions {
  /** The job's cost under its kind (unit, estimate): reserved in every budget that covers it. Absent: no budget is consulted. */
  cost?: SubmitCost;
  /** Share the key's free slots between the accounts that wait for them, by these weights (absent: default 1). Absent: first come, first served. */
  fair?: { weights?: Readonly<Record<string, number>> };
  /**
   * The provider account and key the job counts toward (the worker knows them at submit): written
   * on a row that does not name both yet, whatever the outcome (a job that waits for a slot counts
   * among the key's waiting jobs by it).
   */
  provider?: { account: string; key: string };
  /**
   * The limiter labels of the submit that follows (the key's and its submits' hold): their shared
   * cool-downs come back with a reservation made in one statement (`seen`), read as the limiter
   * would read them just before the call.
   */
  cooldowns?: readonly string[];
}

/** The columns that record a submit intent at `at` (a job that submits no longer waits for a slot). */
const intentColumns = (at: string) =>
  ({ submit_intent_at: at, submit_attempts: sql<number>`submit_attempts + 1`, updated_at: at, waiting: null }) as const;

/** Outcome of {@link SlotsRepository.reserveSubmit}. `grants`: waiting jobs given a slot meanwhile (tell their workflows). */
export type Reservation =
  /** `holdsCost`: the job holds a reservation in its budgets now (release it when the submit is refused). */
  /** `seen`: the shared cool-downs of {@link ReserveOptions.cooldowns} (label → state, undefined for none) when they came back with it. */
  | {
      kind: 'reserved';
      active: number;
      limit: number;
      grants: SlotGrant[];
      holdsCost: boolean;
      seen?: Map<string, CooldownState | undefined>;
    }
  /** The job already has an answer or an unanswered intent: the caller adopts or reconciles. */
  | { kind: 'known'; before: JobRow }
  /**
   * No slot for this job: `waiting` other jobs of the key wait for one too (registered, no intent,
   * no task), `ahead` of them registered before this one; `turnOf`: the free slot went to this
   * account's turn in the fair queue.
   */
  | {
      kind: 'full';
      active: number;
      limit: number;
      waiting: number;
      ahead: number;
      turnOf?: string;
      grants: SlotGrant[];
    }
  /** A budget of the job's account would go past its amount: nothing reserved, nothing submitted. */
  | { kind: 'over_budget'; refusal: BudgetRefusal }
  /** The job ended (cancelled while its submit waited for a slot, say): nothing may be submitted. */
  | { kind: 'final'; state: string }
  | { kind: 'missing' };

/** The store's submit reservations and fair queue. Reach it as `store.slots`. */
export class SlotsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Records the intent to submit job `jobId` (before the provider is called), but only while fewer
   * than the key's learned limit of provider jobs are active, the key's fair queue gives this job
   * the free slot (`opts.fair`: when other accounts, or jobs of its own account of higher
   * priority, wait too) and every budget covering it can take its estimate (`opts.cost`, reserved
   * now). Counting, deciding and recording happen in one write transaction, with the key's limit
   * row locked on PostgreSQL, so two workers cannot both take the last slot or the last of a
   * budget. A job with a task ID or an unanswered earlier intent is returned as `known` (the intent
   * is recorded again for the attempt count) and needs no slot; an ended job (without a task) is
   * `final`. `afterReconcile`: the submit follows a reconcile that proved the task absent, so an
   * intent the reconcile decided is no obstacle — but only one recorded before `intentsSinceMs`
   * (epoch ms, the resubmit activity's first scheduling). A job whose account has no budget pays
   * no statement for budgets; one asking an uncontended key none for the fair queue: on SQLite the
   * common case (a first submit, a free slot, no budget covering the job, no other account's or
   * higher-priority job waiting) is one statement ({@link reserveAtOnce}).
   */
  async reserveSubmit(
    jobId: string,
    scope: KeyScope,
    limits: ActiveJobsLimits,
    afterReconcile: boolean,
    intentsSinceMs = Number.POSITIVE_INFINITY,
    opts: ReserveOptions = {},
  ): Promise<Reservation> {
    const postgres = this.conn.kind === 'postgres';
    if (!postgres) {
      const quick = await this.reserveAtOnce(jobId, scope.label, limits, opts);
      if (quick) return quick;
    }
    return this.conn.tx(async (trx): Promise<Reservation> => {
      const cost = opts.cost;
      const before = await trx
        .selectFrom('jobs')
        .selectAll()
        .select((eb) =>
          (cost
            ? eb
                .selectFrom('budgets')
                .select(eb.fn.countAll<number>().as('n'))
                .whereRef('budgets.account', '=', 'jobs.account')
                .where('budgets.unit', '=', cost.unit)
                .where((b) =>
                  b.or([b('budgets.provider', '=', b.ref('jobs.provider')), b('budgets.provider', '=', '*')]),
                )
            : sql<number>`0`
          ).as('budgets_covering'),
        )
        .where('id', '=', jobId)
        .executeTakeFirst();
      if (!before) return { kind: 'missing' };
      const provider = opts.provider;
      if (provider && (before.provider_account === null || before.provider_key === null)) {
        await trx
          .updateTable('jobs')
          .set({ provider_account: provider.account, provider_key: provider.key })
          .where('id', '=', jobId)
          .execute();
        Object.assign(before, { provider_account: provider.account, provider_key: provider.key });
      }
      const at = nowIso();
      const intent = (extra: Partial<JobRow> = {}) =>
        trx
          .updateTable('jobs')
          .set({ ...intentColumns(at), ...extra })
          .where('id', '=', jobId)
          .execute();
      if (before.task_id) return { kind: 'known', before };
      if (isFinalState(before.state)) return { kind: 'final', state: before.state };
      const decided = afterReconcile && Date.parse(before.submit_intent_at ?? '') < intentsSinceMs;
      if (before.submit_intent_at && !decided) {
        await intent();
        return { kind: 'known', before };
      }
      const limitRow = () => {
        const q = trx
          .selectFrom('provider_limits')
          .select(['active_limit', 'ceiling', 'fair_vtime'])
          .where('label', '=', scope.label);
        return (postgres ? q.forUpdate() : q).executeTakeFirst();
      };
      // The key's limit row is made at its first submit; after that it is only read (and locked on PostgreSQL).
      let lim = await limitRow();
      if (!lim) {
        await trx
          .insertInto('provider_limits')
          .values({
            label: scope.label,
            active_limit: limits.initial,
            ceiling: limits.max ?? null,
            threshold: null,
            updated_at: at,
          })
          .onConflict((oc) => oc.column('label').doNothing())
          .execute();
        lim = await limitRow();
        if (!lim) throw new Error(`the limit row of provider key ${scope.label} could not be made`);
      }
      const cutoff = new Date(Date.now() - GRANT_LEASE_MS).toISOString();
      const priority = Number(before.priority);
      const counts = await trx
        .selectFrom('jobs')
        .select((eb) => {
          const count = (e: ReturnType<typeof holdsSlot>) => eb.fn.sum<number>(eb.case().when(e).then(1).else(0).end());
          const waits = waitsForSlot(eb, cutoff);
          return [
            count(holdsSlot(eb, cutoff)).as('active'),
            count(waits).as('waiting'),
            count(eb.and([waits, eb('account', '!=', before.account)])).as('others'),
            count(eb.and([waits, eb('account', '=', before.account), eb('priority', '>', priority)])).as('higher'),
          ];
        })
        .where('provider_key', '=', scope.label)
        .where('id', '!=', jobId)
        .where('state', 'in', ACTIVE_STATES)
        .executeTakeFirstOrThrow();
      const active = Number(counts.active ?? 0);
      const limit = Math.max(1, Math.floor(Number(lim.active_limit)));
      const granted = before.slot_granted_at !== null && before.slot_granted_at > cutoff;
      const full = async (turnOf?: string, grants: SlotGrant[] = []): Promise<Reservation> => {
        const ahead = await trx
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('provider_key', '=', scope.label)
          .where('id', '!=', jobId)
          .where('state', '=', 'submitting')
          .where((eb) => waitsForSlot(eb, cutoff))
          .where('created_at', '<', before.created_at)
          .executeTakeFirstOrThrow();
        const waiting = Number(counts.waiting ?? 0);
        return { kind: 'full', active, limit, waiting, ahead: Number(ahead.n), turnOf, grants };
      };
      if (!granted && active >= limit) return full();
      // A free slot: the key's fair queue decides whose it is when others wait for it too.
      const contended = Number(counts.others ?? 0) > 0 || Number(counts.higher ?? 0) > 0;
      const plan =
        opts.fair && !granted && contended
          ? await planFair(
              trx,
              scope.label,
              limit - active,
              Number(lim.fair_vtime ?? 0),
              { id: jobId, account: before.account, priority },
              (a) => weightIn(opts.fair?.weights, a),
              cutoff,
            )
          : undefined;
      if (plan && !plan.mine) {
        await applyFairPlan(trx, plan);
        return full(plan.first, plan.grants);
      }
      let costColumns: Partial<JobRow> = {};
      const holding = Number(before.cost_reserved ?? 0) > 0;
      let holdsCost = holding;
      if (cost && Number(before.budgets_covering) > 0 && !holding) {
        const r = await reserveIn(trx, postgres, before, cost, Date.now());
        if (r.kind === 'over') return { kind: 'over_budget', refusal: r.refusal };
        if (r.kind === 'reserved') {
          costColumns = r.columns;
          holdsCost = true;
        }
      } else if (cost && !holding) {
        // No budget covers the job: its estimate is still kept on the row (the same write), so it carries its cost.
        costColumns = { cost_unit: cost.unit, cost_estimated: cost.estimate };
      }
      if (plan) await applyFairPlan(trx, plan);
      await intent({ ...costColumns, ...(before.slot_granted_at ? { slot_granted_at: null } : {}) });
      return { kind: 'reserved', active, limit, grants: plan?.grants ?? [], holdsCost };
    });
  }

  /**
   * {@link reserveSubmit}'s common case in one statement (SQLite only): the intent is recorded, with
   * the job's cost estimate and provider key, only while the job has no task, no intent, no grant
   * and no reservation of its own, is `submitting`, no budget covers it, its key's limit (the
   * configured initial one before the key's first submit, which then makes its row) leaves a slot
   * free beside the key's other active jobs, and (`opts.fair`) no other account's job and no job of
   * its own account of higher priority waits for one. The decision is the
   * transaction's, made in the same statement: SQLite runs one writer at a time and a write
   * statement takes the write lock before it reads, so two workers cannot both take the last slot.
   * Undefined when any condition does not hold: then the transaction decides (and says why).
   */
  private async reserveAtOnce(
    jobId: string,
    label: string,
    limits: ActiveJobsLimits,
    opts: ReserveOptions,
  ): Promise<Reservation | undefined> {
    const { cost, provider } = opts;
    const labels = opts.cooldowns ?? [];
    const at = nowIso();
    const cutoff = new Date(Date.now() - GRANT_LEASE_MS).toISOString();
    const unnamed = sql<boolean>`provider_account is null or provider_key is null`;
    const row = await this.conn.db
      // The key's other jobs holding a slot and its learned limit (null before its first submit),
      // counted once for the condition and the answer.
      .with(
        (cte) => cte('slot').materialized(),
        (db) =>
          db.selectNoFrom((eb) => [
            eb
              .selectFrom('jobs as o')
              .select((o) => o.fn.countAll<number>().as('n'))
              .where('o.provider_key', '=', label)
              .where('o.id', '!=', jobId)
              .where('o.state', 'in', ACTIVE_STATES)
              .where((o) => holdsSlot(o as unknown as JobsEb, cutoff))
              .as('active'),
            eb.selectFrom('provider_limits').select('active_limit').where('label', '=', label).as('lim'),
          ]),
      )
      .updateTable('jobs')
      .set({
        ...intentColumns(at),
        ...(cost ? { cost_unit: cost.unit, cost_estimated: cost.estimate } : {}),
        ...(provider
          ? {
              provider_account: sql`case when ${unnamed} then ${provider.account} else provider_account end`,
              provider_key: sql`case when ${unnamed} then ${provider.key} else provider_key end`,
            }
          : {}),
      })
      .where('id', '=', jobId)
      .where('state', '=', 'submitting')
      .where('task_id', 'is', null)
      .where('submit_intent_at', 'is', null)
      .where('slot_granted_at', 'is', null)
      .where((eb) => eb.or([eb('cost_reserved', 'is', null), eb('cost_reserved', '<=', 0)]))
      .where((eb) => {
        // A free slot as the transaction counts it (active < max(1, floor(limit))): active + 1 <=
        // max(1, limit), the limit being the configured initial one while the key has no row yet.
        const lim = sql<number>`coalesce(slot.lim, ${limits.initial})`;
        const conditions = [
          eb.exists(
            eb
              .selectFrom('slot')
              .select('slot.active')
              .where(sql<boolean>`slot.active + 1 <= case when ${lim} < 1 then 1 else ${lim} end`),
          ),
        ];
        if (cost)
          conditions.push(
            eb.not(
              eb.exists(
                eb
                  .selectFrom('budgets')
                  .select('budgets.id')
                  .whereRef('budgets.account', '=', 'jobs.account')
                  .where('budgets.unit', '=', cost.unit)
                  .where((b) =>
                    b.or([b('budgets.provider', '=', b.ref('jobs.provider')), b('budgets.provider', '=', '*')]),
                  ),
              ),
            ),
          );
        if (opts.fair)
          conditions.push(
            eb.not(
              eb.exists(
                eb
                  .selectFrom('jobs as w')
                  .select('w.id')
                  .where('w.provider_key', '=', label)
                  .where('w.id', '!=', jobId)
                  .where('w.state', 'in', ACTIVE_STATES)
                  .where((w) => waitsForSlot(w as unknown as JobsEb, cutoff))
                  .where((w) =>
                    w.or([w('w.account', '!=', w.ref('jobs.account')), w('w.priority', '>', w.ref('jobs.priority'))]),
                  ),
              ),
            ),
          );
        return eb.and(conditions);
      })
      .returning((eb) => [
        eb.selectFrom('slot').select('slot.active').as('active'),
        eb.selectFrom('slot').select('slot.lim').as('active_limit'),
        // The submit's cool-downs, as rows of [label, until, reason, release_next] (SQLite's JSON functions).
        (labels.length
          ? eb
              .selectFrom('provider_cooldowns')
              .select(sql<string>`json_group_array(json_array(label, until, reason, release_next))`.as('rows'))
              .where('label', 'in', labels)
          : sql<string | null>`null`
        ).as('cooldowns'),
      ])
      .executeTakeFirst();
    if (!row) return undefined;
    // The key's first submit: its limit row is made now, at the limit the reservation counted against.
    if (row.active_limit === null)
      await this.conn.db
        .insertInto('provider_limits')
        .values({ label, active_limit: limits.initial, ceiling: limits.max ?? null, threshold: null, updated_at: at })
        .onConflict((oc) => oc.column('label').doNothing())
        .execute();
    const limit = Math.max(1, Math.floor(Number(row.active_limit ?? limits.initial)));
    const reserved = { kind: 'reserved' as const, active: Number(row.active), limit, grants: [], holdsCost: false };
    if (!labels.length || row.cooldowns === null) return reserved;
    const seen = new Map<string, CooldownState | undefined>(labels.map((l) => [l, undefined]));
    for (const [l, until, reason, releaseNext] of JSON.parse(row.cooldowns) as [
      string,
      string,
      string,
      string | null,
    ][])
      seen.set(l, cooldownOf({ until, reason, release_next: releaseNext }));
    return { ...reserved, seen };
  }

  /**
   * Moves the job's submit intent to now: its submit, held back or queued after the reservation
   * recorded the intent (the key's cool-down, quota hold or spacing), leaves only now, and a reconcile
   * counts the provider's lags from when it could have created the task. Nothing changes once the
   * task is known.
   */
  async intentSent(jobId: string): Promise<void> {
    const at = nowIso();
    await this.conn.db
      .updateTable('jobs')
      .set({ submit_intent_at: at, updated_at: at })
      .where('id', '=', jobId)
      .where('task_id', 'is', null)
      .where('submit_intent_at', 'is not', null)
      .execute();
  }

  /**
   * Gives the free slots of key `label` to the jobs waiting for them, in the key's fair order
   * (after a job of the key ended: the waiting jobs of every worker sleep on timers, and the grants
   * tell them to submit now). Returns the grants; none when nothing waits or no slot is free.
   */
  async grantFree(label: string, weights?: Readonly<Record<string, number>>): Promise<SlotGrant[]> {
    const postgres = this.conn.kind === 'postgres';
    return this.conn.tx(async (trx) => {
      let lq = trx.selectFrom('provider_limits').select(['active_limit', 'fair_vtime']).where('label', '=', label);
      if (postgres) lq = lq.forUpdate();
      const lim = await lq.executeTakeFirst();
      if (!lim) return [];
      const cutoff = new Date(Date.now() - GRANT_LEASE_MS).toISOString();
      const counts = await trx
        .selectFrom('jobs')
        .select((eb) => [
          eb.fn.sum<number>(eb.case().when(holdsSlot(eb, cutoff)).then(1).else(0).end()).as('active'),
          eb.fn.sum<number>(eb.case().when(waitsForSlot(eb, cutoff)).then(1).else(0).end()).as('waiting'),
        ])
        .where('provider_key', '=', label)
        .where('state', 'in', ACTIVE_STATES)
        .executeTakeFirstOrThrow();
      const free = Math.max(1, Math.floor(Number(lim.active_limit))) - Number(counts.active ?? 0);
      if (free <= 0 || Number(counts.waiting ?? 0) === 0) return [];
      const plan = await planFair(
        trx,
        label,
        free,
        Number(lim.fair_vtime ?? 0),
        undefined,
        (a) => weightIn(weights, a),
        cutoff,
      );
      await applyFairPlan(trx, plan);
      return plan.grants;
    });
  }
}
