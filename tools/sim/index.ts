/**
 * The reference asynchronous scraping provider ("the sim"): public entry point.
 *
 * Source of the contract: the generic asynchronous scraping API of our design brief (docs/design.md, “The problem”): `POST` →
 * `202 {job_id}`, `GET /api/jobs/:id`, `/logs`, `DELETE /api/jobs/:id/cancel`,
 * `429 CONCURRENCY_LIMIT`. See `server.ts` for the full HTTP contract.
 *
 * @example
 *   const sim = await startSim({ accounts: [{ name: 'acme', apiKeys: ['k1'] }] });
 *   // POST `${sim.url}/api/scrape` with `Authorization: Bearer k1` ...
 *   await sim.close();
 */
export { createSim, startSim } from './server.js';
export type { Sim, SimEvents, SimEventMap, SimResponseEvent, WaitForJobOptions } from './server.js';
export { extractPage, ExtractionError, normalizeWhitespace } from '../../src/providers/shared/extract.js';
export type { ExtractedPage, ExtractOptions } from '../../src/providers/shared/extract.js';
export { FaultRegistry, ruleMatches } from './faults.js';
export type { FaultContext, StoredFaultRule } from './faults.js';
export type { JobTransition } from './jobRecord.js';
export type {
  AccountRequestCounts,
  EndpointCounts,
  SimJobSnapshot,
  SimStats,
  SimStatsJob,
  SimWebhookAttempt,
  SimWebhookStats,
} from './stats.js';
export { simWebhookSignature, WebhookDispatcher } from './webhooks.js';
export * from './schemas.js';
export { startPageServer, listCorpusPages, encodeLegacy, relabelCharset } from './pageServer.js';
export type { PageServer, PageServerOptions } from './pageServer.js';
