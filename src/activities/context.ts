/**
 * What every scrape activity shares: the injected dependencies, provider calls through the shared
 * per-key limiter, the activity's cancellation signal, heartbeats while a call is slow, and incident
 * records. Each activity is a function of one {@link ActivityKit} and its input.
 */
import type { Client } from '@temporalio/client';
import type { ProviderError } from '../providers/shared/errors.js';
import { callProvider } from '../providers/gateway.js';
import type { ProviderRegistry, ResolvedProvider } from '../providers/registry.js';
import type { CallContext, TaskContext } from '../providers/adapter.js';
import type { LimitedCall } from '../providers/shared/limiter.js';
import type { ScrapeRequest } from '../model/types.js';
import { providerKeys } from '../providers/shared/keys.js';
import { Store, type JobRow } from '../store/index.js';
import type { DetachedTracker } from '../worker/tracker.js';
import { currentAttempt, type AttemptContext } from './attemptContext.js';

/** Dependencies of the scrape activities. */
export interface ActivityDeps {
  store: Store;
  providers: ProviderRegistry;
  /** How long result payloads are kept, ms (null: forever). */
  resultRetentionMs: number | null;
  /** Cool-down applied after a 429 that names no wait, ms (default 5000). */
  defaultCoolDownMs?: number;
  /**
   * The weight of each account in a provider key's fair share of slots (configuration
   * `accounts.<name>.weight`; an account not named weighs 1).
   */
  weights?: Readonly<Record<string, number>>;
  /** Client over the worker's connection (closing a job cancelled by signal or Update as `Canceled`). Absent in unit tests. */
  temporal?: Client;
  /**
   * Where `trackStatus` hands its polling loop to run detached, the activity completing
   * asynchronously (`src/worker/tracker.ts`). Absent: the loop runs inside the activity.
   */
  tracker?: DetachedTracker;
  /**
   * Longest wait a reconcile attempt spends in itself (watching the store for a late answer) before
   * reading the lookups again, ms (default: whatever fits in the attempt); a longer one is the
   * server's retry delay. Time-skipping tests set 0 so that no wait is real.
   */
  inlineSettleMs?: number;
  /**
   * How a polling activity waits between checks in-process (default a timer). Time-skipping tests
   * give the test server's skipping sleep, so that an activity's wait is skipped like a workflow's.
   */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Aborts when the worker that runs these activities has stopped (`ScrapeWorker.run()` ended):
   * what a kit registered for the whole process (the slot-release listener of its fair shares,
   * `shares.ts`) is removed then. Absent: kept for the process's life.
   */
  stopped?: AbortSignal;
  /**
   * The Temporal server's time (epoch ms), for comparisons with times the workflow computed
   * (deadlines). Default `Date.now` (worker and server clocks agree); time-skipping tests give the
   * test server's clock.
   */
  serverTime?: () => number | Promise<number>;
  /**
   * Test hooks at crash-relevant points (used by the failure tests to SIGKILL a worker at an
   * exact moment). Never set in production.
   */
  hooks?: {
    afterSubmitAnswered?: (jobId: string, taskId: string) => void | Promise<void>;
    afterTaskRecorded?: (jobId: string, taskId: string) => void | Promise<void>;
    afterResultWritten?: (jobId: string, resultId: string) => void | Promise<void>;
    /** Called after the result was read from the provider and before the store write (tests hold it here). */
    beforeResultWrite?: (jobId: string, taskId: string) => void | Promise<void>;
    /** Called when the workflow records a move (`recordState`), before the store write. */
    beforeRecordState?: (jobId: string, state: string) => void | Promise<void>;
    /** Called before a cancelled job's run asks Temporal to close it `Canceled` (its store row is final already; tests hold it here). */
    beforeCloseAsCancelled?: (jobId: string) => void | Promise<void>;
  };
}

/** Reference to the job and its provider task, passed to most activities. */
export interface TaskRef {
  jobId: string;
  provider: string;
  account: string;
  taskId: string;
}

/** Helpers shared by the activities (their first argument). */
export interface ActivityKit {
  deps: ActivityDeps;
  store: Store;
  /** Every configured secret value (keys, webhook secrets), to redact from anything recorded. */
  secrets(): string[];
  /**
   * Runs `fn` against (provider, account) through the provider gateway (`providers/gateway.ts`):
   * under the key's shared limiter, every configured secret removed from what it returns and
   * throws. Short shared cool-downs
   * are waited out inside the attempt (up to a third of its timeout, at most 10 s); longer ones
   * throw a `cooldown` ProviderError whose `retryAfterMs` is the wait. While `fn` runs longer than
   * `SLOW_CALL_HEARTBEAT_MS` the activity heartbeats, so a cancel reaches a hanging call and
   * aborts it (`signal()`), on top of the call's own HTTP timeout. `opts.heartbeat`: heartbeat
   * only while it returns true (a call that outlives its attempt must not heartbeat for it).
   * `opts.phase: 'submit'` for calls that create work: they are also held by the key's quota hold.
   * `opts.onHeld`: told when the call waits in this attempt for a cool-down or hold to end (ms, why).
   * `opts.seen`: the key's shared cool-down as read with the job's row just before (`LimitedCall.seen`).
   */
  call<T>(
    provider: string,
    account: string,
    fn: (r: ResolvedProvider) => Promise<T>,
    opts?: {
      heartbeat?: () => boolean;
      phase?: 'submit';
      onHeld?: (waitMs: number, why: string) => void | Promise<void>;
      seen?: LimitedCall['seen'];
    },
  ): Promise<T>;
  /** The attempt the caller runs in: the SDK's activity context or a detached loop's (undefined outside both). */
  current(): AttemptContext | undefined;
  /** The activity's cancellation signal (undefined outside an activity). */
  signal(): AbortSignal | undefined;
  /** The attempt number (1 outside an activity). */
  attempt(): number;
  /**
   * A clock in the Temporal server's time (epoch ms), for comparisons with times the workflow
   * computed (deadlines): {@link ActivityDeps.serverTime} read once, plus the local time since.
   */
  serverClock(): Promise<() => number>;
  /** Heartbeats with `details` when inside an activity (no-op otherwise). */
  heartbeat(details?: unknown): void;
  /**
   * Records a sanitised incident from a provider error; within `scope` (a polling generation's),
   * once per content (`IncidentInput.scope` in `src/store/findings.ts`).
   */
  recordIncident(jobId: string, phase: string, e: ProviderError, scope?: string): Promise<void>;
  /**
   * The context of a call about task `taskId` of job `row` through `p` (status, result, cancel):
   * the credential, every secret, the attempt's signal and {@link taskContextOf} the row (its kept
   * submit answer only when `taskId` is the row's task). Without a row, the first three only.
   */
  taskCall(p: ResolvedProvider, row: JobRow | undefined, taskId: string): CallContext;
}

/** The {@link TaskContext} of a task a submit of `job` just got (`accepted`), before its row holds it. */
export function acceptedTask(
  job: { account: string; key: string; request: ScrapeRequest },
  accepted: { submitAnswer?: Record<string, unknown> },
): TaskContext {
  const submitAnswer = accepted.submitAnswer ? { submitAnswer: accepted.submitAnswer } : {};
  return { request: job.request, clientRef: providerKeys(job.account, job.key).clientRef, ...submitAnswer };
}

/**
 * What a call about job `row`'s task may need besides its ID: the request as submitted, our client
 * reference and the kept fields of the submit's answer (`submit_answer`). Undefined when the row's
 * JSON cannot be read (the call then goes without it, as it would for a kind that needs none).
 */
export function taskContextOf(row: JobRow, taskId: string = row.task_id ?? ''): TaskContext | undefined {
  try {
    const j = Store.jobInput(row);
    return {
      request: j.request as ScrapeRequest,
      clientRef: providerKeys(row.account, row.idem_key).clientRef,
      ...(row.submit_answer && row.task_id === taskId
        ? { submitAnswer: JSON.parse(row.submit_answer) as Record<string, unknown> }
        : {}),
    };
  } catch {
    return undefined;
  }
}

/** The last heartbeat details of each running attempt. */
const lastDetails = new WeakMap<AttemptContext, unknown>();

/** Builds the {@link ActivityKit} over `deps`. */
export function activityKit(deps: ActivityDeps): ActivityKit {
  const { store, providers } = deps;
  const coolDefault = deps.defaultCoolDownMs ?? 5_000;
  const kit: ActivityKit = {
    deps,
    store,
    secrets: () => providers.allSecrets(),
    call(provider, account, fn, opts) {
      const ctx = currentAttempt();
      // A wait for a release slot sends no heartbeat, so it stays well inside the heartbeat timeout too.
      const maxWaitMs = ctx
        ? Math.min(
            10_000,
            Math.floor(ctx.info.startToCloseTimeoutMs / 3),
            ctx.info.heartbeatTimeoutMs ? Math.floor(ctx.info.heartbeatTimeoutMs / 2) : Infinity,
          )
        : 0;
      return callProvider(providers, provider, account, fn, {
        coolDownMs: coolDefault,
        maxWaitMs,
        // The same on every attempt of this activity: a release slot claimed by an earlier attempt is honoured.
        caller: ctx
          ? `${ctx.info.workflowExecution?.workflowId ?? ctx.info.activityType}/${ctx.info.activityId}`
          : undefined,
        phase: opts?.phase,
        onHeld: opts?.onHeld,
        seen: opts?.seen,
        onSlow: () => {
          if (!opts?.heartbeat || opts.heartbeat()) kit.heartbeat();
        },
      });
    },
    current: currentAttempt,
    signal: () => currentAttempt()?.cancellationSignal,
    attempt: () => currentAttempt()?.info.attempt ?? 1,
    async serverClock() {
      if (!deps.serverTime) return Date.now;
      const base = await deps.serverTime();
      const localStart = Date.now();
      return () => base + (Date.now() - localStart);
    },
    heartbeat(details) {
      const ctx = currentAttempt();
      if (!ctx) return;
      // A heartbeat without details (a slow call's) repeats the attempt's last ones: the Web UI
      // shows the latest heartbeat's details, and a bare one would blank them.
      if (details !== undefined) lastDetails.set(ctx, details);
      ctx.heartbeat(details ?? lastDetails.get(ctx));
    },
    taskCall(p, row, taskId) {
      const task = row ? taskContextOf(row, taskId) : undefined;
      return { apiKey: p.apiKey, secrets: kit.secrets(), signal: kit.signal(), ...(task ? { task } : {}) };
    },
    async recordIncident(jobId, phase, e, scope) {
      const ev = e.details.evidence;
      await store.findings.recordIncident({
        jobId,
        phase,
        kind: e.kind,
        message: e.message,
        code: e.details.code,
        endpoint: ev?.endpoint,
        httpStatus: e.details.httpStatus ?? ev?.httpStatus,
        request: ev?.request,
        response: ev?.body,
        headers: ev?.headers,
        at: ev?.at,
        ...(scope !== undefined ? { scope } : {}),
      });
    },
  };
  return kit;
}

/**
 * Provider calls that outlive the activity attempt that made them (a submit whose answer is still
 * awaited after its attempt gave up waiting), each with what records its outcome, until they
 * settle. A stopping worker waits for them ({@link settleDetachedCalls}) before it closes the
 * store: an answer that arrives during the shutdown is still recorded, not lost with the process.
 */
const detachedCalls = new Set<Promise<unknown>>();

/** Keeps `work` in the set of detached calls until it settles (its rejection is not handled here: pass work that records its own failure). */
export function detachCall(work: Promise<unknown>): void {
  detachedCalls.add(work);
  const done = () => void detachedCalls.delete(work);
  work.then(done, done);
}

/**
 * Waits until every detached call of this process has settled, at most `timeoutMs` (ms; each call
 * is bounded by its own HTTP timeout too). The wait keeps the process alive meanwhile. Returns how
 * many were pending when called and whether all settled in time.
 */
export async function settleDetachedCalls(timeoutMs: number): Promise<{ pending: number; settled: boolean }> {
  const pending = [...detachedCalls];
  if (!pending.length) return { pending: 0, settled: true };
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    Promise.allSettled(pending).then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
  ]);
  clearTimeout(timer);
  return { pending: pending.length, settled };
}
