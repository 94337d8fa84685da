import { type Kysely, type Migration } from 'kysely';

/**
 * Failed reads on a budget, and waits that say why: `failing_since` is when the current streak of
 * failed provider reads of a job began (cleared by a read that succeeds), which with
 * `status_errors` bounds the streak; `waiting` is why a job that is not progressing waits (JSON:
 * reason, detail, until), shown by `status`, the HTTP API and the Web UI.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('jobs').addColumn('failing_since', 'text').execute();
    await db.schema.alterTable('jobs').addColumn('waiting', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('jobs').dropColumn('waiting').execute();
    await db.schema.alterTable('jobs').dropColumn('failing_since').execute();
  },
};
