import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Claims of the HTTP API's `Idempotency-Key` records (`apiIdempotency.ts`): `holders` counts the
 * requests whose start under the key is under way (a failed start releases the key only when no
 * other request with the same body still holds it), and `claimed_at` is when a request last took
 * the claim (UTC ISO-8601; a claim whose job never started and that nobody took for longer than
 * the API's bound is dead and may be taken over). Existing rows get no holders and their
 * `created_at`.
 */
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('api_idempotency')
      .addColumn('holders', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('api_idempotency').addColumn('claimed_at', 'text').execute();
    await sql`update api_idempotency set claimed_at = created_at`.execute(db);
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('api_idempotency').dropColumn('claimed_at').execute();
    await db.schema.alterTable('api_idempotency').dropColumn('holders').execute();
  },
};
