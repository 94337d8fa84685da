/**
 * A worker in a child process, for tests that kill workers. Reads `SCRAPE_CONFIG`; prints
 * `WORKER_READY` once polling. With `TEST_CRASH_AT=<hook>` and `TEST_CRASH_MARKER=<file>` it
 * SIGKILLs itself the first time that hook point is reached (the marker file makes the crash
 * happen once across restarts): `afterSubmitAnswered`, `afterTaskRecorded`, `afterResultWritten`,
 * `beforeRecordState` (with `TEST_CRASH_STATE`, only the record of that state).
 */
import fs from 'node:fs';
import { loadConfigFile } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { connectWorker, createScrapeWorker, installWorkerLogging } from '../../src/worker.js';
import type { ActivityDeps } from '../../src/activities/index.js';

installWorkerLogging({ level: 'WARN', file: process.env.WORKER_LOG });
const config = loadConfigFile();
const store = await openStore(config.storeUrl);
const crashAt = process.env.TEST_CRASH_AT;
const marker = process.env.TEST_CRASH_MARKER;
const crash = () => {
  if (marker && fs.existsSync(marker)) return;
  if (marker) fs.writeFileSync(marker, String(Date.now()));
  process.kill(process.pid, 'SIGKILL');
};
// `TEST_CRASH_STATE`: with `beforeRecordState`, only the record of that state crashes (a loaded
// machine may record `unknown` first, after a submit attempt that outlasted its budget).
const crashState = process.env.TEST_CRASH_STATE;
const hooks: ActivityDeps['hooks'] = crashAt
  ? {
      [crashAt]: (_jobId: string, state?: string) => {
        if (crashState === undefined || state === crashState) crash();
      },
    }
  : undefined;
const connection = await connectWorker(config);
const worker = await createScrapeWorker({
  connection,
  config,
  store,
  hooks,
  shutdownGraceTimeMs: 1_000,
  identity: `child-${process.pid}`,
});
const running = worker.run();
console.log('WORKER_READY');
await running;
await connection.close();
await store.close();
