import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * Results fidelity: each document of a result has an identity (the provider's document ID, else
 * the canonical URL with its absolute position, else the URL with a SHA-256 of its content), unique
 * per result, so a page repeated by the provider is written once; binary bodies (a PDF, an image)
 * are kept as bytes with their media type, size and SHA-256 on the result and on its documents
 * (PostgreSQL `bytea`, SQLite blob); a result with no usable content says so in `content_note`.
 * Rows written before keep `legacy:<seq>` as their identity.
 */
export const migration: Migration = {
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
