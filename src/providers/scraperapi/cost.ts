/**
 * What a ScraperAPI job costs, in API credits, from its `apiParams` (docs.scraperapi.com
 * "Asynchronous API" overview and "Cost Control", read 2026-11-30): 1 credit for a standard
 * request, 10 with `render` or `premium`, 25 with both, 30 with `ultra_premium` (75 with
 * `render`); a request's `max_cost` caps it (past it ScraperAPI refuses with `403`); failed jobs
 * are not charged. No job answer reports the cost, so a job settles at this estimate.
 */
import type { ScrapeRequest } from '../../model/types.js';

/** The job's own `options.apiParams` (an object, else empty). */
export function paramsOf(request: ScrapeRequest): Record<string, unknown> {
  const v = request.options.apiParams;
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Credits one request with `params` (the entry's merged with the job's) costs at most. */
export function scraperApiEstimate(params: Record<string, unknown>): number {
  const on = (k: string) => params[k] === true || params[k] === 'true';
  const cap = Number(params.max_cost);
  if (Number.isFinite(cap) && cap > 0) return cap;
  if (on('ultra_premium')) return on('render') ? 75 : 30;
  if (on('premium')) return on('render') ? 25 : 10;
  return on('render') ? 10 : 1;
}
