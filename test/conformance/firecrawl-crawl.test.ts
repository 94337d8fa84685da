/**
 * The conformance matrix (`./matrix.ts`) on the `firecrawl` kind's crawl entry (`operation:
 * "crawl"`): `x-idempotency-key` replays answered `409` (or missed, `ignored`), the active-crawls
 * list and the team activity as lookups, crawls of several pages with a failed page and a
 * robots.txt refusal.
 */
import { startFirecrawlFixture } from '../fixtures/providers/firecrawl/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'firecrawl (crawl entry)',
  kind: 'firecrawl',
  fixture: () => startFirecrawlFixture({ pageSize: 2, crawl: { pages: 3, errors: 1, robotsBlocked: 1 } }),
  entry: (fx) => ({ baseUrl: fx.url, operation: 'crawl' }),
  options: { limit: 10 },
});
