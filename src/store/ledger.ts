/**
 * The budget ledger inside a write transaction (docs/budgets.md): a job's estimate reserved in
 * every budget that covers it, released when nothing was created, settled when the job ends. The
 * repositories call these with their own transaction — the slot reservation (`slots.ts`), a
 * state's end (`jobs.ts`, `results.ts`), a refusal (`jobs.ts`) — so a reservation and the write
 * that makes it (or ends it) commit together. On PostgreSQL the usage rows are locked
 * (`FOR UPDATE`, in ID order) before they are checked; SQLite's write transaction holds the
 * database. Amounts are in the budget's unit.
 */
import type { Kysely } from 'kysely';
import {
  DEFAULT_BUDGET_POLICY,
  periodKey,
  periodRenewsAt,
  type BudgetPeriod,
  type BudgetPolicy,
  type JobCost,
} from '../model/budgets.js';
import { isFinalState } from '../model/states.js';
import { nowIso } from './rows.js';
import type { BudgetRow, BudgetUsageRow, Database, JobRow } from './schema.js';

/** What a submit asks the ledger to reserve: the kind's unit and estimate (≥ 0), and whether a failed task is free. */
export interface SubmitCost {
  unit: string;
  estimate: number;
  failedFree: boolean;
}

/** A budget that a job's estimate would take past its amount, as the caller is told. */
export interface BudgetRefusal {
  budget: string;
  account: string;
  provider: string;
  unit: string;
  period: BudgetPeriod;
  periodKey: string;
  amount: number;
  reserved: number;
  spent: number;
  /** `amount − reserved − spent`, never below 0. */
  remaining: number;
  /** The estimate that did not fit. */
  estimate: number;
  /** UTC ISO-8601 start of the next period; null for `total`. */
  renewsAt: string | null;
  policy: BudgetPolicy;
}

/** What the job row keeps of its reservation (`cost_ledgers`). */
interface Ledgers {
  budgets: { budget: string; period: string }[];
  failedFree: boolean;
}

/** Tolerance of floating-point sums (USD cents of cents). */
const EPSILON = 1e-9;

/** The budgets that cover a job of `account` on `provider` in `unit`, ordered by ID. */
export function coveringBudgets(
  trx: Kysely<Database>,
  account: string,
  provider: string,
  unit: string,
): Promise<BudgetRow[]> {
  return trx
    .selectFrom('budgets')
    .selectAll()
    .where('account', '=', account)
    .where('unit', '=', unit)
    .where('provider', 'in', [provider, '*'])
    .orderBy('id')
    .execute();
}

/**
 * The usage rows of `budgets` in the periods containing `atMs` (created at 0 when absent), locked
 * on PostgreSQL, in the order of `budgets`.
 */
export async function usageRows(
  trx: Kysely<Database>,
  postgres: boolean,
  budgets: readonly BudgetRow[],
  atMs: number,
): Promise<{ budget: BudgetRow; key: string; usage: BudgetUsageRow }[]> {
  const keys = budgets.map((b) => ({ b, key: periodKey(b.period as BudgetPeriod, atMs) }));
  const at = nowIso();
  await trx
    .insertInto('budget_usage')
    .values(keys.map(({ b, key }) => ({ budget_id: b.id, period_key: key, updated_at: at })))
    .onConflict((oc) => oc.columns(['budget_id', 'period_key']).doNothing())
    .execute();
  let q = trx
    .selectFrom('budget_usage')
    .selectAll()
    .where(
      'budget_id',
      'in',
      keys.map((k) => k.b.id),
    )
    .where(
      'period_key',
      'in',
      keys.map((k) => k.key),
    )
    .orderBy('budget_id');
  if (postgres) q = q.forUpdate();
  const rows = await q.execute();
  return keys.map(({ b, key }) => {
    const usage = rows.find((r) => r.budget_id === b.id && r.period_key === key);
    if (!usage) throw new Error(`budget usage row ${b.id} ${key} is missing after its insert`);
    return { budget: b, key, usage };
  });
}

/** The policy of `account` (the default when it set none). */
export async function policyOf(trx: Kysely<Database>, account: string): Promise<BudgetPolicy> {
  const p = await trx.selectFrom('budget_policies').selectAll().where('account', '=', account).executeTakeFirst();
  return p
    ? { onExceeded: p.on_exceeded === 'hold' ? 'hold' : 'refuse', cancelRunning: Number(p.cancel_running) === 1 }
    : DEFAULT_BUDGET_POLICY;
}

/** A {@link BudgetRefusal} of `budget` in the period `key` standing at `usage`. */
export function refusalOf(
  budget: BudgetRow,
  key: string,
  usage: Pick<BudgetUsageRow, 'reserved' | 'spent'>,
  estimate: number,
  atMs: number,
  policy: BudgetPolicy,
): BudgetRefusal {
  const reserved = Number(usage.reserved);
  const spent = Number(usage.spent);
  const renews = periodRenewsAt(budget.period as BudgetPeriod, atMs);
  return {
    budget: budget.id,
    account: budget.account,
    provider: budget.provider,
    unit: budget.unit,
    period: budget.period as BudgetPeriod,
    periodKey: key,
    amount: Number(budget.amount),
    reserved,
    spent,
    remaining: Math.max(0, Number(budget.amount) - reserved - spent),
    estimate,
    renewsAt: renews === null ? null : new Date(renews).toISOString(),
    policy,
  };
}

/**
 * Reserves `cost.estimate` for job `job` in every budget that covers it, in the periods containing
 * `atMs`, or refuses with the first budget it would take past its amount (nothing is reserved
 * then). Returns the job-row columns that record the reservation (the caller writes them with its
 * own update), `none` when no budget covers the job.
 */
export async function reserveIn(
  trx: Kysely<Database>,
  postgres: boolean,
  job: Pick<JobRow, 'account' | 'provider'>,
  cost: SubmitCost,
  atMs: number,
): Promise<
  | { kind: 'none' }
  | { kind: 'over'; refusal: BudgetRefusal }
  | { kind: 'reserved'; columns: Partial<JobRow>; ledgers: Ledgers['budgets'] }
> {
  const budgets = await coveringBudgets(trx, job.account, job.provider, cost.unit);
  if (budgets.length === 0) return { kind: 'none' };
  const rows = await usageRows(trx, postgres, budgets, atMs);
  for (const { budget, key, usage } of rows) {
    if (Number(usage.spent) + Number(usage.reserved) + cost.estimate > Number(budget.amount) + EPSILON)
      return {
        kind: 'over',
        refusal: refusalOf(budget, key, usage, cost.estimate, atMs, await policyOf(trx, job.account)),
      };
  }
  const at = nowIso();
  for (const { budget, key, usage } of rows) {
    const reserved = Number(usage.reserved) + cost.estimate;
    await trx
      .updateTable('budget_usage')
      .set({ reserved, peak: Math.max(Number(usage.peak), reserved + Number(usage.spent)), updated_at: at })
      .where('budget_id', '=', budget.id)
      .where('period_key', '=', key)
      .execute();
  }
  const ledgers = rows.map((r) => ({ budget: r.budget.id, period: r.key }));
  const columns: Partial<JobRow> = {
    cost_unit: cost.unit,
    cost_estimated: cost.estimate,
    cost_reserved: cost.estimate,
    cost_ledgers: JSON.stringify({ budgets: ledgers, failedFree: cost.failedFree } satisfies Ledgers),
  };
  return { kind: 'reserved', columns, ledgers };
}

/** Adds `reserved` and `spent` (either may be negative) to the usage row of every ledger of `ledgers`. */
async function moveUsage(
  trx: Kysely<Database>,
  postgres: boolean,
  ledgers: Ledgers['budgets'],
  reservedDelta: number,
  spentDelta: number,
): Promise<void> {
  if (reservedDelta === 0 && spentDelta === 0) return;
  const at = nowIso();
  const sorted = [...ledgers].sort((a, b) => a.budget.localeCompare(b.budget));
  for (const l of sorted) {
    let q = trx
      .selectFrom('budget_usage')
      .select(['reserved', 'spent', 'peak'])
      .where('budget_id', '=', l.budget)
      .where('period_key', '=', l.period);
    if (postgres) q = q.forUpdate();
    const u = await q.executeTakeFirst();
    if (!u) continue; // the budget was removed with its usage: nothing to move
    const reserved = Math.max(0, Number(u.reserved) + reservedDelta);
    const spent = Number(u.spent) + spentDelta;
    await trx
      .updateTable('budget_usage')
      .set({ reserved, spent, peak: Math.max(Number(u.peak), reserved + spent), updated_at: at })
      .where('budget_id', '=', l.budget)
      .where('period_key', '=', l.period)
      .execute();
  }
}

/** The ledgers a job row names, or undefined when it never reserved. */
function ledgersOf(row: Pick<JobRow, 'cost_ledgers'>): Ledgers | undefined {
  return row.cost_ledgers ? (JSON.parse(row.cost_ledgers) as Ledgers) : undefined;
}

/**
 * Releases what job `jobId` holds reserved (its submit was refused: nothing was created), reading
 * its row inside the transaction; a job holding nothing changes nothing. Returns the amount released.
 */
export async function releaseIn(trx: Kysely<Database>, postgres: boolean, jobId: string): Promise<number> {
  let q = trx.selectFrom('jobs').select(['cost_reserved', 'cost_ledgers']).where('id', '=', jobId);
  if (postgres) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  const held = Number(row?.cost_reserved ?? 0);
  const ledgers = row && ledgersOf(row);
  if (!row || !ledgers || held <= 0) return 0;
  await moveUsage(trx, postgres, ledgers.budgets, -held, 0);
  await trx.updateTable('jobs').set({ cost_reserved: 0 }).where('id', '=', jobId).execute();
  return held;
}

/**
 * What a job that ended as `row` says costs, in its unit: the provider's last report when one
 * came; nothing when no task was ever created (a refused, failed or cancelled job without a task)
 * or when the kind does not bill a failed task; else the estimate.
 */
export function settledAmount(
  row: Pick<JobRow, 'state' | 'task_id' | 'cost_reported' | 'cost_estimated' | 'cost_ledgers'>,
): { amount: number; source: NonNullable<JobCost['source']> } {
  if (row.cost_reported !== null && row.cost_reported !== undefined)
    return { amount: Number(row.cost_reported), source: 'reported' };
  const nothingCreated = !row.task_id && (row.state === 'failed' || row.state === 'cancelled');
  if (nothingCreated || (row.state === 'failed' && ledgersOf(row)?.failedFree === true))
    return { amount: 0, source: 'none' };
  return { amount: Number(row.cost_estimated ?? 0), source: 'estimate' };
}

/**
 * Settles job row `row` (as it stands after its move into a final state, read in this
 * transaction): what it holds reserved leaves its budgets and {@link settledAmount} is spent in
 * the periods it reserved in; a job settled before (a resumed job that ended again) is corrected
 * by the difference. A job that never reserved, or whose settlement stands, changes nothing.
 */
export async function settleIn(
  trx: Kysely<Database>,
  postgres: boolean,
  row: Pick<
    JobRow,
    'id' | 'state' | 'task_id' | 'cost_reported' | 'cost_estimated' | 'cost_ledgers' | 'cost_reserved' | 'cost_settled'
  >,
): Promise<void> {
  const ledgers = ledgersOf(row);
  if (!ledgers || !isFinalState(row.state)) return;
  const held = Number(row.cost_reserved ?? 0);
  const before = row.cost_settled === null || row.cost_settled === undefined ? null : Number(row.cost_settled);
  if (held <= 0 && before === null) return; // released (nothing created), never settled
  const { amount, source } = settledAmount(row);
  if (held <= 0 && before === amount) return;
  await moveUsage(trx, postgres, ledgers.budgets, -held, amount - (before ?? 0));
  await trx
    .updateTable('jobs')
    .set({ cost_reserved: 0, cost_settled: amount, cost_source: source })
    .where('id', '=', row.id)
    .execute();
}

/** The cost a job row carries (see {@link JobCost}); for a job no budget covered, what it settles at is read from the row. */
export function jobCostOf(row: JobRow): JobCost | null {
  if (!row.cost_unit) return null;
  const ledgers = ledgersOf(row);
  const final = isFinalState(row.state);
  const derived = final && !ledgers ? settledAmount(row) : undefined;
  const num = (v: number | null) => (v === null || v === undefined ? null : Number(v));
  return {
    unit: row.cost_unit,
    estimated: num(row.cost_estimated),
    reserved: Number(row.cost_reserved ?? 0),
    settled: derived ? derived.amount : num(row.cost_settled),
    reported: num(row.cost_reported),
    source: derived ? derived.source : ((row.cost_source as JobCost['source']) ?? null),
    budgets: ledgers?.budgets ?? [],
  };
}
