/**
 * The `accounts` section of the configuration (docs/budgets.md): per account (tenant), its weight
 * in every provider key's fair share of slots, its spend budgets (per provider or across the
 * providers of one unit; per day, month or in total) and what it does when one is spent. The
 * configuration seeds the store's budgets and policies at start (`store.budgets.seed`); the CLI
 * and the API change them while everything runs, and an operator's change outlives the next start.
 */
import { z } from 'zod';
import { ANY_PROVIDER, BUDGET_PERIODS, DEFAULT_WEIGHT, type Budget, type BudgetPolicy } from './model/budgets.js';
import { AccountSchema } from './model/schemas.js';
import { costOf, type ProviderEntry } from './providers/kinds.js';

/** One budget of an account as configured. */
const BudgetConfigSchema = z.strictObject({
  /** A configured provider name; absent: every provider of the account whose kind counts in `unit`. */
  provider: z.string().min(1).optional(),
  /** The unit (`credits`, `usd`, `records`, `requests`): required without `provider`, else the provider kind's (checked). */
  unit: z.string().min(1).max(40).optional(),
  period: z.enum(BUDGET_PERIODS),
  /** The most the account's jobs may reserve and spend per period, in the unit (≥ 0). */
  amount: z.number().min(0).max(1e12),
});

/** One account's settings; every field has a default. */
const AccountSettingsSchema = z.strictObject({
  /** Weight in each provider key's fair share of slots (default 1: equal shares). */
  weight: z.number().positive().max(1_000).default(DEFAULT_WEIGHT),
  budgets: z.array(BudgetConfigSchema).default([]),
  /** A job a budget cannot take: `refuse` (default; at the door when the client can tell, else failed before any submit) or `hold` (waits until the period renews or the budget is raised). */
  onBudgetExceeded: z.enum(['refuse', 'hold']).default('refuse'),
  /** Cancel a running job whose reported cost takes a budget past its amount (default false: never for money). */
  cancelRunningOverBudget: z.boolean().default(false),
});

/** The `accounts` section: settings by account name. */
export const AccountsSchema = z.record(AccountSchema, AccountSettingsSchema).default({});

/** The parsed `accounts` section. */
export type AccountsConfig = z.infer<typeof AccountsSchema>;

/**
 * Checks the budgets of `config.accounts` against its providers: a named provider must be
 * configured and its `unit`, when given, must be its kind's; a budget without a provider needs a unit.
 */
export function checkAccounts(
  config: { accounts: AccountsConfig; providers: Record<string, ProviderEntry> },
  ctx: z.RefinementCtx,
): void {
  for (const [account, a] of Object.entries(config.accounts))
    a.budgets.forEach((b, i) => {
      const path = ['accounts', account, 'budgets', i];
      const entry = b.provider ? config.providers[b.provider] : undefined;
      if (b.provider && !entry)
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'provider'],
          message: `no provider "${b.provider}" is configured`,
        });
      else if (entry && b.unit && b.unit !== costOf(entry).unit)
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'unit'],
          message: `provider "${b.provider}" (${entry.kind}) counts in ${costOf(entry).unit}, not ${b.unit}`,
        });
      else if (!b.provider && !b.unit)
        ctx.addIssue({ code: 'custom', path, message: 'a budget without a provider needs a unit (credits, usd, …)' });
    });
}

/** The budgets, policies and weights the configuration gives (budgets with their units resolved). */
export function configuredAccounts(config: { accounts: AccountsConfig; providers: Record<string, ProviderEntry> }): {
  budgets: Budget[];
  policies: Record<string, BudgetPolicy>;
  weights: Record<string, number>;
} {
  const budgets: Budget[] = [];
  const policies: Record<string, BudgetPolicy> = {};
  const weights: Record<string, number> = {};
  for (const [account, a] of Object.entries(config.accounts)) {
    weights[account] = a.weight;
    policies[account] = { onExceeded: a.onBudgetExceeded, cancelRunning: a.cancelRunningOverBudget };
    for (const b of a.budgets) {
      const entry = b.provider ? config.providers[b.provider] : undefined;
      const unit = entry ? costOf(entry).unit : b.unit!;
      budgets.push({ account, provider: b.provider ?? ANY_PROVIDER, unit, period: b.period, amount: b.amount });
    }
  }
  return { budgets, policies, weights };
}
