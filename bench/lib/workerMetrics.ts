/**
 * The SDK worker's own figures, from the Core Prometheus endpoint of a bench worker process
 * (`workerRuntime.ts`; counters end in `_total`, durations are in seconds): task slots and
 * pollers (gauges, read at one moment), and over a window the polls made, the polls that came
 * back empty, schedule-to-start and execution latency of workflow and activity tasks as the SDK
 * measured them. Together with the server's figures these name what bounds a worker: slots all
 * used, pollers all waiting (then the server is slow to hand out tasks), or neither.
 */
import { round } from './proc.js';
import { histogram, histogramDelta, latencySummaryMs, scrape, total, totalBy, type Sample } from './prometheus.js';

/** Every sample of a worker's SDK metrics at one moment; undefined when unreadable. */
export type WorkerSnapshot = Sample[] | undefined;

/** Scrapes a worker's SDK metrics (`BenchWorker.metricsUrl`). */
export function workerSnapshot(url: string | undefined): Promise<WorkerSnapshot> {
  return scrape(url);
}

/** Slot and poller gauges at one moment: by `worker_type` (`WorkflowWorker`, `ActivityWorker`, `LocalActivityWorker`) and `poller_type`. */
export interface WorkerGauges {
  slotsUsed: Record<string, number>;
  slotsAvailable: Record<string, number>;
  pollers: Record<string, number>;
  stickyCacheSize: number;
}

/** Reads {@link WorkerGauges} from one snapshot; undefined when there is none. */
export function workerGauges(s: WorkerSnapshot): WorkerGauges | undefined {
  if (!s) return undefined;
  return {
    slotsUsed: totalBy(s, 'temporal_worker_task_slots_used', 'worker_type'),
    slotsAvailable: totalBy(s, 'temporal_worker_task_slots_available', 'worker_type'),
    pollers: totalBy(s, 'temporal_num_pollers', 'poller_type'),
    stickyCacheSize: total(s, 'temporal_sticky_cache_size'),
  };
}

/** A counter's increase between two snapshots (its name with or without the `_total` suffix). */
function counterDelta(a: Sample[], b: Sample[], name: string, filter: Record<string, string> = {}): number {
  const n = b.some((x) => x.name === `${name}_total`) ? `${name}_total` : name;
  return total(b, n, filter) - total(a, n, filter);
}

/** A histogram's summary between two snapshots in ms (its name with or without the `_seconds` suffix; seconds assumed with it, ms without). */
function latencyDelta(a: Sample[], b: Sample[], name: string): ReturnType<typeof latencySummaryMs> {
  const seconds = b.some((x) => x.name === `${name}_seconds_bucket`);
  const n = seconds ? `${name}_seconds` : name;
  return latencySummaryMs(histogramDelta(histogram(a, n), histogram(b, n)), seconds ? 1000 : 1);
}

/** What a worker did between two snapshots: polls per second by kind, the share that came back empty, task latencies (ms). */
export interface WorkerWindow {
  windowS: number;
  /** Long polls per second by operation (`PollWorkflowTaskQueue`, `PollActivityTaskQueue`). */
  pollsPerSecond: Record<string, number>;
  /** Polls that returned no task (timed out waiting on the server) per second: pollers were idle then, not the bound. */
  emptyPollsPerSecond: { workflow: number; activity: number };
  workflowTaskScheduleToStart: ReturnType<typeof latencySummaryMs>;
  workflowTaskExecution: ReturnType<typeof latencySummaryMs>;
  activityScheduleToStart: ReturnType<typeof latencySummaryMs>;
  activityExecution: ReturnType<typeof latencySummaryMs>;
}

/** Summarises a worker's SDK metrics between `a` and `b`, `windowS` seconds apart; undefined when either is missing. */
export function workerWindow(a: WorkerSnapshot, b: WorkerSnapshot, windowS: number): WorkerWindow | undefined {
  if (!a || !b) return undefined;
  const longName = b.some((x) => x.name === 'temporal_long_request_total')
    ? 'temporal_long_request_total'
    : 'temporal_long_request';
  const polls = totalBy(b, longName, 'operation');
  const polls0 = totalBy(a, longName, 'operation');
  return {
    windowS: round(windowS, 1),
    pollsPerSecond: Object.fromEntries(
      Object.entries(polls).map(([k, v]) => [k, round((v - (polls0[k] ?? 0)) / windowS, 1)]),
    ),
    emptyPollsPerSecond: {
      workflow: round(counterDelta(a, b, 'temporal_workflow_task_queue_poll_empty') / windowS, 1),
      activity: round(counterDelta(a, b, 'temporal_activity_poll_no_task') / windowS, 1),
    },
    workflowTaskScheduleToStart: latencyDelta(a, b, 'temporal_workflow_task_schedule_to_start_latency'),
    workflowTaskExecution: latencyDelta(a, b, 'temporal_workflow_task_execution_latency'),
    activityScheduleToStart: latencyDelta(a, b, 'temporal_activity_schedule_to_start_latency'),
    activityExecution: latencyDelta(a, b, 'temporal_activity_execution_latency'),
  };
}
