/**
 * Every workflow the worker registers. Deterministic code only: this module and its imports are
 * bundled into the worker's workflow sandbox.
 */
export { scrapeWorkflow, stateQuery, cancelSignal, cancelUpdate, resolveUpdate, wakeSignal } from './scrape.js';
export type { CancelRequest, Resolution, WakeHint } from './scrape.js';
export { purgeExpiredResultsWorkflow, findOrphansWorkflow } from './maintenance.js';
