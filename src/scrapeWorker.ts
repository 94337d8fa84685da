/**
 * The worker class of the scrape task queue (`createScrapeWorker` in `worker.ts` builds it): the
 * SDK's `Worker`, plus the hand-over of its detached tracking loops when it stops and the end of
 * its activities' lifetime once it has stopped.
 */
import { Worker } from '@temporalio/worker';
import type { DetachedTracker } from './activities/index.js';

/**
 * Longest time between two heartbeats of a polling activity that reach the server, ms: below
 * 0.8 × the poll policy's default heartbeat timeout (10 min). Each one is a billable Action and a
 * mutable-state write.
 */
export const HEARTBEAT_THROTTLE_MS = 8 * 60_000;

/**
 * The worker of the scrape task queue: the SDK's `Worker`, whose detached tracking loops
 * (`src/worker/tracker.ts`) are handed over to other workers when it stops — at once when
 * `shutdown()` is called (directly or by the SDK on SIGINT/SIGTERM), and in any case before
 * `run()` resolves, so that the connection is still open for their last answers.
 */
export class ScrapeWorker extends Worker {
  /** The loops this worker tracks detached (set by `createScrapeWorker`). */
  tracker?: DetachedTracker;
  /** Aborted once `run()` has ended: its activities' `deps.stopped` (set by `createScrapeWorker`). */
  lifetime?: AbortController;

  /** Begins the hand-over of the tracking loops, then stops the worker as the SDK does. */
  override shutdown(): void {
    void this.tracker?.handOff();
    super.shutdown();
  }

  /**
   * Runs the worker as the SDK does; when it has stopped, waits until every tracking loop has been
   * handed over, then ends its activities' lifetime (what they registered process-wide is removed).
   */
  override async run(): Promise<void> {
    try {
      await super.run();
    } finally {
      try {
        await this.tracker?.handOff();
      } finally {
        this.lifetime?.abort();
      }
    }
  }
}
