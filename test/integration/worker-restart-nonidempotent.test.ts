/**
 * A worker killed right after a provider without idempotency keys answered a submit (the answer
 * not yet recorded): the next worker finds the task by its client reference in the provider's
 * list and adopts it, never submitting again.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitForState, type Stack } from '../helpers/stack.js';

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ worker: false, profile: { concurrency: 4, idempotency: false, list: true } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

describe('a worker killed after a non-idempotent submit was answered', () => {
  for (const crashAt of ['afterSubmitAnswered', 'afterTaskRecorded'] as const) {
    it(`killed ${crashAt}: one provider job, completed once`, async () => {
      await stack.killWorkers();
      const tag = `nonidem-${crashAt}`;
      const env = { TEST_CRASH_AT: crashAt, TEST_CRASH_MARKER: path.join(stack.dir, `crash-${tag}`) };
      const first = await stack.spawnWorker(env);
      const exited = new Promise<number | null>((r) => first.once('exit', (code, signal) => r(signal ? -1 : code)));
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('cnet')}?${tag}`,
        key: tag,
        policy: FAST_POLICY,
      });
      expect(await exited).toBe(-1);
      await stack.spawnWorker(env);
      const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 90_000);
      expect(done.state).toBe('completed');
      expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
      expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    });
  }
});
