/**
 * A job's Temporal Actions, counted from its workflow's event history as Temporal Cloud bills them
 * ("Temporal Cloud Actions", docs.temporal.io/cloud/actions, the History Event Type column of each
 * category): what the job cost on the Temporal side, shown beside what it cost at the provider.
 * Not in history, hence not counted (the page says the same of its own estimate): queries, activity
 * heartbeats, rejected Updates. Event types are compared by their numbers in
 * `temporal.api.enums.v1.EventType` (the client does not load the protobuf definitions).
 */
import type { Client } from '@temporalio/client';

/** History event types that are Actions, by number (`temporal.api.enums.v1.EventType`), and the Action each is. */
const ACTION_EVENTS: Record<number, string> = {
  1: 'start_workflow', // WORKFLOW_EXECUTION_STARTED (also each continue-as-new)
  10: 'schedule_activity', // ACTIVITY_TASK_SCHEDULED
  17: 'start_timer', // TIMER_STARTED
  26: 'signal_workflow', // WORKFLOW_EXECUTION_SIGNALED
  29: 'start_child_workflow', // START_CHILD_WORKFLOW_EXECUTION_INITIATED (2 Actions)
  40: 'upsert_search_attributes', // UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
  41: 'accept_workflow_update', // WORKFLOW_EXECUTION_UPDATE_ACCEPTED
  55: 'update_workflow_options', // WORKFLOW_EXECUTION_OPTIONS_UPDATED
};
const ACTIVITY_TASK_STARTED = 11;
const MARKER_RECORDED = 25;
const WORKFLOW_TASK_COMPLETED = 7;

/** A job's Temporal Actions: the total, by kind, and over how many runs. */
export interface TemporalActions {
  actions: number;
  byKind: Record<string, number>;
  runs: number;
}

/**
 * Counts the Actions of workflow `workflowId` over every run of its continue-as-new chain (activity
 * retries count `attempt − 1` each; local activities one per workflow task that recorded any).
 * Throws what the client throws (`WorkflowNotFoundError` for a workflow the server no longer has).
 */
export async function temporalActions(client: Client, workflowId: string): Promise<TemporalActions> {
  const out: TemporalActions = { actions: 0, byKind: {}, runs: 0 };
  const add = (kind: string, n = 1) => {
    if (n <= 0) return;
    out.actions += n;
    out.byKind[kind] = (out.byKind[kind] ?? 0) + n;
  };
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    out.runs++;
    runId = undefined;
    let markersInTask = false;
    for (const e of history.events ?? []) {
      const type = Number(e.eventType ?? 0);
      const kind = ACTION_EVENTS[type];
      if (kind) add(kind, kind === 'start_child_workflow' ? 2 : 1);
      if (type === 1) runId = e.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
      if (type === ACTIVITY_TASK_STARTED)
        add('retry_activity', (e.activityTaskStartedEventAttributes?.attempt ?? 1) - 1);
      if (type === MARKER_RECORDED && !markersInTask) {
        add('record_activity_markers');
        markersInTask = true;
      }
      if (type === WORKFLOW_TASK_COMPLETED) markersInTask = false;
    }
  }
  return out;
}
