/**
 * Cancellation by every door on the production topology (five-process Temporal, two product
 * worker processes, PostgreSQL store, encrypted payloads): a job held `running` at the provider is
 * cancelled by signal, by Update (with the observed outcome as its answer) and by the native
 * cancel the Web UI's button sends; each ends `cancelled` with one provider cancel call, no result
 * and one provider job.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor, type CancelResult } from '../../src/client/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { DOORS, expectSettled, providerJobs, sendCancel, settle, waitRow } from '../helpers/cancel.js';
import { FAST_POLICY, startStack, waitFor, type Stack } from '../helpers/stack.js';
import { freshStoreUrl, spawnProductWorker, useCodecEnv, type ProductWorker } from './helpers.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, activityTimeoutMs: 30_000, cancelConfirmDeadlineMs: 5_000 };
const RUN = randomUUID().slice(0, 6);
let stack: Stack;
let pages: PageServer;
const workers: ProductWorker[] = [];

beforeAll(async () => {
  useCodecEnv();
  pages = await startPageServer();
  stack = await startStack({
    profile: { concurrency: 100 },
    worker: false,
    storeUrl: await freshStoreUrl(),
    codec: true,
    providerTimeoutMs: 20_000,
  });
  workers.push(await spawnProductWorker(stack.configFile), await spawnProductWorker(stack.configFile));
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill('SIGKILL')));
  await stack?.stop();
  await pages?.close();
});

describe('cancel by every door on the cluster', () => {
  for (const door of DOORS) {
    it(`${door}: cancelled at the provider, 1 cancel call, 0 results`, async () => {
      const tag = `cl-cancel-${door}-${RUN}`;
      const jobId = jobIdFor('acme', tag);
      stack.sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: tag,
        action: 'hold',
        holdIn: 'running',
      });
      await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('001')}?${tag}`,
        key: tag,
        policy: POLICY,
      });
      const row = await waitRow(
        stack,
        jobId,
        (r) => r.provider_status === 'running' && !!r.task_id,
        'polled while running',
        60_000,
      );
      await waitFor(
        () => stack.sim.getJob(row.task_id!)?.pages_fetched === 1,
        30_000,
        'the provider to fetch the page',
      );
      const sent = sendCancel(stack, door, jobId);
      const answer = (await sent.done) as CancelResult | undefined;
      const s = await settle(stack, jobId, 90_000);
      expectSettled(
        expect,
        stack,
        tag,
        s,
        {
          door,
          state: 'cancelled',
          outcome: 'cancelled',
          calls: 1,
          results: 0,
          effects: { pagesFetched: 1, creditsUsed: 1 },
        },
        answer,
      );
      expect(stack.sim.getJob(row.task_id!)?.status).toBe('cancelled');
      expect(providerJobs(stack, tag)).toHaveLength(1);
    }, 180_000);
  }
});
