/**
 * A cancel at every moment of a job's life, through each of the three doors
 * (the `cancel` signal, the `cancel` Update, Temporal's native cancellation as the Web UI button
 * sends it). The job is held at the moment by the provider (`hold` faults) or by the worker's own
 * activity hooks; the cancel is sent, seen in the workflow's history, and only then is the job
 * let go. Every test asserts the final state, the provider cancel calls and the result rows
 * written (see `expectSettled`). The `unknown` moment is in cancel-unknown.test.ts.
 *
 * Real stack: Temporal dev server, the reference provider over loopback, SQLite store, worker.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor, type CancelResult } from '../../src/client/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import {
  DOORS,
  HookGates,
  expectSettled,
  providerCancelCalls,
  providerJobs,
  sendCancel,
  settle,
  waitCancelRecorded,
  waitRow,
} from '../helpers/cancel.js';
import { FAST_POLICY, startStack, waitFor, type Stack } from '../helpers/stack.js';

/** Fast polling; activity attempts long enough that a held hook never times an attempt out. */
const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, activityTimeoutMs: 30_000, cancelConfirmDeadlineMs: 5_000 };
const RUN = randomUUID().slice(0, 6);

let stack: Stack;
let pages: PageServer;
const gates = new HookGates();

beforeAll(async () => {
  pages = await startPageServer();
  // Many active jobs per account: a held job never blocks another test's submit. No list lag: the
  // cancel of a job whose submit answer is held finds its task by the provider's first list read.
  stack = await startStack({ profile: { concurrency: 100 }, hooks: gates.hooks });
});

afterAll(async () => {
  gates.releaseAll();
  await stack?.stop();
  await pages?.close();
});

function job(moment: string, door: string) {
  const tag = `cm-${moment}-${door}-${RUN}`;
  return { tag, jobId: jobIdFor('acme', tag), url: `${pages.pageUrl('001')}?${tag}` };
}

describe('cancel while submitting (the provider answered, the task ID is not recorded yet)', () => {
  for (const door of DOORS) {
    it(`${door}: cancels the task the submit created, found by the provider's list while the answer is held — cancelled, 1 provider cancel, 0 results`, async () => {
      const { tag, jobId, url } = job('submitting', door);
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'queued' });
      const gate = gates.hold('afterSubmitAnswered', jobId);
      await stack.client.startScrape({ account: 'acme', url, key: tag, policy: POLICY });
      const taskId = await gate.reached;
      expect((await stack.store.jobs.get(jobId))?.task_id).toBeNull(); // mid-submit: not recorded yet
      const sent = sendCancel(stack, door, jobId);
      await waitCancelRecorded(stack, jobId, door);
      // The cancel is in history while the submit is still in flight, and it does not wait for that
      // submit: the cancel path reconciles the unanswered intent, the provider's list shows the task
      // the submit created, and that task is cancelled at the provider while the answer is still held.
      await waitFor(() => providerCancelCalls(stack, tag) > 0, 15_000, 'the provider cancel while the answer is held');
      expect(providerCancelCalls(stack, tag)).toBe(1);
      expect(stack.sim.getJob(taskId)?.status).toBe('cancelled');
      gate.release();
      const answer = (await sent.done) as CancelResult | undefined;
      const s = await settle(stack, jobId);
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
          effects: { pagesFetched: 0, creditsUsed: 0 },
        },
        answer,
      );
      expect(s.row.task_id).toBe(taskId);
      expect(gate.hits).toBe(1); // the submit ran once
      expect(providerJobs(stack, tag).map((j) => j.status)).toEqual(['cancelled']); // one provider job, no duplicate
    });
  }
});

describe('cancel while queued at the provider', () => {
  for (const door of DOORS) {
    it(`${door}: cancelled, 1 provider cancel, 0 results, no effects`, async () => {
      const { tag, jobId, url } = job('queued', door);
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'queued' });
      await stack.client.startScrape({ account: 'acme', url, key: tag, policy: POLICY });
      const row = await waitRow(
        stack,
        jobId,
        (r) => r.state === 'pending' && r.provider_status === 'queued' && r.status_checks > 0,
        'polled while queued',
      );
      const sent = sendCancel(stack, door, jobId);
      const answer = (await sent.done) as CancelResult | undefined;
      const s = await settle(stack, jobId);
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
          effects: { pagesFetched: 0, creditsUsed: 0 },
        },
        answer,
      );
      expect(stack.sim.getJob(row.task_id!)?.status).toBe('cancelled');
      expect(providerJobs(stack, tag)).toHaveLength(1);
    });
  }
});

describe('cancel while running at the provider (page already fetched)', () => {
  for (const door of DOORS) {
    it(`${door}: cancelled, 1 provider cancel, 0 results, the fetched page and credit reported as remaining effects`, async () => {
      const { tag, jobId, url } = job('running', door);
      stack.sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: tag,
        action: 'hold',
        holdIn: 'running',
      });
      await stack.client.startScrape({ account: 'acme', url, key: tag, policy: POLICY });
      const row = await waitRow(
        stack,
        jobId,
        (r) => r.provider_status === 'running' && !!r.task_id,
        'polled while running',
      );
      await waitFor(
        () => stack.sim.getJob(row.task_id!)?.pages_fetched === 1,
        30_000,
        'the provider to fetch the page',
      );
      const sent = sendCancel(stack, door, jobId);
      const answer = (await sent.done) as CancelResult | undefined;
      const s = await settle(stack, jobId);
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
    });
  }
});

describe('cancel while the result is being written (read from the provider, store write held)', () => {
  for (const door of DOORS) {
    it(`${door}: the write finishes, never half — completed, 0 provider cancels, 1 result row, the report says nothing was sent to the provider`, async () => {
      const { tag, jobId, url } = job('writing', door);
      const gate = gates.hold('beforeResultWrite', jobId);
      await stack.client.startScrape({ account: 'acme', url, key: tag, policy: POLICY });
      const taskId = await gate.reached;
      expect(await stack.store.results.count({ jobId })).toBe(0); // the write has not started
      const sent = sendCancel(stack, door, jobId);
      await waitCancelRecorded(stack, jobId, door);
      expect(await stack.store.results.count({ jobId })).toBe(0);
      // The cancel path may already have marked the row `cancelling` (the submit attempt that is
      // writing went on into the checks, so the workflow learns the task from the store).
      expect(['pending', 'cancelling']).toContain((await stack.store.jobs.get(jobId))?.state);
      gate.release();
      const answer = (await sent.done) as CancelResult | undefined;
      const s = await settle(stack, jobId);
      expectSettled(
        expect,
        stack,
        tag,
        s,
        {
          door,
          state: 'completed',
          outcome: 'completed',
          calls: 0,
          results: 1,
          execution: 'COMPLETED',
          cancelling: false,
        },
        answer,
      );
      expect.soft(s.report?.detail ?? '', 'late cancel detail').toMatch(/nothing was sent to the provider/);
      const result = await stack.client.getResult('acme', jobId);
      expect(result.taskId).toBe(taskId);
      expect(result.markdown?.length).toBeGreaterThan(100); // the whole row, not half of it
      expect(s.view.result?.resultId).toBe(result.resultId);
      expect(providerJobs(stack, tag).map((j) => j.status)).toEqual(['completed']);
      expect(gate.hits).toBe(1);
    });
  }
});
