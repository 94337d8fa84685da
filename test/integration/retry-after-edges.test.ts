/**
 * Retry-After at its edges. A provider that answers every call `503` with `Retry-After: 0` still
 * meets a growing back-off: the provider's wait lengthens the retry policy's, never shortens it
 * (src/activities/failures.ts), and a submit refused `429` with `Retry-After: 0` waits longer
 * each time (src/workflows/scrape/acquire.ts). A wait of an hour ends neither a deadline nor a
 * cancel's confirmation late. Each test has a stack of its own: an hour's cool-down of the
 * provider key would hold back the next test's calls.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LATE_REPLAY_RETRIES } from '../../src/activities/submit/replay.js';
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

/**
 * Starts a job of `tag` whose submits the simulator refuses with `fault`, waits until it has
 * refused `count` of them, and returns the gaps between them (ms), oldest first.
 */
async function refusedSubmitGaps(tag: string, fault: Record<string, unknown>, count: number): Promise<number[]> {
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, ...fault } as never);
  const seen = recordResponses(stack);
  const url = `${pages.pageUrl('cnet')}?${tag}`;
  const ref = await stack.client.startScrape({
    account: 'acme',
    url,
    key: tag,
    policy: { ...FAST_POLICY, deadlineMs: 300_000 },
  });
  const refused = () =>
    seen.filter((e) => e.endpoint === 'submit' && typeof e.status === 'number' && e.status >= 400).map((e) => e.at);
  await waitFor(() => refused().length >= count, 120_000, `${count} refused submits`);
  await stack.client.cancelScrape('acme', ref.jobId, { wait: false }).catch(() => undefined);
  const times = refused().slice(0, count);
  return times.slice(1).map((t, i) => t - times[i]!);
}

/** Starts a job of `tag` that the simulator keeps running (`action`), and waits for its first status check. */
async function startRunningJob(tag: string, action: 'hold' | 'never_finish') {
  stack.sim.faults.add({
    account: 'acme',
    endpoint: 'submit',
    urlContains: tag,
    action,
    ...(action === 'hold' ? { holdIn: 'running' } : {}),
  } as never);
  const ref = await stack.client.startScrape({
    account: 'acme',
    url: `${pages.pageUrl('cnet')}?${tag}`,
    key: tag,
    policy: { ...FAST_POLICY, deadlineMs: 120_000 },
  });
  await waitFor(async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1);
  return ref;
}

describe('Retry-After: 0 on a failing provider', () => {
  // A submit answered 5xx may have created the job: each round is the submit and its replays under
  // our key (at most LATE_REPLAY_RETRIES), then the provider's list; a list that proves no job
  // starts the next round after a growing delay, and the job fails after its `submitRounds`,
  // however short the provider's Retry-After.
  it('a submit answered 503 + Retry-After: 0 every time: at most 1 + 3 calls a round, its replays backed off, and the job fails after its rounds, saying why', async () => {
    const tag = 'ra-zero-submit';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'error_5xx',
      status: 503,
      retryAfterSeconds: 0,
    });
    const seen = recordResponses(stack);
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 300_000, submitRounds: 2 },
    });
    const row = await waitFor(
      async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r && ['failed', 'pending', 'completed'].includes(r.state) ? r : undefined;
      },
      150_000,
      'the job to end its submit rounds',
    );
    expect(row.state).toBe('failed');
    expect(JSON.parse(row.last_error!)).toMatchObject({ kind: 'submit_unacknowledged' });
    expect(stack.sim.stats().requests.byEndpoint.submit).toBeLessThanOrEqual(2 * (1 + LATE_REPLAY_RETRIES));
    const resubmit = (await stack.store.findings.timeline(ref.jobId)).find(
      (e) => e.type === 'state' && e.state === 'submitting' && /round 2 of 2/.test(JSON.stringify(e.detail)),
    );
    expect(resubmit).toBeDefined();
    // Within a round the replays back off too: the submit, then replays after growing delays (with
    // a 5 s attempt, each replay's quick 503 was taken as late and the next came 1 s after it).
    const submits = seen.filter((e) => e.endpoint === 'submit').map((e) => e.at);
    const gaps = submits.slice(1, 1 + LATE_REPLAY_RETRIES).map((t, i) => t - submits[i]!);
    expect(gaps[2]!).toBeGreaterThanOrEqual(1.5 * gaps[1]!);
  }, 200_000);
});

describe("a grown cool-down wait in the job's row", () => {
  // Before: the workflow waited the grown wait (1, 2, 4, 8 s …), but the row the API and the CLI
  // show kept the submit attempt's `until` (the provider's wait, at least 1 s): after the fourth
  // 429 the job waited 8 s while GET /v1/scrapes/:id said it would try again 1 s after that 429.
  it('after the fourth submit answered 429 + Retry-After: 0, the row says the next try is about 8 s later, not 1 s', async () => {
    const tag = 'ra-zero-429-until';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'rate_limit',
      retryAfterSeconds: 0,
    } as never);
    const seen = recordResponses(stack);
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 300_000 },
    });
    const refused = () =>
      seen.filter((e) => e.endpoint === 'submit' && typeof e.status === 'number' && e.status >= 400).map((e) => e.at);
    await waitFor(() => refused().length >= 4, 60_000, '4 refused submits');
    const fourth = refused()[3]!;
    // The row's wait after the fourth refusal (the attempt records it just after the answer).
    const wait = await waitFor(async () => {
      const w = (await stack.client.getScrape('acme', ref.jobId)).waiting;
      return w?.until && Date.parse(w.until) > fourth ? w : undefined;
    }, 10_000);
    await stack.client.cancelScrape('acme', ref.jobId, { wait: false }).catch(() => undefined);
    expect(refused().length).toBe(4); // still waiting after the fourth
    expect(Date.parse(wait.until!) - fourth).toBeGreaterThanOrEqual(7_000);
  }, 120_000);
});

describe('Retry-After: 0 on a failing cancel endpoint', () => {
  it('cancel calls answered 503 + Retry-After: 0 back off (at most 8 cancels in the 10 s confirm deadline)', async () => {
    const tag = 'ra-zero-cancel';
    const ref = await startRunningJob(tag, 'hold');
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
    const row = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r && !['submitting', 'pending', 'unknown'].includes(r.state) ? r : undefined;
    }, 60_000);
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
    const ref = await startRunningJob(tag, 'never_finish');
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'cancel',
      urlContains: tag,
      action: 'rate_limit',
      retryAfterSeconds: 3600,
    });
    const before = stack.sim.stats().requests.byEndpoint.cancel;
    await stack.client.cancelScrape('acme', ref.jobId, { wait: false });
    const row = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r && ['cancelled', 'cancel_unconfirmed', 'completed', 'failed'].includes(r.state) ? r : undefined;
    }, 60_000);
    const moved = (await stack.store.findings.timeline(ref.jobId)).find(
      (e) => e.type === 'state' && e.state === row.state,
    );
    expect(row.state).toBe('cancel_unconfirmed');
    expect(moved?.detail ?? '').toMatch(/confirm/i);
    expect(stack.sim.stats().requests.byEndpoint.cancel - before).toBe(1);
  }, 90_000);
});

describe('429 with Retry-After: 0 on every submit', () => {
  // A 429 whose Retry-After is 0 starts a cool-down of 0 ms at the key's limiter, and the submit
  // waited its floor of 1 s: one submit every ~1.1 s until the job's submit time ended (13 in 15 s).
  it('the submits back off (each wait longer than the one before), not one a second until the deadline', async () => {
    const gaps = await refusedSubmitGaps('ra-zero-429-submit', { action: 'rate_limit', retryAfterSeconds: 0 }, 5);
    expect(gaps.at(-1)!).toBeGreaterThanOrEqual(2 * gaps[0]!);
    expect(gaps.at(-1)!).toBeGreaterThanOrEqual(gaps.at(-2)!);
  }, 180_000);
});
