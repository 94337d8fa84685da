/**
 * A lost submit on a provider whose list lags (within the lag its kind declares), with a cancel
 * that arrives while the reconcile is waiting out that lag. The cancel path reconciles again
 * before it decides what to stop: that reconcile must not read the lagging list early and call
 * the job absent ("no task exists at the provider, nothing to stop") while the provider job runs
 * on and bills. It waits out the lag like the acquisition's reconcile, finds the task and stops it.
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
import { FAST_POLICY, startStack, waitFor, type Stack } from '../helpers/stack.js';

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
