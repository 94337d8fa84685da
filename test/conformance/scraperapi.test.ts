/**
 * The conformance matrix (`./matrix.ts`) on the `scraperapi` kind: Async API jobs, no lookup and no
 * idempotency key (a lost submit always waits for an operator), binary targets relayed as Base64.
 */
import { startScraperApiFixture } from '../fixtures/providers/scraperapi/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'scraperapi',
  kind: 'scraperapi',
  fixture: () => startScraperApiFixture(),
  entry: (fx) => ({ baseUrl: fx.url, apiParams: { country_code: 'us' } }),
});
