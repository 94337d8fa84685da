/**
 * Budgets through the client (`ScrapeClient.budgets`, docs/budgets.md): an account's budgets with
 * their standing, setting and removing them while everything runs, its policy, and what a job
 * cost (in its provider's unit, beside its Temporal Actions). The door's check of a new job is
 * `door.ts`.
 */
import { submitNowSignal } from '../model/messages.js';
import {
  ANY_PROVIDER,
  type BudgetPeriod,
  type BudgetPolicy,
  type BudgetUsage,
  type JobCost,
} from '../model/budgets.js';
import { jobCostOf } from '../store/ledger.js';
import { temporalActions, type TemporalActions } from './actions.js';
import { refreshDoor } from './door.js';
import { InvalidInputError, ScrapeError } from './errors.js';
import type { StartContext } from './start.js';
import { ownedRow } from './views.js';

/** A budget as a caller sets it: per provider (its kind's unit) or across the providers of one unit. */
export interface BudgetInput {
  /** A configured provider name; absent: every provider of the account whose kind counts in `unit`. */
  provider?: string;
  /** Required without `provider`; with one, it must be the provider kind's unit. */
  unit?: string;
  period: BudgetPeriod;
  /** ≥ 0, in the unit. */
  amount: number;
}

/** A job's cost at the provider and on Temporal. */
export interface JobCostReport {
  jobId: string;
  provider: string;
  /** Null for a job that never reached a submit (no estimate was made). */
  cost: JobCost | null;
  /** The job's Temporal Actions from its history; null when the server no longer has it. */
  temporal: TemporalActions | null;
}

/** The budgets of the client's store, every call scoped to an account. */
export class BudgetsClient {
  constructor(private readonly ctx: StartContext) {}

  /** The account's budgets with their standing in the current period. */
  async list(account: string): Promise<BudgetUsage[]> {
    return this.ctx.store.budgets.list({ account });
  }

  /**
   * Sets a budget of `account` (created, or its amount changed) as an operator: configuration no
   * longer overrides it. Jobs of the account held by a budget are told to try now. Throws
   * {@link InvalidInputError} for an unknown provider, a unit that is not the provider's (or, across
   * providers, one no configured provider counts in), a budget without provider or unit, or an
   * amount outside 0 to {@link MAX_BUDGET_AMOUNT}.
   */
  async set(account: string, b: BudgetInput): Promise<BudgetUsage> {
    const unitOf = this.ctx.unitOf;
    if (b.provider && this.ctx.providers && !this.ctx.providers.includes(b.provider))
      throw invalid(`unknown provider "${b.provider}"; configured: ${this.ctx.providers.join(', ')}`, 'provider');
    const kindUnit = b.provider ? unitOf?.(b.provider) : undefined;
    if (kindUnit && b.unit && b.unit !== kindUnit)
      throw invalid(`provider "${b.provider}" counts in ${kindUnit}, not ${b.unit}`, 'unit');
    const unit = kindUnit ?? b.unit;
    if (!unit) throw invalid('give the unit (credits, usd, records, requests) of a budget', 'unit');
    // A budget across providers counts in a unit one of them counts in: another (a typo) would limit nothing.
    const units = unitOf && this.ctx.providers ? new Set(this.ctx.providers.map((p) => unitOf(p))) : undefined;
    if (!b.provider && units && !units.has(unit))
      throw invalid(
        `no configured provider counts in "${unit}"; the units of this deployment: ${[...units].filter(Boolean).join(', ')}`,
        'unit',
      );
    if (!(Number.isFinite(b.amount) && b.amount >= 0 && b.amount <= MAX_BUDGET_AMOUNT))
      throw invalid(`the amount must be a number from 0 to ${MAX_BUDGET_AMOUNT}`, 'amount');
    const out = await this.ctx.store.budgets.set(
      { account, provider: b.provider ?? ANY_PROVIDER, unit, period: b.period, amount: b.amount },
      'operator',
    );
    refreshDoor(this.ctx.store);
    await this.nudgeHeld(account);
    return out;
  }

  /** Removes budget `id` of `account`; jobs it held are told to try now. Throws {@link ScrapeError} `not_found` when the account has no such budget. */
  async remove(account: string, id: string): Promise<void> {
    const mine = (await this.list(account)).some((b) => b.id === id);
    if (!mine || !(await this.ctx.store.budgets.remove(id)))
      throw new ScrapeError('not_found', `account ${account} has no budget ${id}`, { budget: id });
    refreshDoor(this.ctx.store);
    await this.nudgeHeld(account);
  }

  /** The account's policy when a budget is spent. */
  async policy(account: string): Promise<BudgetPolicy> {
    return this.ctx.store.budgets.policy(account);
  }

  /** Sets the account's policy as an operator (configuration no longer overrides it); held jobs are told to try now. */
  async setPolicy(account: string, policy: BudgetPolicy): Promise<BudgetPolicy> {
    await this.ctx.store.budgets.setPolicy(account, policy, 'operator');
    await this.nudgeHeld(account);
    return this.policy(account);
  }

  /**
   * What job `jobId` cost: at the provider (estimated, reserved, settled, reported, in its unit)
   * and, with `actions` (default true), its Temporal Actions counted from its history. Throws
   * {@link JobNotFoundError} for a missing job or another account's.
   */
  async jobCost(account: string, jobId: string, opts: { actions?: boolean } = {}): Promise<JobCostReport> {
    const row = await ownedRow(this.ctx.store, account, jobId);
    let temporal: TemporalActions | null = null;
    if (opts.actions !== false) temporal = await temporalActions(this.ctx.temporal, jobId).catch(() => null);
    return { jobId, provider: row.provider, cost: jobCostOf(row), temporal };
  }

  /** Tells the jobs of `account` held by a budget to try their submit now (best effort). */
  private async nudgeHeld(account: string): Promise<void> {
    const held = await this.ctx.store.budgets.heldJobs(account);
    await Promise.allSettled(
      held.map((j) => this.ctx.temporal.workflow.getHandle(j.workflowId).signal(submitNowSignal, { why: 'budget' })),
    );
  }
}

/** The largest budget amount, in any unit (the HTTP API's bound too). */
const MAX_BUDGET_AMOUNT = 1e12;

function invalid(message: string, path: string): InvalidInputError {
  return new InvalidInputError(message, [{ code: 'custom', path: [path], message }]);
}
