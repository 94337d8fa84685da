import { configDefaults, defineConfig } from 'vitest/config';

/**
 * `npm test`: two projects in one run, on the one Temporal dev server of the root global setup
 * (`test/helpers/globalSetup.ts`; its teardown runs after both projects).
 *
 * - `tests`: every unit, workflow and integration test, three files at a time.
 * - `secrets-scan` (`test/scan/`): the secrets scan of issue 13. `sequence.groupOrder: 1` puts it
 *   in a group of its own that vitest starts only when every file of group 0 has finished, so it
 *   sees every history, kept store, log line and recorded answer of the run, while the dev server
 *   still runs; being a test, its failure is reported (with the hits) like any other and fails the
 *   run. Run with a filter (`npx vitest run test/unit/…`) it is left out unless named.
 *
 * The projects do not `extend` the root config: its `globalSetup` would be merged into each and
 * start a dev server per project. The options they share are spelled out once below.
 */
const shared = {
  pool: 'forks',
  testTimeout: 120_000,
  hookTimeout: 180_000,
  teardownTimeout: 30_000,
} as const;

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/globalSetup.ts'],
    reporters: ['default'],
    teardownTimeout: 30_000,
    projects: [
      {
        test: {
          ...shared,
          name: 'tests',
          include: ['test/**/*.test.ts'],
          // The cluster and real-server suites have their own configs and global setups (`npm run
          // test:cluster`, `npm run test:real`); the scan is the last project.
          exclude: [...configDefaults.exclude, 'test/cluster/**', 'test/real/**', 'test/scan/**'],
          // Integration files mostly wait on timers and the network: three at a time on 2 cores.
          maxWorkers: 3,
        },
      },
      {
        test: {
          ...shared,
          name: 'secrets-scan',
          include: ['test/scan/**/*.test.ts'],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          testTimeout: 600_000,
        },
      },
    ],
  },
});
