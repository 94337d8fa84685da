/**
 * The conformance matrix (`./matrix.ts`) on the `firecrawl` kind's batch-scrape entry
 * (`operation: "batch"`, the default). Batch scrapes take no idempotency key in Firecrawl's
 * contract (only `POST /v2/crawl` reads `x-idempotency-key`), so no replay behaviour applies.
 */
import { startFirecrawlFixture } from '../fixtures/providers/firecrawl/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'firecrawl (batch entry)',
  kind: 'firecrawl',
  fixture: () => startFirecrawlFixture({ pageSize: 2 }),
  entry: (fx) => ({ baseUrl: fx.url, operation: 'batch' }),
  restrict: { replays: [] },
});
