/**
 * Custom search attributes the scrape workflows upsert, so that operators can filter jobs in the
 * Temporal Web UI (`ScrapeState = "pending"`, `ScrapeAccount = "acme"`, ...).
 *
 * These must be registered on the namespace before a workflow upserts them: the dev server started
 * by `tools/devserver` passes them as `--search-attribute Name=Type`, and `ensureSearchAttributes`
 * in `src/namespace.ts` registers them on an existing cluster.
 *
 * Source of the contract: Temporal docs, "Search Attributes" (custom attributes, Keyword type).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Local job state (docs/design.md, “The scrape workflow: a small explicit state machine”), e.g. `pending`, `completed`. */
export const ScrapeState = defineSearchAttributeKey('ScrapeState', SearchAttributeType.KEYWORD);
/** Provider name as configured on the worker, e.g. `reference`. */
export const ScrapeProvider = defineSearchAttributeKey('ScrapeProvider', SearchAttributeType.KEYWORD);
/** Our account (tenant) that owns the job. */
export const ScrapeAccount = defineSearchAttributeKey('ScrapeAccount', SearchAttributeType.KEYWORD);
/** The provider's task ID once known. */
export const ScrapeTaskId = defineSearchAttributeKey('ScrapeTaskId', SearchAttributeType.KEYWORD);
/** Batch the job belongs to (CLI `run` or a batch workflow), if any. */
export const ScrapeBatchId = defineSearchAttributeKey('ScrapeBatchId', SearchAttributeType.KEYWORD);
/** Host of the target URL, so operators can filter by site. */
export const ScrapeHost = defineSearchAttributeKey('ScrapeHost', SearchAttributeType.KEYWORD);

/** Every custom search attribute, name → Temporal type name, for registration. */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'Text' | 'Int' | 'Datetime' | 'Bool' | 'Double'> = {
  ScrapeState: 'Keyword',
  ScrapeProvider: 'Keyword',
  ScrapeAccount: 'Keyword',
  ScrapeTaskId: 'Keyword',
  ScrapeBatchId: 'Keyword',
  ScrapeHost: 'Keyword',
};
