/**
 * Every workflow the worker registers. Deterministic code only: this module and its imports are
 * bundled into the worker's workflow sandbox.
 *
 * - `scrapeWorkflowV2` (`scrape/`): every scrape started now;
 * - `scrapeWorkflow` (`../legacy/scrapeWorkflowV1.ts`): frozen, finishes runs started before v2;
 * - the maintenance workflows run by Temporal Schedules.
 */
export { scrapeWorkflowV2 } from './scrape/workflow.js';
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
