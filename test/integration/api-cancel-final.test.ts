/**
 * Cancelling a job that is already final, over the real HTTP API (real Temporal dev server, worker,
 * reference provider, SQLite store): the answer is `200` `already_final` with the earlier outcome,
 * as docs/http-api.md says, also in the moment between the job becoming final (the store holds its
 * `cancelled` state) and its workflow closing — which this test holds open with the worker's
 * test hook before `closeAsCancelled`, instead of racing it. It used to answer `202` `observed`,
 * the workflow handing the earlier outcome back to the new request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApiStack, type ApiStack } from '../helpers/api.js';
import { FAST_POLICY, waitFor, waitForState } from '../helpers/stack.js';

let api: ApiStack;
let pages: PageServer;
/** Jobs whose close is held, and the release of each. */
const held = new Map<string, () => void>();
const reached = new Set<string>();

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({
    profile: { concurrency: 16, minRunMs: 200 },
    hooks: {
      beforeCloseAsCancelled: async (jobId) => {
        reached.add(jobId);
        if (!held.has(jobId)) return;
        await new Promise<void>((release) => held.set(jobId, release));
      },
    },
  });
});

afterAll(async () => {
  for (const release of held.values()) release();
  await api?.stop();
  await pages?.close();
});

type CancelAnswer = { result: string; state: string; cancel: { outcome: string; requested_at: string } | null };

describe('POST /v1/scrapes/:id/cancel of a final job', () => {
  it('answers 200 already_final with the earlier outcome, while the workflow is still closing and after it closed', async () => {
    const url = `${pages.pageUrl('002')}?t=cancel-final`;
    api.stack.sim.faults.add({
      id: 'hold-cancel-final',
      urlContains: 't=cancel-final',
      action: 'hold',
      holdIn: 'running',
    });
    const r = await api.call('acme', 'POST', '/v1/scrapes', { json: { url, policy: FAST_POLICY } });
    expect(r.status).toBe(202);
    const job = (await r.json()) as { job_id: string; cancel_url: string };
    held.set(job.job_id, () => undefined); // hold this job's close when it comes
    await waitForState(api.stack.store, job.job_id, ['pending']);

    const first = await api.call('acme', 'POST', job.cancel_url, { json: { reason: 'test: first cancel' } });
    expect(first.status).toBe(202);
    const observed = (await first.json()) as CancelAnswer;
    expect(observed).toMatchObject({ result: 'observed', state: 'cancelled', cancel: { outcome: 'cancelled' } });

    // The job is final in the store; its workflow runs until the held close is released.
    await waitFor(() => reached.has(job.job_id), 30_000, 'the close to be held');
    expect((await api.stack.store.jobs.get(job.job_id))?.state).toBe('cancelled');
    const handle = api.stack.temporal.workflow.getHandle(job.job_id);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    const cancelCalls = api.stack.sim.stats().cancelCalls;

    const again = await api.call('acme', 'POST', job.cancel_url, { json: { reason: 'test: second cancel' } });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({
      result: 'already_final',
      state: 'cancelled',
      cancel: { outcome: 'cancelled', requested_at: observed.cancel!.requested_at },
    });

    // Released, the workflow closes Canceled; cancelling again still answers 200 already_final.
    held.get(job.job_id)!();
    await handle.result().catch(() => undefined);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const after = await api.call('acme', 'POST', job.cancel_url);
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ result: 'already_final', state: 'cancelled' });
    expect(api.stack.sim.stats().cancelCalls).toBe(cancelCalls); // neither reached the provider
    api.stack.sim.faults.remove('hold-cancel-final');
  });
});
