/**
 * The limiter of one provider key ({@link KeyLimiter}), shared by every activity of the worker
 * process: it bounds concurrent calls and spacing (p-queue), and holds a cool-down after any
 * `429` or concurrency answer so that no workflow of any worker calls that key until the
 * provider's `Retry-After` has passed; afterwards the held calls leave one at a time, a probe
 * first. A quota or credit exhaustion holds the key's submits. The cool-downs live in the store
 * ({@link SharedCooldowns}) so that every worker holds back, with this process's own record
 * ({@link MemoryCooldowns}) as the fallback.
 */
import PQueue from 'p-queue';
import { HELD_LOCALLY } from '../../model/schedule.js';
import { DEFAULT_QUOTA_HOLD_MS } from './entry.js';
import { isProviderError, isQuotaExhausted, ProviderError } from './errors.js';
import type { CooldownState, SharedCooldowns } from './sharedState.js';

/**
 * {@link SharedCooldowns} in process memory: the limiter's own record (a limiter without a store,
 * and the fallback while the store cannot be reached).
 */
export class MemoryCooldowns implements SharedCooldowns {
  private readonly rows = new Map<string, CooldownState>();

  async readCooldowns(labels: readonly string[]): Promise<Map<string, CooldownState>> {
    const out = new Map<string, CooldownState>();
    for (const label of labels) {
      const r = this.rows.get(label);
      if (r) out.set(label, { ...r });
    }
    return out;
  }

  async setCooldown(label: string, untilMs: number, reason: string): Promise<void> {
    const r = this.rows.get(label);
    if (!r) this.rows.set(label, { untilMs, reason, releaseNextMs: 0 });
    else if (untilMs > r.untilMs) Object.assign(r, { untilMs, reason });
  }

  async claimRelease(
    label: string,
    nowMs: number,
    spacingMs: (sinceEndMs: number) => number,
  ): Promise<{ slotMs: number; untilMs: number; reason: string } | undefined> {
    const r = this.rows.get(label);
    if (!r) return undefined;
    const slotMs = Math.max(r.releaseNextMs, r.untilMs, nowMs);
    r.releaseNextMs = slotMs + Math.max(0, spacingMs(slotMs - r.untilMs));
    return { slotMs, untilMs: r.untilMs, reason: r.reason };
  }
}

/**
 * Least spacing between two calls released after a cool-down, ms (the entry's `minIntervalMs`
 * when larger): enough for the first answer after a cool-down (the probe) to be seen before the
 * next call leaves.
 */
export const RELEASE_SPACING_FLOOR_MS = 500;

/**
 * Time over which the release spacing halves, ms: the probe leaves alone, the next call
 * {@link RELEASE_SPACING_FLOOR_MS} later, and the spacing halves every this long after the
 * cool-down's end down to the entry's `minIntervalMs` (a slow start: a queue of thousands drains in
 * seconds once the provider answers again, never all at once).
 */
export const RELEASE_HALVING_MS = 1_000;

/** Least release spacing at the end of the slow start, ms: two held calls never leave in the same moment. */
export const RELEASE_MIN_SPACING_MS = 10;

/** Each release spacing is the base times a factor drawn in [1, 1 + this): jitter that never shortens it. */
export const RELEASE_JITTER = 0.5;

/** How long a claimed slot of a caller that did not come back is remembered, ms. */
const CLAIM_MEMORY_MS = 3_600_000;

/** Longest chain of claims in one admission (a cool-down renewed again and again ends it with a retry). */
const MAX_CLAIMS = 20;

/** How one call meets the limiter. */
export interface LimitedCall {
  /** `submit` calls are also held by the key's quota hold; reads and cancels are not. */
  phase?: 'submit' | 'read' | 'cancel';
  /**
   * Who calls, the same on every attempt (the activity: workflow ID and activity ID): a release
   * slot it claimed in an earlier attempt (which ended to be retried by the server at that slot)
   * is honoured when it comes back, instead of sending it to the back of the queue.
   */
  caller?: string;
  /**
   * Told when the call waits in this attempt for its release slot (a cool-down or a quota hold in
   * force): how long, ms, and why (the same words a `LOCAL_COOLDOWN` error would carry), so that
   * a wait the provider never sees is still on the job's record.
   */
  onHeld?: (waitMs: number, why: string) => void | Promise<void>;
  /**
   * The shared cool-downs of some of the key's labels as the store showed them just before this
   * call, read with what the call is about (a status check reads the key's cool-down with the
   * job's row): label → state, undefined for a label without one. The call's first look at the
   * gate takes these instead of reading them again; a label not named here is read, and every
   * look after a wait reads the store.
   */
  seen?: ReadonlyMap<string, CooldownState | undefined>;
}

/** Clock, randomness and store of a {@link KeyLimiter}; defaults: `Date.now`, `Math.random`, no store. */
export interface KeyLimiterDeps {
  now?: () => number;
  random?: () => number;
  /** Cool-downs shared with other workers (the store); none: this process only. */
  shared?: SharedCooldowns;
}

const RETRY = Symbol('retry');

/**
 * Per-provider-key limiter: concurrency + spacing (p-queue), the key's cool-down gate and its
 * release queue, and the quota hold of its submits. Times in ms.
 *
 * - A `429` (or any `cooldown` answer other than a concurrency refusal of submits only) starts a
 *   cool-down of every call of the key, in the store, so that every worker holds back.
 * - A quota or credit exhaustion (`QUOTA_EXHAUSTED`) starts a hold of the key's submits
 *   (`<label>/submits`) for `quotaHoldMs`; status reads and cancels go on.
 * - A caller that finds a cool-down (or a release queue still draining after one) claims the next
 *   release slot in the store ({@link SharedCooldowns.claimRelease}): the first after the end is
 *   the probe, the next follow one at a time, `max(minIntervalMs, 500 ms)` × [1, 1.5) apart at
 *   first, the spacing halving every {@link RELEASE_HALVING_MS} after the end (down to
 *   `minIntervalMs`, never below {@link RELEASE_MIN_SPACING_MS}: a slow start, so a long queue drains
 *   quickly once the probe passed, never all at once). A slot
 *   at most `maxWaitMs` away is waited for in the attempt; a later one throws `LOCAL_COOLDOWN` with
 *   `retryAfterMs` = the time to it (the server retries the attempt then, and the slot is honoured
 *   for the same `caller`). Right before calling, the shared cool-down is read again from the
 *   store: when the probe met a new `429`, its cool-down holds the rest, who claim new slots.
 *
 * A retry that lands on another worker than the one holding its claim claims a new slot: the queue
 * gets longer, never denser.
 */
export class KeyLimiter {
  /** Label of the hold of the key's submits after a quota exhaustion. */
  readonly submitLabel: string;
  private readonly queue: PQueue;
  private readonly memory = new MemoryCooldowns();
  /** Release slots claimed by callers that were sent away to come back at them (epoch ms). */
  private readonly claims = new Map<string, number>();
  private readonly spacingMs: number;
  private readonly minIntervalMs: number;
  private readonly quotaHoldMs: number;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly shared?: SharedCooldowns;

  constructor(
    readonly label: string,
    opts: { maxConcurrent: number; minIntervalMs: number; quotaHoldMs?: number },
    deps: KeyLimiterDeps = {},
  ) {
    this.submitLabel = `${label}/submits`;
    this.queue = new PQueue(
      opts.minIntervalMs > 0
        ? { concurrency: opts.maxConcurrent, intervalCap: 1, interval: opts.minIntervalMs }
        : { concurrency: opts.maxConcurrent },
    );
    this.spacingMs = Math.max(opts.minIntervalMs, RELEASE_SPACING_FLOOR_MS);
    this.minIntervalMs = opts.minIntervalMs;
    this.quotaHoldMs = opts.quotaHoldMs ?? DEFAULT_QUOTA_HOLD_MS;
    this.now = deps.now ?? (() => Date.now());
    this.random = deps.random ?? Math.random;
    this.shared = deps.shared;
  }

  /** Time left of the cool-down that holds calls of `phase` (a submit is also held by the quota hold), ms; 0 when none. */
  async heldForMs(phase?: LimitedCall['phase']): Promise<number> {
    const hold = await this.latest(this.labelsOf(phase));
    return Math.max(0, hold.untilMs - this.now());
  }

  /**
   * Starts or extends (never shortens) a cool-down of `ms` from now, here and in the shared store:
   * of every call of the key (`all`), or of its submits only (`submits`: the quota hold).
   */
  async coolDown(ms: number, reason: string, scope: 'all' | 'submits' = 'all'): Promise<void> {
    const label = scope === 'submits' ? this.submitLabel : this.label;
    const until = this.now() + ms;
    await this.memory.setCooldown(label, until, reason);
    // Best effort: while the store cannot be written, this process's gate still holds.
    await this.shared?.setCooldown(label, until, reason).catch(() => undefined);
  }

  private labelsOf(phase: LimitedCall['phase']): string[] {
    return phase === 'submit' ? [this.label, this.submitLabel] : [this.label];
  }

  /**
   * The cool-downs of `labels`: the store's, read now in one statement (no cache; a label in
   * `seen` was read with the call's own row a moment ago and is taken from there), each merged with
   * this process's own.
   */
  private async read(
    labels: readonly string[],
    seen?: ReadonlyMap<string, CooldownState | undefined>,
  ): Promise<(CooldownState & { label: string })[]> {
    const mine = await this.memory.readCooldowns(labels);
    const unread = seen ? labels.filter((l) => !seen.has(l)) : labels;
    let theirs = new Map<string, CooldownState>();
    try {
      if (this.shared && unread.length > 0) theirs = await this.shared.readCooldowns(unread);
    } catch {
      // The store being unavailable must not stop provider calls; this process's gate still applies.
    }
    const none = { untilMs: 0, reason: '', releaseNextMs: 0 };
    return labels.map((label) => {
      const a = mine.get(label) ?? none;
      const b = (seen?.has(label) ? seen.get(label) : theirs.get(label)) ?? none;
      return {
        label,
        untilMs: Math.max(a.untilMs, b.untilMs),
        reason: a.untilMs >= b.untilMs ? a.reason : b.reason,
        releaseNextMs: Math.max(a.releaseNextMs, b.releaseNextMs),
      };
    });
  }

  /** Of `labels`, the one whose cool-down and release queue end last, with the latest end of any cool-down among them. */
  private async latest(
    labels: string[],
    seen?: ReadonlyMap<string, CooldownState | undefined>,
  ): Promise<CooldownState & { label: string }> {
    const states = await this.read(labels, seen);
    const last = states.reduce((x, y) =>
      Math.max(y.untilMs, y.releaseNextMs) > Math.max(x.untilMs, x.releaseNextMs) ? y : x,
    );
    const ending = states.reduce((x, y) => (y.untilMs > x.untilMs ? y : x));
    return { ...last, untilMs: ending.untilMs, reason: ending.reason };
  }

  /** Claims the next release slot of `label` (the store's queue, else this process's), never before `notBeforeMs`. */
  private async claim(label: string, now: number, notBeforeMs: number): Promise<number> {
    const jitter = 1 + this.random() * RELEASE_JITTER;
    const spacing = (sinceEndMs: number) =>
      Math.round(
        Math.max(
          this.minIntervalMs,
          RELEASE_MIN_SPACING_MS,
          this.spacingMs * 2 ** (-Math.max(0, sinceEndMs) / RELEASE_HALVING_MS),
        ) * jitter,
      );
    let claimed: { slotMs: number } | undefined;
    try {
      claimed = await this.shared?.claimRelease(label, now, spacing);
    } catch {
      claimed = undefined;
    }
    claimed ??= await this.memory.claimRelease(label, now, spacing);
    return Math.max(claimed?.slotMs ?? now, notBeforeMs);
  }

  private remember(caller: string | undefined, slot: number): void {
    if (caller === undefined) return;
    const now = this.now();
    for (const [c, at] of this.claims) if (at < now - CLAIM_MEMORY_MS) this.claims.delete(c);
    this.claims.set(caller, slot);
  }

  private sentAway(waitMs: number, hold: CooldownState & { label: string }): ProviderError {
    const what =
      hold.label === this.submitLabel
        ? `submits of provider key ${this.label} are held`
        : `provider key ${this.label} is cooling down`;
    return new ProviderError(
      'cooldown',
      `${what} (${hold.reason || 'cool-down'}); this call leaves at its release slot in ${waitMs} ms`,
      {
        code: HELD_LOCALLY,
        retryAfterMs: waitMs,
      },
    );
  }

  /**
   * Returns when the call may leave: at once when no cool-down is in force and no release queue is
   * draining; else at the release slot it claims (or claimed in an earlier attempt), the shared
   * cool-down read again after each wait. Throws `LOCAL_COOLDOWN` when the slot is more than
   * `maxWaitMs` away.
   */
  private async admit(
    labels: string[],
    maxWaitMs: number,
    caller: string | undefined,
    onHeld?: LimitedCall['onHeld'],
    seen?: LimitedCall['seen'],
  ): Promise<void> {
    let held = caller === undefined ? undefined : this.claims.get(caller);
    for (let claims = 0; ; seen = undefined) {
      const now = this.now();
      const hold = await this.latest(labels, seen);
      if (held !== undefined && held >= hold.untilMs) {
        // Our slot comes after every cool-down in force: leave at it.
        const wait = held - now;
        if (wait <= 0) {
          if (caller !== undefined) this.claims.delete(caller);
          return;
        }
        if (wait > maxWaitMs) {
          this.remember(caller, held);
          throw this.sentAway(wait, hold);
        }
        await onHeld?.(wait, this.sentAway(wait, hold).message);
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
      if (held === undefined && now >= hold.untilMs && now >= hold.releaseNextMs) return;
      // A cool-down is in force (a new one, when we held a slot before it), or the calls it held
      // are still leaving one at a time: take the next slot.
      if (claims++ >= MAX_CLAIMS) {
        this.remember(caller, held ?? hold.untilMs);
        throw this.sentAway(Math.max(1, (held ?? hold.untilMs) - now), hold);
      }
      held = await this.claim(hold.label, now, hold.untilMs);
    }
  }

  /**
   * Runs `fn` under the limiter. During a cool-down it does not call the provider: the call leaves
   * at the release slot it claims (see the class docs), waited for here when at most `maxWaitMs`
   * away (a wait is not a failed attempt), else a `cooldown` {@link ProviderError} (code
   * `LOCAL_COOLDOWN`) is thrown whose `retryAfterMs` is the time to the slot, so that the activity
   * is retried then instead of holding a slot. A `cooldown` error thrown by `fn` starts a
   * cool-down for every caller of this key; a quota exhaustion starts the hold of its submits.
   */
  async run<T>(fn: () => Promise<T>, defaultCoolDownMs: number, maxWaitMs = 0, call: LimitedCall = {}): Promise<T> {
    const labels = this.labelsOf(call.phase);
    let seen = call.seen;
    for (;;) {
      await this.admit(labels, maxWaitMs, call.caller, call.onHeld, seen);
      seen = undefined; // what was seen before is old by a second pass
      const out = await this.queue.add(
        async () => {
          // A cool-down this process learned while the call waited behind others: back to the gate.
          if ([...(await this.memory.readCooldowns(labels)).values()].some((c) => c.untilMs > this.now())) return RETRY;
          try {
            return { value: await fn() };
          } catch (e) {
            await this.learn(e, defaultCoolDownMs);
            throw e;
          }
        },
        { throwOnTimeout: true },
      );
      if (out !== RETRY) return (out as { value: T }).value;
    }
  }

  /** The cool-down or hold an error of `fn` calls for (see {@link run}). */
  private async learn(e: unknown, defaultCoolDownMs: number): Promise<void> {
    if (!isProviderError(e)) return;
    if (isQuotaExhausted(e)) {
      const why = [
        e.details.providerCode,
        e.details.httpStatus !== undefined ? `HTTP ${e.details.httpStatus}` : undefined,
      ]
        .filter(Boolean)
        .join(', ');
      await this.coolDown(
        Math.max(this.quotaHoldMs, e.details.retryAfterMs ?? 0),
        `quota exhausted${why ? ` (${why})` : ''}`,
        'submits',
      );
      return;
    }
    // A concurrency refusal limits submits only (the adaptive active-jobs limit handles it),
    // unless the provider counts it like a rate limit (`keyWide`); rate limits hold back every
    // call of the key.
    if (e.kind === 'cooldown' && (!isConcurrencyRefusal(e) || e.details.keyWide === true)) {
      await this.coolDown(e.details.retryAfterMs ?? defaultCoolDownMs, e.details.code ?? 'rate limited');
    }
  }
}

/** Provider codes meaning "too many of your jobs are active; try later" (seeds' `CONCURRENCY_LIMIT`, Apify's `concurrent-runs-limit-exceeded`). */
const CONCURRENCY_REFUSAL = /^(CONCURRENCY_LIMIT|concurrent-runs-limit-exceeded|too-many-concurrent-runs)$/i;

/** True for a refusal because of the account's concurrent-job limit (not a request-rate limit). */
export function isConcurrencyRefusal(e: ProviderError): boolean {
  return e.kind === 'cooldown' && e.details.code !== undefined && CONCURRENCY_REFUSAL.test(e.details.code);
}
