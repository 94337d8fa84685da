/**
 * Small helpers of the reference provider: abortable sleeps, ISO time formatting and run times.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleepPromise } from 'node:timers/promises';
import type { Profile } from './schemas.js';

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
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR');
}

/** Epoch ms → ISO-8601 UTC string; null stays null. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * How long a job of `profile` stays `running` at least, ms: `minRunMs`, spread log-normally by
 * `runLogSigma` with a standard normal number drawn from the SHA-256 of the URL's path and query
 * (Box–Muller), so the same page always runs as long, in every account and every run.
 */
export function runTimeMs(profile: Pick<Profile, 'minRunMs' | 'runLogSigma'>, url: string): number {
  if (!profile.runLogSigma) return profile.minRunMs;
  // The path and query only: the same page of a page server on another port runs as long.
  const h = createHash('sha256')
    .update(URL.canParse(url) ? new URL(url).pathname + new URL(url).search : url)
    .digest();
  const u1 = (h.readUInt32BE(0) + 1) / 0x1_0000_0001;
  const u2 = h.readUInt32BE(4) / 0x1_0000_0000;
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  return Math.round(profile.minRunMs * Math.exp(profile.runLogSigma * z));
}
