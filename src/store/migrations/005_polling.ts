import { type Kysely, type Migration } from 'kysely';

/**
 * Workflow v2 bookkeeping: the polling activity's generation, the consecutive-404 streak and the
 * earliest next check live on the job row (an attempt reads them instead of carrying state in
 * history); the adaptive submit limit of each provider key is shared by every worker.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('jobs')
      .addColumn('poll_generation', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('jobs')
      .addColumn('not_found_streak', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('jobs').addColumn('check_not_before', 'text').execute();
    await db.schema.alterTable('jobs').addColumn('provider_state', 'text').execute();
    await db.schema.createIndex('jobs_provider_state_idx').on('jobs').columns(['provider', 'state']).execute();
    await db.schema
      .createTable('provider_limits')
      .addColumn('label', 'text', (c) => c.primaryKey())
      .addColumn('active_limit', 'double precision', (c) => c.notNull())
      .addColumn('ceiling', 'integer')
      .addColumn('threshold', 'double precision')
      .addColumn('refusals', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('provider_limits').execute();
    await db.schema.dropIndex('jobs_provider_state_idx').execute();
    for (const c of ['provider_state', 'check_not_before', 'not_found_streak', 'poll_generation'])
      await db.schema.alterTable('jobs').dropColumn(c).execute();
  },
};
