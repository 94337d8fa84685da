/**
 * How a provider kind counts what a job costs, for the budgets of `docs/budgets.md`: the unit the
 * provider bills in, how a job's cost is estimated from its request before the submit, which field
 * of the provider's answers reports what the task cost (with the document and version that field
 * follows), and what a failed task costs when nothing says otherwise. Each kind declares one
 * {@link ProviderCostModel} in its descriptor; an entry may set its own estimate (`cost.estimate`).
 */
import { z } from 'zod';
import type { ScrapeRequest } from '../../model/types.js';

/** The common entry field `cost`: the estimate of one job of this entry, in the kind's unit (overrides the kind's rule). */
export const CostEntrySchema = z.strictObject({
  /** What one job of this entry is expected to cost, in the kind's unit (≥ 0): replaces the kind's rule. */
  estimate: z.number().min(0).max(1e9).optional(),
});

/** A kind's declaration of what its jobs cost. `Entry` is the kind's parsed entry. */
export interface ProviderCostModel<Entry = unknown> {
  /** The unit the provider bills in (`credits`, `usd`, `records`, or `requests` for a kind that reports nothing), per entry. */
  unit(entry: Entry): string;
  /** The estimate of one job before its submit, in the unit (≥ 0), from its request and the entry. */
  estimate(request: ScrapeRequest, entry: Entry): number;
  /**
   * Whether the provider's answers report what a task cost (the adapter then sets
   * `StatusObservation.cost` from the field {@link doc} names); false: a job settles at its estimate.
   */
  reports(entry: Entry): boolean;
  /**
   * What a task the provider reports `failed` costs when no report says otherwise: `free` (the
   * provider documents that failed jobs are not billed) or `estimate`.
   */
  failed: 'free' | 'estimate';
  /**
   * The declaration in words, for the cost table of docs/budgets.md: the unit, how the estimate is
   * made, and the field that reports the cost with the document and version it follows (null: none).
   */
  doc: { unit: string; estimate: string; reported: string | null };
}

/** What the worker and the client need of an entry's cost model: its unit and one job's estimate. */
export interface EntryCost {
  unit: string;
  /** The estimate of one job, in `unit` (the entry's `cost.estimate` when set). */
  estimate(request: ScrapeRequest): number;
  /** Whether the provider reports what a task cost. */
  reports: boolean;
  /** A failed task costs nothing unless reported (see {@link ProviderCostModel.failed}). */
  failedFree: boolean;
}

/** {@link EntryCost} of `entry` under its kind's `model`. */
export function entryCost<Entry extends { cost?: { estimate?: number } }>(
  model: ProviderCostModel<Entry>,
  entry: Entry,
): EntryCost {
  const fixed = entry.cost?.estimate;
  return {
    unit: model.unit(entry),
    estimate: (request) => {
      const n = fixed ?? model.estimate(request, entry);
      return Number.isFinite(n) && n > 0 ? n : 0;
    },
    reports: model.reports(entry),
    failedFree: model.failed === 'free',
  };
}

/** A positive number from a job's `options[name]` (a page limit, a cost cap), else undefined. */
export function numericOption(request: ScrapeRequest, name: string): number | undefined {
  const v = request.options[name];
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}
