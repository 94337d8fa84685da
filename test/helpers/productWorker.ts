/**
 * The product's worker (`src/worker.ts` `runWorkerMain`, what `npm run worker` runs) as a child
 * process of a test stack, for tests that stop it with a signal the way a process manager does:
 * its own shutdown handling, grace time and process exit, no test hooks. Also what the server
 * recorded of a job's activities (its history), for assertions on how attempts ended.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { maintenanceScheduleIds } from '../../src/client/schedules.js';
import { keepLog } from './evidence.js';
import { REPO, waitFor, type Stack } from './stack.js';

/** A running product worker. */
export interface ProductWorker {
  child: ChildProcess;
  /** The identity the worker reports to the server (the SDK's default, `<pid>@<hostname>`). */
  identity: string;
  /** Everything it wrote (JSON log lines on stderr), stdout and stderr interleaved. */
  output(): string;
  /** Settles when it exits: its exit code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node --import tsx src/worker.ts` on `stack`'s configuration file (with `env` on top) and
 * resolves once it logs `worker polling`. Its output is kept for the secrets scan when it exits. It registers the maintenance Schedules of the stack's
 * task queue: {@link deleteMaintenanceSchedules} removes them.
 */
export async function spawnProductWorker(
  stack: Pick<Stack, 'configFile'>,
  env: Record<string, string> = {},
): Promise<ProductWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/worker.ts')], {
    cwd: REPO,
    env: { ...process.env, SCRAPE_CONFIG: stack.configFile, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      keepLog('product-worker', out); // for the secrets scan
      resolve({ code, signal });
    }),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(
    () => {
      if (gone) throw new Error(`the worker exited before polling:\n${out.slice(-3000)}`);
      return out.includes('"worker polling"');
    },
    120_000,
    `the worker to poll:\n${out.slice(-2000)}`,
  );
  return { child, identity: `${child.pid}@${os.hostname()}`, output: () => out, exited };
}

/** Deletes the maintenance Schedules a product worker registered for the stack's task queue. */
export async function deleteMaintenanceSchedules(stack: Pick<Stack, 'config' | 'temporal'>): Promise<void> {
  for (const id of Object.values(maintenanceScheduleIds(stack.config.temporal.taskQueue)))
    await stack.temporal.schedule
      .getHandle(id)
      .delete()
      .catch(() => undefined);
}

/** One activity execution as the history records it. */
export interface ActivityRecord {
  activityType: string;
  /** The attempt that ended it (the last one started). */
  attempt: number | null;
  /** Identity of the worker that ran that attempt. */
  identity: string | null;
  /** The previous attempt's failure message, as recorded on the last start. */
  lastFailure: string | null;
  /** Whether the previous attempt's failure was a timeout. */
  lastFailureWasTimeout: boolean;
  /** How it ended: `completed`, `failed`, `timed_out`, `canceled`, or `open` (still scheduled). */
  end: 'completed' | 'failed' | 'timed_out' | 'canceled' | 'open';
}

const T = proto.temporal.api.enums.v1.EventType;

/** The activities of the job's workflow history, in scheduling order. */
export async function activityRecords(handle: WorkflowHandle): Promise<ActivityRecord[]> {
  const history = await handle.fetchHistory();
  const byScheduled = new Map<string, ActivityRecord>();
  for (const e of history.events ?? []) {
    const id = String(e.eventId);
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      byScheduled.set(id, {
        activityType: e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?',
        attempt: null,
        identity: null,
        lastFailure: null,
        lastFailureWasTimeout: false,
        end: 'open',
      });
      continue;
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const r = byScheduled.get(String(started.scheduledEventId));
      if (r) {
        r.attempt = started.attempt ?? null;
        r.identity = started.identity ?? null;
        r.lastFailure = started.lastFailure?.message ?? null;
        r.lastFailureWasTimeout =
          started.lastFailure?.timeoutFailureInfo != null || started.lastFailure?.cause?.timeoutFailureInfo != null;
      }
      continue;
    }
    const ended: [unknown, ActivityRecord['end']][] = [
      [e.activityTaskCompletedEventAttributes, 'completed'],
      [e.activityTaskFailedEventAttributes, 'failed'],
      [e.activityTaskTimedOutEventAttributes, 'timed_out'],
      [e.activityTaskCanceledEventAttributes, 'canceled'],
    ];
    for (const [attrs, end] of ended) {
      const sid = (attrs as { scheduledEventId?: unknown } | null | undefined)?.scheduledEventId;
      const r = sid != null ? byScheduled.get(String(sid)) : undefined;
      if (r) r.end = end;
    }
  }
  return [...byScheduled.values()];
}
