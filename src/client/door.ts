/**
 * The door's check of a new job against its account's budgets (docs/budgets.md): a job that a
 * budget cannot take, under a `refuse` policy, is refused before anything starts
 * (`BudgetExceededError`). The worker's reservation at submit is what holds under concurrency;
 * the door answers the caller at once, and costs a job of an account without budgets no statement.
 */
import type { ScrapeRequest } from '../model/types.js';
import type { BudgetRefusal, Store } from '../store/index.js';

/** How long the door trusts its list of the accounts that have budgets, ms (a budget set elsewhere is checked at the door after at most this long; the worker's reservation holds at once). */
const DOOR_CACHE_MS = 5_000;

const door = new WeakMap<Store, { until: number; accounts: Promise<Set<string>> }>();

/** Forgets the door's list of accounts with budgets (after this client changed one). */
export function refreshDoor(store: Store): void {
  door.delete(store);
}

/**
 * The budget that a new job of `account` on `provider` for `request` would take past its amount,
 * under the account's policy, or undefined. Reads the store only for an account that has budgets
 * (the list of such accounts is read at most every {@link DOOR_CACHE_MS}), so a job of an account
 * without budgets costs the door no statement. Without `estimateCost` (a client without the
 * provider configuration) only the provider's own budgets are read, and a job is refused only
 * once nothing is left.
 */
export async function checkAtDoor(
  ctx: {
    store: Store;
    estimateCost?: (provider: string, request: ScrapeRequest) => { unit: string; estimate: number } | undefined;
  },
  account: string,
  provider: string,
  request: ScrapeRequest,
): Promise<BudgetRefusal | undefined> {
  let cached = door.get(ctx.store);
  if (!cached || cached.until < Date.now()) {
    cached = { until: Date.now() + DOOR_CACHE_MS, accounts: ctx.store.budgets.accounts().then((a) => new Set(a)) };
    door.set(ctx.store, cached);
  }
  if (!(await cached.accounts).has(account)) return undefined;
  const cost = ctx.estimateCost?.(provider, request);
  return ctx.store.budgets.check(account, provider, cost?.unit, cost?.estimate);
}
