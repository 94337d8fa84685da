import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The cluster suite has its own config and global setup (`npm run test:cluster`).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    globalSetup: ['test/helpers/globalSetup.ts'],
    pool: 'forks',
    // Integration files mostly wait on timers and the network: three at a time on 2 cores.
    maxWorkers: 3,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});
