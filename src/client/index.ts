/**
 * The typed client used by backend services, the HTTP API and the CLI (see docs/client-package.md,
 * "Using it"). Parts:
 *
 * - `scrapeClient.ts`: {@link ScrapeClient} (`startScrape`, `getScrape`, `getResult`,
 *   `awaitResult`, `cancelScrape`, `resume`, `resolve`, `list`, …), every call scoped to an account;
 * - `start.ts`: starting and resuming a job's workflow (one `startOptions()` for both);
 * - `cancel.ts`: the cancel Update / signal and batch cancellation;
 * - `views.ts`: store rows as callers see them (`JobSummary`, `JobResult`, …);
 * - `ids.ts`: job IDs, derived keys, canonical URLs, the list cursor;
 * - `documents.ts`: pages of a multi-document result;
 * - `results.ts`, `lists.ts`: reading a stored result, listing an account's jobs;
 * - `live.ts`: the job as its workflow knows it (no store row yet; the live view);
 * - `resolve.ts`: settling a job left in `unknown`;
 * - `budgets.ts`, `actions.ts`: budgets, policies, the door's check and what a job cost (at the
 *   provider and in Temporal Actions);
 * - `errors.ts`: the typed errors.
 */
export * from './errors.js';
export { ScrapeClient, type ScrapeClientOptions } from './scrapeClient.js';
export { BudgetsClient, type BudgetInput, type JobCostReport } from './budgets.js';
export type { TemporalActions } from './actions.js';
export { startOptions, type JobRef, type StartExtras } from './start.js';
export type { CancelResult, BatchCancelOutcome } from './cancel.js';
export { summarize, toResult, type JobResult, type JobSummary } from './views.js';
export { canonicalUrl, derivedKey, jobIdFor, jobIdOf, parseJobId } from './ids.js';
export { MAX_DOCUMENTS_PAGE, type ResultDocumentsPage } from './documents.js';
export type { StartScrapeInput } from '../model/schemas.js';
export { isFinalState } from '../model/states.js';
