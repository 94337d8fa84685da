/**
 * Maintenance on Temporal Schedules: expired results are purged (evidence kept, jobs
 * `expired`, never restarted), orphan and stalled jobs are found with a suggested recovery, and
 * a job left without a workflow is recovered by `resume` without a duplicate. And
 * the Schedules' runs go to a task queue of their own, so the operator's filter for jobs
 * (`JOBS_VIEW_QUERY`) leaves them out.
 */
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ensureMaintenanceSchedules,
  JOBS_VIEW_QUERY,
  maintenanceScheduleIds,
  maintenanceTaskQueue,
} from '../../src/client/schedules.js';
import { createMaintenanceWorker } from '../../src/worker.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

let pages: PageServer;
let stack: Stack;
beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 8 }, resultRetentionMs: 1_500 });
});
afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

describe('result expiry', () => {
  it('purges the payload after retention, marks the job expired, keeps the evidence and never restarts it', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('wikipedia'),
      key: 'expiring',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed']);
    const before = await stack.client.getResult('acme', ref.jobId);
    expect(before.markdown).toBeTruthy();
    await new Promise((r) => setTimeout(r, 1_600));
    const out = await stack.temporal.workflow.execute('purgeExpiredResultsWorkflow', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `purge-${Date.now()}`,
      args: [],
    });
    expect(out).toMatchObject({ purged: expect.any(Number), jobsExpired: expect.any(Number) });
    expect((out as { jobsExpired: number }).jobsExpired).toBeGreaterThanOrEqual(1);
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('expired');
    const err = await stack.client.getResult('acme', ref.jobId).catch((e) => e);
    expect(err).toMatchObject({
      code: 'expired',
      details: { state: 'expired', taskId: before.taskId, title: before.title },
    });
    const row = await stack.store.results.forJob(ref.jobId);
    expect(row).toMatchObject({ text: null, markdown: null, links: null, title: before.title });
    // Asking again never restarts the job by itself.
    const jobs = stack.sim.stats().jobsCreated.total;
    expect(
      await stack.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('wikipedia'),
        key: 'expiring',
        policy: FAST_POLICY,
      }),
    ).toMatchObject({ created: false });
    expect(stack.sim.stats().jobsCreated.total).toBe(jobs);
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('expired');
  });
});

describe('orphans and stalled jobs', () => {
  it('finds a job whose workflow is gone, suggests resume, and resume completes it on the same task', async () => {
    const tag = 'orphaned';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnn')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    const pending = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r?.task_id ? r : undefined;
    });
    await stack.temporal.workflow.getHandle(ref.jobId).terminate('simulating a lost workflow');
    const report = await stack.temporal.workflow.execute('findOrphansWorkflow', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `orphans-${Date.now()}`,
      args: [{ stalledAfterMs: 0, errorThreshold: 3 }],
    });
    expect((report as { noWorkflow: number }).noWorkflow).toBeGreaterThanOrEqual(1);
    const found = (await stack.client.orphans('acme')).find((o) => o.jobId === ref.jobId);
    expect(found).toMatchObject({ kind: 'no_workflow', state: 'pending' });
    expect(found!.suggestion).toContain(`resume ${ref.jobId}`);
    expect(found!.suggestion).toContain(pending.task_id!);

    stack.sim.release(pending.task_id!);
    const submits = stack.sim.stats().requests.byEndpoint.submit;
    await stack.client.resume('acme', ref.jobId);
    const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 30_000);
    expect(done.state).toBe('completed');
    expect(done.task_id).toBe(pending.task_id);
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(submits);
    // The next scan no longer reports it.
    await stack.temporal.workflow.execute('findOrphansWorkflow', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `orphans-${Date.now()}`,
      args: [{ stalledAfterMs: 0, errorThreshold: 3 }],
    });
    expect((await stack.client.orphans('acme')).find((o) => o.jobId === ref.jobId)).toBeUndefined();
  });

  it('reports a job whose status checks keep failing, with the suggested recovery', async () => {
    const tag = 'erroring';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitFor(async () => (await stack.store.jobs.get(ref.jobId))?.task_id);
    stack.sim.faults.add({ account: 'acme', endpoint: 'status', urlContains: tag, action: 'error_5xx', status: 503 });
    await waitFor(
      async () => ((await stack.store.jobs.get(ref.jobId))?.status_errors ?? 0) >= 2,
      30_000,
      'two failed status checks',
    );
    await stack.temporal.workflow.execute('findOrphansWorkflow', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `orphans-${Date.now()}`,
      args: [{ stalledAfterMs: 3_600_000, errorThreshold: 2 }],
    });
    const found = (await stack.client.orphans('acme')).find((o) => o.jobId === ref.jobId);
    expect(found).toMatchObject({ kind: 'repeated_errors', state: 'pending' });
    expect(found!.detail).toMatch(/status checks in a row gave up/);
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('pending'); // a failing check never fails the job
    await stack.client.cancelScrape('acme', ref.jobId, { wait: false });
  });

  it('runs both on Temporal Schedules, on a task queue of their own that the jobs’ filter leaves out', async () => {
    const tq = stack.config.temporal.taskQueue;
    const ids = await ensureMaintenanceSchedules(stack.temporal, { taskQueue: tq });
    expect(ids).toEqual(maintenanceScheduleIds(tq));
    await ensureMaintenanceSchedules(stack.temporal, { taskQueue: tq, purgeEveryMs: 60_000 }); // idempotent update
    const purge = await stack.temporal.schedule.getHandle(ids.purge).describe();
    expect(purge.action).toMatchObject({
      workflowType: 'purgeExpiredResultsWorkflow',
      taskQueue: maintenanceTaskQueue(tq),
    });
    expect(maintenanceTaskQueue(tq)).toBe(`${tq}-maintenance`);
    expect(purge.spec.intervals?.[0]?.every).toBe(60_000);
    const native = await NativeConnection.connect({ address: inject('temporal').address });
    const maintenance = await createMaintenanceWorker({ connection: native, config: stack.config, store: stack.store });
    try {
      const report = await maintenance.runUntil(async () => {
        await stack.temporal.schedule.getHandle(ids.orphans).trigger();
        const run = await waitFor(
          async () =>
            (await stack.temporal.schedule.getHandle(ids.orphans).describe()).info.recentActions[0]?.action.workflow,
          20_000,
          'a scheduled run',
        );
        return stack.temporal.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result();
      });
      expect(report).toMatchObject({ scanned: expect.any(Number), resolved: expect.any(Number) }); // the maintenance worker ran it
      // Visibility: the run is on the maintenance queue, and the jobs' filter does not list it.
      const listed = async (query: string) => {
        const ids: string[] = [];
        for await (const w of stack.temporal.workflow.list({ query })) ids.push(w.workflowId);
        return ids;
      };
      await waitFor(
        async () =>
          (await listed(`TaskQueue = "${maintenanceTaskQueue(tq)}"`)).some((id) => id.startsWith(`${ids.orphans}:run`)),
        20_000,
        'the run in visibility',
      );
      const jobsView = await listed(JOBS_VIEW_QUERY);
      expect(jobsView.length).toBeGreaterThan(0); // this file's jobs
      expect(jobsView.filter((id) => id.startsWith('scrape-maintenance:'))).toEqual([]);
      expect(await listed(`TaskQueue = "${tq}" AND WorkflowId STARTS_WITH "scrape-maintenance:"`)).toEqual([]);
    } finally {
      await native.close();
      for (const id of [ids.purge, ids.orphans]) await stack.temporal.schedule.getHandle(id).delete();
    }
  });
});
