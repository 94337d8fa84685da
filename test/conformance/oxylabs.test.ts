/**
 * The conformance matrix (`./matrix.ts`) on the `oxylabs` kind: Push-Pull jobs, no lookup, no
 * idempotency key and no cancel endpoint (a cancel can only be unconfirmed), binary bodies as
 * Base64 content.
 */
import { OXYLABS_FIXTURE_CREDENTIALS, startOxylabsFixture } from '../fixtures/providers/oxylabs/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'oxylabs',
  kind: 'oxylabs',
  fixture: () => startOxylabsFixture(),
  entry: (fx) => ({
    baseUrl: fx.url,
    params: { geo_location: 'United States' },
    credentials: {
      default: { apiKey: OXYLABS_FIXTURE_CREDENTIALS.acme },
      accounts: { globex: { apiKey: OXYLABS_FIXTURE_CREDENTIALS.globex } },
    },
  }),
});
