/**
 * A provider without a cancel endpoint. The outcome is `cancel_unconfirmed`,
 * said with evidence (no endpoint; the task may still run; its last status), never `cancelled`.
 * Two configurations: the provider entry declares `cancel: false` (the adapter knows and calls
 * nothing), and an entry that claims a cancel endpoint the provider does not have (the provider
 * answers `404 NOT_SUPPORTED`). Plus the deadline-cancel policy on such a provider.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor, type CancelResult } from '../../src/client/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { DOORS, expectSettled, providerJobs, sendCancel, settle, waitRow } from '../helpers/cancel.js';
import { FAST_POLICY, startStack, type Stack } from '../helpers/stack.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, cancelConfirmDeadlineMs: 5_000 };
const RUN = randomUUID().slice(0, 6);

let declared: Stack; // capabilities.cancel = false: the adapter knows there is no endpoint
let claimed: Stack; // capabilities.cancel = true, but the provider answers 404 NOT_SUPPORTED
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  [declared, claimed] = await Promise.all([
    startStack({ profile: { concurrency: 100, cancel: false } }),
    startStack({ profile: { concurrency: 100, cancel: false } }),
  ]);
  const entry = claimed.config.providers.reference!;
  if (entry.kind !== 'reference') throw new Error('the stack configures a reference provider');
  entry.capabilities.cancel = true;
  await claimed.stopWorker();
  await claimed.startWorker();
});

afterAll(async () => {
  await declared?.stop();
  await claimed?.stop();
  await pages?.close();
});

async function startRunning(stack: Stack, tag: string, policy: Partial<PollPolicy> = POLICY) {
  const jobId = jobIdFor('acme', tag);
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
  await stack.client.startScrape({ account: 'acme', url: `${pages.pageUrl('001')}?${tag}`, key: tag, policy });
  const row = await waitRow(stack, jobId, (r) => r.state === 'pending' && r.provider_status === 'running', 'running');
  return { jobId, row };
}

const cancelRequests = (stack: Stack) => stack.sim.stats().requests.byAccount.acme?.byEndpoint.cancel ?? 0;

describe('provider entry without a cancel endpoint (capabilities.cancel = false)', () => {
  for (const door of DOORS) {
    it(`${door}: cancel_unconfirmed with evidence, 0 provider cancel calls, 0 results, the task still runs`, async () => {
      const tag = `cn-declared-${door}-${RUN}`;
      const before = cancelRequests(declared);
      const { jobId, row } = await startRunning(declared, tag);
      const answer = (await sendCancel(declared, door, jobId).done) as CancelResult | undefined;
      const s = await settle(declared, jobId);
      expectSettled(
        expect,
        declared,
        tag,
        s,
        { door, state: 'cancel_unconfirmed', outcome: 'cancel_unconfirmed', calls: 0, results: 0 },
        answer,
      );
      expect(cancelRequests(declared) - before).toBe(0);
      expect
        .soft(s.report?.detail ?? '', 'evidence in the report')
        .toMatch(/has no cancel endpoint; the task may still run \(last provider status: running\)/);
      expect(s.timeline.some((e) => e.type === 'cancel_unsupported')).toBe(true);
      expect(declared.sim.getJob(row.task_id!)?.status).toBe('running');
      expect(providerJobs(declared, tag)).toHaveLength(1);
      // Asking again cannot help: no run is started to ask a provider that has no cancel endpoint.
      expect(await declared.client.cancelScrape('acme', jobId)).toMatchObject({
        kind: 'already_final',
        state: 'cancel_unconfirmed',
      });
      expect((await declared.temporal.workflow.getHandle(jobId).describe()).status.name).not.toBe('RUNNING');
      expect((await declared.store.jobs.get(jobId))?.state).toBe('cancel_unconfirmed');
    });
  }

  it("a tracking_interrupted job: the run resumed to cancel it answers at once (no endpoint); the answer is this request's outcome, observed", async () => {
    const tag = `cn-interrupted-${RUN}`;
    const { jobId, row } = await startRunning(declared, tag, { ...POLICY, deadlineMs: 3_000 });
    expect((await settle(declared, jobId, 30_000)).row.state).toBe('tracking_interrupted');
    const answer = await declared.client.cancelScrape('acme', jobId, { reason: 'stop it', timeoutMs: 30_000 });
    // The run may finish before the Update reaches it: before, that answered `already_final`, as if
    // the outcome were an earlier request's.
    expect(answer).toMatchObject({
      kind: 'observed',
      state: 'cancel_unconfirmed',
      report: { outcome: 'cancel_unconfirmed', reason: 'stop it' },
    });
    expect((await declared.store.jobs.get(jobId))?.state).toBe('cancel_unconfirmed');
    expect(declared.sim.getJob(row.task_id!)?.status).toBe('running');
  });

  it('deadline-cancel policy: cancel_unconfirmed via deadline, 0 provider cancel calls, not tracking_interrupted', async () => {
    const tag = `cn-deadline-${RUN}`;
    const before = cancelRequests(declared);
    const { jobId, row } = await startRunning(declared, tag, { ...POLICY, deadlineMs: 3_000, onDeadline: 'cancel' });
    const s = await settle(declared, jobId, 30_000);
    expectSettled(expect, declared, tag, s, {
      door: 'signal',
      via: 'deadline',
      state: 'cancel_unconfirmed',
      outcome: 'cancel_unconfirmed',
      calls: 0,
      results: 0,
    });
    expect(cancelRequests(declared) - before).toBe(0);
    expect(s.timeline.some((e) => e.type === 'state' && e.state === 'tracking_interrupted')).toBe(false);
    expect(declared.sim.getJob(row.task_id!)?.status).toBe('running');
  });
});

describe('provider entry that claims a cancel endpoint the provider does not have (404 NOT_SUPPORTED)', () => {
  it('update: one cancel request answered 404 NOT_SUPPORTED — cancel_unconfirmed with the evidence, 0 results, the task still runs', async () => {
    const tag = `cn-claimed-${RUN}`;
    const before = cancelRequests(claimed);
    const { jobId, row } = await startRunning(claimed, tag);
    const answer = (await sendCancel(claimed, 'update', jobId).done) as CancelResult | undefined;
    const s = await settle(claimed, jobId);
    // The sim does not record per-job cancel requests on a profile without the endpoint: count the account's.
    expectSettled(
      expect,
      claimed,
      tag,
      s,
      { door: 'update', state: 'cancel_unconfirmed', outcome: 'cancel_unconfirmed', calls: 1, simCalls: 0, results: 0 },
      answer,
    );
    expect(cancelRequests(claimed) - before).toBe(1);
    expect.soft(s.report?.detail ?? '').toMatch(/no cancel endpoint/);
    const unsupported = s.timeline.find((e) => e.type === 'cancel_unsupported');
    expect(JSON.stringify(unsupported?.detail)).toMatch(/NOT_SUPPORTED/);
    expect(claimed.sim.getJob(row.task_id!)?.status).toBe('running');
  });
});
