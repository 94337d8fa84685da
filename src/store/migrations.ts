/**
 * Schema migrations, applied in name order by Kysely's `Migrator` and recorded in its
 * `kysely_migration` table. Never edit a released migration; add a new one.
 */
import { PostgresAdapter, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';

const m001_initial: Migration = {
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

/**
 * Evidence and exactly-once bookkeeping: incidents (sanitised provider exchanges that ended a job
 * or explain it), the outbox (one downstream effect per result), cool-downs shared by every
 * worker of a provider key, orphan findings, and a per-job count of failed status checks.
 */
const m002_evidence: Migration = {
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

/**
 * The HTTP API and its webhook receiver: `webhook_deliveries` (dedupe of verified events),
 * `webhook_quarantine` (events kept for an operator) and `api_idempotency` (keys accepted by
 * `POST /v1/scrapes`). See `webhooks.ts` and `apiIdempotency.ts`.
 */
const m003_webhooks: Migration = {
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

/**
 * Multi-document results (a crawl's pages, a batch's items): `result_documents`, one row per document of a result, keyed
 * by (result ID, position), and `results.document_count`. Works on SQLite and PostgreSQL.
 */
const m004_result_documents: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('result_documents')
      .addColumn('result_id', 'text', (c) => c.notNull().references('results.id'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('url', 'text')
      .addColumn('final_url', 'text')
      .addColumn('http_status', 'integer')
      .addColumn('title', 'text')
      .addColumn('markdown', 'text')
      .addColumn('text', 'text')
      .addColumn('links', 'text')
      .addColumn('data', 'text')
      .addColumn('error', 'text')
      .addPrimaryKeyConstraint('result_documents_pk', ['result_id', 'seq'])
      .execute();
    await db.schema
      .alterTable('results')
      .addColumn('document_count', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('results').dropColumn('document_count').execute();
    await db.schema.dropTable('result_documents').execute();
  },
};

/**
 * Workflow v2 bookkeeping: the polling activity's generation, the consecutive-404 streak and the
 * earliest next check live on the job row (an attempt reads them instead of carrying state in
 * history); the adaptive submit limit of each provider key is shared by every worker.
 */
const m005_polling: Migration = {
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

/**
 * Provider accounts: the job row names the provider account its task lives in (kind, API host and
 * credential fingerprint — or kind and host where status reads need no credential), and a task is
 * bound to at most one job per provider account, whatever entry reached it; it also names the
 * provider key (kind, host, credential fingerprint) whose active-jobs limit it counts toward. Cool-downs learn a
 * release queue (the next slot after a cool-down, so waiting jobs leave one at a time), and the
 * refusals that count toward a provider's IP block are kept so a restarted worker remembers them.
 */
const m006_provider_accounts: Migration = {
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

/**
 * Results fidelity: each document of a result has an identity (the provider's document ID, else
 * the canonical URL with its absolute position, else the URL with a SHA-256 of its content), unique
 * per result, so a page repeated by the provider is written once; binary bodies (a PDF, an image)
 * are kept as bytes with their media type, size and SHA-256 on the result and on its documents
 * (PostgreSQL `bytea`, SQLite blob); a result with no usable content says so in `content_note`.
 * Rows written before keep `legacy:<seq>` as their identity.
 */
const m007_result_fidelity: Migration = {
  async up(db: Kysely<any>) {
    const blob = db.getExecutor().adapter instanceof PostgresAdapter ? sql`bytea` : sql`blob`;
    await db.schema.alterTable('result_documents').addColumn('identity', 'text').execute();
    await db
      .updateTable('result_documents')
      .set({ identity: sql`'legacy:' || cast(seq as text)` })
      .execute();
    await db.schema
      .createIndex('result_documents_identity_uq')
      .unique()
      .on('result_documents')
      .columns(['result_id', 'identity'])
      .execute();
    for (const table of ['results', 'result_documents']) {
      await db.schema.alterTable(table).addColumn('body', blob).execute();
      await db.schema.alterTable(table).addColumn('content_type', 'text').execute();
      await db.schema.alterTable(table).addColumn('body_size', 'integer').execute();
      await db.schema.alterTable(table).addColumn('body_sha256', 'text').execute();
    }
    await db.schema.alterTable('results').addColumn('content_note', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('results').dropColumn('content_note').execute();
    for (const table of ['result_documents', 'results']) {
      for (const c of ['body_sha256', 'body_size', 'content_type', 'body'])
        await db.schema.alterTable(table).dropColumn(c).execute();
    }
    await db.schema.dropIndex('result_documents_identity_uq').execute();
    await db.schema.alterTable('result_documents').dropColumn('identity').execute();
  },
};

/** All migrations, keyed by a sortable name. */
export const migrations: Record<string, Migration> = {
  '001_initial': m001_initial,
  '002_evidence': m002_evidence,
  '003_webhooks': m003_webhooks,
  '004_result_documents': m004_result_documents,
  '005_polling': m005_polling,
  '006_provider_accounts': m006_provider_accounts,
  '007_result_fidelity': m007_result_fidelity,
};

/** Kysely `MigrationProvider` over {@link migrations} (no files on disk to find at runtime). */
export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
