/**
 * Cancelling a job that is already final, over the real HTTP API (real Temporal dev server, worker,
 * reference provider, SQLite store): the answer is `200` `already_final` with the earlier outcome,
 * as docs/http-api.md says, also in the moment between the job becoming final (the store holds its
 * `cancelled` state) and its workflow closing — which this test holds open with the worker's
 * test hook before `closeAsCancelled`, instead of racing it. It used to answer `202` `observed`,
 * the workflow handing the earlier outcome back to the new request. Also a cancel that comes while
 * the workflow records a provider failure (its local activity held by the worker's test hook): the
 * workflow already knows the job failed, the store does not yet, and the answer never says that the
 * workflow no longer runs.
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
/** Jobs whose record of `failed` is held (once). */
const holdRecord = new Set<string>();

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
      beforeRecordState: async (jobId, state) => {
        // Held once: the local activity's next attempt (after its timeout) goes through.
        if (state !== 'failed' || !holdRecord.delete(jobId)) return;
        reached.add(jobId);
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

  it('a cancel while the workflow records a provider failure (its store write held) never answers that the workflow no longer runs', async () => {
    const url = `${pages.pageUrl('001')}?t=cancel-while-recording`;
    api.stack.sim.faults.add({
      id: 'fail-while-recording',
      urlContains: 't=cancel-while-recording',
      endpoint: 'submit',
      action: 'fail_job',
      code: 'TARGET_BLOCKED',
      message: 'target refused the crawler',
    });
    // Attempts of 15 s (the local activity's longest): the held write outlasts a workflow task's timeout.
    const policy = { ...FAST_POLICY, activityTimeoutMs: 30_000 };
    const r = await api.call('acme', 'POST', '/v1/scrapes', { json: { url, policy } });
    expect(r.status).toBe(202);
    const job = (await r.json()) as { job_id: string; cancel_url: string };
    holdRecord.add(job.job_id); // hold the record of `failed` when it comes
    await waitFor(() => reached.has(job.job_id), 30_000, 'the record to be held');
    const handle = api.stack.temporal.workflow.getHandle(job.job_id);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect((await api.stack.store.jobs.get(job.job_id))?.state).toBe('pending');

    const answer = api.call('acme', 'POST', job.cancel_url, { json: { reason: 'test: cancel while recording' } });
    // Released once the request is on its way: the workflow records `failed` and closes.
    const release = setTimeout(() => held.get(job.job_id)!(), 20_000);
    try {
      const body = (await (await answer).json()) as CancelAnswer;
      expect(body.result).not.toBe('not_running');
      if (body.result === 'already_final') expect(body.state).toBe('failed');
    } finally {
      clearTimeout(release);
      held.get(job.job_id)!();
    }
    expect((await waitForState(api.stack.store, job.job_id, ['failed', 'cancelled'], 60_000)).state).toBe('failed');
    api.stack.sim.faults.remove('fail-while-recording');
  });
});
