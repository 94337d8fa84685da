/**
 * The vocabulary of spend budgets and fair shares (docs/budgets.md): what a budget is, the periods
 * it counts over, what an account does when one is spent, and the cost a job carries. Pure
 * constants, types and period arithmetic (UTC calendar days and months): imported by the store,
 * the activities, the client, the API, the CLI and workflow code alike.
 */

/** How long a budget counts: one UTC calendar day, one UTC calendar month, or for ever. */
export const BUDGET_PERIODS = ['day', 'month', 'total'] as const;
/** See {@link BUDGET_PERIODS}. */
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** The provider entry of a budget that covers every provider of its unit (an account-wide budget). */
export const ANY_PROVIDER = '*';

/**
 * One budget: `amount` (in `unit`, the provider's own: Firecrawl credits, Apify USD, …) that the
 * jobs of `account` on `provider` (a configured provider name, or {@link ANY_PROVIDER}: every
 * provider whose kind counts in `unit`) may spend per `period`.
 */
export interface Budget {
  account: string;
  provider: string;
  unit: string;
  period: BudgetPeriod;
  /** The most that may be reserved and spent in one period, in `unit` (≥ 0). */
  amount: number;
}

/** What an account does when a job would take a budget past its amount. */
export interface BudgetPolicy {
  /**
   * `refuse`: the job is refused (at the door when the caller's client can tell, else by the worker
   * before anything is submitted: it fails `BUDGET_EXCEEDED`); `hold`: the job waits, saying so,
   * until the period renews or the budget is raised.
   */
  onExceeded: 'refuse' | 'hold';
  /**
   * Whether a running job whose reported cost takes a budget past its amount is cancelled at the
   * provider (default false: a job that already runs is never cancelled for money).
   */
  cancelRunning: boolean;
}

/** The policy of an account that configured none: refuse, never cancel a running job. */
export const DEFAULT_BUDGET_POLICY: BudgetPolicy = { onExceeded: 'refuse', cancelRunning: false };

/** A budget's standing in one period, in its unit. */
export interface BudgetUsage extends Budget {
  /** The budget's stable ID: `<account>|<provider>|<unit>|<period>`. */
  id: string;
  /** The period counted: `2026-12-05` (day), `2026-12` (month) or `total`. */
  periodKey: string;
  /** Held by jobs submitted and not yet settled. */
  reserved: number;
  /** Settled: what the provider reported the period's jobs cost (or their estimate, for a kind that reports nothing). */
  spent: number;
  /** `amount − reserved − spent` (negative after an overrun). */
  remaining: number;
  /** The highest `reserved + spent` the period ever held (never above `amount` at a reservation). */
  peak: number;
  /** UTC ISO-8601 start of the next period, or null for `total`. */
  renewsAt: string | null;
}

/**
 * A job's cost, in its provider's unit, as the store keeps it: what its kind estimated before the
 * submit, what is reserved now (0 once settled or released), what it settled at, and what the
 * provider last reported. Null fields: not known (yet).
 */
export interface JobCost {
  unit: string;
  estimated: number | null;
  reserved: number;
  settled: number | null;
  reported: number | null;
  /** Where the settled figure comes from: `reported` (the provider's record), `estimate` (a kind that reports nothing, or a report that never came), `none` (nothing was created). */
  source: 'reported' | 'estimate' | 'none' | null;
  /** The budgets (IDs) and periods the reservation counts in. */
  budgets: { budget: string; period: string }[];
}

/** The ID of a budget (stable; what the CLI and the API name it by). */
export function budgetId(b: Pick<Budget, 'account' | 'provider' | 'unit' | 'period'>): string {
  return `${b.account}|${b.provider}|${b.unit}|${b.period}`;
}

/** The period of `period` that contains `atMs` (epoch ms): `YYYY-MM-DD`, `YYYY-MM` or `total`. */
export function periodKey(period: BudgetPeriod, atMs: number): string {
  if (period === 'total') return 'total';
  const iso = new Date(atMs).toISOString();
  return period === 'day' ? iso.slice(0, 10) : iso.slice(0, 7);
}

/** When the period of `period` containing `atMs` ends (epoch ms of the next one's start), or null for `total`. */
export function periodRenewsAt(period: BudgetPeriod, atMs: number): number | null {
  if (period === 'total') return null;
  const d = new Date(atMs);
  return period === 'day'
    ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
    : Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** Default weight of an account in a provider key's fair share of slots. */
export const DEFAULT_WEIGHT = 1;

/** Bounds of a job's priority within its account (higher goes first). */
export const PRIORITY_RANGE = { min: -1000, max: 1000 } as const;
