/**
 * A worker killed in the middle of a cancel: before the workflow records `cancelled`, and before
 * the run asks Temporal to close itself Canceled. A new worker ends the job `cancelled` once, the
 * run closes Canceled, and the provider saw one job.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ worker: false, profile: { concurrency: 4 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

describe('a worker killed mid-cancel', () => {
  const cases = [
    { crashAt: 'beforeRecordState', state: 'cancelled' },
    { crashAt: 'beforeCloseAsCancelled', state: undefined },
  ] as const;
  for (const { crashAt, state } of cases) {
    it(`killed at ${crashAt}${state ? ` (${state})` : ''}: cancelled once, the run closes Canceled`, async () => {
      await stack.killWorkers();
      const tag = `crash-cancel-${crashAt}`;
      const marker = path.join(stack.dir, `crash-${tag}`);
      const env: Record<string, string> = { TEST_CRASH_AT: crashAt, TEST_CRASH_MARKER: marker };
      if (state) env.TEST_CRASH_STATE = state;
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
      const first = await stack.spawnWorker(env);
      const exited = new Promise<number | null>((r) => first.once('exit', (code, signal) => r(signal ? -1 : code)));
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('cnet')}?${tag}`,
        key: tag,
        policy: FAST_POLICY,
      });
      await waitFor(async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1);
      await stack.client.cancelScrape('acme', ref.jobId, { wait: false });
      expect(await exited).toBe(-1);
      await stack.spawnWorker(env);
      const done = await waitForState(
        stack.store,
        ref.jobId,
        ['cancelled', 'cancel_unconfirmed', 'completed', 'failed', 'tracking_interrupted'],
        60_000,
      );
      expect(done.state).toBe('cancelled');
      const moves = (await stack.store.findings.timeline(ref.jobId)).filter(
        (e) => e.type === 'state' && e.state === 'cancelled',
      );
      expect(moves).toHaveLength(1);
      await waitFor(
        async () => (await stack.client.getScrape('acme', ref.jobId)).execution === 'CANCELLED',
        60_000,
        'the run to close Canceled',
      );
      const jobs = stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));
      expect(jobs).toHaveLength(1);
      expect(jobs[0]!.status).toBe('cancelled');
      const view = await stack.client.getScrape('acme', ref.jobId);
      expect(view.state).toBe('cancelled');
    });
  }
});
