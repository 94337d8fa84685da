/**
 * The conformance matrix (`./matrix.ts`) on the `apify` kind: Actor runs, the runs list with our
 * reference in each run's `INPUT` record as the lookup, dataset items paged with `clean`.
 */
import { startApifyFixture } from '../fixtures/providers/apify/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'apify',
  kind: 'apify',
  fixture: () => startApifyFixture(),
  entry: (fx) => ({
    baseUrl: fx.url,
    actorId: 'acme~site-crawler',
    notFoundGraceMs: 1_500,
    clean: true,
    results: { pageSize: 2 },
  }),
  // ApifyAdapter.findSubmitted throws on the runs list's 404 (`throw this.fail(res, …)`).
});
