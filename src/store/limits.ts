/**
 * The adaptive limit of active provider jobs per provider key (`store.limits`), learned from the
 * provider's answers to submits: additive increase after accepted submits at the limit (a slow
 * start up to the threshold), multiplicative decrease after a concurrency refusal, never above a
 * limit the provider stated. `slots.ts` reserves under it. Times are UTC ISO-8601 strings.
 */
import { sql } from 'kysely';
import type { StoreConnection } from './connection.js';
import { nowIso } from './rows.js';

/** Configured bounds of the adaptive limit (count of active provider jobs per key). */
export interface ActiveJobsLimits {
  /** Limit before anything is learned. */
  initial: number;
  /** Highest limit the additive increase may reach; undefined = none. */
  max?: number;
}

/** The learned limit of active jobs per provider key. Reach it as `store.limits`. */
export class ActiveLimitsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Increase after a submit accepted while the key was at its limit (`activeBefore + 1 >= limit`):
   * by one job while below the threshold (slow start: the limit doubles per window of accepted
   * submits until the first refusal), else by 1/limit (additive: one job per window); never above
   * the ceiling. `limitSeen`: the limit the submit's reservation counted against; a submit that
   * left room under it (`activeBefore + 1 < limitSeen`) grows nothing and costs no statement.
   */
  async noteSubmitAccepted(label: string, activeBefore: number, limitSeen?: number): Promise<void> {
    if (limitSeen !== undefined && activeBefore + 1 < limitSeen) return;
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
