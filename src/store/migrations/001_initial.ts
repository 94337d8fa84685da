import { type Kysely, type Migration } from 'kysely';

/** Migration 001_initial. */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('jobs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('idem_key', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('input', 'text', (c) => c.notNull())
      .addColumn('options', 'text', (c) => c.notNull())
      .addColumn('batch_id', 'text')
      .addColumn('workflow_id', 'text', (c) => c.notNull())
      .addColumn('task_id', 'text')
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('provider_status', 'text')
      .addColumn('submit_intent_at', 'text')
      .addColumn('submit_attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('submitted_at', 'text')
      .addColumn('last_checked_at', 'text')
      .addColumn('status_checks', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .addColumn('deadline_at', 'text')
      .addUniqueConstraint('jobs_account_key_uq', ['account', 'idem_key'])
      .execute();
    await db.schema.createIndex('jobs_provider_task_uq').unique().on('jobs').columns(['provider', 'task_id']).execute();
    await db.schema.createIndex('jobs_state_idx').on('jobs').columns(['state', 'updated_at']).execute();
    await db.schema.createIndex('jobs_batch_idx').on('jobs').column('batch_id').execute();

    await db.schema
      .createTable('results')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id'))
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('final_url', 'text')
      .addColumn('http_status', 'integer')
      .addColumn('title', 'text')
      .addColumn('byline', 'text')
      .addColumn('excerpt', 'text')
      .addColumn('lang', 'text')
      .addColumn('site_name', 'text')
      .addColumn('published_time', 'text')
      .addColumn('text', 'text')
      .addColumn('markdown', 'text')
      .addColumn('links', 'text')
      .addColumn('content_length', 'integer')
      .addColumn('written_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .addColumn('purged_at', 'text')
      .addUniqueConstraint('results_provider_task_uq', ['provider', 'task_id'])
      .execute();
    await db.schema.createIndex('results_job_idx').on('results').column('job_id').execute();

    await db.schema
      .createTable('job_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('state', 'text')
      .addColumn('detail', 'text')
      .execute();
    await db.schema.createIndex('job_events_job_idx').on('job_events').columns(['job_id', 'at']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('job_events').execute();
    await db.schema.dropTable('results').execute();
    await db.schema.dropTable('jobs').execute();
  },
};
