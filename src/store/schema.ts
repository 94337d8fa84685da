/**
 * Table shapes of the result store, as Kysely sees them. Times are UTC ISO-8601 strings
 * (`2026-11-29T07:00:00.000Z`) in both SQLite and PostgreSQL so that one query layer serves both;
 * JSON columns hold serialised, sanitised JSON text.
 */
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { BudgetPoliciesTable, BudgetsTable, BudgetUsageTable, FairSharesTable } from './budgetTables.js';

/** One logical scrape request (one row per account + idempotency key). */
export interface JobsTable {
  /** Job ID = workflow ID, `scrape:<account>:<key>`. */
  id: string;
  account: string;
  idem_key: string;
  provider: string;
  /** Fingerprint of (provider, request); same key + other hash is a conflict. */
  request_hash: string;
  /** Sanitised target URL. */
  url: string;
  /** JSON: the caller's input row (sanitised). */
  input: string;
  /** JSON: request options and poll policy. */
  options: string;
  batch_id: string | null;
  workflow_id: string;
  task_id: string | null;
  state: string;
  provider_status: string | null;
  /** When the last submit attempt started and had no answer yet (the recorded intent). */
  submit_intent_at: string | null;
  submit_attempts: Generated<number>;
  submitted_at: string | null;
  last_checked_at: string | null;
  status_checks: Generated<number>;
  /** JSON {@link JobError} of the last error, sanitised. */
  last_error: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  deadline_at: string | null;
  /** Provider reads (status, result, lookups) that failed in a row since the last one that succeeded. */
  status_errors: Generated<number>;
  /** UTC ISO-8601 time of the first failed read of the current streak; null when the last read succeeded. */
  failing_since: string | null;
  /** Why the job waits, while it does (JSON {@link JobWait}); null when it does not. */
  waiting: string | null;
  /** JSON: the fields of the submit's answer that the task's later calls need (`Accepted.submitAnswer`), sanitised; null when none were kept. */
  submit_answer: string | null;
  /** Generation (workflow time of scheduling, epoch ms) of the newest polling activity: an attempt of an older one stops (workflow v2). Text from PostgreSQL's bigint. */
  poll_generation: Generated<number | string>;
  /** Consecutive `404`s for the task (status or result read); at the policy's `notFoundLimit` the job is `expired`. */
  not_found_streak: Generated<number>;
  /** UTC ISO-8601 time before which no new status check may start (last check + max(min gap, Retry-After)). */
  check_not_before: string | null;
  /** Normalised provider state of the last check (`running`, `completed`, `unrecognised`, …); `provider_status` keeps the raw word. */
  provider_state: string | null;
  /**
   * The provider account the job's task lives in (`<kind>@<host>#<credential fingerprint>`, or
   * `<kind>@<host>` where status reads need no credential), set by the worker at submit: a task is
   * bound to one job per provider account, and limits and cool-downs are shared per account.
   */
  provider_account: string | null;
  /** The provider key (`<kind>@<host>#<credential fingerprint>`) whose limits the job counts toward, set by the worker at submit. */
  provider_key: string | null;
  /** Order among the waiting jobs of the same account on one provider key (higher first; migration 010). */
  priority: Generated<number>;
  /** When the key's fair queue granted this waiting job a slot (UTC ISO-8601); it counts as active for a lease, then lapses. */
  slot_granted_at: string | null;
  /** The unit of the job's cost (its provider kind's: `credits`, `usd`, …); null until a budget covered it. */
  cost_unit: string | null;
  /** The kind's estimate of the job's cost at its last reservation, in `cost_unit`. */
  cost_estimated: number | null;
  /** What the job holds reserved in its budgets now, in `cost_unit` (0 or null once settled or released). */
  cost_reserved: number | null;
  /** What the job settled at, in `cost_unit`; null until it ended. */
  cost_settled: number | null;
  /** The provider's last report of what the task cost so far, in `cost_unit`; null when none came. */
  cost_reported: number | null;
  /** JSON `[{budget, period}]`: the budget periods the reservation counts in. */
  cost_ledgers: string | null;
  /** Where `cost_settled` comes from: `reported`, `estimate` or `none`. */
  cost_source: string | null;
}

/** A provider result, written once per (provider, task_id). */
export interface ResultsTable {
  id: string;
  provider: string;
  task_id: string;
  job_id: string;
  url: string;
  final_url: string | null;
  http_status: number | null;
  title: string | null;
  byline: string | null;
  excerpt: string | null;
  lang: string | null;
  site_name: string | null;
  published_time: string | null;
  /** Extracted text; null once purged. */
  text: string | null;
  /** Extracted markdown; null once purged. */
  markdown: string | null;
  /** JSON array of absolute URLs; null once purged. */
  links: string | null;
  content_length: number | null;
  written_at: string;
  /** When our retention of the payload ends (UTC ISO-8601), or null for no limit. */
  expires_at: string | null;
  /** When the payload was purged (evidence row kept). */
  purged_at: string | null;
  /** Number of rows in `result_documents` for this result (0: a single-page result). Migration 004. */
  document_count: Generated<number>;
  /**
   * The target's body as bytes when it is binary (a PDF, an image): SQLite blob / PostgreSQL
   * `bytea`, null for a text page; null once purged. Migration 007.
   */
  body: Buffer | null;
  /** The binary body's media type as the provider reported it (or as sniffed), e.g. `application/pdf`. Kept after purge. */
  content_type: string | null;
  /** Size of the binary body, bytes. Kept after purge. */
  body_size: number | null;
  /** Hex SHA-256 of the binary body's bytes. Kept after purge. */
  body_sha256: string | null;
  /**
   * Why the stored content is empty or partial, when it is (`empty: the provider returned no
   * content`, a PDF whose text could not be read, `partial: kept N of the M documents …`); null
   * for a complete result with usable content.
   */
  content_note: string | null;
  /** The provider's own count of a multi-document result's documents, where it gives one. Migration 009. */
  expected_documents: number | null;
  /** 1 when fewer documents could be read than the provider counts (see `content_note`), else 0. Migration 009. */
  partial: Generated<number>;
}

/**
 * One document of a multi-document result (a crawled page, a dataset item, a batch entry), written
 * in the same transaction as its result row (migration `004_result_documents`). Payload columns
 * (`markdown`, `text`, `links`, `data`) are null once purged; URL, status, title and error stay as
 * evidence.
 */
export interface ResultDocumentsTable {
  result_id: string;
  /** 0-based position in the provider's order. */
  seq: number;
  url: string | null;
  final_url: string | null;
  http_status: number | null;
  title: string | null;
  markdown: string | null;
  text: string | null;
  /** JSON array of URLs. */
  links: string | null;
  /** JSON object: provider-specific fields. */
  data: string | null;
  /** JSON `{code?, message}` of a per-document failure. */
  error: string | null;
  /**
   * The document's identity within its result (unique per result, migration 007): `id:<provider
   * ID>`, `pos:<canonical URL>#<absolute position>` or `sha256:<canonical URL>#<content hash>`
   * (see `documentIdentity` in `src/providers/shared/pagination.ts`); `legacy:<seq>` for rows written
   * before identities existed.
   */
  identity: string;
  /** The document's binary body (blob / `bytea`), when it is a file; null otherwise and once purged. */
  body: Buffer | null;
  /** Media type of the binary body. */
  content_type: string | null;
  /** Size of the binary body, bytes. */
  body_size: number | null;
  /** Hex SHA-256 of the binary body. */
  body_sha256: string | null;
}

/** Timeline of a job: every transition and notable observation. */
export interface JobEventsTable {
  id: string;
  job_id: string;
  at: string;
  type: string;
  state: string | null;
  /** JSON detail, sanitised. */
  detail: string | null;
}

/**
 * A sanitised record of a provider exchange that ended or explains a job (seeds 000, §04: endpoint,
 * HTTP status, UTC time, request options and body, with credentials removed).
 */
export interface IncidentsTable {
  id: string;
  job_id: string;
  at: string;
  /** `submit` | `status` | `result` | `cancel` | `reconcile`. */
  phase: string;
  /** Error kind (`permanent`, `provider_failed`, …). */
  kind: string;
  endpoint: string | null;
  http_status: number | null;
  /** Provider's error code. */
  code: string | null;
  message: string;
  /** JSON: request options sent (sanitised). */
  request: string | null;
  /** JSON: complete response body (sanitised). */
  response: string | null;
  /** JSON: kept response headers (sanitised). */
  headers: string | null;
}

/** One downstream effect per result, inserted in the same transaction as the result. */
export interface OutboxTable {
  id: string;
  /** `result.completed`. */
  kind: string;
  job_id: string;
  result_id: string;
  /** JSON summary delivered downstream. */
  payload: string;
  created_at: string;
  delivered_at: string | null;
}

/** A cool-down of a provider key, shared by every worker (UTC ISO-8601 `until`). */
export interface ProviderCooldownsTable {
  label: string;
  until: string;
  reason: string;
  updated_at: string;
  /** UTC ISO-8601 time of the next free release slot after the cool-down (waiting calls leave one at a time), or null. */
  release_next: string | null;
}

/** One refusal counted toward a provider's block of the caller (Bright Data: 25 × 429 in 5 min). */
export interface ProviderRefusalsTable {
  id: string;
  /** What the provider counts per (e.g. `brightdata@api.brightdata.com`). */
  scope: string;
  /** UTC ISO-8601 time of the refusal. */
  at: string;
}

/**
 * The learned limit of concurrently active provider jobs of one provider key (adaptive submit
 * concurrency: additive increase, multiplicative decrease), shared by every worker.
 */
export interface ProviderLimitsTable {
  /** Provider key label (`<provider>/<account or default>`), as the shared limiter names it. */
  label: string;
  /** Current limit of active jobs (count, may be fractional while it grows by 1/limit per admission at the limit). */
  active_limit: number;
  /** Highest limit allowed: configured, or stated by the provider in a refusal (count); null = none known. */
  ceiling: number | null;
  /**
   * Below this limit it grows by one job per accepted submit at the limit (doubling per window:
   * slow start); at or above it, by one job per window. Null until the first refusal (slow start).
   */
  threshold: number | null;
  /** Submits refused with a concurrency answer so far (count). */
  refusals: Generated<number>;
  updated_at: string;
  /** Virtual time of the key's fair queue: the pass of the last account granted a slot while several waited (migration 010). */
  fair_vtime: Generated<number>;
}

/** An orphan or stalled job found by the maintenance schedule. */
export interface OrphansTable {
  id: string;
  job_id: string;
  /** `stalled` | `repeated_errors` | `no_workflow`. */
  kind: string;
  detail: string;
  /** The suggested recovery (a CLI command or a decision to take). */
  suggestion: string;
  first_seen_at: string;
  last_seen_at: string;
  resolved_at: string | null;
}

/** A verified webhook event we acted on (or deliberately did not); see `webhooks.ts`. */
export interface WebhookDeliveriesTable {
  id: string;
  provider: string;
  /** The provider's event (or delivery) ID; unique per provider. */
  event_id: string;
  received_at: string;
  /** Event type as the provider named it (e.g. `job.completed`). */
  event_type: string | null;
  /** Provider status the event claimed (a hint, never trusted for the result). */
  provider_status: string | null;
  task_id: string | null;
  /** Our job, when matched. */
  job_id: string | null;
  /** `received` (being handled), `woken`, `job_final`, `not_running`, `quarantined`. */
  outcome: string;
}

/** An event kept for an operator: unverifiable, invalid or unmatched. */
export interface WebhookQuarantineTable {
  id: string;
  provider: string;
  event_id: string | null;
  received_at: string;
  /** `invalid_signature`, `invalid_payload`, `unmatched`. */
  reason: string;
  /** Human explanation (no secrets). */
  detail: string;
  /** JSON of the sanitised request headers. */
  headers: string;
  /** The sanitised body (JSON text when it parsed, else the text), truncated to 64 KiB. */
  body: string;
  /** Hex SHA-256 of the raw body as received. */
  body_sha256: string;
  /** Size of the raw body, bytes. */
  body_bytes: number;
}

/** An idempotency key accepted by the HTTP API. */
export interface ApiIdempotencyTable {
  account: string;
  idem_key: string;
  /** Fingerprint of the canonical request body. */
  body_hash: string;
  job_id: string;
  created_at: string;
  /** Requests whose start under this key is under way (a claim is released only at 0). */
  holders: Generated<number>;
  /** UTC ISO-8601 time a request last took the claim (null only before it was ever taken). */
  claimed_at: string | null;
}

/** The database as Kysely sees it. */
export interface Database {
  jobs: JobsTable;
  results: ResultsTable;
  result_documents: ResultDocumentsTable;
  job_events: JobEventsTable;
  incidents: IncidentsTable;
  outbox: OutboxTable;
  provider_cooldowns: ProviderCooldownsTable;
  provider_limits: ProviderLimitsTable;
  provider_refusals: ProviderRefusalsTable;
  orphans: OrphansTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_quarantine: WebhookQuarantineTable;
  api_idempotency: ApiIdempotencyTable;
  budgets: BudgetsTable;
  budget_usage: BudgetUsageTable;
  budget_policies: BudgetPoliciesTable;
  fair_shares: FairSharesTable;
}

export type JobRow = Selectable<JobsTable>;
export type NewJobRow = Insertable<JobsTable>;
export type JobPatch = Updateable<JobsTable>;
export type ResultRow = Selectable<ResultsTable>;
export type NewResultRow = Insertable<ResultsTable>;
export type JobEventRow = Selectable<JobEventsTable>;
export type ResultDocumentRow = Selectable<ResultDocumentsTable>;
export type IncidentRow = Selectable<IncidentsTable>;
export type OrphanRow = Selectable<OrphansTable>;
export type OutboxRow = Selectable<OutboxTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookQuarantineRow = Selectable<WebhookQuarantineTable>;
export type ApiIdempotencyRow = Selectable<ApiIdempotencyTable>;
export type BudgetRow = Selectable<BudgetsTable>;
export type BudgetUsageRow = Selectable<BudgetUsageTable>;
