/**
 * Every workflow the worker registers. Deterministic code only: this module and its imports are
 * bundled into the worker's workflow sandbox.
 *
 * - `scrapeWorkflowV6` (`scrape/`): every scrape;
 * - the maintenance workflows run by Temporal Schedules.
 */
export { scrapeWorkflowV6 } from './scrape/workflow.js';
export {
  SCRAPE_WORKFLOW_TYPE,
  RETIRED_WORKFLOW_TYPES,
  stateQuery,
  cancelSignal,
  cancelUpdate,
  resolveUpdate,
  wakeSignal,
} from './scrape/messages.js';
export type { CancelRequest, Resolution, WakeHint } from './scrape/messages.js';
export { purgeExpiredResultsWorkflow, findOrphansWorkflow } from './maintenance.js';
