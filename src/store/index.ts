/**
 * The result store (the package's `./store` entry): jobs, results (written once per provider task)
 * and what is kept about them, over one Kysely query layer on SQLite or PostgreSQL. `openStore`
 * gives a {@link Store}: its connection and one repository per responsibility (see `store.ts`).
 */
export { openStore, parseStoreUrl, type OpenStoreOptions, type StoreUrl } from './open.js';
export { Store } from './store.js';
export { NO_STORE_METRICS, StoreConnection, type StoreKind, type StoreMetrics } from './connection.js';
export { JobsRepository } from './jobs.js';
export {
  ANOTHER_ACCOUNTS_JOB,
  IdempotencyConflictStoreError,
  TaskCollisionError,
  type BindOutcome,
  type JobCursor,
  type JobFilter,
} from './jobTypes.js';
export { ResultsRepository, type WriteOnceOutcome } from './results.js';
export { FindingsRepository, type IncidentInput } from './findings.js';
export { PollingRepository, type CheckStart } from './polling.js';
export { SlotsRepository, type KeyScope, type Reservation, type ReserveOptions } from './slots.js';
export { ActiveLimitsRepository, type ActiveJobsLimits } from './limits.js';
export { BudgetsRepository, type BudgetLeak } from './budgets.js';
export type { BudgetRefusal, SubmitCost } from './ledger.js';
export type { SlotGrant } from './fairQueue.js';
export { ProviderKeysRepository } from './providerKeys.js';
export { WebhooksRepository, WEBHOOK_RETENTION_MS } from './webhooks.js';
export { ApiIdempotencyRepository, type ApiClaim } from './apiIdempotency.js';
export { toResultDocument, type JobRowInput, type NewJobInput } from './rows.js';
export { bodyInfoOf } from '../model/documents.js';
export type { BinaryBody, BodyInfo } from '../model/documents.js';
// The result shapes the store's methods take and return, for users of the package's `./store` entry.
export type { ResultDocument, ResultPayload, ResultWrite, StoredDocument } from '../model/results.js';
export type {
  JobRow,
  ResultRow,
  ResultDocumentRow,
  JobEventRow,
  IncidentRow,
  OrphanRow,
  OutboxRow,
  WebhookDeliveryRow,
  WebhookQuarantineRow,
  ApiIdempotencyRow,
  BudgetRow,
  BudgetUsageRow,
} from './schema.js';
