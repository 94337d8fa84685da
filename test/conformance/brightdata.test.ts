/**
 * The conformance matrix (`./matrix.ts`) on the `brightdata` kind: snapshots triggered for one
 * URL, the snapshots list (URL and time only: a weak match) as the lookup.
 */
import { BRIGHTDATA_FIXTURE_DATASET, startBrightDataFixture } from '../fixtures/providers/brightdata/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'brightdata',
  kind: 'brightdata',
  fixture: () => startBrightDataFixture(),
  entry: (fx) => ({ baseUrl: fx.url, datasetId: BRIGHTDATA_FIXTURE_DATASET, listing: { marginMs: 5_000 } }),
  // BrightDataAdapter.findSubmitted reads the snapshots list with `this.ok`, which throws on its 404.
});
