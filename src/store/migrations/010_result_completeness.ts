import { type Kysely, type Migration } from 'kysely';

/**
 * Results that say whether they are complete: `expected_documents` is the provider's own count of
 * a multi-document result (Firecrawl's `completed`, a dataset's item count), null where the
 * provider gives none; `partial` is 1 when fewer documents could be read than that count (the
 * row's `content_note` then says how many of how many, and why), else 0.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('results').addColumn('expected_documents', 'integer').execute();
    await db.schema
      .alterTable('results')
      .addColumn('partial', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('results').dropColumn('partial').execute();
    await db.schema.alterTable('results').dropColumn('expected_documents').execute();
  },
};
