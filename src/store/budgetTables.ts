/**
 * Table shapes of the store's budgets and fair shares (migration `011_budgets`), as Kysely sees
 * them; part of the `Database` of `schema.ts`. Times are UTC ISO-8601 strings; amounts in the
 * budget's unit.
 */
import type { Generated } from 'kysely';

/** A spend budget (see `src/model/budgets.ts`); the ID is `<account>|<provider>|<unit>|<period>`. */
export interface BudgetsTable {
  id: string;
  account: string;
  /** A configured provider name, or `*`: every provider of the account whose kind counts in `unit`. */
  provider: string;
  unit: string;
  /** `day`, `month` or `total`. */
  period: string;
  /** The most that may be reserved and spent per period, in `unit`. */
  amount: number;
  /** `config` (seeded from the configuration) or `operator` (set through the CLI or the API: configuration no longer overrides it). */
  set_by: string;
  updated_at: string;
}

/** A budget's standing in one period. */
export interface BudgetUsageTable {
  budget_id: string;
  /** `YYYY-MM-DD`, `YYYY-MM` or `total`. */
  period_key: string;
  /** Held by jobs submitted and not settled, in the budget's unit. */
  reserved: Generated<number>;
  /** Settled, in the budget's unit. */
  spent: Generated<number>;
  /** The highest `reserved + spent` ever held in the period. */
  peak: Generated<number>;
  updated_at: string;
}

/** An account's policy when a budget is spent. */
export interface BudgetPoliciesTable {
  account: string;
  /** `refuse` or `hold`. */
  on_exceeded: string;
  /** 1: a running job whose reported cost takes a budget past its amount is cancelled. */
  cancel_running: Generated<number>;
  set_by: string;
  updated_at: string;
}

/** An account's place in a provider key's fair queue (stride scheduling: the lowest pass goes next). */
export interface FairSharesTable {
  label: string;
  account: string;
  /** Virtual time at which the account's next slot starts (each grant adds 1 / weight). */
  pass: number;
  /** Slots granted while several accounts waited (count). */
  granted: Generated<number>;
  updated_at: string;
}
