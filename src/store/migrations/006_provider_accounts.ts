import { type Kysely, type Migration } from 'kysely';

/**
 * Provider accounts: the job row names the provider account its task lives in (kind, API host and
 * credential fingerprint — or kind and host where status reads need no credential), and a task is
 * bound to at most one job per provider account, whatever entry reached it; it also names the
 * provider key (kind, host, credential fingerprint) whose active-jobs limit it counts toward. Cool-downs learn a
 * release queue (the next slot after a cool-down, so waiting jobs leave one at a time), and the
 * refusals that count toward a provider's IP block are kept so a restarted worker remembers them.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('jobs').addColumn('provider_account', 'text').execute();
    await db.schema.alterTable('jobs').addColumn('provider_key', 'text').execute();
    await db.schema.createIndex('jobs_provider_key_state_idx').on('jobs').columns(['provider_key', 'state']).execute();
    await db.schema
      .createIndex('jobs_account_task_uq')
      .unique()
      .on('jobs')
      .columns(['provider_account', 'task_id'])
      .execute();
    await db.schema.alterTable('provider_cooldowns').addColumn('release_next', 'text').execute();
    await db.schema
      .createTable('provider_refusals')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('provider_refusals_scope_idx')
      .on('provider_refusals')
      .columns(['scope', 'at'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('provider_refusals').execute();
    await db.schema.alterTable('provider_cooldowns').dropColumn('release_next').execute();
    await db.schema.dropIndex('jobs_account_task_uq').execute();
    await db.schema.dropIndex('jobs_provider_key_state_idx').execute();
    await db.schema.alterTable('jobs').dropColumn('provider_key').execute();
    await db.schema.alterTable('jobs').dropColumn('provider_account').execute();
  },
};
