/**
 * The dev server's own Prometheus metrics (`temporal server start-dev` prints `Metrics: <url>`),
 * read before and after a phase: persistence operations and their latency, heartbeats that reached
 * the server, the server's own `action` counter, and task schedule-to-start latency. This is how
 * the benchmarks show what a job costs the server and what limits it (its SQLite persistence
 * serialises writes). Every figure is the difference of two scrapes ({@link serverSnapshot}); each
 * is undefined when the server has no metrics endpoint (an external cluster).
 */
import type { Stack } from './stack.js';
import { round } from './proc.js';
import {
  deltaBy,
  histogram,
  histogramDelta,
  latencySummaryMs,
  scrape,
  total,
  totalBy,
  type LabelFilter,
  type Sample,
} from './prometheus.js';

/** The metrics URL the dev server printed, if any. */
export function metricsUrl(stack: Stack): string | undefined {
  return stack.serverMetricsUrl ?? /Metrics:\s+(http:\/\/\S+)/.exec(stack.temporal.devServer?.outputTail() ?? '')?.[1];
}

/** Every sample of the server's metrics at one moment; undefined when there is no endpoint. */
export type ServerSnapshot = Sample[] | undefined;

/** Scrapes the dev server's metrics. */
export function serverSnapshot(stack: Stack): Promise<ServerSnapshot> {
  return scrape(metricsUrl(stack));
}

/**
 * Persistence operations that keep task queues loaded (leases, metadata, user data): the server
 * does them per task-queue partition and per unit of time, whatever the jobs do, so a long phase
 * with few jobs would otherwise show them as a cost per job. They are counted apart (`bookkeeping`).
 */
export const TASK_QUEUE_BOOKKEEPING: ReadonlySet<string> = new Set([
  'CreateTaskQueue',
  'GetTaskQueue',
  'UpdateTaskQueue',
  'ListTaskQueue',
  'DeleteTaskQueue',
  'GetTaskQueueUserData',
  'UpdateTaskQueueUserData',
  'ListTaskQueueUserDataEntries',
  'GetTaskQueuesByBuildId',
  'CountTaskQueuesByBuildId',
]);

/** Persistence work between two snapshots. Latencies in s (totals) and ms (means). */
export interface PersistenceFigures {
  /** Namespace the figures are limited to (undefined: every namespace, the server's own included). */
  namespace: string | undefined;
  /** Operations other than {@link TASK_QUEUE_BOOKKEEPING}: what the jobs themselves cost. */
  operations: number;
  /** Their summed latency, s. */
  totalS: number;
  /** Task-queue bookkeeping operations (time-driven, not job-driven). */
  bookkeeping: number;
  /** Every operation of the namespace, bookkeeping included. */
  allOperations: number;
  /**
   * The history service's reads and range deletes of its shard task queues (transfer, timer,
   * visibility tasks: `Get…Tasks`, `RangeComplete…Tasks`) and shard updates, which the server
   * labels with its `system` namespace: partly driven by the jobs' tasks, partly periodic, so
   * reported apart and not in `operations`. Undefined when the figures cover every namespace.
   */
  shardTaskOperations?: number;
  /** Operation → count, summed latency (s) and mean latency (ms), most time first; `bookkeeping` marks the excluded ones. */
  byOp: Record<string, { count: number; totalS: number; meanMs: number; bookkeeping?: true }>;
}

/**
 * Persistence work (`persistence_latency` count and sum by operation) between `a` and `b`, in
 * `namespace` only when given (the server's own namespaces, `system` and `temporal_system`, then
 * drop out: their background reads are not a job's cost).
 */
export function persistenceDelta(
  a: ServerSnapshot,
  b: ServerSnapshot,
  namespace?: string,
): PersistenceFigures | undefined {
  if (!a || !b) return undefined;
  const f: LabelFilter = namespace ? { namespace } : {};
  const count = deltaBy(
    totalBy(a, 'persistence_latency_count', 'operation', f),
    totalBy(b, 'persistence_latency_count', 'operation', f),
  );
  const sum = deltaBy(
    totalBy(a, 'persistence_latency_sum', 'operation', f),
    totalBy(b, 'persistence_latency_sum', 'operation', f),
  );
  const byOp: PersistenceFigures['byOp'] = {};
  let operations = 0;
  let totalS = 0;
  let bookkeeping = 0;
  for (const [op, n] of Object.entries(count)) {
    if (n <= 0) continue;
    const s = sum[op] ?? 0;
    const isBookkeeping = TASK_QUEUE_BOOKKEEPING.has(op);
    byOp[op] = {
      count: n,
      totalS: round(s, 3),
      meanMs: round((s / n) * 1000, 2),
      ...(isBookkeeping ? { bookkeeping: true as const } : {}),
    };
    if (isBookkeeping) bookkeeping += n;
    else {
      operations += n;
      totalS += s;
    }
  }
  const sorted = Object.fromEntries(Object.entries(byOp).sort((x, y) => y[1].totalS - x[1].totalS));
  let shardTaskOperations: number | undefined;
  if (namespace) {
    const shard = {
      namespace: 'system',
      service_name: 'history',
      operation: /^(Get\w+Tasks|RangeComplete\w+Tasks|UpdateShard)$/,
    };
    shardTaskOperations = total(b, 'persistence_latency_count', shard) - total(a, 'persistence_latency_count', shard);
  }
  return {
    namespace,
    operations,
    totalS: round(totalS, 3),
    bookkeeping,
    allOperations: operations + bookkeeping,
    shardTaskOperations,
    byOp: sorted,
  };
}

/**
 * Activity heartbeats that reached the server between `a` and `b` in `namespace`: the frontend's
 * `service_requests` for `RecordActivityTaskHeartbeat` and `RecordActivityTaskHeartbeatById`
 * (heartbeats the SDK throttled away never reach it). Temporal Cloud bills each as an Action.
 */
export function heartbeatsDelta(a: ServerSnapshot, b: ServerSnapshot, namespace: string): number | undefined {
  if (!a || !b) return undefined;
  const f = { namespace, service_name: 'frontend', operation: /^RecordActivityTaskHeartbeat(ById)?$/ };
  return total(b, 'service_requests', f) - total(a, 'service_requests', f);
}

/**
 * The frontend's gRPC requests between `a` and `b` in `namespace`, by operation (`service_requests`
 * of the frontend service: `StartWorkflowExecution`, `PollActivityTaskQueue`,
 * `RespondWorkflowTaskCompleted`, …): the calls a phase's workers and clients made, empty polls
 * included, which the persistence figures do not show.
 */
export function serviceRequestsDelta(
  a: ServerSnapshot,
  b: ServerSnapshot,
  namespace: string,
): { total: number; byOperation: Record<string, number> } | undefined {
  const d = counterDeltaBy(a, b, 'service_requests', 'operation', { namespace, service_name: 'frontend' });
  return d && { total: d.total, byOperation: d.by };
}

/**
 * The server's own `action` counter between `a` and `b` in `namespace`, by `action_type`
 * (`grpc_StartWorkflowExecution`, `command_ScheduleActivityTask`, `grpc_RecordActivityTaskHeartbeat`, …):
 * the open-source server's metering, shown beside the Actions counted from histories as a
 * cross-check; it is not Temporal Cloud's bill.
 */
export function serverActionsDelta(
  a: ServerSnapshot,
  b: ServerSnapshot,
  namespace: string,
): { total: number; byType: Record<string, number> } | undefined {
  const d = counterDeltaBy(a, b, 'action', 'action_type', { namespace });
  return d && { total: d.total, byType: d.by };
}

/** Counter `name` between `a` and `b`, summed per value of `label` over the samples `filter` keeps, and in all. */
function counterDeltaBy(
  a: ServerSnapshot,
  b: ServerSnapshot,
  name: string,
  label: string,
  filter: LabelFilter,
): { total: number; by: Record<string, number> } | undefined {
  if (!a || !b) return undefined;
  const by = deltaBy(totalBy(a, name, label, filter), totalBy(b, name, label, filter));
  return { total: Object.values(by).reduce((s, x) => s + x, 0), by };
}

/**
 * Schedule-to-start latency the server measured (`task_schedule_to_start_latency`, seconds: from a
 * task being scheduled to a worker's poll taking it) between `a` and `b`, for one task queue (its
 * normal and sticky partitions together) and task type. Null when no task of that type started.
 */
export function scheduleToStartDelta(
  a: ServerSnapshot,
  b: ServerSnapshot,
  namespace: string,
  taskQueue: string,
  taskType: 'Workflow' | 'Activity',
): ReturnType<typeof latencySummaryMs> | undefined {
  if (!a || !b) return undefined;
  // The server's Prometheus labels replace every character outside [A-Za-z0-9_] with `_`.
  const f = { namespace, taskqueue: taskQueue.replace(/[^A-Za-z0-9_]/g, '_'), task_type: taskType };
  return latencySummaryMs(
    histogramDelta(
      histogram(a, 'task_schedule_to_start_latency', f),
      histogram(b, 'task_schedule_to_start_latency', f),
    ),
    1000,
  );
}

/**
 * Mean waits inside the server between `a` and `b` (ms), where they are exported: `lock_latency`
 * (waiting for a workflow's lock in the history service: a hot workflow row) and
 * `task_latency_queue` (history tasks — transfers, timers — waiting in the server's own queues).
 */
export function serverWaitsDelta(
  a: ServerSnapshot,
  b: ServerSnapshot,
): Record<string, ReturnType<typeof latencySummaryMs>> | undefined {
  if (!a || !b) return undefined;
  const out: Record<string, ReturnType<typeof latencySummaryMs>> = {};
  for (const base of ['lock_latency', 'task_latency_queue'])
    out[base] = latencySummaryMs(histogramDelta(histogram(a, base), histogram(b, base)), 1000);
  return out;
}

/** Tasks added to the task queues between `a` and `b` in `namespace`, by `<task_type>:<task_add_result>` (`sync_match` went straight to a waiting poll; anything else was written to the backlog). */
export function tasksAddedDelta(
  a: ServerSnapshot,
  b: ServerSnapshot,
  namespace: string,
): Record<string, number> | undefined {
  if (!a || !b) return undefined;
  const key = (s: ServerSnapshot) => {
    const out: Record<string, number> = {};
    for (const x of s ?? []) {
      if (x.name !== 'tasks_added' || x.labels.namespace !== namespace) continue;
      const k = `${x.labels.task_type ?? '?'}:${x.labels.task_add_result ?? '?'}`;
      out[k] = (out[k] ?? 0) + x.value;
    }
    return out;
  };
  return deltaBy(key(a), key(b));
}

/** What must stop changing for a snapshot to count as settled: the namespace's job persistence operations, actions and heartbeats (not polls, which idle workers renew all the time). */
function activityKey(s: ServerSnapshot, namespace: string): number | undefined {
  if (!s) return undefined;
  let n = 0;
  for (const x of s) {
    if (x.labels.namespace !== namespace) continue;
    if (
      (x.name === 'persistence_latency_count' && !TASK_QUEUE_BOOKKEEPING.has(x.labels.operation ?? '')) ||
      x.name === 'action' ||
      (x.name === 'service_requests' &&
        x.labels.service_name === 'frontend' &&
        /^RecordActivityTaskHeartbeat/.test(x.labels.operation ?? ''))
    )
      n += x.value;
  }
  return n;
}

/**
 * A snapshot taken once the server's counters for `namespace` have settled: the dev server
 * publishes its metrics in batches (a change showed up 0.25–0.85 s after the request here), so a
 * snapshot taken the moment a phase's last workflow closed would hand that phase's last
 * operations to the next phase. Scrapes every 500 ms until the namespace's job persistence
 * operations, actions and heartbeats have not changed for `quietMs` (default 2 s), at most
 * `maxMs` (default 20 s; then the last scrape). Undefined when there is no metrics endpoint.
 */
export async function settledServerSnapshot(
  stack: Stack,
  namespace: string,
  opts: { quietMs?: number; maxMs?: number } = {},
): Promise<ServerSnapshot> {
  const quietMs = opts.quietMs ?? 2_000;
  const until = Date.now() + (opts.maxMs ?? 20_000);
  let snap = await serverSnapshot(stack);
  if (!snap) return undefined;
  let key = activityKey(snap, namespace);
  let since = Date.now();
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500));
    const next = await serverSnapshot(stack);
    if (!next) return snap;
    const k = activityKey(next, namespace);
    snap = next;
    if (k !== key) {
      key = k;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) break;
  }
  return snap;
}
