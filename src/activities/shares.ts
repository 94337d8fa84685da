/**
 * The worker's side of fair shares and budgets at submit (docs/budgets.md): telling the jobs the
 * key's fair queue granted a slot to submit now (the `submitNow` signal: they wait on durable
 * timers), giving the free slots of a contended key away as soon as a job of it ends in this
 * process, and what a submit that a budget stops does (fails, or waits saying so).
 */
import { log } from '@temporalio/activity';
import { cancelSignal, submitNowSignal } from '../model/messages.js';
import type { JobWait } from '../model/types.js';
import { ProviderError } from '../providers/shared/errors.js';
import type { BudgetRefusal, JobRow, SlotGrant } from '../store/index.js';
import type { ActivityKit } from './context.js';
import { onSlotReleased } from './slots.js';

/** How long after a submit found its key full this process gives the key's slots away when one frees, ms. */
const CONTENDED_FOR_MS = 60_000;

/** A job held by its budget of a `total` period (which never renews) looks again after this, ms (the workflow's back-off applies). */
const TOTAL_HOLD_RETRY_MS = 30 * 60_000;

const sharesByKit = new WeakMap<ActivityKit, ReturnType<typeof makeShares>>();

/** The fair-share and budget helpers of `kit`'s submits: one per kit, which owns their state (the keys contended here). */
export function sharesOf(kit: ActivityKit): ReturnType<typeof makeShares> {
  let shares = sharesByKit.get(kit);
  if (!shares) sharesByKit.set(kit, (shares = makeShares(kit)));
  return shares;
}

/** Builds the fair-share and budget helpers of the submit activity over `kit` (see {@link sharesOf}). */
function makeShares(kit: ActivityKit) {
  const { store } = kit;
  const contended = new Map<string, number>();
  const granting = new Set<string>();
  const again = new Set<string>();
  let listening = false;

  /** Tells the workflows of `grants` to submit now (best effort: a grant no workflow takes lapses). */
  function notify(grants: readonly SlotGrant[]): void {
    const temporal = kit.deps.temporal;
    if (!temporal) return;
    for (const g of grants)
      temporal.workflow
        .getHandle(g.workflowId)
        .signal(submitNowSignal, { why: 'slot' })
        .catch((e: unknown) =>
          log.warn('a slot grant could not be signalled; it lapses unless the job asks first', {
            jobId: g.jobId,
            error: e instanceof Error ? e.message : String(e),
          }),
        );
  }

  /**
   * Gives the free slots of `label` away: one round at a time per key in this process, and one
   * more after it when a slot was released while it ran (so no release goes unanswered).
   */
  function grantOnRelease(label: string): void {
    if ((contended.get(label) ?? 0) < Date.now()) return;
    if (granting.has(label)) {
      again.add(label);
      return;
    }
    granting.add(label);
    store.slots
      .grantFree(label, kit.deps.weights)
      .then(notify, (e: unknown) =>
        log.warn('free slots could not be granted; waiting jobs find them at their next try', {
          label,
          error: e instanceof Error ? e.message : String(e),
        }),
      )
      .finally(() => {
        granting.delete(label);
        if (again.delete(label)) grantOnRelease(label);
      });
  }

  return {
    notify,
    /**
     * Notes that a submit found key `label` full: for a while, a job of it ending here gives its
     * slot away at once. The kit listens to the process's slot releases from then on, until its
     * worker stops (`deps.stopped`), which removes the listener.
     */
    contended(label: string): void {
      contended.set(label, Date.now() + CONTENDED_FOR_MS);
      const stopped = kit.deps.stopped;
      if (!listening && !stopped?.aborted) {
        listening = true;
        const stop = onSlotReleased(grantOnRelease);
        stopped?.addEventListener('abort', () => void stop(), { once: true });
      }
    },

    /**
     * A submit that a budget stops (`refusal`): under the account's `hold` policy the job waits
     * (`budget`, until the period renews or the budget is raised; the returned wait and its retry,
     * ms); under `refuse` it fails now with code `BUDGET_EXCEEDED` (a non-retryable
     * `Provider.permanent`: nothing was sent). Either way the timeline keeps the budget's standing.
     */
    async overBudget(jobId: string, r: BudgetRefusal): Promise<{ wait: JobWait; retryInMs: number }> {
      const left = `${round(r.remaining)} ${r.unit} left of ${round(r.amount)} in ${r.periodKey}`;
      const message = `budget ${r.budget} (${round(r.amount)} ${r.unit} per ${r.period}) has ${left} (${round(r.reserved)} reserved, ${round(r.spent)} spent); this job's estimate is ${round(r.estimate)} ${r.unit}`;
      await store.findings.appendEvent(jobId, 'budget_exceeded', null, { ...r, policy: r.policy.onExceeded });
      if (r.policy.onExceeded === 'refuse')
        throw new ProviderError('permanent', `refused by its account's budget: ${message}`, {
          code: 'BUDGET_EXCEEDED',
        });
      const renews = r.renewsAt ? Date.parse(r.renewsAt) : undefined;
      const retryInMs = renews === undefined ? TOTAL_HOLD_RETRY_MS : Math.max(1_000, renews - Date.now());
      const wait: JobWait = {
        reason: 'budget',
        message: `held by its account's budget until ${r.renewsAt ?? 'the budget is raised'}: ${message}`,
        ...(r.renewsAt ? { until: r.renewsAt } : {}),
        detail: {
          budget: r.budget,
          period: r.periodKey,
          unit: r.unit,
          amount: r.amount,
          reserved: r.reserved,
          spent: r.spent,
          remaining: r.remaining,
          estimate: r.estimate,
          renewsAt: r.renewsAt,
        },
      };
      return { wait, retryInMs };
    },
  };
}

/**
 * After the provider reported `cost` (the kind's unit) for the running job of `row`: when that
 * takes one of its budgets past its amount and its account's policy asks for it
 * (`cancelRunning`), the job is asked to cancel (the `cancel` signal, by `budget`), with the
 * budget's standing in its timeline. A job that holds no reservation, or whose report stays within
 * it, costs no statement. Never throws: a check that fails leaves the job running.
 */
export async function cancelIfOverrun(kit: ActivityKit, row: JobRow, cost: number | undefined): Promise<void> {
  if (cost === undefined || !row.cost_ledgers || cost <= Number(row.cost_reserved ?? 0)) return;
  try {
    const over = await kit.store.budgets.overrun(row.id, cost);
    if (!over?.policy.cancelRunning || !kit.deps.temporal) return;
    await kit.store.findings.appendEvent(row.id, 'budget_overrun', null, { ...over, reported: cost });
    const reason = `the provider reports ${cost} ${over.unit}, past budget ${over.budget} (${round(over.remaining)} ${over.unit} left of ${round(over.amount)} in ${over.periodKey}); the account cancels running jobs over budget`;
    await kit.deps.temporal.workflow.getHandle(row.workflow_id).signal(cancelSignal, { reason, requestedBy: 'budget' });
  } catch (e) {
    log.warn('the budget overrun check failed; the job runs on', {
      jobId: row.id,
      error: e instanceof Error ? e.message : String(e),
    });
  }
}

/** `n` rounded to 6 significant decimals for a message (USD amounts, credits). */
function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
