/**
 * The core behaviours of a scrape (one job per key, one result row, cancel, the deadline, a
 * refused submit) against the real stack: a real Temporal dev server, the reference provider
 * really fetching pages over loopback HTTP, a real SQLite store, a real worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, KEYS, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';
import { resultOf } from '../helpers/cancel.js';

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  // One active scrape per account (the seeds' default), jobs running ≥ 300 ms.
  stack = await startStack({ profile: { concurrency: 4, minRunMs: 300 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

describe('a scrape end to end', () => {
  it('completes, writes one result row and keeps the task ID in workflow, search attributes and store', async () => {
    const url = pages.pageUrl('wikipedia');
    const ref = await stack.client.startScrape({ account: 'acme', url, key: 'e2e-1', policy: FAST_POLICY });
    expect(ref.jobId).toBe('scrape:acme:e2e-1');
    const view = await stack.temporal.workflow.getHandle(ref.jobId).result();
    expect(view.state).toBe('completed');
    const row = (await stack.store.jobs.get(ref.jobId))!;
    expect(row.state).toBe('completed');
    expect(view.taskId).toBe(row.task_id);
    expect(row.task_id).toMatch(/\S+/);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    const result = await stack.client.getResult('acme', ref.jobId);
    expect(result.httpStatus).toBe(200);
    expect(result.finalUrl).toBe(url);
    expect(result.markdown?.length).toBeGreaterThan(1000);
    expect(result.links.length).toBeGreaterThan(10);
    const desc = await stack.temporal.workflow.getHandle(ref.jobId).describe();
    expect(desc.status.name).toBe('COMPLETED');
    const sa = desc.searchAttributes;
    expect(sa.ScrapeState).toEqual(['completed']);
    expect(sa.ScrapeTaskId).toEqual([row.task_id]);
    expect(sa.ScrapeAccount).toEqual(['acme']);
    expect(sa.ScrapeProvider).toEqual(['reference']);
    expect(await desc.staticSummary()).toContain(url);
    expect(stack.sim.stats().jobsCreated.byAccount.acme).toBe(1);
  });

  it('starting the same logical request twice gives one workflow and one provider job', async () => {
    const url = pages.pageUrl('001');
    const before = stack.sim.stats().jobsCreated.total;
    const [a, b] = await Promise.all([
      stack.client.startScrape({ account: 'acme', url, key: 'same-key', policy: FAST_POLICY }),
      stack.client.startScrape({ account: 'acme', url, key: 'same-key', policy: FAST_POLICY }),
    ]);
    expect(a.jobId).toBe(b.jobId);
    await waitForState(stack.store, a.jobId, ['completed']);
    // A repeat after completion returns the finished job and creates nothing.
    const c = await stack.client.startScrape({ account: 'acme', url, key: 'same-key', policy: FAST_POLICY });
    expect(c.jobId).toBe(a.jobId);
    expect(c.created).toBe(false);
    const runs = [];
    for await (const w of stack.temporal.workflow.list({ query: `WorkflowId = "${a.jobId}"` })) runs.push(w.runId);
    expect(runs).toHaveLength(1);
    expect(stack.sim.stats().jobsCreated.total - before).toBe(1);
    expect(await stack.store.results.count({ jobId: a.jobId })).toBe(1);
  });

  it('the same key with other parameters is a conflict, never a silent reuse', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('002'),
      key: 'conflict-key',
      policy: FAST_POLICY,
    });
    await expect(
      stack.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('003-metadata-preferred'),
        key: 'conflict-key',
        policy: FAST_POLICY,
      }),
    ).rejects.toMatchObject({ code: 'conflict' });
    await waitForState(stack.store, ref.jobId, ['completed']);
    await expect(
      stack.client.startScrape({ account: 'acme', url: pages.pageUrl('003-metadata-preferred'), key: 'conflict-key' }),
    ).rejects.toMatchObject({
      code: 'conflict',
    });
  });

  it('a derived key makes a repeat of the same request the same job', async () => {
    const url = pages.pageUrl('aclu');
    const a = await stack.client.startScrape({ account: 'acme', url, policy: FAST_POLICY });
    const b = await stack.client.startScrape({ account: 'acme', url, policy: FAST_POLICY });
    expect(a.jobId).toBe(b.jobId);
    expect(a.jobId).toMatch(/^scrape:acme:127\.0\.0\.1-pages-aclu-[0-9a-f]{10}$/); // readable: host, path slug, short hash
    await waitForState(stack.store, a.jobId, ['completed']);
  });

  it('the cancel signal on a pending job reaches the provider cancel endpoint and ends it cancelled', async () => {
    const fault = stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'cancel-me',
      action: 'never_finish',
    });
    try {
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.url}/slow?ms=1&to=/pages/ars-1/&cancel-me`,
        key: 'cancel-1',
        policy: FAST_POLICY,
      });
      const pending = await waitFor(async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r?.state === 'pending' && r.status_checks > 0 ? r : undefined;
      });
      const cancelsBefore = stack.sim.stats().cancelCalls;
      await stack.temporal.workflow.getHandle(ref.jobId).signal('cancel', { reason: 'test', requestedBy: 'vitest' });
      const row = await waitForState(stack.store, ref.jobId, [
        'cancelled',
        'cancel_unconfirmed',
        'failed',
        'completed',
      ]);
      expect(row.state).toBe('cancelled');
      expect(stack.sim.stats().cancelCalls - cancelsBefore).toBe(1);
      expect(stack.sim.getJob(pending.task_id!)?.status).toBe('cancelled');
      expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(0);
    } finally {
      stack.sim.faults.remove(fault);
    }
  });

  it('a task cancelled at the provider by someone else ends cancelled, and its run closes as README says of `cancelled` (Canceled), not Completed', async () => {
    const fault = stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'cancelled-elsewhere',
      action: 'never_finish',
    });
    try {
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.url}/slow?ms=1&to=/pages/ars-1/&cancelled-elsewhere`,
        key: 'cancelled-elsewhere',
        policy: FAST_POLICY,
      });
      const pending = await waitFor(async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r?.state === 'pending' && r.status_checks > 0 ? r : undefined;
      });
      // Someone with the account's key cancels the task at the provider, outside this workflow.
      const res = await fetch(`${stack.sim.url}/api/jobs/${encodeURIComponent(pending.task_id!)}/cancel`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${KEYS.acme}` },
      });
      expect(res.status).toBeLessThan(300);
      const row = await waitForState(stack.store, ref.jobId, ['cancelled', 'failed', 'completed', 'expired']);
      expect(row.state).toBe('cancelled');
      const handle = stack.temporal.workflow.getHandle(ref.jobId);
      await handle.result().catch(() => undefined);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
    } finally {
      stack.sim.faults.remove(fault);
    }
  });

  it('a job that never finishes ends tracking_interrupted at its deadline, keeping its task ID', async () => {
    const fault = stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'never-ends',
      action: 'never_finish',
    });
    try {
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('heise')}?never-ends`,
        key: 'deadline-1',
        policy: { ...FAST_POLICY, deadlineMs: 3_000 },
      });
      const row = await waitForState(stack.store, ref.jobId, ['tracking_interrupted', 'failed', 'completed'], 20_000);
      expect(row.state).toBe('tracking_interrupted');
      expect(row.task_id).toBeTruthy();
      expect(stack.sim.getJob(row.task_id!)?.status).toBe('running');
      // The run closes Failed (the Web UI's status tells it from Completed), its failure typed by
      // the state and carrying the view.
      const closed = await resultOf(stack, ref.jobId);
      expect(closed.failedAs).toBe('ScrapeJob.tracking_interrupted');
      expect(closed.view?.state).toBe('tracking_interrupted');
      expect(closed.view?.taskId).toBe(row.task_id);
      expect(stack.sim.stats().jobsCreated.byAccount.acme).toBeGreaterThan(0);
    } finally {
      stack.sim.faults.remove(fault);
    }
  });

  it('a 401 on submit ends the job failed at once, with the reason and no retries', async () => {
    const badKey = await startStack({ profile: {} });
    try {
      // Point the provider credentials at a key the provider does not know.
      (badKey.config.providers.reference!.credentials!.default as { apiKey: string }).apiKey =
        'sk-wrong-key-0000000000';
      await badKey.stopWorker();
      await badKey.startWorker();
      const ref = await badKey.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('cnn'),
        key: 'auth-1',
        policy: FAST_POLICY,
      });
      const row = await waitForState(badKey.store, ref.jobId, ['failed', 'completed', 'pending'], 20_000);
      expect(row.state).toBe('failed');
      const err = JSON.parse(row.last_error!);
      expect(err.httpStatus).toBe(401);
      expect(err.kind).toBe('permanent');
      expect(err.message).not.toContain('sk-wrong-key');
      expect(badKey.sim.stats().requests.byEndpoint.submit).toBe(1);
      expect(badKey.sim.stats().jobsCreated.total).toBe(0);
    } finally {
      await badKey.stop();
    }
  });
});
