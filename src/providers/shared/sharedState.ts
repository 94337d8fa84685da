/**
 * What the providers keep in the result store so that every worker sees it: the cool-downs of
 * each provider key and their release slots ({@link SharedCooldowns}), and the refusals a provider
 * counts toward blocking the caller ({@link SharedRefusals}: Bright Data's IP block). The store's
 * `providerKeys` implements {@link ProviderSharedState}; providers never import the store, they are
 * handed it.
 */
import type { CooldownState } from '../../model/types.js';

export type { CooldownState };

/**
 * Cool-downs shared across worker processes (the result store implements it), so that a 429 seen
 * by one worker holds back every worker using the same provider key, and the calls it held leave
 * one at a time afterwards. Times are epoch ms.
 */
export interface SharedCooldowns {
  /** The cool-downs of `labels`, read together: label → state, for each of them that ever had one. */
  readCooldowns(labels: readonly string[]): Promise<Map<string, CooldownState>>;
  /** Starts or extends (never shortens) the cool-down of `label` until `untilMs`. */
  setCooldown(label: string, untilMs: number, reason: string): Promise<void>;
  /**
   * Claims the next release slot of `label` atomically: `slot = max(releaseNext, until, nowMs)`,
   * then `releaseNext = slot + spacingMs(slot - until)` (the spacing may depend on how long after
   * the cool-down's end the slot is, ms). Undefined when `label` has no cool-down.
   */
  claimRelease(
    label: string,
    nowMs: number,
    spacingMs: (sinceEndMs: number) => number,
  ): Promise<{ slotMs: number; untilMs: number; reason: string } | undefined>;
}

/**
 * Refusals shared by every worker (the result store implements it). Times are epoch ms;
 * `scope` is what the provider counts per (`brightdata@api.brightdata.com`).
 */
export interface SharedRefusals {
  /** Records one refusal at `atMs` and deletes the scope's refusals older than `pruneBeforeMs`. */
  recordRefusal(scope: string, atMs: number, pruneBeforeMs: number): Promise<void>;
  /** The scope's refusals after `sinceMs`, oldest first. */
  refusalsSince(scope: string, sinceMs: number): Promise<number[]>;
}

/** State shared with other workers through the store: cool-downs and release slots, and, where the store keeps them, counted refusals. `store.providerKeys` satisfies it. */
export interface ProviderSharedState extends SharedCooldowns, Partial<SharedRefusals> {}

/** An adapter that keeps provider-side counts in the shared store (Bright Data's IP-block window). */
export interface SharesState {
  /** Called once by the registry with the worker's store. */
  shareState(shared: Partial<SharedRefusals>): void;
}
