/**
 * A cancel at the `unknown` moment: the provider created the task but its `202` was lost
 * (`drop_after_commit`), so the job waits in `unknown`; a cancel arrives there through each of
 * the three doors. Reconcile first, then cancel the task that turns out to exist:
 * - on a provider with neither idempotency nor list, reconciliation cannot tell: the outcome is
 *   `cancel_unconfirmed` (with the reason), nothing is resubmitted and nothing is "cancelled";
 * - on a provider with a list endpoint, reconciliation (held by a failing list until the cancel is
 *   in history) finds the task, and the cancel stops it at the provider.
 * Plus the deadline-cancel policy for a job stuck in `unknown`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor, type CancelResult } from '../../src/client/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import {
  DOORS,
  expectSettled,
  providerCancelCalls,
  providerJobs,
  sendCancel,
  settle,
  waitCancelRecorded,
  waitRow,
} from '../helpers/cancel.js';
import { FAST_POLICY, startStack, waitFor, type Stack } from '../helpers/stack.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, cancelConfirmDeadlineMs: 5_000 };
const RUN = randomUUID().slice(0, 6);

let blind: Stack; // idempotency: false, list: false
let listing: Stack; // idempotency: false, list: true
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  [blind, listing] = await Promise.all([
    startStack({ profile: { concurrency: 100, idempotency: false, list: false } }),
    startStack({ profile: { concurrency: 100, idempotency: false, list: true } }),
  ]);
});

afterAll(async () => {
  await blind?.stop();
  await listing?.stop();
  await pages?.close();
});

/** The provider creates the task, the answer is lost, and the task runs on without finishing. */
function lostAnswer(stack: Stack, tag: string): void {
  stack.sim.faults.add({
    account: 'acme',
    endpoint: 'submit',
    urlContains: tag,
    action: 'drop_after_commit',
    times: 1,
  });
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
}

describe('cancel while unknown, provider without idempotency and list', () => {
  for (const door of DOORS) {
    it(`${door}: reconciliation cannot tell — cancel_unconfirmed with the reason, 0 provider cancels, 0 results, no resubmission`, async () => {
      const tag = `cu-blind-${door}-${RUN}`;
      const jobId = jobIdFor('acme', tag);
      lostAnswer(blind, tag);
      await blind.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('002')}?${tag}`,
        key: tag,
        policy: POLICY,
      });
      await waitRow(blind, jobId, (r) => r.state === 'unknown', 'unknown');
      await waitFor(
        async () => (await blind.store.findings.timeline(jobId)).some((e) => e.type === 'reconcile_undecided'),
        30_000,
        'reconcile to give up',
      );
      expect(providerJobs(blind, tag)).toHaveLength(1); // the task exists at the provider; we cannot know
      const answer = (await sendCancel(blind, door, jobId).done) as CancelResult | undefined;
      const s = await settle(blind, jobId);
      expectSettled(
        expect,
        blind,
        tag,
        s,
        { door, state: 'cancel_unconfirmed', outcome: 'cancel_unconfirmed', calls: 0, results: 0 },
        answer,
      );
      expect
        .soft(s.report?.detail ?? '', 'evidence: why it is unconfirmed')
        .toMatch(/could not determine whether a provider task exists/);
      expect(s.row.task_id).toBeNull();
      // Never resubmitted, never assumed stopped: the one provider task still runs.
      expect(providerJobs(blind, tag).map((j) => j.status)).toEqual(['running']);
      expect(blind.sim.stats().requests.byAccount.acme!.byEndpoint.submit).toBeGreaterThan(0);
    });
  }

  it('deadline-cancel policy on a job stuck in unknown: cancelled by the deadline path (cancel_unconfirmed, via deadline), not left waiting forever', async () => {
    const tag = `cu-deadline-${RUN}`;
    const jobId = jobIdFor('acme', tag);
    lostAnswer(blind, tag);
    await blind.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('002')}?${tag}`,
      key: tag,
      policy: { ...POLICY, deadlineMs: 3_000, onDeadline: 'cancel' },
    });
    await waitRow(blind, jobId, (r) => r.state === 'unknown', 'unknown');
    try {
      // Deadline 3 s after start; 20 s is ample for the deadline path to run.
      const s = await settle(blind, jobId, 20_000);
      expectSettled(expect, blind, tag, s, {
        door: 'signal',
        via: 'deadline',
        state: 'cancel_unconfirmed',
        outcome: 'cancel_unconfirmed',
        calls: 0,
        results: 0,
      });
      expect(providerJobs(blind, tag)).toHaveLength(1);
    } finally {
      await blind.temporal.workflow
        .getHandle(jobId)
        .terminate('test cleanup')
        .catch(() => undefined);
    }
  });
});

describe('cancel while unknown, provider with a list endpoint (reconcile, then cancel the task found)', () => {
  for (const door of DOORS) {
    it(`${door}: reconciliation finds the task, the cancel stops it — cancelled, 1 provider cancel, 0 results, no duplicate`, async () => {
      const tag = `cu-list-${door}-${RUN}`;
      const jobId = jobIdFor('acme', tag);
      lostAnswer(listing, tag);
      // Reconciliation is held in `unknown` by a failing list until the cancel is in history.
      const listDown = listing.sim.faults.add({ account: 'acme', endpoint: 'list', action: 'error_5xx', status: 503 });
      const listsBefore = listing.sim.stats().requests.byEndpoint.list;
      try {
        await listing.client.startScrape({
          account: 'acme',
          url: `${pages.pageUrl('003-metadata-preferred')}?${tag}`,
          key: tag,
          policy: POLICY,
        });
        await waitRow(listing, jobId, (r) => r.state === 'unknown', 'unknown');
        await waitFor(
          () => listing.sim.stats().requests.byEndpoint.list > listsBefore,
          30_000,
          'reconciliation to try the list',
        );
        const sent = sendCancel(listing, door, jobId);
        await waitCancelRecorded(listing, jobId, door);
        expect((await listing.store.jobs.get(jobId))?.task_id).toBeNull();
        expect(providerCancelCalls(listing, tag)).toBe(0);
        listing.sim.faults.remove(listDown);
        const answer = (await sent.done) as CancelResult | undefined;
        const s = await settle(listing, jobId);
        expectSettled(
          expect,
          listing,
          tag,
          s,
          {
            door,
            state: 'cancelled',
            outcome: 'cancelled',
            calls: 1,
            results: 0,
            effects: { pagesFetched: 0, creditsUsed: 1 },
          },
          answer,
        );
        const jobs = providerJobs(listing, tag);
        expect(jobs).toHaveLength(1); // reconciled, never resubmitted
        expect(s.row.task_id).toBe(jobs[0]!.job_id);
        expect(jobs[0]!.status).toBe('cancelled');
      } finally {
        listing.sim.faults.remove(listDown);
      }
    });
  }
});
