/**
 * The conformance matrix (`./matrix.ts`) on the `firecrawl` kind's crawl entry (`operation:
 * "crawl"`): `x-idempotency-key` replays answered `409` (or missed, `ignored`), the active-crawls
 * list and the team activity as lookups, crawls of several pages with a failed page and a
 * robots.txt refusal.
 */
import { startFirecrawlFixture } from '../fixtures/providers/firecrawl/server.js';
import { defineConformanceMatrix, unavailableLookupDefect } from './matrix.js';

await defineConformanceMatrix({
  label: 'firecrawl (crawl entry)',
  kind: 'firecrawl',
  fixture: () => startFirecrawlFixture({ pageSize: 2, crawl: { pages: 3, errors: 1, robotsBlocked: 1 } }),
  entry: (fx) => ({ baseUrl: fx.url, operation: 'crawl' }),
  options: { limit: 10 },
  knownDefects: [
    // FirecrawlAdapter.findSubmitted reads `GET /v2/crawl/active` with `this.http.ok`, which throws on its 404
    // (the team activity's 404 is read as not offered, a few lines below).
    unavailableLookupDefect('FirecrawlAdapter.findSubmitted: GET /v2/crawl/active'),
    {
      // The replay of `replayOnce` (src/activities/submit.ts) is a second POST: when Firecrawl misses the
      // key (its check reads a replica, CONTRACT.md) it creates a second crawl, adopted as `new-task`
      // by decideReconcile (src/model/evidence.ts) while the first crawl runs on and is billed.
      why: 'a replay that Firecrawl does not deduplicate creates a second crawl, adopted while the first runs on',
      matches: (c, env) => env.replay === 'ignored' && (c.submitFault === 'reset' || c.submitFault === '502' || c.submitFault === 'late'),
      example: { env: { lookup: { kind: 'immediate' }, replay: 'ignored' }, case: { submitFault: 'reset', lookalike: false, binary: false, cancel: 'none' } },
    },
  ],
});
