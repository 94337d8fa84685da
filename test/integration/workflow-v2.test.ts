/**
 * Workflow v2 on the real stack (dev server, reference provider over HTTP, SQLite store):
 *
 * - a cancel by signal, Update or the native door while a status check hangs reaches the
 *   provider's cancel endpoint within 2 s (the check is abandoned, not awaited), the request shows
 *   in the `state` query at once, and the job closes `Canceled` whichever door was used;
 * - the adaptive limit of active jobs learns the provider's concurrency limit from its
 *   `429 CONCURRENCY_LIMIT` and stops bouncing off it; a declared limit means no refusal at all;
 * - a provider without idempotency whose list lags: a lost submit answer is reconciled by a
 *   second list read after the settle window — one provider job, never a duplicate.
 */
import { ProviderRegistry } from '../../src/providers/registry.js';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { stateQuery } from '../../src/workflows/scrape/messages.js';
import { DOORS, providerCancelCalls, sendCancel } from '../helpers/cancel.js';
import { FAST_POLICY, recordResponses, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';
import { providerLimit } from '../helpers/storeQueries.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

describe('cancel while a status check hangs', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Status reads may take 30 s before our HTTP timeout: a hanging check is really in flight.
    stack = await startStack({ profile: { concurrency: 20 }, readTimeoutMs: 30_000 });
  });
  afterAll(async () => stack?.stop());

  for (const door of DOORS) {
    it(`${door}: the provider cancel is called within 2 s while the check still hangs; the request shows at once; the job closes Canceled`, async () => {
      const tag = `hang-${door}-${randomUUID().slice(0, 6)}`;
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
      stack.sim.faults.add({ account: 'acme', endpoint: 'status', urlContains: tag, action: 'delay', delayMs: 25_000 });
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('001')}?${tag}`,
        key: tag,
        policy: { ...FAST_POLICY, activityTimeoutMs: 40_000 },
      });
      const task = await waitFor(
        () => stack.sim.jobsFor('acme').find((j) => j.url.includes(tag) && j.status_request_times.length > 0),
        30_000,
        'the first status check to start',
      );
      const checkStartedAt = task.status_request_times[0]!;
      const askedAt = Date.now();
      const sent = sendCancel(stack, door, ref.jobId);
      if (door === 'signal') {
        await sent.done;
        const view = await stack.temporal.workflow.getHandle(ref.jobId).query(stateQuery);
        expect(view.cancel, 'the request shows in the state at once').toMatchObject({ via: 'signal' });
      }
      await waitFor(() => providerCancelCalls(stack, tag) >= 1, 10_000, 'the provider cancel call');
      const cancelAt = stack.sim.jobsFor('acme').find((j) => j.url.includes(tag))!.cancel_request_times[0]!;
      expect(cancelAt - askedAt, 'request → provider cancel call, ms').toBeLessThan(2_000);
      expect(cancelAt, 'the hanging check had not returned yet').toBeLessThan(checkStartedAt + 25_000);
      await sent.done;
      const row = await waitForState(stack.store, ref.jobId, ['cancelled', 'cancel_unconfirmed', 'completed'], 60_000);
      expect(row.state).toBe('cancelled');
      const handle = stack.temporal.workflow.getHandle(ref.jobId);
      await waitFor(async () => (await handle.describe()).status.name !== 'RUNNING', 30_000, 'the run to close');
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      expect(providerCancelCalls(stack, tag)).toBe(1);
    }, 120_000);
  }
});

describe('adaptive limit of active jobs', () => {
  let stack: Stack;
  const LIMIT = 3;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: LIMIT, minRunMs: 800 }, activeJobs: 8 });
  });
  afterAll(async () => stack?.stop());

  it('learns the provider limit from its first refusal: 15 jobs, at most one refused submit per slot over the limit, all completed, one provider job each', async () => {
    const tag = `aimd-${randomUUID().slice(0, 6)}`;
    const seen = recordResponses(stack);
    const refs = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        stack.client.startScrape({
          account: 'acme',
          url: `${pages.pageUrl('001')}?${tag}-${i}`,
          key: `${tag}-${i}`,
          policy: FAST_POLICY,
        }),
      ),
    );
    for (const r of refs)
      expect((await waitForState(stack.store, r.jobId, ['completed', 'failed'], 120_000)).state).toBe('completed');
    const jobs = stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));
    expect(jobs).toHaveLength(15);
    const refused = seen.filter((r) => r.endpoint === 'submit' && r.status === 429).length;
    // Without the limit every waiting job would bounce off the provider on each retry: 8 − 3 at once, then again and again.
    expect(refused).toBeLessThanOrEqual(8 - LIMIT);
    const key = new ProviderRegistry(stack.config, {}).resolve('reference', 'acme').providerKey; // limits are kept per provider key
    expect(await providerLimit(stack.store, key)).toMatchObject({ ceiling: LIMIT });
  }, 180_000);

  it('a declared limit (limits.activeJobs.max) is never exceeded: 0 refused submits', async () => {
    const declared = await startStack({ profile: { concurrency: 2, minRunMs: 800 }, activeJobs: 2, activeJobsMax: 2 });
    try {
      const tag = `declared-${randomUUID().slice(0, 6)}`;
      const seen = recordResponses(declared);
      const refs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          declared.client.startScrape({
            account: 'acme',
            url: `${pages.pageUrl('001')}?${tag}-${i}`,
            key: `${tag}-${i}`,
            policy: FAST_POLICY,
          }),
        ),
      );
      for (const r of refs)
        expect((await waitForState(declared.store, r.jobId, ['completed', 'failed'], 120_000)).state).toBe('completed');
      expect(seen.filter((r) => r.endpoint === 'submit' && r.status === 429)).toHaveLength(0);
      expect(declared.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(8);
    } finally {
      await declared.stop();
    }
  }, 180_000);
});

describe('a list that lags (no idempotency key, search-backed list)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8, idempotency: false, list: true, listLagMs: 4_000 } });
  });
  afterAll(async () => stack?.stop());

  it('a lost submit answer is reconciled after the list’s declared lag: the read after it finds the job, one provider job, completed', async () => {
    const tag = `lag-${randomUUID().slice(0, 6)}`;
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'drop_after_commit',
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 90_000);
    expect(row.state).toBe('completed');
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
    const timeline = await stack.store.findings.timeline(ref.jobId);
    const settling = timeline.filter((e) => e.type === 'reconcile_settling');
    expect(settling).toHaveLength(1); // the first read missed it and waited out the lag …
    expect(timeline.some((e) => e.type === 'task_recorded' && /client reference/.test(e.detail ?? ''))).toBe(true); // … the second found it
  }, 120_000);
});
