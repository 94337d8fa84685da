/**
 * Small helpers of the reference provider: abortable sleeps and ISO time formatting.
 */
import { setTimeout as sleepPromise } from 'node:timers/promises';

/**
 * Resolve after `ms` milliseconds; reject with an `AbortError` as soon as `signal` aborts (the
 * timer is cleared then, so a pending sleep never keeps the process alive after `close()`).
 */
export async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) {
    signal.throwIfAborted();
    return;
  }
  await sleepPromise(ms, undefined, { signal });
}

/** Never resolve; reject with an `AbortError` when `signal` aborts. */
export function waitForAbort(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_resolve, reject) => {
    if (signal.aborted) {
      reject(abortReason(signal));
      return;
    }
    signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
  });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Whether `err` is the rejection of an aborted operation. */
export function isAbortError(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR')
  );
}

/** Epoch ms → ISO-8601 UTC string; null stays null. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
