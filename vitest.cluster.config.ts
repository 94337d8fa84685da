import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: the production topology (`tools/cluster`: PostgreSQL, Temporal as five
 * processes, Web UI, codec server), started once for the run by `test/cluster/globalSetup.ts`.
 * One file at a time: the files SIGKILL server processes and share two cores with the cluster.
 */
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    globalSetup: ['test/cluster/globalSetup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 1_800_000,
    teardownTimeout: 60_000,
    reporters: ['default'],
  },
});
