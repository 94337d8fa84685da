/**
 * A lost submit on a provider whose list lags (within the lag its kind declares). A cancel that
 * arrives while the reconcile is waiting out that lag: the cancel path reconciles again before it
 * decides what to stop, and that reconcile must not read the lagging list early and call the job
 * absent ("no task exists at the provider, nothing to stop") while the provider job runs on and
 * bills. It waits out the lag like the acquisition's reconcile, finds the task and stops it. And a
 * submit held back by the key's cool-down before it left: the lag counts from when it left.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor } from '../../src/client/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import type { CancelResult } from '../../src/client/index.js';
import {
  expectSettled,
  providerCancelCalls,
  providerJobs,
  sendCancel,
  settle,
  waitCancelRecorded,
} from '../helpers/cancel.js';
import { FAST_POLICY, recordResponses, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, cancelConfirmDeadlineMs: 10_000 };
const RUN = randomUUID().slice(0, 6);
/** The sim shows a new job in its list this long after creating it: below the kind's declared 10 s. */
const LIST_LAG_MS = 8_000;

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({
    profile: { concurrency: 100, idempotency: false, list: true, listLagMs: LIST_LAG_MS },
  });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

/**
 * Starts job `tag` whose submit answer is lost after the sim created the job (which then never
 * finishes), and returns its job ID once the acquisition's reconcile has read the lagging list,
 * found nothing yet, and waits out the lag.
 */
async function startLostSubmit(tag: string): Promise<string> {
  const jobId = jobIdFor('acme', tag);
  stack.sim.faults.add({
    account: 'acme',
    endpoint: 'submit',
    urlContains: tag,
    action: 'drop_after_commit',
    times: 1,
  });
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
  await stack.client.startScrape({
    account: 'acme',
    url: `${pages.pageUrl('003-metadata-preferred')}?${tag}`,
    key: tag,
    policy: POLICY,
  });
  await waitFor(
    async () => (await stack.store.findings.timeline(jobId)).some((e) => e.type === 'reconcile_settling'),
    30_000,
    'the reconcile to wait out the lag',
  );
  return jobId;
}

describe('a cancel while the reconcile of a lost submit waits out the list lag', () => {
  it('does not conclude "no task exists" from the lagging list: the task is found and stopped, never left running', async () => {
    const tag = `lag-cancel-${RUN}`;
    const jobId = await startLostSubmit(tag);
    const created = providerJobs(stack, tag);
    expect(created).toHaveLength(1);
    // The list cannot show the job yet: what the cancel's reconcile reads next proves nothing.
    expect(Date.now() - Date.parse(created[0]!.created_at)).toBeLessThan(LIST_LAG_MS);
    const sent = sendCancel(stack, 'signal', jobId);
    await waitCancelRecorded(stack, jobId, 'signal');
    await sent.done;
    const s = await settle(stack, jobId);

    const jobs = providerJobs(stack, tag);
    expect(jobs).toHaveLength(1); // never resubmitted
    // The provider job exists: a final state that says "nothing to stop" would be false.
    expect(s.report?.detail ?? '').not.toMatch(/no task exists/);
    expect(s.row.task_id).toBe(jobs[0]!.job_id);
    expect(providerCancelCalls(stack, tag)).toBe(1);
    expect(jobs[0]!.status).toBe('cancelled');
    expect(s.row.state).toBe('cancelled');
  });

  it("signal, Update, the Web UI's cancel and an Update again, all during that wait: one provider cancel, one outcome, both Updates answer it", async () => {
    const tag = `lag-cancel4-${RUN}`;
    const jobId = await startLostSubmit(tag);
    const first = sendCancel(stack, 'signal', jobId);
    await waitCancelRecorded(stack, jobId, 'signal');
    const second = sendCancel(stack, 'update', jobId);
    await waitCancelRecorded(stack, jobId, 'update');
    await sendCancel(stack, 'native', jobId).done;
    const fourth = sendCancel(stack, 'update', jobId);
    // Every request arrived before the list could show the job.
    expect(providerCancelCalls(stack, tag)).toBe(0);
    const [r1, r2, r4] = (await Promise.all([first.done, second.done, fourth.done])) as (CancelResult | undefined)[];
    const s = await settle(stack, jobId);
    expectSettled(
      expect,
      stack,
      tag,
      s,
      { door: 'signal', state: 'cancelled', outcome: 'cancelled', calls: 1, results: 0 },
      r1,
    );
    for (const r of [r2, r4]) {
      // An Update answers the outcome observed, or (sent after the job ended) the earlier one.
      const report = r?.kind === 'observed' || r?.kind === 'already_final' ? r.report : undefined;
      expect.soft(report, 'an Update answers the one outcome').toEqual(s.report);
      expect.soft(r?.state).toBe('cancelled');
    }
    const jobs = providerJobs(stack, tag);
    expect(jobs).toHaveLength(1);
    expect(s.row.task_id).toBe(jobs[0]!.job_id);
    expect(jobs[0]!.status).toBe('cancelled');
  });
});

describe('what a job whose submit was lost says it waits for', () => {
  // Before: `waiting` was null in the row (GET /v1/scrapes/:id) and the live view while the
  // reconcile waited out the lookups' lag (up to a minute) and during the resubmit's back-off.
  it("the lookups' lag (`evidence`, with the next read's time), then the back-off before the resubmit (`resubmit`)", async () => {
    const tag = `lag-wait-${RUN}`;
    const jobId = jobIdFor('acme', tag);
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'drop_before_commit',
      times: 1,
    });
    await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${tag}`,
      key: tag,
      policy: { ...POLICY, submitRounds: 3 },
    });
    const waitOnRow = (reason: string) =>
      waitFor(
        async () => {
          const w = (await stack.client.getScrape('acme', jobId)).waiting;
          return w?.reason === reason ? w : undefined;
        },
        30_000,
        `the row to say it waits for ${reason}`,
      );
    const lag = await waitOnRow('evidence');
    expect(Date.parse(lag.until!)).toBeGreaterThan(Date.now() - 1_000);
    expect((await stack.client.getLiveView('acme', jobId)).waiting).toMatchObject({ reason: 'evidence' });
    const backOff = await waitOnRow('resubmit');
    expect(backOff.message).toMatch(/created no task.*round 2 of 3/);
    expect(backOff.until).toEqual(expect.any(String));
    expect((await waitForState(stack.store, jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    expect(providerJobs(stack, tag)).toHaveLength(1);
  });
});

describe('a submit held by the key’s cool-down, then sent, its answer lost', () => {
  // Runs last: it puts the provider key in an 8 s cool-down.
  // Before: the intent was recorded when the slot was reserved, seconds before the held submit
  // left, and the reconcile counted the list's lag from it: it proved "absent" just before the
  // job showed, and resubmitted (two paid jobs, both completed).
  it('is not proved absent by the list lagging within its declared window: one provider job', async () => {
    const [a, b] = [`held-a-${RUN}`, `held-b-${RUN}`];
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: a, action: 'never_finish' });
    const policy = { ...POLICY, deadlineMs: 120_000, activityTimeoutMs: 30_000 };
    const refA = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('002')}?${a}`,
      key: a,
      policy,
    });
    await waitForState(stack.store, refA.jobId, ['pending'], 30_000);
    const responses = recordResponses(stack);
    // A 429 on A's status read puts the key in an 8 s cool-down (a submit may be held up to 10 s in its attempt).
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'status',
      urlContains: a,
      action: 'rate_limit',
      retryAfterSeconds: 8,
      times: 1,
    });
    await waitFor(() => responses.some((r) => r.status === 429), 30_000, "A's 429");
    // B's submit creates the job when it is sent; its answer comes after the HTTP timeout.
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: b,
      action: 'delay',
      delayMs: 20_000,
      commit: true,
      times: 1,
    });
    const refB = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${b}`,
      key: b,
      policy,
    });
    const row = await waitForState(stack.store, refB.jobId, ['completed', 'failed', 'tracking_interrupted'], 90_000);
    const types = (await stack.store.findings.timeline(refB.jobId)).map((e) => e.type);
    expect(types).toContain('submit_held');
    expect(types).not.toContain('reconcile_absent');
    expect(providerJobs(stack, b)).toHaveLength(1);
    expect(row.state).toBe('completed');
    await stack.client.cancelScrape('acme', refA.jobId, { wait: false, reason: 'test done' });
  });
});
