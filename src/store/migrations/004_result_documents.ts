import { type Kysely, type Migration } from 'kysely';

/**
 * Multi-document results (a crawl's pages, a batch's items): `result_documents`, one row per document of a result, keyed
 * by (result ID, position), and `results.document_count`. Works on SQLite and PostgreSQL.
 */
export const migration: Migration = {
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
