/**
 * Request and response schemas of the budgets resource and of a job's cost (docs/budgets.md):
 * `GET /v1/budgets`, `PUT /v1/budgets`, `DELETE /v1/budgets/:id`, `PUT /v1/budget-policy`,
 * `GET /v1/scrapes/:id/cost`, and the `cost` member of a job. Amounts are in the budget's (the
 * provider's) unit; times UTC ISO-8601. The OpenAPI document is generated from these.
 */
import { z } from 'zod';
import { BUDGET_PERIODS } from '../model/budgets.js';

/** A job's cost at its provider (see `JobCost`). */
export const CostSchema = z
  .object({
    unit: z.string().describe('The provider’s unit: `credits`, `usd`, `records`, `requests`.'),
    estimated: z.number().nullable().describe('The estimate made before the submit.'),
    reserved: z.number().describe('What the job holds reserved in its account’s budgets now (0 once it ended).'),
    settled: z.number().nullable().describe('What the job cost, once it ended; null while it runs.'),
    reported: z
      .number()
      .nullable()
      .describe('What the provider last reported the task cost; null when it reported nothing.'),
    source: z
      .enum(['reported', 'estimate', 'none'])
      .nullable()
      .describe(
        'Where `settled` comes from: the provider’s report, the estimate (a provider that reports nothing), or nothing created.',
      ),
  })
  .meta({ id: 'Cost' });

/** A budget with its standing in the current period. */
export const BudgetSchema = z
  .object({
    id: z.string().describe('`<account>|<provider or *>|<unit>|<period>`.'),
    provider: z.string().describe('A provider name, or `*`: every provider of the account counting in `unit`.'),
    unit: z.string(),
    period: z.enum(BUDGET_PERIODS),
    amount: z.number().describe('The most that may be reserved and spent per period.'),
    period_key: z.string().describe('The current period: `YYYY-MM-DD`, `YYYY-MM` or `total`.'),
    reserved: z.number().describe('Held by jobs that run.'),
    spent: z.number().describe('Settled by jobs that ended.'),
    remaining: z.number().describe('`amount − reserved − spent`.'),
    renews_at: z.string().nullable().describe('When the next period starts (UTC); null for `total`.'),
  })
  .meta({ id: 'Budget' });

/** An account's policy when a budget is spent. */
export const BudgetPolicySchema = z
  .strictObject({
    on_exceeded: z
      .enum(['refuse', 'hold'])
      .describe(
        '`refuse`: a job a budget cannot take answers `402`; `hold`: it is accepted and waits until the period renews or the budget is raised.',
      ),
    cancel_running: z
      .boolean()
      .describe('Cancel a running job whose reported cost takes a budget past its amount (default false).'),
  })
  .meta({ id: 'BudgetPolicy' });

/** `GET /v1/budgets`. */
export const BudgetListSchema = z
  .object({ budgets: z.array(BudgetSchema), policy: BudgetPolicySchema })
  .meta({ id: 'BudgetList' });

/**
 * Body of `PUT /v1/budgets` for a deployment whose providers are `providers` (the document lists
 * them: another name is refused, so the schema says so). Whether `unit` fits (the provider's own
 * unit; required without a provider) is the deployment's to say: `422 budget-unit` otherwise.
 */
export function createSetBudgetBodySchema(providers: readonly string[]) {
  const names = providers.length > 0 ? (providers as [string, ...string[]]) : (['none'] as [string]);
  return z
    .strictObject({
      provider: z
        .enum(names, {
          error: (iss) => `unknown provider ${JSON.stringify(iss.input)}; configured: ${names.join(', ')}`,
        })
        .optional()
        .describe('A configured provider; absent: every provider of the account whose kind counts in `unit`.'),
      unit: z
        .string()
        .min(1)
        .max(40)
        .optional()
        .describe('Required without `provider`; with one, the provider’s own (it may be left out).'),
      period: z.enum(BUDGET_PERIODS),
      amount: z.number().min(0).max(1e12),
    })
    .meta({ id: 'SetBudgetRequest' });
}

/** Answer of `DELETE /v1/budgets/:id`. */
export const BudgetRemovedSchema = z.object({ id: z.string(), removed: z.literal(true) }).meta({ id: 'BudgetRemoved' });

/** Path of `DELETE /v1/budgets/:id`. */
export const BudgetIdParamsSchema = z.object({ id: z.string().min(1).max(300) });

/** `GET /v1/scrapes/:id/cost`. */
export const JobCostSchema = z
  .object({
    job_id: z.string(),
    provider: z.string(),
    cost: CostSchema.nullable().describe('Null before the job’s first submit.'),
    temporal: z
      .object({
        actions: z.number().int().describe('Billable Temporal Actions counted from the workflow’s history.'),
        by_kind: z.record(z.string(), z.number().int()),
      })
      .nullable()
      .describe('Null when the server no longer has the workflow’s history.'),
  })
  .meta({ id: 'JobCost' });
