/**
 * The guard against Bright Data's IP block ("Bright Data blocks any IP that receives 25 or more
 * 429 responses within 5 minutes … until Bright Data support clears it": docs.brightdata.com,
 * "Scraper API error codes" and "Scraper API limits", read 2026-11-30).
 *
 * The block is per caller IP, not per key or per workflow, so the count is kept per worker process
 * and API host ({@link refusalWindowFor}): every `brightdata` entry of the process that talks to
 * the same host shares one window. The per-key cool-down after each `429` is shared with the other
 * workers through the store (the registry's limiter); a deployment running several worker
 * processes behind one IP divides `rateLimit.maxRefusals` between them.
 */

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
    if (this.at.length < this.threshold) return 0;
    // The (count − threshold + 1)-th oldest must leave the window.
    return Math.max(1, this.at[this.at.length - this.threshold]! + this.windowMs - this.now());
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
