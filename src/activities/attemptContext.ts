/**
 * The activity attempt a piece of activity code serves: the SDK's activity `Context` inside an
 * activity, or the stand-in of a detached tracking loop (`src/worker/tracker.ts`), which goes on after its
 * activity returned for async completion and heartbeats, completes or fails it by its task token.
 * The helpers of `context.ts` heartbeat and watch cancellation through {@link currentAttempt}.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Context, type Info } from '@temporalio/activity';

/** What the helpers need of the attempt they serve (the SDK's `Context` has all of it). */
export interface AttemptContext {
  readonly info: Pick<
    Info,
    'activityId' | 'activityType' | 'attempt' | 'startToCloseTimeoutMs' | 'heartbeatTimeoutMs' | 'workflowExecution'
  >;
  /** Aborted when the attempt is cancelled (or cut short). */
  readonly cancellationSignal: AbortSignal;
  /** Rejects with a `CancelledFailure` once the attempt is cancelled. */
  readonly cancelled: Promise<never>;
  /** Aborted when the worker stops and hands the attempt over to another (detached loops only). */
  readonly handOver?: AbortSignal;
  /** Records `details` as the attempt's progress (sent to the server throttled). */
  heartbeat(details?: unknown): void;
}

/** The attempt of each detached tracking loop, for the code it runs ({@link inAttempt}). */
const detachedAttempts = new AsyncLocalStorage<AttemptContext>();

/** Runs `fn` as attempt `attempt`: the helpers called inside heartbeat and watch cancellation through it. */
export function inAttempt<T>(attempt: AttemptContext, fn: () => Promise<T>): Promise<T> {
  return detachedAttempts.run(attempt, fn);
}

/** The attempt the caller serves: a detached loop's, else the SDK's activity context, else undefined (outside both). */
export function currentAttempt(): AttemptContext | undefined {
  const detached = detachedAttempts.getStore();
  if (detached) return detached;
  try {
    return Context.current();
  } catch {
    return undefined; // not inside an activity (unit tests calling directly)
  }
}
