import { defineConfig } from 'vitest/config';

/**
 * `npm run test:real`: the product against two servers nobody here wrote (issue 35): Firecrawl's
 * own API server built from its source, and Scrapyd from PyPI. The shared Temporal dev server
 * first (`test/helpers/globalSetup.ts`), then `test/real/globalSetup.ts` builds (cached) and
 * starts both servers for the run. One file at a time: the files restart those servers and share
 * two cores with them. The hook timeout covers a cold build (~8 min on 2 cores).
 */
export default defineConfig({
  test: {
    include: ['test/real/**/*.test.ts'],
    globalSetup: ['test/helpers/globalSetup.ts', 'test/real/globalSetup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    reporters: ['default'],
  },
});
