/**
 * Submit reservations of the store (`store.slots`): a job's slot under its provider key's adaptive
 * limit of active jobs, given by the key's fair queue between accounts (`fairQueue.ts`), and its
 * estimated cost reserved in its account's budgets (`ledger.ts`), all in the one write
 * transaction that records the submit intent; and the limit itself, learned from the provider's
 * answers (additive increase, multiplicative decrease). Times are UTC ISO-8601 strings.
 */
import { sql } from 'kysely';
import { isFinalState } from '../model/states.js';
import type { StoreConnection } from './connection.js';
import {
  ACTIVE_STATES,
  applyFairPlan,
  GRANT_LEASE_MS,
  holdsSlot,
  planFair,
  waitsForSlot,
  weightIn,
  type SlotGrant,
} from './fairQueue.js';
import { reserveIn, type BudgetRefusal, type SubmitCost } from './ledger.js';
import { nowIso } from './rows.js';
import type { JobRow } from './schema.js';

/** Which jobs share one provider key: every job whose row names it (`provider_key`, set by the worker at submit). */
export interface KeyScope {
  /** The provider key (`<kind>@<host>#<credential fingerprint>`). */
  label: string;
}

/** Configured bounds of the adaptive limit (count of active provider jobs per key). */
export interface ActiveJobsLimits {
  /** Limit before anything is learned. */
  initial: number;
  /** Highest limit the additive increase may reach; undefined = none. */
  max?: number;
}

/** How a reservation shares the key and counts the money (see {@link SlotsRepository.reserveSubmit}). */
export interface ReserveOptions {
  /** The job's cost under its kind (unit, estimate): reserved in every budget that covers it. Absent: no budget is consulted. */
  cost?: SubmitCost;
  /** Share the key's free slots between the accounts that wait for them, by these weights (absent: default 1). Absent: first come, first served. */
  fair?: { weights?: Readonly<Record<string, number>> };
}

/** Outcome of {@link SlotsRepository.reserveSubmit}. `grants`: waiting jobs given a slot meanwhile (tell their workflows). */
export type Reservation =
  /** `holdsCost`: the job holds a reservation in its budgets now (release it when the submit is refused). */
  | { kind: 'reserved'; before: JobRow; active: number; limit: number; grants: SlotGrant[]; holdsCost: boolean }
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

/** The store's submit reservations, fair queue and adaptive limits. Reach it as `store.slots`. */
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
   * no statement for budgets; one asking an uncontended key none for the fair queue.
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
      const at = nowIso();
      const intent = (extra: Partial<JobRow> = {}) =>
        trx
          .updateTable('jobs')
          .set({
            submit_intent_at: at,
            submit_attempts: sql`submit_attempts + 1`,
            updated_at: at,
            waiting: null,
            ...extra,
          })
          .where('id', '=', jobId)
          .execute();
      if (before.task_id) return { kind: 'known', before };
      if (isFinalState(before.state)) return { kind: 'final', state: before.state };
      const decided = afterReconcile && Date.parse(before.submit_intent_at ?? '') < intentsSinceMs;
      if (before.submit_intent_at && !decided) {
        await intent();
        return { kind: 'known', before };
      }
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
      let lq = trx
        .selectFrom('provider_limits')
        .select(['active_limit', 'ceiling', 'fair_vtime'])
        .where('label', '=', scope.label);
      if (postgres) lq = lq.forUpdate();
      const lim = await lq.executeTakeFirstOrThrow();
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
      return { kind: 'reserved', before, active, limit, grants: plan?.grants ?? [], holdsCost };
    });
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

  /**
   * Increase after a submit accepted while the key was at its limit (`activeBefore + 1 >= limit`):
   * by one job while below the threshold (slow start: the limit doubles per window of accepted
   * submits until the first refusal), else by 1/limit (additive: one job per window); never above
   * the ceiling.
   */
  async noteSubmitAccepted(label: string, activeBefore: number): Promise<void> {
    await this.conn.tx(async (trx) => {
      const lim = await trx
        .selectFrom('provider_limits')
        .select(['active_limit', 'ceiling', 'threshold'])
        .where('label', '=', label)
        .executeTakeFirst();
      if (!lim) return;
      const current = Number(lim.active_limit);
      if (activeBefore + 1 < Math.floor(current)) return;
      const slowStart = lim.threshold === null || current < Number(lim.threshold);
      const next = Math.min(
        current + (slowStart ? 1 : 1 / Math.max(1, current)),
        lim.ceiling ?? Number.POSITIVE_INFINITY,
      );
      if (next !== current)
        await trx
          .updateTable('provider_limits')
          .set({ active_limit: next, updated_at: nowIso() })
          .where('label', '=', label)
          .execute();
    });
  }

  /**
   * Multiplicative decrease after a concurrency refusal: the limit halves (at least 1) and never
   * exceeds what the provider said it allows (`statedLimit`, which also becomes the ceiling); the
   * new limit becomes the threshold above which growth is additive. Returns the new limit.
   */
  async noteSubmitRefused(label: string, activeBefore: number, statedLimit?: number): Promise<number> {
    return this.conn.tx(async (trx) => {
      const lim = await trx
        .selectFrom('provider_limits')
        .select(['active_limit', 'ceiling'])
        .where('label', '=', label)
        .executeTakeFirst();
      const current = Number(lim?.active_limit ?? Math.max(1, activeBefore));
      let next = Math.max(1, Math.floor(Math.min(current, activeBefore + 1) / 2));
      let ceiling = lim?.ceiling ?? null;
      if (statedLimit !== undefined && statedLimit >= 1) {
        ceiling = ceiling === null ? statedLimit : Math.min(ceiling, statedLimit);
        next = Math.max(next, Math.min(statedLimit, current));
      }
      next = Math.min(next, ceiling ?? next);
      await trx
        .insertInto('provider_limits')
        .values({ label, active_limit: next, ceiling, threshold: next, refusals: 1, updated_at: nowIso() })
        .onConflict((oc) =>
          oc.column('label').doUpdateSet({
            active_limit: next,
            ceiling,
            threshold: next,
            refusals: sql`provider_limits.refusals + 1`,
            updated_at: nowIso(),
          }),
        )
        .execute();
      return next;
    });
  }
}
