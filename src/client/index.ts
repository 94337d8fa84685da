/**
 * The typed client used by backend services, the HTTP API and the CLI (see docs/client-package.md,
 * "Using it"), re-exported from its parts (one file each; docs/layout.md maps them).
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
