/**
 * Provider-key scopes and slot notifications for the adaptive limit of active provider jobs, and
 * how long a submit that finds no slot waits ({@link slotWaitPlan}).
 *
 * A submit waits while the key's active jobs reach the learned limit (`src/store/polling.ts`). When
 * a job of that key reaches a final state in this worker process, waiting submits here are woken at
 * once; other workers' finished jobs are seen by re-reading the store (at most once a second).
 */
import { EventEmitter } from 'node:events';

const released = new EventEmitter();
released.setMaxListeners(0);

/** Told of every slot released in this process (the fair queue gives a contended key's slots away at once). */
const releaseListeners = new Set<(label: string) => void>();

/** Announces that a job of provider key `label` left the active states (in this process). */
export function announceSlotReleased(label: string): void {
  released.emit(label);
  for (const listener of releaseListeners) listener(label);
}

/** Calls `listener` with the key of every slot released in this process from now on; returns what stops it. */
export function onSlotReleased(listener: (label: string) => void): () => void {
  releaseListeners.add(listener);
  return () => releaseListeners.delete(listener);
}

/** How many listeners {@link onSlotReleased} holds now (each kit that gave a contended key's slots away holds one until it is stopped). */
export function slotReleaseListenerCount(): number {
  return releaseListeners.size;
}

/** Resolves when a slot of `label` is announced, after `ms`, or when `signal` aborts. */
export function slotReleased(label: string, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      released.off(label, done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    released.once(label, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Longest in-attempt wait for a free slot under the key's active-jobs limit, ms; then the attempt is retried later. */
export const SLOT_WAIT_MS = 5_000;

/**
 * When a submit finds no free slot: how long it may wait inside the attempt (ms; woken at once when
 * a job of the key ends in this process) and, failing that, the server-side retry delay (ms).
 *
 * A waiting attempt holds one of the worker's activity slots, and every attempt is an activity
 * task the server dispatches. With a few waiters (≤ the key's limit) an in-attempt wait gives the
 * freed slot to a waiter within milliseconds. With thousands (a 10,000-row batch against a
 * provider that runs 20 jobs at a time) in-attempt waits would fill the worker's activity slots
 * and starve the status checks of the very jobs holding the provider's slots, and short retries
 * would flood the server; so a crowded key returns at once and retries after a delay that grows
 * with the queue: `waiting / limit × 2 s`, within 3 s … 5 min, jittered ×0.5–1.5 (`random` in
 * [0, 1)). The retry rate per key then stays near `limit / 2 s` however long the queue is.
 */
export function slotWaitPlan(
  full: { limit: number; waiting: number },
  random: number,
): { inAttemptMs: number; retryMs: number } {
  const crowded = full.waiting > full.limit;
  const base = Math.min(300_000, Math.max(3_000, (full.waiting / Math.max(1, full.limit)) * 2_000));
  return { inAttemptMs: crowded ? 0 : SLOT_WAIT_MS, retryMs: Math.round(base * (0.5 + random)) };
}
