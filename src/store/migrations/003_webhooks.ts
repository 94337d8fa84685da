import { type Kysely, type Migration } from 'kysely';

/**
 * The HTTP API and its webhook receiver: `webhook_deliveries` (dedupe of verified events),
 * `webhook_quarantine` (events kept for an operator) and `api_idempotency` (keys accepted by
 * `POST /v1/scrapes`). See `webhooks.ts` and `apiIdempotency.ts`.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text')
      .addColumn('provider_status', 'text')
      .addColumn('task_id', 'text')
      .addColumn('job_id', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addUniqueConstraint('webhook_deliveries_event_uq', ['provider', 'event_id'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_job_idx').on('webhook_deliveries').column('job_id').execute();

    await db.schema
      .createTable('webhook_quarantine')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text')
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('detail', 'text', (c) => c.notNull())
      .addColumn('headers', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('body_sha256', 'text', (c) => c.notNull())
      .addColumn('body_bytes', 'integer', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('webhook_quarantine_received_idx')
      .on('webhook_quarantine')
      .columns(['provider', 'received_at'])
      .execute();

    await db.schema
      .createTable('api_idempotency')
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('idem_key', 'text', (c) => c.notNull())
      .addColumn('body_hash', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('api_idempotency_pk', ['account', 'idem_key'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('api_idempotency').execute();
    await db.schema.dropTable('webhook_quarantine').execute();
    await db.schema.dropTable('webhook_deliveries').execute();
  },
};
