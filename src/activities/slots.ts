/**
 * Provider-key scopes and slot notifications for the adaptive limit of active provider jobs.
 *
 * A submit waits while the key's active jobs reach the learned limit (`src/store/polling.ts`). When
 * a job of that key reaches a final state in this worker process, waiting submits here are woken at
 * once; other workers' finished jobs are seen by re-reading the store (at most once a second).
 */
import { EventEmitter } from 'node:events';

const released = new EventEmitter();
released.setMaxListeners(0);

/** Announces that a job of provider key `label` left the active states (in this process). */
export function announceSlotReleased(label: string): void {
  released.emit(label);
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
