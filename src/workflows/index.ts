/**
 * Every workflow the worker registers. Deterministic code only: this module and its imports are
 * bundled into the worker's workflow sandbox.
 *
 * - `scrapeWorkflowV3` (`scrape/`): every scrape started now;
 * - `scrapeWorkflowV2` (`scrape/`, the same code with its changes behind `patched()`): finishes
 *   runs started before v3;
 * - `scrapeWorkflow` (`../legacy/scrapeWorkflowV1.ts`): frozen, finishes runs started before v2;
 * - the maintenance workflows run by Temporal Schedules.
 */
export { scrapeWorkflowV3, scrapeWorkflowV2 } from './scrape/workflow.js';
export { scrapeWorkflow } from '../legacy/scrapeWorkflowV1.js';
export {
  SCRAPE_WORKFLOW_TYPE,
  stateQuery,
  cancelSignal,
  cancelUpdate,
  resolveUpdate,
  wakeSignal,
} from './scrape/messages.js';
export type { CancelRequest, Resolution, WakeHint } from './scrape/messages.js';
export { purgeExpiredResultsWorkflow, findOrphansWorkflow } from './maintenance.js';
