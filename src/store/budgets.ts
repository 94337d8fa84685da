/**
 * The budgets of the store (`store.budgets`, docs/budgets.md): budgets per account (optionally per
 * provider) in the provider's unit, per period; their usage per period (reserved, spent, the peak
 * ever held); each account's policy when one is spent. Configuration seeds them at start; the CLI
 * and the API change them while everything runs (an operator's change then outlives restarts).
 * The reservation and settlement of a job's cost are `ledger.ts`, run by the writes that make
 * them. Amounts are in the budget's unit; times UTC ISO-8601.
 */
import {
  budgetId,
  periodKey,
  periodRenewsAt,
  type Budget,
  type BudgetPeriod,
  type BudgetPolicy,
  type BudgetUsage,
} from '../model/budgets.js';
import { FINAL_STATES } from '../model/states.js';
import type { StoreConnection } from './connection.js';
import { coveringBudgets, policyOf, refusalOf, releaseIn, usageRows, type BudgetRefusal } from './ledger.js';
import { nowIso } from './rows.js';
import type { BudgetRow } from './schema.js';

/** A job that ended and still holds a reservation (there should be none), or a period whose sums disagree with its jobs. */
export interface BudgetLeak {
  kind: 'job_reservation' | 'period_reserved' | 'period_spent';
  /** The job, or the budget and period. */
  id: string;
  /** What the store holds, and what the jobs add up to (for a period). */
  held: number;
  expected: number;
}

/** The store's budgets. Reach it as `store.budgets`. */
export class BudgetsRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * Sets budget `b` (created, or its amount changed), `by` an operator (the CLI, the API) or the
   * configuration; a budget an operator set is not changed by the configuration. Returns its standing now.
   */
  async set(b: Budget, by: 'operator' | 'config'): Promise<BudgetUsage> {
    const id = budgetId(b);
    const at = nowIso();
    await this.conn.tx(async (trx) => {
      const existing = await trx.selectFrom('budgets').select('set_by').where('id', '=', id).executeTakeFirst();
      if (existing && by === 'config' && existing.set_by === 'operator') return;
      await trx
        .insertInto('budgets')
        .values({ id, ...b, set_by: by, updated_at: at })
        .onConflict((oc) => oc.column('id').doUpdateSet({ amount: b.amount, set_by: by, updated_at: at }))
        .execute();
    });
    return (await this.list({ id }))[0]!;
  }

  /** The accounts that have at least one budget. */
  async accounts(): Promise<string[]> {
    const rows = await this.conn.db.selectFrom('budgets').select('account').distinct().execute();
    return rows.map((r) => r.account);
  }

  /**
   * Jobs of `account` held by a budget (waiting with reason `budget`), at most `limit`: a raised
   * budget tells them to try now.
   */
  async heldJobs(account: string, limit = 1_000): Promise<{ id: string; workflowId: string }[]> {
    const rows = await this.conn.db
      .selectFrom('jobs')
      .select(['id', 'workflow_id'])
      .where('account', '=', account)
      .where('state', '=', 'submitting')
      .where('waiting', 'like', '{"reason":"budget"%')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, workflowId: r.workflow_id }));
  }

  /**
   * Removes budget `id` (its usage rows stay: jobs holding a reservation in it release and settle
   * there, and the same budget set again starts from their standing). Returns whether it existed.
   */
  async remove(id: string): Promise<boolean> {
    return this.conn.tx(async (trx) => {
      // Its usage rows stay: the jobs that reserved in it still release and settle there, so the
      // same budget set again starts from what they hold and what was spent in the period.
      const res = await trx.deleteFrom('budgets').where('id', '=', id).executeTakeFirst();
      return Number(res.numDeletedRows) > 0;
    });
  }

  /** The budgets (of `f.account`, or `f.id` alone) with their standing in the period containing `atMs` (default now). */
  async list(f: { account?: string; id?: string } = {}, atMs = Date.now()): Promise<BudgetUsage[]> {
    let q = this.conn.db.selectFrom('budgets').selectAll().orderBy('account').orderBy('id');
    if (f.account) q = q.where('account', '=', f.account);
    if (f.id) q = q.where('id', '=', f.id);
    const budgets = await q.execute();
    if (budgets.length === 0) return [];
    const usage = await this.conn.db
      .selectFrom('budget_usage')
      .selectAll()
      .where(
        'budget_id',
        'in',
        budgets.map((b) => b.id),
      )
      .execute();
    return budgets.map((b) => {
      const key = periodKey(b.period as BudgetPeriod, atMs);
      const u = usage.find((x) => x.budget_id === b.id && x.period_key === key);
      return usageOf(b, key, u, atMs);
    });
  }

  /** Sets the policy of `account` (see {@link BudgetPolicy}); an operator's is not changed by the configuration. */
  async setPolicy(account: string, policy: BudgetPolicy, by: 'operator' | 'config'): Promise<void> {
    const at = nowIso();
    await this.conn.tx(async (trx) => {
      const existing = await trx
        .selectFrom('budget_policies')
        .select('set_by')
        .where('account', '=', account)
        .executeTakeFirst();
      if (existing && by === 'config' && existing.set_by === 'operator') return;
      const row = { on_exceeded: policy.onExceeded, cancel_running: policy.cancelRunning ? 1 : 0, set_by: by };
      await trx
        .insertInto('budget_policies')
        .values({ account, ...row, updated_at: at })
        .onConflict((oc) => oc.column('account').doUpdateSet({ ...row, updated_at: at }))
        .execute();
    });
  }

  /** The policy of `account` (the default, refuse and never cancel, when none was set). */
  async policy(account: string): Promise<BudgetPolicy> {
    return policyOf(this.conn.db, account);
  }

  /**
   * Applies the configuration's budgets and policies: each is set (unless an operator changed it),
   * and a budget the configuration set before and no longer names is removed.
   */
  async seed(budgets: readonly Budget[], policies: Readonly<Record<string, BudgetPolicy>>): Promise<void> {
    const ids = new Set(budgets.map(budgetId));
    for (const b of budgets) await this.set(b, 'config');
    for (const [account, p] of Object.entries(policies)) await this.setPolicy(account, p, 'config');
    const stale = await this.conn.db.selectFrom('budgets').select('id').where('set_by', '=', 'config').execute();
    for (const { id } of stale) if (!ids.has(id)) await this.remove(id);
  }

  /**
   * Whether a new job of `account` on `provider` (its kind counting in `unit`) with cost
   * `estimate` fits every budget covering it now, read without reserving (the door's check: the
   * worker's reservation is the one that holds). Without `unit` (a client that does not know the
   * provider's kind) only the provider's own budgets are read; without `estimate` a job fits
   * while anything is left. Returns the first budget it would take past its amount, with the
   * account's policy, or undefined.
   */
  async check(
    account: string,
    provider: string,
    unit: string | undefined,
    estimate: number | undefined,
    atMs = Date.now(),
  ): Promise<BudgetRefusal | undefined> {
    const db = this.conn.db;
    const budgets = unit
      ? await coveringBudgets(db, account, provider, unit)
      : await db
          .selectFrom('budgets')
          .selectAll()
          .where('account', '=', account)
          .where('provider', '=', provider)
          .execute();
    if (budgets.length === 0) return undefined;
    const standing = await this.list({ account }, atMs);
    for (const b of budgets) {
      const s = standing.find((x) => x.id === b.id);
      const fits =
        !s || (estimate === undefined ? s.remaining > 1e-9 : s.spent + s.reserved + estimate <= s.amount + 1e-9);
      if (s && !fits) return refusalOf(b, s.periodKey, s, estimate ?? 0, atMs, await this.policy(account));
    }
    return undefined;
  }

  /**
   * After the provider reported `reported` for job `jobId` while it runs: the first budget of the
   * job that this report takes past its amount (what it reported beyond what it reserved, added to
   * the period), with the account's policy; undefined when none (or the job holds no reservation).
   */
  async overrun(jobId: string, reported: number, atMs = Date.now()): Promise<BudgetRefusal | undefined> {
    const row = await this.conn.db
      .selectFrom('jobs')
      .select(['account', 'provider', 'cost_unit', 'cost_reserved', 'cost_ledgers'])
      .where('id', '=', jobId)
      .executeTakeFirst();
    const held = Number(row?.cost_reserved ?? 0);
    if (!row?.cost_ledgers || held <= 0 || reported <= held) return undefined;
    const budgets = await coveringBudgets(this.conn.db, row.account, row.provider, row.cost_unit ?? '');
    const rows = await this.conn.tx((trx) => usageRows(trx, false, budgets, atMs));
    for (const { budget, key, usage } of rows)
      if (Number(usage.spent) + Number(usage.reserved) - held + reported > Number(budget.amount) + 1e-9)
        return refusalOf(budget, key, usage, reported - held, atMs, await this.policy(row.account));
    return undefined;
  }

  /**
   * Releases what job `jobId` holds reserved in its budgets (its submit was refused: nothing was
   * created; it reserves again when it next submits). Returns the amount released (0: it held nothing).
   */
  async release(jobId: string): Promise<number> {
    return this.conn.tx((trx) => releaseIn(trx, this.conn.kind === 'postgres', jobId));
  }

  /**
   * What the ledger holds that it should not: jobs that ended still holding a reservation, and
   * periods whose reserved or spent amounts differ from the sums of their jobs' reservations and
   * settlements. Empty when the ledger is whole (tests and `bench:budget-chaos` read it).
   */
  async leaks(): Promise<BudgetLeak[]> {
    const out: BudgetLeak[] = [];
    const jobs = await this.conn.db
      .selectFrom('jobs')
      .select(['id', 'state', 'cost_reserved', 'cost_settled', 'cost_ledgers'])
      .where('cost_ledgers', 'is not', null)
      .execute();
    const sums = new Map<string, { reserved: number; spent: number }>();
    for (const j of jobs) {
      const held = Number(j.cost_reserved ?? 0);
      if (held > 0 && FINAL_STATES.includes(j.state as never))
        out.push({ kind: 'job_reservation', id: j.id, held, expected: 0 });
      const ledgers = (JSON.parse(j.cost_ledgers!) as { budgets: { budget: string; period: string }[] }).budgets;
      for (const l of ledgers) {
        const k = `${l.budget} ${l.period}`;
        const s = sums.get(k) ?? { reserved: 0, spent: 0 };
        s.reserved += held;
        s.spent += Number(j.cost_settled ?? 0);
        sums.set(k, s);
      }
    }
    const usage = await this.conn.db.selectFrom('budget_usage').selectAll().execute();
    for (const u of usage) {
      const k = `${u.budget_id} ${u.period_key}`;
      const s = sums.get(k) ?? { reserved: 0, spent: 0 };
      if (Math.abs(Number(u.reserved) - s.reserved) > 1e-6)
        out.push({ kind: 'period_reserved', id: k, held: Number(u.reserved), expected: s.reserved });
      if (Math.abs(Number(u.spent) - s.spent) > 1e-6)
        out.push({ kind: 'period_spent', id: k, held: Number(u.spent), expected: s.spent });
    }
    return out;
  }
}

/** The standing of budget `b` in period `key` (usage row `u`, absent: nothing yet). */
function usageOf(
  b: BudgetRow,
  key: string,
  u: { reserved: number; spent: number; peak: number } | undefined,
  atMs: number,
): BudgetUsage {
  const reserved = Number(u?.reserved ?? 0);
  const spent = Number(u?.spent ?? 0);
  const renews = periodRenewsAt(b.period as BudgetPeriod, atMs);
  return {
    id: b.id,
    account: b.account,
    provider: b.provider,
    unit: b.unit,
    period: b.period as BudgetPeriod,
    amount: Number(b.amount),
    periodKey: key,
    reserved,
    spent,
    remaining: Number(b.amount) - reserved - spent,
    peak: Number(u?.peak ?? 0),
    renewsAt: renews === null ? null : new Date(renews).toISOString(),
  };
}
