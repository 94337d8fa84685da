/**
 * History cost of a workflow: events by type, size, and Temporal Cloud billable Actions counted
 * from the event history, following Temporal Cloud's published definition ("Temporal Cloud
 * Actions", https://docs.temporal.io/cloud/actions — the History Event Type column of each
 * category):
 *
 * | Action                                   | counted from                                        |
 * |------------------------------------------|-----------------------------------------------------|
 * | Start Workflow / Continue-As-New         | `WORKFLOW_EXECUTION_STARTED` of every run            |
 * | Upsert Workflow Search Attributes        | `UPSERT_WORKFLOW_SEARCH_ATTRIBUTES`                  |
 * | Schedule Activity                        | `ACTIVITY_TASK_SCHEDULED`                            |
 * | Retry Activity                           | `ACTIVITY_TASK_STARTED.attempt − 1`                  |
 * | Start Timer (incl. `condition` timeouts) | `TIMER_STARTED`                                      |
 * | Signal Workflow                          | `WORKFLOW_EXECUTION_SIGNALED`                        |
 * | Accept Workflow Update                   | `WORKFLOW_EXECUTION_UPDATE_ACCEPTED`                 |
 * | Start Child Workflow (2 Actions)         | `START_CHILD_WORKFLOW_EXECUTION_INITIATED`           |
 * | Local activities (1 per workflow task)   | `MARKER_RECORDED` (per workflow task)                |
 * | Update Workflow Options                  | `WORKFLOW_EXECUTION_OPTIONS_UPDATED`                 |
 *
 * Not in history, hence not counted (the page says the same of its own estimate): Queries,
 * Activity Heartbeats, rejected Updates, Schedules, Export. Search attributes given at start are
 * not Actions. Continue-as-new thresholds: the server suggests it at 4,096 events or 4 MiB of
 * history (`limit.historyCount.suggestContinueAsNew`, `limit.historySize.suggestContinueAsNew`
 * in temporalio/temporal `common/dynamicconfig/constants.go`), warns at 10,240 events and
 * terminates at 51,200 events or 50 MiB.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

const { temporal } = proto;

const ET = temporal.api.enums.v1.EventType;

/** Server defaults: continue-as-new suggested at these, run terminated at the hard limits. */
export const HISTORY_LIMITS = {
  suggestEvents: 4_096,
  suggestBytes: 4 * 1024 * 1024,
  warnEvents: 10_240,
  maxEvents: 51_200,
  maxBytes: 50 * 1024 * 1024,
} as const;

/** History cost of one workflow (all runs of a continue-as-new chain). */
export interface HistoryCost {
  runs: number;
  /** Events over all runs. */
  events: number;
  /** Events of the longest run (what continue-as-new limits). */
  maxRunEvents: number;
  /** History size of the latest run in bytes, as the server measures it (`historySizeBytes`). */
  historyBytes: number;
  /** Event type (`TIMER_STARTED`, …) → count. */
  byType: Record<string, number>;
  /** Billable Actions (see the module comment). */
  actions: number;
  /** Action kind → count. */
  actionsByKind: Record<string, number>;
  /** Tracking activities (`trackStatus`: the status checks of a job after its submit) and their attempts. */
  statusActivities: { scheduled: number; attempts: number };
}

function typeName(t: number | null | undefined): string {
  return (ET[t ?? 0] ?? String(t)).replace(/^EVENT_TYPE_/, '');
}

/** Fetches every run of `workflowId` (following continue-as-new back) and counts its cost. */
export async function historyCost(client: Client, workflowId: string): Promise<HistoryCost> {
  const out: HistoryCost = {
    runs: 0,
    events: 0,
    maxRunEvents: 0,
    historyBytes: 0,
    byType: {},
    actions: 0,
    actionsByKind: {},
    statusActivities: { scheduled: 0, attempts: 0 },
  };
  const add = (kind: string, n = 1) => {
    if (n <= 0) return;
    out.actions += n;
    out.actionsByKind[kind] = (out.actionsByKind[kind] ?? 0) + n;
  };
  const latest = await client.workflow.getHandle(workflowId).describe();
  out.historyBytes = Number(latest.raw.workflowExecutionInfo?.historySizeBytes ?? 0);
  let runId: string | undefined = latest.runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    out.runs++;
    out.events += events.length;
    out.maxRunEvents = Math.max(out.maxRunEvents, events.length);
    const statusScheduled = new Set<string>();
    let markersInTask = false;
    let next: string | undefined;
    for (const e of events) {
      const name = typeName(e.eventType);
      out.byType[name] = (out.byType[name] ?? 0) + 1;
      switch (e.eventType) {
        case ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
          add('start_workflow');
          next = e.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
          break;
        case ET.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
          add('upsert_search_attributes');
          break;
        case ET.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
          add('schedule_activity');
          const type = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
          if (type === 'trackStatus') {
            statusScheduled.add(String(e.eventId));
            out.statusActivities.scheduled++;
          }
          break;
        }
        case ET.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
          const attempt = e.activityTaskStartedEventAttributes?.attempt ?? 1;
          add('retry_activity', attempt - 1);
          if (statusScheduled.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)))
            out.statusActivities.attempts += attempt;
          break;
        }
        case ET.EVENT_TYPE_TIMER_STARTED:
          add('start_timer');
          break;
        case ET.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
          add('signal_workflow');
          break;
        case ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
          add('accept_workflow_update');
          break;
        case ET.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
          add('start_child_workflow', 2);
          break;
        case ET.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
          add('update_workflow_options');
          break;
        case ET.EVENT_TYPE_MARKER_RECORDED:
          if (!markersInTask) add('record_activity_markers');
          markersInTask = true;
          break;
        case ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
          markersInTask = false;
          break;
        default:
          break;
      }
    }
    runId = next;
  }
  return out;
}
