import { type Kysely, type Migration } from 'kysely';

/**
 * Spend budgets and fair shares (docs/budgets.md). Budgets per account (optionally per provider)
 * in the provider's unit, per period, with each period's reserved and spent amounts; each
 * account's policy when a budget is spent; the cost a job carries (its kind's estimate, what it
 * holds reserved, what it settled at, what the provider last reported, and the budget periods it
 * counts in). Fair shares of a provider key's slots: each account's pass (stride scheduling) per
 * key, the key's virtual time, the slot a waiting job was granted by the fair queue, and a job's
 * priority within its account.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('budgets')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('unit', 'text', (c) => c.notNull())
      .addColumn('period', 'text', (c) => c.notNull())
      .addColumn('amount', 'double precision', (c) => c.notNull())
      .addColumn('set_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('budgets_account_idx').on('budgets').columns(['account']).execute();
    await db.schema
      .createTable('budget_usage')
      .addColumn('budget_id', 'text', (c) => c.notNull())
      .addColumn('period_key', 'text', (c) => c.notNull())
      .addColumn('reserved', 'double precision', (c) => c.notNull().defaultTo(0))
      .addColumn('spent', 'double precision', (c) => c.notNull().defaultTo(0))
      .addColumn('peak', 'double precision', (c) => c.notNull().defaultTo(0))
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('budget_usage_pk', ['budget_id', 'period_key'])
      .execute();
    await db.schema
      .createTable('budget_policies')
      .addColumn('account', 'text', (c) => c.primaryKey())
      .addColumn('on_exceeded', 'text', (c) => c.notNull())
      .addColumn('cancel_running', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('set_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('fair_shares')
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('pass', 'double precision', (c) => c.notNull())
      .addColumn('granted', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('fair_shares_pk', ['label', 'account'])
      .execute();
    await db.schema
      .alterTable('provider_limits')
      .addColumn('fair_vtime', 'double precision', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('jobs')
      .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    for (const c of ['slot_granted_at', 'cost_unit', 'cost_ledgers', 'cost_source'])
      await db.schema.alterTable('jobs').addColumn(c, 'text').execute();
    for (const c of ['cost_estimated', 'cost_reserved', 'cost_settled', 'cost_reported'])
      await db.schema.alterTable('jobs').addColumn(c, 'double precision').execute();
  },
  async down(db: Kysely<any>) {
    for (const c of [
      'cost_reported',
      'cost_settled',
      'cost_reserved',
      'cost_estimated',
      'cost_source',
      'cost_ledgers',
      'cost_unit',
      'slot_granted_at',
      'priority',
    ])
      await db.schema.alterTable('jobs').dropColumn(c).execute();
    await db.schema.alterTable('provider_limits').dropColumn('fair_vtime').execute();
    for (const t of ['fair_shares', 'budget_policies', 'budget_usage', 'budgets'])
      await db.schema.dropTable(t).execute();
  },
};
