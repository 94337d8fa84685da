/**
 * Retry-After at its edges. A provider that answers every call `503` with `Retry-After: 0` still
 * meets a growing back-off: the provider's wait lengthens the retry policy's, never shortens it
 * (src/activities/failures.ts). A wait of an hour ends neither a deadline nor a cancel's
 * confirmation late. Each test has a stack of its own: an hour's cool-down of the provider key
 * would hold back the next test's calls.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, recordResponses, startStack, waitFor, type Stack } from '../helpers/stack.js';

let pages: PageServer;
let stack: Stack;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());
beforeEach(async () => {
  stack = await startStack();
});
afterEach(async () => stack?.stop());

describe('Retry-After: 0 on a failing provider', () => {
  it('submits answered 503 + Retry-After: 0 back off (at most 8 submits in 10 s)', async () => {
    const tag = 'ra-zero-submit';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'error_5xx',
      status: 503,
      retryAfterSeconds: 0,
    });
    const before = stack.sim.stats().requests.byEndpoint.submit;
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 120_000 },
    });
    await waitFor(() => stack.sim.stats().requests.byEndpoint.submit > before, 30_000, 'the first submit');
    const start = stack.sim.stats().requests.byEndpoint.submit;
    await new Promise((r) => setTimeout(r, 10_000));
    const inWindow = stack.sim.stats().requests.byEndpoint.submit - start;
    console.log(`submits in 10 s after the first: ${inWindow}`);
    await stack.client.cancelScrape('acme', ref.jobId).catch(() => undefined);
    // 2 s doubling to 60 s: about 3 in 10 s; the policy's back-off is the floor of a 0 s wait.
    expect(inWindow).toBeLessThanOrEqual(8);
  }, 60_000);
});

describe('Retry-After: 0 on a failing cancel endpoint', () => {
  it('cancel calls answered 503 + Retry-After: 0 back off (at most 8 cancels in the 10 s confirm deadline)', async () => {
    const tag = 'ra-zero-cancel';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 120_000 },
    });
    await waitFor(async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1);
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'cancel',
      urlContains: tag,
      action: 'error_5xx',
      status: 503,
      retryAfterSeconds: 0,
    });
    const before = stack.sim.stats().requests.byEndpoint.cancel;
    await stack.client.cancelScrape('acme', ref.jobId).catch(() => undefined);
    await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r && ['cancelled', 'cancel_unconfirmed', 'completed', 'failed'].includes(r.state) ? r : undefined;
    }, 60_000);
    const cancels = stack.sim.stats().requests.byEndpoint.cancel - before;
    const job = stack.sim.jobsFor('acme').find((j) => j.url.includes(tag))!;
    const times = stack.sim.stats().jobs.find((j) => j.job_id === job.job_id)!.cancel_request_times;
    console.log(`cancel gaps ms: ${times.map((t, i) => (i ? t - times[i - 1]! : 0)).join(',')}`);
    console.log(`cancel requests: ${cancels}, final: ${(await stack.store.jobs.get(ref.jobId))!.state}`);
    // Before: 10 cancels 1 s apart (a 1 ms nextRetryDelay); the policy's 1 s doubling gives 1, 2, 4 s.
    expect(cancels).toBeLessThanOrEqual(6);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(2);
    expect(gaps.at(-1)!).toBeGreaterThanOrEqual(1.8 * gaps[0]!);
  }, 90_000);
});

describe('a deadline under a long Retry-After', () => {
  it('a job whose status checks answer 429 Retry-After: 3600 ends tracking_interrupted at its 5 s deadline, saying why', async () => {
    const tag = 'ra-long-deadline';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 5_000 },
    });
    await waitFor(async () => (await stack.store.jobs.get(ref.jobId))?.task_id);
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'status',
      urlContains: tag,
      action: 'rate_limit',
      retryAfterSeconds: 3600,
    });
    const t0 = Date.now();
    const row = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r && !['submitting', 'pending', 'unknown'].includes(r.state) ? r : undefined;
    }, 60_000);
    console.log(`ended ${row.state} after ${Date.now() - t0} ms: ${row.last_error}`);
    expect(row.state).toBe('tracking_interrupted');
    const moved = (await stack.store.findings.timeline(ref.jobId)).find(
      (e) => e.type === 'state' && e.state === 'tracking_interrupted',
    );
    expect(moved?.detail ?? '').toMatch(/deadline/i);
  }, 90_000);
});

describe('a cancel refused with a wait longer than the confirm deadline', () => {
  it('429 Retry-After: 3600 on the cancel: one cancel request, the job ends cancel_unconfirmed within the confirm deadline, saying why', async () => {
    const tag = 'ra-long-cancel';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 120_000 },
    });
    await waitFor(async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1);
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'cancel',
      urlContains: tag,
      action: 'rate_limit',
      retryAfterSeconds: 3600,
    });
    const before = stack.sim.stats().requests.byEndpoint.cancel;
    const t0 = Date.now();
    await stack.client.cancelScrape('acme', ref.jobId, { wait: false });
    const row = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r && ['cancelled', 'cancel_unconfirmed', 'completed', 'failed'].includes(r.state) ? r : undefined;
    }, 60_000);
    const moved = (await stack.store.findings.timeline(ref.jobId)).find(
      (e) => e.type === 'state' && e.state === row.state,
    );
    console.log(
      `ended ${row.state} after ${Date.now() - t0} ms; cancels ${stack.sim.stats().requests.byEndpoint.cancel - before}; ${moved?.detail}`,
    );
    expect(row.state).toBe('cancel_unconfirmed');
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(stack.sim.stats().requests.byEndpoint.cancel - before).toBe(1);
  }, 90_000);
});

describe('429 with Retry-After: 0 on every submit', () => {
  // Defect (not fixed here): a 429 whose Retry-After is 0 starts a cool-down of 0 ms at the
  // provider key's limiter, and the submit waits its floor of 1 s (src/activities/submit/submit.ts,
  // `waiting`); nothing grows, so the job sends one submit every ~1.1 s until its submit time
  // (max(deadline, 10 attempts)) ends. Measured: 13 submits in 15 s, gaps 1.07–1.30 s, flat.
  it.fails(
    'the submits back off (growing gaps), not one a second until the deadline',
    async () => {
      const tag = 'ra-zero-429-submit';
      stack.sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: tag,
        action: 'rate_limit',
        retryAfterSeconds: 0,
      });
      const before = stack.sim.stats().requests.byEndpoint.submit;
      const ref = await stack.client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('cnet')}?${tag}`,
        key: tag,
        policy: { ...FAST_POLICY, deadlineMs: 120_000 },
      });
      const seen = recordResponses(stack);
      await waitFor(() => stack.sim.stats().requests.byEndpoint.submit > before, 30_000, 'the first submit');
      const start = stack.sim.stats().requests.byEndpoint.submit;
      await new Promise((r) => setTimeout(r, 15_000));
      const inWindow = stack.sim.stats().requests.byEndpoint.submit - start;
      const times = seen.filter((e) => e.endpoint === 'submit' && e.status === 429).map((e) => e.at);
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      console.log(`429 submits in 15 s after the first: ${inWindow}; gaps ms: ${gaps.join(',')}`);
      await stack.client.cancelScrape('acme', ref.jobId, { wait: false }).catch(() => undefined);
      expect(inWindow).toBeLessThanOrEqual(6);
      expect(gaps.at(-1)!).toBeGreaterThanOrEqual(2 * gaps[0]!);
    },
    60_000,
  );
});
