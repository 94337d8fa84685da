/**
 * Schema migrations, one file per migration (`NNN_name.ts`, each exporting `migration`), applied in
 * name order by Kysely's `Migrator` and recorded in its `kysely_migration` table. Never edit a
 * released migration; add a new file and list it here.
 */
import type { Migration, MigrationProvider } from 'kysely';
import { migration as m001 } from './001_initial.js';
import { migration as m002 } from './002_evidence.js';
import { migration as m003 } from './003_webhooks.js';
import { migration as m004 } from './004_result_documents.js';
import { migration as m005 } from './005_polling.js';
import { migration as m006 } from './006_provider_accounts.js';
import { migration as m007 } from './007_result_fidelity.js';
import { migration as m008 } from './008_read_failures_and_waits.js';
import { migration as m009 } from './009_submit_answer.js';
import { migration as m010 } from './010_result_completeness.js';
import { migration as m011 } from './011_budgets.js';
import { migration as m012 } from './012_api_idempotency_claims.js';

/** All migrations, keyed by a sortable name. */
export const migrations: Record<string, Migration> = {
  '001_initial': m001,
  '002_evidence': m002,
  '003_webhooks': m003,
  '004_result_documents': m004,
  '005_polling': m005,
  '006_provider_accounts': m006,
  '007_result_fidelity': m007,
  '008_read_failures_and_waits': m008,
  '009_submit_answer': m009,
  '010_result_completeness': m010,
  '011_budgets': m011,
  '012_api_idempotency_claims': m012,
};

/** Kysely `MigrationProvider` over {@link migrations} (no files on disk to find at runtime). */
export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
