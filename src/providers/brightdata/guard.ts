/**
 * The guard against Bright Data's IP block ("Bright Data blocks any IP that receives 25 or more
 * 429 responses within 5 minutes … until Bright Data support clears it": docs.brightdata.com,
 * "Scraper API error codes" and "Scraper API limits", read 2026-11-30).
 *
 * The block is per caller IP, not per key or per workflow, so the count is kept per API host, for
 * every worker: each `429` is recorded in the result store (`provider_refusals`, scope
 * `brightdata@<host>`), and the time every call must be held back is computed from the refusals
 * stored in the window ({@link RefusalGuard}). Workers that share a store (the deployment's
 * workers, which sit behind the same IPs) and a restarted worker therefore see every refusal. An
 * in-process window ({@link RefusalWindow}, one per host: {@link refusalWindowFor}) is the fast
 * path — when it alone already holds, the store is not asked — and the fallback while the store
 * cannot be read. Workers behind one IP that use different stores must divide
 * `rateLimit.maxRefusals` between them.
 */
import type { SharedRefusals } from '../shared/sharedState.js';

/**
 * How long stored refusals are kept, ms: the longest window an entry may configure
 * (`rateLimit.windowMs` ≤ 1 h), so that pruning for one entry never drops a refusal another
 * entry on the same host still counts.
 */
const REFUSAL_RETENTION_MS = 3_600_000;

/** A sliding window of `429` answers. Times are epoch ms. */
export class RefusalWindow {
  private readonly at: number[] = [];

  constructor(
    readonly windowMs: number,
    /** Refusals in the window at which every call is held back. */
    public threshold: number,
    private readonly now: () => number = Date.now,
  ) {}

  private prune(): void {
    const from = this.now() - this.windowMs;
    while (this.at.length > 0 && this.at[0]! <= from) this.at.shift();
  }

  /** Records one `429` now; returns the number in the window, this one included. */
  record(): number {
    this.prune();
    this.at.push(this.now());
    return this.at.length;
  }

  /** `429` answers in the window now. */
  count(): number {
    this.prune();
    return this.at.length;
  }

  /** How long every call must still be held back, ms: until the window holds fewer than `threshold` (0 when it does now). */
  heldForMs(): number {
    this.prune();
    return RefusalWindow.heldFor(this.at, this.now(), this.windowMs, this.threshold);
  }

  /**
   * How long calls are held back at `now` given the refusal times `at` (epoch ms, oldest first,
   * all inside the window): 0 while fewer than `threshold`, else until the (count − threshold + 1)-th
   * oldest leaves the window (at least 1 ms).
   */
  static heldFor(at: readonly number[], now: number, windowMs: number, threshold: number): number {
    if (at.length < threshold) return 0;
    return Math.max(1, at[at.length - threshold]! + windowMs - now);
  }

  /** The back-off after the n-th refusal in the window: `baseMs × 2^(n−1)`, at most `maxMs`. */
  static backoffMs(n: number, baseMs: number, maxMs: number): number {
    return Math.min(maxMs, baseMs * Math.pow(2, Math.max(0, Math.min(n, 30) - 1)));
  }
}

const WINDOWS = new Map<string, RefusalWindow>();

/**
 * The process-wide window of API host `host` (e.g. `api.brightdata.com`), created on first use;
 * a later entry with a lower threshold lowers it (the strictest entry wins).
 */
export function refusalWindowFor(host: string, windowMs: number, threshold: number): RefusalWindow {
  let w = WINDOWS.get(host);
  if (!w) {
    w = new RefusalWindow(windowMs, threshold);
    WINDOWS.set(host, w);
  } else if (threshold < w.threshold) {
    w.threshold = threshold;
  }
  return w;
}

/**
 * The guard of one scope (`brightdata@<host>`): the in-process {@link RefusalWindow} as fast path
 * and fallback, the store ({@link SharedRefusals}) as the source of truth. Times are epoch ms.
 */
export class RefusalGuard {
  private shared?: SharedRefusals;

  constructor(
    /** What the provider counts per: `brightdata@<host>`. */
    readonly scope: string,
    readonly local: RefusalWindow,
    shared?: SharedRefusals,
    private readonly now: () => number = Date.now,
  ) {
    this.shared = shared;
  }

  /** The window, ms. */
  get windowMs(): number {
    return this.local.windowMs;
  }

  /** Refusals in the window at which every call is held back. */
  get threshold(): number {
    return this.local.threshold;
  }

  /** Keeps the refusals in `shared` from now on (the worker's store). */
  share(shared: SharedRefusals): void {
    this.shared = shared;
  }

  /**
   * Records one `429` now, here and in the store (pruning the scope's rows older than
   * {@link REFUSAL_RETENTION_MS}); returns the refusals in the window, this one included: the
   * store's count, or this process's while the store cannot be reached.
   */
  async record(): Promise<number> {
    const at = this.now();
    const local = this.local.record();
    if (!this.shared) return local;
    try {
      await this.shared.recordRefusal(this.scope, at, at - Math.max(REFUSAL_RETENTION_MS, this.windowMs));
      return Math.max(local, (await this.shared.refusalsSince(this.scope, at - this.windowMs)).length);
    } catch {
      return local; // the store is down: this process's own count still guards
    }
  }

  /** `429` answers in the window now (the store's, else this process's). */
  async count(): Promise<number> {
    const local = this.local.count();
    const stored = await this.stored();
    return stored ? Math.max(local, stored.length) : local;
  }

  /**
   * How long every call must still be held back, ms (0: none): this process's window when it alone
   * already holds (no store read), else computed from the refusals stored in the window.
   */
  async heldForMs(): Promise<number> {
    const local = this.local.heldForMs();
    if (local > 0) return local;
    const stored = await this.stored();
    return stored ? RefusalWindow.heldFor(stored, this.now(), this.windowMs, this.threshold) : 0;
  }

  private async stored(): Promise<number[] | undefined> {
    if (!this.shared) return undefined;
    try {
      return await this.shared.refusalsSince(this.scope, this.now() - this.windowMs);
    } catch {
      return undefined;
    }
  }
}
