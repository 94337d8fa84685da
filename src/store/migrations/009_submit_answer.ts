import { type Kysely, type Migration } from 'kysely';

/**
 * What a task's later calls need of its submit's answer: `submit_answer` is the JSON of the fields
 * the provider entry keeps (e.g. a returned status URL, a server's own job key), written with the
 * task ID by `bindTask`; null when nothing is kept (a task found by a lookup or given by an
 * operator, or a kind that keeps nothing).
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('jobs').addColumn('submit_answer', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('jobs').dropColumn('submit_answer').execute();
  },
};
