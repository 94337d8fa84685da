/**
 * Helpers for the cancellation tests (test/integration/cancel-*.test.ts): activity hook gates that
 * hold a job at an exact moment, the three cancel doors (signal, Update, native cancellation),
 * and readers for everything a cancel leaves behind (workflow history, execution status, search
 * attribute, current details, store timeline, provider cancel calls). Real parts only: the gates
 * are the worker's own activity hooks, awaited in the real activity.
 */
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ActivityDeps } from '../../src/activities/index.js';
import type { CancelResult } from '../../src/client/index.js';
import type { CancelReport, JobView } from '../../src/model/types.js';
import type { JobEventRow, JobRow } from '../../src/store/index.js';
import { stateQuery } from '../../src/workflows/scrape/messages.js';
import { CLOSE_AS_CANCELLED_REASON } from '../../src/activities/cancel.js';
import { ScrapeState } from '../../src/workflows/searchAttributes.js';
import { waitFor, type Stack } from './stack.js';
import { outboxFor } from './storeQueries.js';

/** The three doors into the one cancel path. */
export type Door = 'signal' | 'update' | 'native';
export const DOORS: readonly Door[] = ['signal', 'update', 'native'];

/** Hook points a test can hold (see `ActivityDeps.hooks`). */
export type HookPoint = 'afterSubmitAnswered' | 'afterTaskRecorded' | 'beforeResultWrite' | 'afterResultWritten';

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A held moment: `reached` resolves (with the provider task ID) when the activity got there. */
export interface Gate {
  /** Resolves with the task ID when the activity reached the hook point (first time). */
  reached: Promise<string>;
  /** Lets the held activity go on. Idempotent. */
  release(): void;
  /** How many times the hook point was reached for this job (a retried activity counts again). */
  readonly hits: number;
}

/**
 * Activity hooks that hold a given job at a given point until the test releases it. Jobs without
 * a gate pass straight through. Pass `gates.hooks` to `startStack({ hooks })`.
 */
export class HookGates {
  private readonly gates = new Map<
    string,
    { reached: Deferred<string>; released: Deferred<void>; hits: number; isReleased: boolean }
  >();

  readonly hooks: NonNullable<ActivityDeps['hooks']> = {
    afterSubmitAnswered: (jobId, taskId) => this.hit('afterSubmitAnswered', jobId, taskId),
    afterTaskRecorded: (jobId, taskId) => this.hit('afterTaskRecorded', jobId, taskId),
    beforeResultWrite: (jobId, taskId) => this.hit('beforeResultWrite', jobId, taskId),
    afterResultWritten: (jobId, resultId) => this.hit('afterResultWritten', jobId, resultId),
  };

  /** Holds `jobId` at `point` (every time it gets there) until `release()`. */
  hold(point: HookPoint, jobId: string): Gate {
    const g = { reached: deferred<string>(), released: deferred<void>(), hits: 0, isReleased: false };
    this.gates.set(`${point}|${jobId}`, g);
    return {
      reached: g.reached.promise,
      release: () => {
        g.isReleased = true;
        g.released.resolve();
      },
      get hits() {
        return g.hits;
      },
    };
  }

  /** Releases every gate (afterAll safety net). */
  releaseAll(): void {
    for (const g of this.gates.values()) {
      g.isReleased = true;
      g.released.resolve();
    }
  }

  private async hit(point: HookPoint, jobId: string, id: string): Promise<void> {
    const g = this.gates.get(`${point}|${jobId}`);
    if (!g) return;
    g.hits++;
    g.reached.resolve(id);
    if (!g.isReleased) await g.released.promise;
  }
}

/** What sending a cancel through a door gives back. */
export interface SentCancel {
  door: Door;
  /** Settles when the door's call returns (the Update's report; the signal's `requested`; native: nothing). */
  done: Promise<CancelResult | undefined>;
}

export const CANCEL_REQ = { reason: 'integration test', requestedBy: 'vitest' } as const;

/**
 * Sends a cancel through `door`: `signal` = `ScrapeClient.cancelScrape({wait: false})` (the
 * `cancel` signal), `update` = `ScrapeClient.cancelScrape()` (the `cancel` Update, waits for the
 * observed outcome), `native` = `WorkflowHandle.cancel()` (what the Web UI button and
 * `temporal workflow cancel` do).
 */
export function sendCancel(stack: Stack, door: Door, jobId: string, account = 'acme'): SentCancel {
  let done: Promise<CancelResult | undefined>;
  if (door === 'signal') done = stack.client.cancelScrape(account, jobId, { ...CANCEL_REQ, wait: false });
  else if (door === 'update') done = stack.client.cancelScrape(account, jobId, { ...CANCEL_REQ, wait: true });
  else
    done = stack.temporal.workflow
      .getHandle(jobId)
      .cancel()
      .then(() => undefined);
  // Never an unhandled rejection while a test is waiting for something else.
  done.catch(() => undefined);
  return { door, done };
}

type HistoryEvent = NonNullable<
  Awaited<ReturnType<ReturnType<Stack['temporal']['workflow']['getHandle']>['fetchHistory']>>['events']
>[number];

/** The workflow's history events. */
export async function historyOf(stack: Stack, jobId: string): Promise<HistoryEvent[]> {
  const h = await stack.temporal.workflow.getHandle(jobId).fetchHistory();
  return h.events ?? [];
}

/** Counts the history events that a cancel through `door` leaves (signal `cancel`, Update `cancel` accepted, cancel requested). */
export function cancelEventsIn(events: HistoryEvent[], door: Door): number {
  return events.filter((e) => {
    if (door === 'signal') return e.workflowExecutionSignaledEventAttributes?.signalName === 'cancel';
    if (door === 'update')
      return e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'cancel';
    // Native: a cancel request, except the one by which the workflow closes itself `Canceled` after a signal/Update/deadline cancel.
    return (
      e.workflowExecutionCancelRequestedEventAttributes != null &&
      e.workflowExecutionCancelRequestedEventAttributes.cause !== CLOSE_AS_CANCELLED_REASON
    );
  }).length;
}

/**
 * Waits until the cancel sent through `door` is in the workflow's history (signal event, Update
 * accepted by the workflow, or cancel requested): everything the test does afterwards (releasing
 * a gate, a fault) is causally after the cancel.
 */
export async function waitCancelRecorded(stack: Stack, jobId: string, door: Door, count = 1): Promise<void> {
  await waitFor(
    async () => cancelEventsIn(await historyOf(stack, jobId), door) >= count,
    30_000,
    `${door} cancel of ${jobId} in history`,
  );
}

/** Everything observable about a job once its workflow closed. */
export interface Settled {
  /** Temporal execution status (`COMPLETED`, `CANCELED`, `FAILED`, …). */
  status: string;
  /** The workflow's own view (query `state`, answered by replay after close). */
  view: JobView;
  report: CancelReport | undefined;
  row: JobRow;
  results: number;
  outbox: number;
  timeline: (Omit<JobEventRow, 'detail'> & { detail: Record<string, unknown> | null })[];
  /** `ScrapeState` search attribute. */
  scrapeState: string | undefined;
  /** The workflow's current details (what the Web UI shows), via `__temporal_workflow_metadata`. */
  currentDetails: string;
  history: HistoryEvent[];
}

/** Waits for the job's workflow to close (any status) and reads everything. */
export async function settle(stack: Stack, jobId: string, timeoutMs = 60_000): Promise<Settled> {
  const handle = stack.temporal.workflow.getHandle(jobId);
  let status = '';
  await waitFor(
    async () => {
      status = (await handle.describe()).status.name;
      return status !== 'RUNNING';
    },
    timeoutMs,
    `workflow ${jobId} to close`,
  );
  const desc = await handle.describe();
  const view = await handle.query(stateQuery);
  const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  const row = (await stack.store.jobs.get(jobId))!;
  const timeline = (await stack.store.findings.timeline(jobId)).map((e) => ({
    ...e,
    detail: e.detail ? (JSON.parse(e.detail) as Record<string, unknown>) : null,
  }));
  return {
    status,
    view,
    report: view.cancel,
    row,
    results: await stack.store.results.count({ jobId }),
    outbox: (await outboxFor(stack.store, jobId)).length,
    timeline,
    scrapeState: desc.typedSearchAttributes.get(ScrapeState),
    currentDetails: meta.currentDetails ?? '',
    history: await historyOf(stack, jobId),
  };
}

/**
 * Result of `handle.result()` without throwing: the view (a run that closed Completed, or Failed
 * with its job's outcome failure, whose details hold the view: `failedAs` is then its type), or
 * the kind of failure.
 */
export async function resultOf(
  stack: Stack,
  jobId: string,
): Promise<{ view?: JobView; cancelled: boolean; failedAs?: string; error?: unknown }> {
  try {
    return { view: await stack.temporal.workflow.getHandle(jobId).result(), cancelled: false };
  } catch (e) {
    if (e instanceof WorkflowFailedError && e.cause instanceof CancelledFailure) return { cancelled: true, error: e };
    if (
      e instanceof WorkflowFailedError &&
      e.cause instanceof ApplicationFailure &&
      e.cause.type?.startsWith('ScrapeJob.')
    )
      return { view: e.cause.details?.[0] as JobView, cancelled: false, failedAs: e.cause.type, error: e };
    return { cancelled: false, error: e };
  }
}

/** Provider-side cancel requests (`DELETE /api/jobs/:id/cancel`) for the jobs whose URL contains `tag`. */
/** What the client's start functions need (`StartContext`), from `stack`: to start a run as the client would. */
export function startContextOf(stack: Stack) {
  return {
    temporal: stack.temporal,
    store: stack.store,
    taskQueue: stack.config.temporal.taskQueue,
    defaultProvider: 'reference',
  };
}

export function providerCancelCalls(stack: Stack, tag: string, account = 'acme'): number {
  return stack.sim
    .jobsFor(account)
    .filter((j) => j.url.includes(tag))
    .reduce((n, j) => n + j.cancel_request_times.length, 0);
}

/** Provider jobs created for URLs containing `tag`. */
export function providerJobs(stack: Stack, tag: string, account = 'acme') {
  return stack.sim.jobsFor(account).filter((j) => j.url.includes(tag));
}

/** The state events of the timeline, in order (`state` column of `type = 'state'` rows). */
export function stateEvents(s: Settled): string[] {
  return s.timeline.filter((e) => e.type === 'state').map((e) => e.state ?? '');
}

/** The cancel reports recorded in the store timeline, oldest first (only those with an outcome). */
export function cancelOutcomesInTimeline(s: Settled): CancelReport[] {
  return s.timeline
    .map((e) => (e.detail as { cancel?: CancelReport } | null)?.cancel)
    .filter((c): c is CancelReport => !!c?.outcome);
}

/** Waits until the store row satisfies `pred`. */
export async function waitRow(
  stack: Stack,
  jobId: string,
  pred: (r: JobRow) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<JobRow> {
  return waitFor(
    async () => {
      const r = await stack.store.jobs.get(jobId);
      return r && pred(r) ? r : undefined;
    },
    timeoutMs,
    `${jobId}: ${what}`,
  );
}

/** True when `e` says the workflow is closed or absent. */
export function isNotFound(e: unknown): boolean {
  return e instanceof WorkflowNotFoundError;
}

/**
 * Expected Temporal execution status after a cancel with `outcome`: `Canceled` whichever door was
 * used, unless the provider finished first (workflow v2 closes every cancelled job the same way).
 */
export function expectedExecution(_door: Door, outcome: CancelReport['outcome']): 'CANCELLED' | 'COMPLETED' {
  return outcome !== 'completed' ? 'CANCELLED' : 'COMPLETED';
}

/** What a cancel test expects to find once the job settled. */
export interface Expected {
  door: Door;
  /** Final local state (store row, workflow view, `ScrapeState`). */
  state: string;
  /** The cancel report's outcome. */
  outcome: NonNullable<CancelReport['outcome']>;
  /** Provider cancel calls (`DELETE …/cancel` at the sim) for the test's URLs, and in the report. */
  calls: number;
  /** Result rows written for the job. */
  results: number;
  /**
   * Cancel requests the sim recorded against the job (default `calls`). The sim records them per
   * job only on profiles with a cancel endpoint; tests on other profiles count them separately.
   */
  simCalls?: number;
  /** `via` of the report when it is not the door (the first of two doors, the deadline). */
  via?: CancelReport['via'];
  /** Expected `remainingEffects` (exact). */
  effects?: CancelReport['remainingEffects'];
  /** Execution status; default from {@link expectedExecution}. */
  execution?: 'CANCELLED' | 'COMPLETED';
  /** Whether the cancel path ran (`cancelling` in the timeline) — false for a late cancel. */
  cancelling?: boolean;
}

/**
 * The assertions every cancel test makes (soft, so that one run lists every difference): final
 * state in store, view and search attribute; the report (outcome, door, provider calls, effects);
 * provider cancel calls counted at the provider; result and outbox rows; the execution status;
 * current details naming the cancel; the store timeline recording the cancel and its outcome;
 * the door in history. `update` is what the `cancel` Update (via the client) returned.
 */
export function expectSettled(
  expect: import('vitest').ExpectStatic,
  stack: Stack,
  tag: string,
  s: Settled,
  exp: Expected,
  update?: CancelResult,
): void {
  const via = exp.via ?? exp.door;
  const ctx = `[${tag}]`;
  expect.soft(s.row.state, `${ctx} store state`).toBe(exp.state);
  expect.soft(s.view.state, `${ctx} workflow view state`).toBe(exp.state);
  expect.soft(s.scrapeState, `${ctx} ScrapeState search attribute`).toBe(exp.state);
  expect.soft(s.report, `${ctx} cancel report in the workflow view`).toBeDefined();
  expect.soft(s.report?.outcome, `${ctx} report outcome`).toBe(exp.outcome);
  expect.soft(s.report?.via, `${ctx} report via`).toBe(via);
  expect
    .soft(s.report?.requestedBy, `${ctx} report requestedBy`)
    .toBe(via === 'native' ? 'temporal' : via === 'deadline' ? 'deadline policy' : CANCEL_REQ.requestedBy);
  expect.soft(s.report?.providerCancelCalls, `${ctx} report providerCancelCalls`).toBe(exp.calls);
  expect.soft(s.report?.detail ?? '', `${ctx} report detail`).toMatch(/\S/);
  if (exp.effects) expect.soft(s.report?.remainingEffects, `${ctx} report remainingEffects`).toEqual(exp.effects);
  expect
    .soft(providerCancelCalls(stack, tag), `${ctx} provider cancel calls at the sim`)
    .toBe(exp.simCalls ?? exp.calls);
  expect.soft(s.results, `${ctx} result rows`).toBe(exp.results);
  expect.soft(s.outbox, `${ctx} outbox rows`).toBe(exp.results);
  expect.soft(s.status, `${ctx} execution status`).toBe(exp.execution ?? expectedExecution(exp.door, exp.outcome));
  expect.soft(s.currentDetails, `${ctx} current details name the cancel`).toContain(`**Cancel:** via ${via}`);
  expect.soft(s.currentDetails, `${ctx} current details name the outcome`).toContain(`outcome: ${exp.outcome}`);
  expect.soft(s.currentDetails, `${ctx} current details name the state`).toContain(`**State:** ${exp.state}`);
  const states = stateEvents(s);
  if (exp.cancelling !== false) {
    expect.soft(states, `${ctx} timeline passes through cancelling`).toContain('cancelling');
    if (states.includes('cancelling') && states.includes(exp.state)) {
      expect
        .soft(states.lastIndexOf(exp.state), `${ctx} final state after cancelling in the timeline`)
        .toBeGreaterThan(states.indexOf('cancelling'));
    }
  }
  const recorded = cancelOutcomesInTimeline(s);
  expect.soft(recorded.at(-1)?.outcome, `${ctx} cancel outcome recorded in the store timeline`).toBe(exp.outcome);
  if (exp.door !== via) return;
  expect
    .soft(cancelEventsIn(s.history, exp.door), `${ctx} the ${exp.door} cancel in history`)
    .toBeGreaterThanOrEqual(1);
  if (exp.door === 'update') {
    expect.soft(update?.kind, `${ctx} client result kind`).toBe('observed');
    if (update?.kind === 'observed') {
      expect.soft(update.report, `${ctx} Update report = workflow report`).toEqual(s.report);
      expect.soft(update.state, `${ctx} client-reported state`).toBe(exp.state);
    }
  }
  if (exp.door === 'signal') expect.soft(update?.kind, `${ctx} signal door answers at once`).toBe('requested');
}
