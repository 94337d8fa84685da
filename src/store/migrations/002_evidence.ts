import { type Kysely, type Migration } from 'kysely';

/**
 * Evidence and exactly-once bookkeeping: incidents (sanitised provider exchanges that ended a job
 * or explain it), the outbox (one downstream effect per result), cool-downs shared by every
 * worker of a provider key, orphan findings, and a per-job count of failed status checks.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('incidents')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('phase', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('endpoint', 'text')
      .addColumn('http_status', 'integer')
      .addColumn('code', 'text')
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('request', 'text')
      .addColumn('response', 'text')
      .addColumn('headers', 'text')
      .execute();
    await db.schema.createIndex('incidents_job_idx').on('incidents').columns(['job_id', 'at']).execute();

    await db.schema
      .createTable('outbox')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('result_id', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('delivered_at', 'text')
      .addUniqueConstraint('outbox_kind_result_uq', ['kind', 'result_id'])
      .execute();

    await db.schema
      .createTable('provider_cooldowns')
      .addColumn('label', 'text', (c) => c.primaryKey())
      .addColumn('until', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('orphans')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('detail', 'text', (c) => c.notNull())
      .addColumn('suggestion', 'text', (c) => c.notNull())
      .addColumn('first_seen_at', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'text', (c) => c.notNull())
      .addColumn('resolved_at', 'text')
      .addUniqueConstraint('orphans_job_kind_uq', ['job_id', 'kind'])
      .execute();

    await db.schema
      .alterTable('jobs')
      .addColumn('status_errors', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('jobs').dropColumn('status_errors').execute();
    for (const t of ['orphans', 'provider_cooldowns', 'outbox', 'incidents']) await db.schema.dropTable(t).execute();
  },
};
