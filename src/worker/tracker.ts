/**
 * Detached tracking: the worker's in-process home of the polling loops whose `trackStatus`
 * activity returned for async completion (Temporal's `CompleteAsyncError`). The activity hands its
 * loop over and returns at once; the SDK then holds nothing for it (no activity slot, no
 * per-activity stream pipeline), and the loop waits and checks here, heartbeating, completing or
 * failing the activity by its task token through the worker's client. A waiting job then costs the
 * worker a timer and a few closures instead of a running activity (bench/README.md measures both).
 *
 * What stays as it was with the loop inside the activity: the server sees one activity and a
 * heartbeat now and then (throttled as the SDK would: {@link Heartbeats}); a worker killed without
 * warning is noticed after the heartbeat timeout and the activity is retried elsewhere; a worker
 * that stops hands its loops over at once ({@link DetachedTracker.handOff}); a cancel or a wake
 * never waits for the loop (the workflow abandons the activity with TRY_CANCEL), which learns of it
 * from the next heartbeat's answer, from a newer polling activity of the same job, or from the store.
 */
import { policyBackoffMs, toFailure } from '../activities/failures.js';
import { isProviderError } from '../providers/shared/errors.js';
import { AsyncResource } from 'node:async_hooks';
import type { Info } from '@temporalio/activity';
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  ActivityPausedError,
  ActivityResetError,
} from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory, CancelledFailure } from '@temporalio/common';
import { countTrackingLoop, recordActivity, withProviderLabel } from '../observability/metrics.js';
import { inAttempt, type AttemptContext } from '../activities/attemptContext.js';
import { oldGenerationHeap } from './heap.js';

/** What the tracker needs of a tracking activity's input (`trackStatus` takes more). */
interface TrackedJob {
  jobId: string;
  taskId: string;
  provider: string;
  /** The polling generation: a newer one of the same job supersedes this one. */
  generation: number;
}

/** Polls one job inside its attempt context until it is final; its result completes the activity. */
type RunLoop<I extends TrackedJob> = (input: I) => Promise<unknown>;

/** How often a waiting loop offers a heartbeat for a heartbeat timeout of `timeoutMs` (ms): a quarter of it, between 0.5 and 15 s. */
export function heartbeatCadenceMs(timeoutMs: number): number {
  return timeoutMs > 0 ? Math.max(500, Math.min(15_000, Math.floor(timeoutMs / 4))) : 15_000;
}

/** What a tracker needs of the worker's async-completion client: its calls by task token. */
export interface TrackerClient {
  complete(taskToken: Uint8Array, result: unknown): Promise<void>;
  fail(taskToken: Uint8Array, err: unknown): Promise<void>;
  reportCancellation(taskToken: Uint8Array): Promise<void>;
  /** Throws `ActivityCancelledError` (or paused, reset, not found) when the attempt is over. */
  heartbeat(taskToken: Uint8Array, details?: unknown): Promise<void>;
}

/** Options of a {@link DetachedTracker}. Durations are ms. */
export interface DetachedTrackerOptions {
  /** Completes, fails and heartbeats activities by task token (the worker's `client.activity`, with its data converter). */
  client: TrackerClient;
  /** Longest time between two heartbeats sent to the server (as the worker's `maxHeartbeatThrottleInterval`). */
  heartbeatThrottleMs: number;
  /** Most loops one worker tracks at once; a further `trackStatus` is handed to another worker (default 50,000). */
  maxLoops?: number;
  /**
   * Share of the old generation's limit (`--max-old-space-size`) above which a further `trackStatus` is
   * handed to another worker, so that a worker never takes more waiting jobs than its heap holds
   * (default 0.85). `heap` reads the heap, bytes (default: what was live after the last major
   * collection, and the limit; tests give their own).
   */
  maxHeapShare?: number;
  heap?: () => { used: number; limit: number };
  /**
   * How long a stopping worker lets the checks in flight finish before it cuts them short and
   * hands their attempts over anyway (as the worker's shutdown grace time; default 10,000).
   */
  graceMs?: number;
  /** Told of answers the server refused or could not take (never with details or a task token). */
  warn?: (message: string, meta: Record<string, unknown>) => void;
}

/** One tracked job's loop: its polling generation, how to stop it, and when it has reported. */
interface Loop {
  generation: number;
  /** Stops the loop as cancelled (its activity was cancelled, or a newer one took the job). */
  stop(why: string): void;
  /** Aborted when the worker hands its loops over: a waiting loop stops and hands its attempt over. */
  handOver: AbortController;
  /** Stops the loop, a check in flight included, and hands the attempt over (the worker stops). */
  cutShort(): void;
  done?: Promise<void>;
}

/** The failure that hands a polling activity over to another worker: retried at once by the server. */
export function handOffFailure(what: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'Poll.handOff',
    message: `the worker is shutting down; ${what} continues on another worker`,
    nextRetryDelay: 1,
    category: ApplicationFailureCategory.BENIGN,
  });
}

/**
 * Why the server ended an attempt, from a heartbeat's or an answer's error: `paused` and `reset`
 * attempts are failed (as the SDK fails them: the server refuses a cancellation it did not ask
 * for), a `cancelled` one reports its cancellation, a `gone` one (timed out, retried elsewhere,
 * completed) takes no answer. Undefined for any other error.
 */
function endedBy(e: unknown): 'cancelled' | 'paused' | 'reset' | 'gone' | undefined {
  if (e instanceof ActivityCancelledError) return 'cancelled';
  if (e instanceof ActivityPausedError) return 'paused';
  if (e instanceof ActivityResetError) return 'reset';
  if (e instanceof ActivityNotFoundError) return 'gone';
  return undefined;
}

/**
 * The detached polling loops of one worker, by job ID (one per job: a newer polling activity of a
 * job stops the older loop at once). Create it outside any activity: its loops run in the async
 * context it was created in, not in the context of the activity that handed them over.
 */
export class DetachedTracker {
  private readonly loops = new Map<string, Loop>();
  /** Every loop until it has reported (a late attempt of an older activity is here, not in `loops`). */
  private readonly running = new Set<Loop>();
  private readonly maxLoops: number;
  private stopping = false;
  /** Starts a loop in the tracker's own async context (bound at construction). */
  private readonly launch: <I extends TrackedJob>(input: I, info: Info, run: RunLoop<I>) => void;

  constructor(private readonly opts: DetachedTrackerOptions) {
    this.maxLoops = opts.maxLoops ?? 50_000;
    this.launch = AsyncResource.bind(<I extends TrackedJob>(input: I, info: Info, run: RunLoop<I>) =>
      this.start(input, info, run),
    );
  }

  /** Loops tracked now. */
  get size(): number {
    return this.loops.size;
  }

  /**
   * Takes over the attempt `info` of a `trackStatus` activity: `run` polls the job inside the
   * loop's attempt context, and its outcome completes the activity. The caller then throws
   * `CompleteAsyncError`. Throws the hand-off failure when the worker is stopping, and a BENIGN
   * retryable `Poll.workerFull` (retried in 10 s, by any worker) when this worker tracks its maximum
   * or its heap is nearly full.
   */
  adopt<I extends TrackedJob>(input: I, info: Info, run: RunLoop<I>): void {
    if (this.stopping) throw handOffFailure(`tracking of task ${input.taskId}`);
    if (!this.loops.has(input.jobId)) {
      const full =
        this.loops.size >= this.maxLoops ? `already tracks ${this.loops.size} jobs (its maximum)` : this.heapFull();
      if (full)
        throw ApplicationFailure.create({
          type: 'Poll.workerFull',
          message: `this worker ${full}; another worker takes task ${input.taskId}`,
          nextRetryDelay: 10_000,
          category: ApplicationFailureCategory.BENIGN,
        });
    }
    this.launch(input, info, run);
  }

  /** Why the heap holds no further loop (used above the share of its limit), or undefined. */
  private heapFull(): string | undefined {
    const { used, limit } = (this.opts.heap ?? oldGenerationHeap)();
    const share = this.opts.maxHeapShare ?? 0.85;
    if (used <= share * limit) return undefined;
    const mib = (b: number) => Math.round(b / 2 ** 20);
    return `uses ${mib(used)} MiB of its ${mib(limit)} MiB heap (more than ${Math.round(share * 100)} %) with ${this.loops.size} jobs tracked`;
  }

  /**
   * Hands every loop over to another worker and resolves when every loop has reported: each
   * attempt fails with the hand-off failure, so the server retries it elsewhere at once. A check
   * in flight finishes first, for up to the grace time; then it is cut short. An answer the server
   * has not taken by twice the grace time is given up (its attempt is then retried after its
   * heartbeat timeout). New attempts are refused from the first call on; calling again only waits.
   */
  async handOff(): Promise<void> {
    const graceMs = this.opts.graceMs ?? 10_000;
    if (!this.stopping) {
      this.stopping = true;
      this.running.forEach((l) => l.handOver.abort());
      const grace = setTimeout(() => this.running.forEach((l) => l.cutShort()), graceMs);
      grace.unref();
      void this.settled().finally(() => clearTimeout(grace));
    }
    let giveUp: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (giveUp = setTimeout(() => r('late'), 2 * graceMs)));
    giveUp?.unref();
    const outcome = await Promise.race([this.settled(), late]);
    clearTimeout(giveUp);
    if (outcome === 'late')
      this.opts.warn?.(
        'tracking loops did not report before the worker stopped; their heartbeat timeout retries them',
        {
          loops: this.running.size,
        },
      );
  }

  /** Resolves when no loop runs (loops started meanwhile included). */
  private async settled(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running].map((l) => l.done));
  }

  private start<I extends TrackedJob>(input: I, info: Info, run: RunLoop<I>): void {
    // One loop per job: a newer polling activity (a wake's, a retry's) stops the older loop now.
    // An attempt of an older activity arriving late runs unregistered; the store calls it stale.
    const older = this.loops.get(input.jobId);
    const newest = !older || older.generation <= input.generation;
    if (newest) older?.stop(`superseded by polling generation ${input.generation}`);

    const { taskToken: token, activityType } = info;
    const abort = new AbortController();
    const handOver = new AbortController();
    let reject!: (e: unknown) => void;
    const cancelled = new Promise<never>((_, r) => (reject = r));
    cancelled.catch(() => undefined);
    /** Why the loop was stopped: it decides the attempt's answer (none for `gone` and `fenced`). */
    let ended: 'cancelled' | 'paused' | 'reset' | 'gone' | 'fenced' | 'handedOver' | undefined;
    const stop = (why: string, by: NonNullable<typeof ended> = 'cancelled') => {
      if (abort.signal.aborted) return;
      ended = by;
      reject(new CancelledFailure(why));
      abort.abort(why);
    };
    const timeoutMs = info.heartbeatTimeoutMs ?? 0;
    const beats = new Heartbeats(
      (details) => this.opts.client.heartbeat(token, details),
      sendEveryMs(timeoutMs, this.opts.heartbeatThrottleMs),
      timeoutMs,
      (e) => {
        const by = endedBy(e);
        if (by) stop(`the server ended the attempt (${describe(e)})`, by);
        else this.opts.warn?.('a tracking heartbeat was not taken; sent again later', { error: describe(e) });
      },
      // No heartbeat taken for a whole heartbeat timeout: the server has timed this attempt out
      // and retried it elsewhere, so this loop stops polling and answers nothing.
      () => stop('no heartbeat reached the server within the heartbeat timeout', 'fenced'),
    );
    const attempt: AttemptContext = {
      info: {
        activityId: info.activityId,
        activityType: info.activityType,
        attempt: info.attempt,
        startToCloseTimeoutMs: info.startToCloseTimeoutMs,
        heartbeatTimeoutMs: info.heartbeatTimeoutMs,
        workflowExecution: info.workflowExecution,
      },
      cancellationSignal: abort.signal,
      cancelled,
      handOver: handOver.signal,
      heartbeat: (details) => beats.beat(details),
    };
    const loop: Loop = {
      generation: input.generation,
      stop,
      handOver,
      cutShort: () => stop('the worker is stopping', 'handedOver'),
    };
    if (newest) this.loops.set(input.jobId, loop);
    this.running.add(loop);
    countTrackingLoop(1);
    const startedAt = performance.now();
    loop.done = withProviderLabel(input.provider, () => inAttempt(attempt, () => run(input)))
      .then(
        (outcome) => this.answer('completed', () => this.opts.client.complete(token, outcome), timeoutMs),
        (e: unknown) => {
          // A loop stopped while a check was in flight may end with that check's abort error: it
          // ends as it was stopped all the same.
          switch (e instanceof CancelledFailure || abort.signal.aborted ? ended : undefined) {
            case 'handedOver':
              return this.answer('failed', () =>
                this.opts.client.fail(token, handOffFailure(`tracking of task ${input.taskId}`)),
              );
            case 'paused':
              return this.answer('failed', () =>
                this.opts.client.fail(token, new ApplicationFailure('Activity paused', 'ActivityPause')),
              );
            case 'reset':
              return this.answer('failed', () =>
                this.opts.client.fail(token, new ApplicationFailure('Activity reset', 'ActivityReset')),
              );
            case 'gone':
            case 'fenced':
              return 'cancelled' as const;
            case 'cancelled':
              return this.answer('cancelled', () => this.opts.client.reportCancellation(token));
            default:
              // A provider error fails the activity as the worker's interceptor would have mapped it.
              return this.answer('failed', () =>
                this.opts.client.fail(
                  token,
                  isProviderError(e) ? toFailure(e, policyBackoffMs(info.retryPolicy, info.attempt)) : e,
                ),
              );
          }
        },
      )
      .then((outcome) => recordActivity(activityType, outcome, performance.now() - startedAt))
      .catch((e: unknown) => this.opts.warn?.('a tracking loop ended with an error of its own', { error: describe(e) }))
      .finally(() => {
        if (this.loops.get(input.jobId) === loop) this.loops.delete(input.jobId);
        this.running.delete(loop);
        countTrackingLoop(-1);
      });
  }

  /**
   * Sends the attempt's answer, up to 3 times while the server cannot be reached; an outcome
   * (`keepTryingMs`: the attempt's heartbeat timeout, ms) is sent again for as long as the server
   * may still take it, unless the worker is stopping. The workflow records every outcome but a
   * completion, so until it has one the job's row stays active and holds its slot. An answer the
   * server refuses because the attempt is over is dropped: whatever ended it (a cancel, a timeout
   * and its retry) has already moved the job on. A completion is in the store, where a later
   * attempt reads it; any other outcome is the workflow's to record, so a later attempt asks the
   * provider again (the row keeps the 404 and failed-read streaks that led to it).
   */
  private async answer(
    outcome: 'completed' | 'failed' | 'cancelled',
    send: () => Promise<void>,
    keepTryingMs = 0,
  ): Promise<'completed' | 'failed' | 'cancelled'> {
    const until = performance.now() + keepTryingMs;
    for (let tries = 1; ; tries++) {
      try {
        await send();
        return outcome;
      } catch (e) {
        if (endedBy(e)) return outcome; // the attempt is over for this worker
        if (tries >= 3 && (this.stopping || performance.now() >= until)) {
          this.opts.warn?.('a tracking loop could not report its outcome; the heartbeat timeout retries it', {
            outcome,
            error: describe(e),
          });
          return outcome;
        }
        await new Promise((r) => setTimeout(r, Math.min(5_000, 500 * tries)));
      }
    }
  }
}

/** The gap between heartbeats sent to the server (ms): the throttle, and early enough that a cadence's late offer still lands before the timeout. */
function sendEveryMs(timeoutMs: number, throttleMs: number): number {
  if (timeoutMs <= 0) return throttleMs;
  return Math.max(1, Math.min(throttleMs, Math.floor(timeoutMs * 0.8), timeoutMs - 2 * heartbeatCadenceMs(timeoutMs)));
}

/**
 * A loop's heartbeats to the server, throttled as the SDK throttles an activity's: the first
 * offered is sent at once, later ones at most once per `everyMs`; details offered in between are
 * kept and go with the next one sent (the loop offers one every cadence while it waits). When no
 * heartbeat has been taken for `timeoutMs` (the attempt's heartbeat timeout, 0 for none), the
 * server has timed the attempt out: `onFenced` is told at the next offer (within a cadence of the
 * timeout: the server's retry may poll for that long beside this loop), a hung call included.
 * Times are read from the monotonic clock, so a step of the wall clock changes nothing.
 */
class Heartbeats {
  private lastSentAt?: number;
  private lastTakenAt = performance.now();
  private sending = false;
  private latest: unknown;

  constructor(
    private readonly send: (details: unknown) => Promise<void>,
    private readonly everyMs: number,
    private readonly timeoutMs: number,
    private readonly onError: (e: unknown) => void,
    private readonly onFenced: () => void,
  ) {}

  beat(details: unknown): void {
    if (details !== undefined) this.latest = details;
    const now = performance.now();
    // A heartbeat in flight may yet be taken, unless in flight for a quarter of the timeout or the
    // gap the server allows after it (shorter wins): one sent on schedule is hung by the timeout.
    const hung =
      !this.sending || now - (this.lastSentAt ?? now) >= Math.min(this.timeoutMs / 4, this.timeoutMs - this.everyMs);
    if (this.timeoutMs > 0 && now - this.lastTakenAt >= this.timeoutMs && hung) return this.onFenced();
    if (this.sending) return;
    if (this.lastSentAt !== undefined && now - this.lastSentAt < this.everyMs) return;
    this.sending = true;
    this.lastSentAt = now;
    this.send(this.latest).then(
      () => {
        this.sending = false;
        this.lastTakenAt = now;
      },
      (e: unknown) => {
        this.sending = false;
        this.lastSentAt = undefined; // offered again at the next cadence
        this.onError(e);
      },
    );
  }
}

/** An error's name and message, for a log line (no details, no task token). */
function describe(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
