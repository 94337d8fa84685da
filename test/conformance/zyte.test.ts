/**
 * The conformance matrix (`./matrix.ts`) on the `zyte` kind: Scrapy Cloud jobs tagged with our
 * reference, `jobs/list.json?has_tag=` as the lookup, items paged by key.
 */
import { startZyteFixture } from '../fixtures/providers/zyte/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'zyte',
  kind: 'zyte',
  fixture: () => startZyteFixture(),
  entry: (fx) => ({
    baseUrl: fx.url,
    storageUrl: fx.storageUrl,
    project: fx.project,
    spider: 'quotes',
    results: { pageSize: 2 },
  }),
});
