/**
 * The races around a cancel: a second cancel while the first is in progress (each door
 * twice, and mixed), a cancel after completion, the provider finishing while the cancel is being
 * confirmed, and the deadline-cancel policy (distinct from `tracking_interrupted`). Each test
 * asserts the final state, the provider cancel calls and the result rows written.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor, type CancelResult } from '../../src/client/index.js';
import { startResumedRun } from '../../src/client/start.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { cancelUpdate } from '../../src/workflows/scrape/messages.js';
import {
  CANCEL_REQ,
  cancelEventsIn,
  expectSettled,
  historyOf,
  providerCancelCalls,
  providerJobs,
  sendCancel,
  settle,
  startContextOf,
  stateEvents,
  waitCancelRecorded,
  waitRow,
  type Door,
} from '../helpers/cancel.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, cancelConfirmDeadlineMs: 8_000 };
const RUN = randomUUID().slice(0, 6);

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 100 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

function job(kind: string) {
  const tag = `cr-${kind}-${RUN}`;
  return { tag, jobId: jobIdFor('acme', tag), url: `${pages.pageUrl('aclu')}?${tag}` };
}

async function startRunning(tag: string, jobId: string, url: string, policy: Partial<PollPolicy> = POLICY) {
  await stack.client.startScrape({ account: 'acme', url, key: tag, policy });
  return waitRow(
    stack,
    jobId,
    (r) => r.state === 'pending' && r.provider_status === 'running',
    'running at the provider',
  );
}

describe('cancelling twice: same outcome, one provider cancel call', () => {
  const pairs: [Door, Door][] = [
    ['signal', 'signal'],
    ['update', 'update'],
    ['native', 'native'],
    ['signal', 'update'],
    ['update', 'native'],
    ['native', 'signal'],
    ['native', 'update'],
  ];
  for (const [first, second] of pairs) {
    it(`${first} then ${second} while the first is being confirmed: cancelled once, both answers the same outcome, 1 provider cancel, 0 results`, async () => {
      const { tag, jobId, url } = job(`double-${first}-${second}`);
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
      // The provider accepts the cancel (202) and stops the task 3 s later: the first cancel is in progress meanwhile.
      stack.sim.faults.add({
        account: 'acme',
        endpoint: 'cancel',
        urlContains: tag,
        action: 'cancel_pending',
        delayMs: 3_000,
      });
      const row = await startRunning(tag, jobId, url);
      const a = sendCancel(stack, first, jobId);
      await waitFor(() => providerCancelCalls(stack, tag) === 1, 30_000, 'the first cancel to reach the provider');
      const b = sendCancel(stack, second, jobId);
      if (second === 'native') await b.done;
      else await waitCancelRecorded(stack, jobId, second, first === second ? 2 : 1);
      // Guard: the second cancel arrived while the first was still unconfirmed.
      expect(stack.sim.getJob(row.task_id!)?.status).toBe('running');
      const [ra, rb] = (await Promise.all([a.done, b.done])) as (CancelResult | undefined)[];
      const s = await settle(stack, jobId);
      expectSettled(
        expect,
        stack,
        tag,
        s,
        { door: first, state: 'cancelled', outcome: 'cancelled', calls: 1, results: 0 },
        ra,
      );
      for (const [door, r] of [
        [first, ra],
        [second, rb],
      ] as const) {
        if (door === 'update') {
          expect.soft(r?.kind, `${door} answer kind`).toBe('observed');
          if (r?.kind === 'observed') expect.soft(r.report, `${door} answer = the one report`).toEqual(s.report);
        }
      }
      expect
        .soft(cancelEventsIn(s.history, second), `the second (${second}) cancel is in history`)
        .toBeGreaterThanOrEqual(1);
      expect(stateEvents(s).filter((x) => x === 'cancelling')).toHaveLength(1); // one cancel path
      expect(providerJobs(stack, tag)).toHaveLength(1);
      // A third cancel, after the end, changes nothing and returns the same outcome.
      const third = await stack.client.cancelScrape('acme', jobId, { ...CANCEL_REQ });
      expect.soft(third.kind).toBe('already_final');
      expect.soft(third.state).toBe('cancelled');
      expect
        .soft(
          third.kind === 'already_final' ? third.report?.outcome : undefined,
          'third cancel reports the earlier outcome',
        )
        .toBe('cancelled');
      expect(providerCancelCalls(stack, tag)).toBe(1);
    });
  }
});

describe('cancel after completion: changes nothing and says so', () => {
  const doors: Door[] = ['signal', 'update', 'native'];
  for (const door of doors) {
    it(`${door}: already_final / refused, 0 provider cancels, the one result row kept, state and timeline unchanged`, async () => {
      const { tag, jobId, url } = job(`after-${door}`);
      await stack.client.startScrape({ account: 'acme', url, key: tag, policy: POLICY });
      const before = await settle(stack, jobId);
      expect(before.row.state).toBe('completed');
      const eventsBefore = before.history.length;
      if (door === 'native') {
        // What the Web UI button sends. Whether the server answers OK or refuses, nothing may change.
        await stack.temporal.workflow
          .getHandle(jobId)
          .cancel()
          .catch(() => undefined);
      } else {
        const r = await stack.client.cancelScrape('acme', jobId, { ...CANCEL_REQ, wait: door === 'update' });
        expect(r.kind).toBe('already_final');
        expect(r.state).toBe('completed');
        expect(r.kind === 'already_final' ? r.report : 'n/a').toBeUndefined(); // no cancel ever ran
        if (door === 'update') {
          // The raw Update on the closed workflow is refused too.
          await expect(
            stack.temporal.workflow.getHandle(jobId).executeUpdate(cancelUpdate, { args: [CANCEL_REQ] }),
          ).rejects.toThrow();
        }
      }
      const after = await settle(stack, jobId);
      expect(after.status).toBe('COMPLETED');
      expect(after.row.state).toBe('completed');
      expect(after.row.updated_at).toBe(before.row.updated_at);
      expect(after.timeline).toEqual(before.timeline);
      expect(after.history.length).toBe(eventsBefore);
      expect(after.results).toBe(1);
      expect(after.outbox).toBe(1);
      expect(after.view.cancel).toBeUndefined();
      expect(after.scrapeState).toBe('completed');
      expect(providerCancelCalls(stack, tag)).toBe(0);
      expect(providerJobs(stack, tag).map((j) => j.status)).toEqual(['completed']);
    });
  }
});

describe('the provider finishes while the cancel is being confirmed', () => {
  const doors: Door[] = ['signal', 'update', 'native'];
  for (const door of doors) {
    it(`${door}: outcome completed (the provider accepted the cancel, then reported the work complete), result written once, 1 provider cancel, 1 result row`, async () => {
      const { tag, jobId, url } = job(`finish-first-${door}`);
      stack.sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: tag,
        action: 'hold',
        holdIn: 'running',
      });
      // The provider answers 202 and would cancel much later: the job finishes first.
      stack.sim.faults.add({
        account: 'acme',
        endpoint: 'cancel',
        urlContains: tag,
        action: 'cancel_pending',
        delayMs: 120_000,
      });
      const row = await startRunning(tag, jobId, url);
      const sent = sendCancel(stack, door, jobId);
      await waitFor(() => providerCancelCalls(stack, tag) === 1, 30_000, 'the cancel to reach the provider');
      expect(await stack.store.results.count({ jobId })).toBe(0);
      expect(stack.sim.release(row.task_id!)).toBe(true); // the provider finishes now, before cancelling
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
          calls: 1,
          results: 1,
          execution: 'COMPLETED',
          effects: { pagesFetched: 1, creditsUsed: 1 },
        },
        answer,
      );
      // Only what was observed: the accepted cancel, then the provider's own "completed".
      expect
        .soft(s.report?.detail ?? '', 'the report says what the provider answered')
        .toMatch(/accepted the cancel at .*; it then reported the task completed \(status completed\)/);
      expect.soft(s.report?.detail ?? '').not.toMatch(/too late/);
      expect(stack.sim.getJob(row.task_id!)?.status).toBe('completed');
      expect((await stack.client.getResult('acme', jobId)).taskId).toBe(row.task_id);
      expect(providerJobs(stack, tag)).toHaveLength(1);
      // Cancelling again: nothing changes, the earlier observed outcome is returned.
      const again = await stack.client.cancelScrape('acme', jobId, { ...CANCEL_REQ });
      expect.soft(again.kind).toBe('already_final');
      expect
        .soft(
          again.kind === 'already_final' ? again.report?.outcome : undefined,
          'a repeat cancel reports the earlier outcome',
        )
        .toBe('completed');
      expect(await stack.store.results.count({ jobId })).toBe(1);
      expect(providerCancelCalls(stack, tag)).toBe(1);
    });
  }
});

describe('deadlines', () => {
  it('onDeadline: cancel — the deadline runs the cancel path: cancelled (via deadline), 1 provider cancel, 0 results, not tracking_interrupted', async () => {
    const { tag, jobId, url } = job('deadline-cancel');
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const row = await startRunning(tag, jobId, url, { ...POLICY, deadlineMs: 3_000, onDeadline: 'cancel' });
    const s = await settle(stack, jobId, 30_000);
    expectSettled(expect, stack, tag, s, {
      door: 'signal',
      via: 'deadline',
      state: 'cancelled',
      outcome: 'cancelled',
      calls: 1,
      results: 0,
    });
    expect(s.report?.reason).toMatch(/deadline/);
    expect(stateEvents(s)).not.toContain('tracking_interrupted');
    expect(stack.sim.getJob(row.task_id!)?.status).toBe('cancelled');
    // No door was used: no cancel signal, Update or cancel request in history.
    expect(
      cancelEventsIn(s.history, 'signal') + cancelEventsIn(s.history, 'update') + cancelEventsIn(s.history, 'native'),
    ).toBe(0);
  });

  it('onDeadline: interrupt (default) — tracking_interrupted, no cancel, 0 provider cancels, the task still runs; a cancel then stops it at the provider', async () => {
    const { tag, jobId, url } = job('deadline-interrupt');
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const row = await startRunning(tag, jobId, url, { ...POLICY, deadlineMs: 3_000 });
    const s = await settle(stack, jobId, 30_000);
    expect(s.status).toBe('FAILED'); // the run's own status tells a job that did not produce its result
    expect(s.row.state).toBe('tracking_interrupted');
    expect(s.view.state).toBe('tracking_interrupted');
    expect(s.scrapeState).toBe('tracking_interrupted');
    expect(s.view.cancel).toBeUndefined();
    expect(stateEvents(s)).not.toContain('cancelling');
    expect(providerCancelCalls(stack, tag)).toBe(0);
    expect(s.results).toBe(0);
    expect(stack.sim.getJob(row.task_id!)?.status).toBe('running');
    // Its owner then cancels it: the task that may still run is stopped at the provider, through a
    // resumed run. Before: `already_final`, nothing sent, the task ran on (and billed).
    const answer = await stack.client.cancelScrape('acme', jobId, { reason: 'stop it', timeoutMs: 30_000 });
    expect(answer).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    expect(providerCancelCalls(stack, tag)).toBe(1);
    expect(stack.sim.getJob(row.task_id!)?.status).toBe('cancelled');
    // A second cancel changes nothing and says so.
    expect(await stack.client.cancelScrape('acme', jobId)).toMatchObject({ kind: 'already_final', state: 'cancelled' });
    expect(providerCancelCalls(stack, tag)).toBe(1);
  });

  it('a cancel of a tracking_interrupted job whose client dies right after starting the resumed run still stops the task: no orphan', async () => {
    const { tag, jobId, url } = job('interrupt-client-dies');
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const row = await startRunning(tag, jobId, url, { ...POLICY, deadlineMs: 3_000 });
    await settle(stack, jobId, 30_000);
    const interrupted = (await stack.store.jobs.get(jobId))!;
    expect(interrupted.state).toBe('tracking_interrupted');
    // What `cancelScrape` does before its Update, and nothing after: the client is gone. Before, the
    // client first moved the row to `pending`, so a client that died between the two steps left a
    // non-final row with no run (an orphan whose later cancels answered `not_running`).
    await startResumedRun(startContextOf(stack), interrupted, {
      pendingCancel: { reason: 'stop it', requestedBy: 'acme' },
    });
    const end = await waitForState(
      stack.store,
      jobId,
      ['cancelled', 'cancel_unconfirmed', 'completed', 'failed'],
      30_000,
    );
    expect(end.state).toBe('cancelled');
    expect(providerCancelCalls(stack, tag)).toBe(1);
    expect(stack.sim.getJob(row.task_id!)?.status).toBe('cancelled');
    const moves = (await stack.store.findings.timeline(jobId)).map((e) => e.state);
    expect(moves.slice(moves.lastIndexOf('tracking_interrupted'))).not.toContain('pending');
    expect(await stack.client.cancelScrape('acme', jobId)).toMatchObject({ kind: 'already_final', state: 'cancelled' });
  });
});

describe('history shows each door', () => {
  it('the signal, the Update and the cancel request are each visible in history for the job they cancelled', async () => {
    // Already covered per test; here one job gets all three in order, and the path still runs once.
    const { tag, jobId, url } = job('three-doors');
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'cancel',
      urlContains: tag,
      action: 'cancel_pending',
      delayMs: 3_000,
    });
    await startRunning(tag, jobId, url);
    const sig = sendCancel(stack, 'signal', jobId);
    await waitFor(() => providerCancelCalls(stack, tag) === 1, 30_000, 'the first cancel to reach the provider');
    const upd = sendCancel(stack, 'update', jobId);
    await waitCancelRecorded(stack, jobId, 'update');
    const nat = sendCancel(stack, 'native', jobId);
    await nat.done;
    await Promise.all([sig.done, upd.done]);
    const s = await settle(stack, jobId);
    const events = await historyOf(stack, jobId);
    expect(cancelEventsIn(events, 'signal')).toBe(1);
    expect(cancelEventsIn(events, 'update')).toBe(1);
    expect(cancelEventsIn(events, 'native')).toBe(1);
    expect(s.row.state).toBe('cancelled');
    expect(s.report?.via).toBe('signal');
    expect(providerCancelCalls(stack, tag)).toBe(1);
    expect(s.results).toBe(0);
  });
});
