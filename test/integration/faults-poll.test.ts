/**
 * Polling under faults: status checks that time out for 60 s never fail the job or
 * resubmit; `Retry-After` (header, or only in the message) is honoured to the millisecond by the
 * next request; Apify-style `400 concurrent-runs-limit-exceeded` is a cool-down, not a failure;
 * one cool-down per provider key holds back every job; a task the provider forgets is `expired`;
 * a `tracking_interrupted` job resumes on the same task without submitting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, recordResponses, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

describe('status checks that fail', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8 } });
  });
  afterAll(async () => stack?.stop());

  it('status checks time out for 60 s while the job runs: the job still completes, no resubmission', async () => {
    const tag = 'status-timeouts';
    const hold = stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'hold',
      holdIn: 'running',
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 180_000 },
    });
    const pending = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r?.task_id && r.status_checks >= 1 ? r : undefined;
    });
    // Every status request now hangs past the adapter's 3 s read timeout, for 60 s.
    const slow = stack.sim.faults.add({
      account: 'acme',
      endpoint: 'status',
      urlContains: tag,
      action: 'delay',
      delayMs: 4_000,
    });
    const windowStart = Date.now();
    await new Promise((r) => setTimeout(r, 60_000));
    stack.sim.faults.remove(slow);
    const during = (await stack.store.jobs.get(ref.jobId))!;
    expect(during.state).toBe('pending'); // never failed while checks timed out
    expect(during.status_errors).toBeGreaterThanOrEqual(1); // budgets ran out and were recorded, polling went on
    stack.sim.release(pending.task_id!);
    stack.sim.faults.remove(hold);
    const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 90_000);
    expect(done.state).toBe('completed');
    expect(done.task_id).toBe(pending.task_id);
    const job = stack.sim.stats().jobs.find((j) => j.job_id === pending.task_id)!;
    expect(
      job.status_request_times.filter((t) => t >= windowStart && t <= windowStart + 60_000).length,
    ).toBeGreaterThanOrEqual(4);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
  }, 200_000);

  it('a task the provider forgets (404 after it was known) ends expired, not failed, not resubmitted', async () => {
    const tag = 'forgotten';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('liberation-1')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitFor(async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1);
    const submits = stack.sim.stats().requests.byEndpoint.submit;
    stack.sim.faults.add({ account: 'acme', endpoint: 'status', urlContains: tag, action: 'not_found' });
    const row = await waitForState(stack.store, ref.jobId, ['expired', 'failed', 'completed'], 30_000);
    expect(row.state).toBe('expired');
    expect(row.task_id).toBeTruthy();
    expect(JSON.parse(row.last_error!)).toMatchObject({ kind: 'not_found', httpStatus: 404 });
    // The timeline's record of the move keeps the provider's answer beside the note (evidence).
    const moved = (await stack.store.findings.timeline(ref.jobId)).find(
      (e) => e.type === 'state' && e.state === 'expired',
    );
    expect(JSON.parse(moved!.detail!)).toMatchObject({
      note: expect.stringMatching(/404/),
      error: { kind: 'not_found', httpStatus: 404 },
    });
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(submits);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
  });

  it('a tracking_interrupted job resumes on the same task and never submits again', async () => {
    const tag = 'resume-me';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('qq')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 2_000 },
    });
    const interrupted = await waitForState(
      stack.store,
      ref.jobId,
      ['tracking_interrupted', 'failed', 'completed'],
      30_000,
    );
    expect(interrupted.state).toBe('tracking_interrupted');
    await expect(stack.client.getResult('acme', ref.jobId)).rejects.toMatchObject({
      code: 'not_ready',
      details: { state: 'tracking_interrupted' },
    });
    const submits = stack.sim.stats().requests.byEndpoint.submit;
    stack.sim.release(interrupted.task_id!);
    await stack.client.resume('acme', ref.jobId, { policy: { deadlineMs: 60_000 } });
    expect(await stack.client.resume('acme', ref.jobId)).toMatchObject({ jobId: ref.jobId }); // idempotent: no third run
    const done = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 30_000);
    expect(done.state).toBe('completed');
    expect(done.task_id).toBe(interrupted.task_id);
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(submits);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    expect((await stack.temporal.workflow.getHandle(ref.jobId).result()).state).toBe('completed');
    await waitFor(
      async () => {
        const runs: string[] = [];
        for await (const w of stack.temporal.workflow.list({ query: `WorkflowId = "${ref.jobId}"` }))
          runs.push(w.status.name);
        // The interrupted run closed Failed (its job ended tracking_interrupted), the resumed one
        // Completed: a Failed run is no obstacle to resume, and there is no third run.
        return runs.sort().join() === 'COMPLETED,FAILED';
      },
      10_000,
      'the Failed interrupted run and the Completed resumed run in visibility',
    );
  });
});

describe('Retry-After in a header', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Jobs run 1.5 s: several status checks each (a completed answer carries the result, so a job
    // finished at its first check would make no further request for the 429 to hit).
    stack = await startStack({ profile: { concurrency: 8, retryAfterStyle: 'header', minRunMs: 1_500 } });
  });
  afterAll(async () => stack?.stop());

  it('429 with Retry-After: 7 on a status check: the next request for that provider key comes no sooner than 7 s later', async () => {
    const seen = recordResponses(stack);
    const tag = 'ra-header';
    const refs = await Promise.all(
      [1, 2, 3].map((i) =>
        stack.client.startScrape({
          account: 'acme',
          url: `${pages.pageUrl('heise')}?${tag}-${i}`,
          key: `${tag}-${i}`,
          policy: FAST_POLICY,
        }),
      ),
    );
    await waitFor(async () => seen.some((e) => e.endpoint === 'status'), 20_000, 'first status check');
    stack.sim.faults.add({ account: 'acme', endpoint: 'status', action: 'rate_limit', retryAfterSeconds: 7, times: 1 });
    for (const r of refs) await waitForState(stack.store, r.jobId, ['completed', 'failed'], 60_000);
    const limited = seen.find((e) => e.status === 429)!;
    expect(limited).toBeDefined();
    // The limited task's next request came ≥ 7 s later. Every later request of this account (any
    // job: the cool-down is shared) did too, except requests another job had already sent off
    // while the 429 was on its way to us (the provider's answer and our cool-down are not one
    // instant): at most one per other job, within the first 500 ms.
    const after = seen.filter((e) => e.account === 'acme' && e.at - e.durationMs > limited.at);
    expect(after.length).toBeGreaterThan(0);
    const startOf = (e: (typeof seen)[number]) => e.at - e.durationMs;
    const sameTask = after.filter((e) => e.jobId === limited.jobId);
    expect(sameTask.length).toBeGreaterThan(0);
    expect(Math.min(...sameTask.map(startOf)) - limited.at).toBeGreaterThanOrEqual(7_000);
    const inFlight = after.filter((e) => startOf(e) - limited.at < 500);
    expect(inFlight.length).toBeLessThanOrEqual(refs.length - 1);
    expect(inFlight.every((e) => e.jobId !== limited.jobId)).toBe(true);
    const later = after.filter((e) => startOf(e) - limited.at >= 500);
    expect(Math.min(...later.map(startOf)) - limited.at).toBeGreaterThanOrEqual(7_000);
    for (const r of refs) expect((await stack.store.jobs.get(r.jobId))?.state).toBe('completed');
    expect(seen.filter((e) => e.status === 429)).toHaveLength(1);
  });

  it('429 on submit with Retry-After: 7: the submit is retried no sooner than 7 s later, creating one job', async () => {
    const seen = recordResponses(stack);
    const tag = 'ra-submit';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'rate_limit',
      retryAfterSeconds: 7,
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('herald-sun-1')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 60_000);
    const submits = seen.filter((e) => e.endpoint === 'submit' && e.account === 'acme');
    expect(submits.map((e) => e.status)).toEqual([429, 202]);
    expect(submits[1]!.at - submits[1]!.durationMs - submits[0]!.at).toBeGreaterThanOrEqual(7_000);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
  });
});

describe('Retry-After only in the message text', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8, retryAfterStyle: 'message' } });
  });
  afterAll(async () => stack?.stop());

  it('429 with "Please retry after 5 seconds." and no header: the parsed wait is used', async () => {
    const seen = recordResponses(stack);
    const tag = 'ra-message';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'rate_limit',
      retryAfterSeconds: 5,
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('yahoo-4')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 60_000);
    const submits = seen.filter((e) => e.endpoint === 'submit');
    expect(submits.map((e) => e.status)).toEqual([429, 202]);
    // Without the parsed wait the retry would come after the policy's 2 s initial backoff.
    expect(submits[1]!.at - submits[1]!.durationMs - submits[0]!.at).toBeGreaterThanOrEqual(5_000);
  });
});

describe('Apify-style 400 concurrent-runs-limit-exceeded', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      profile: { concurrency: 1, concurrencyErrorStyle: '400', retryAfterStyle: 'none', minRunMs: 1_000 },
    });
  });
  afterAll(async () => stack?.stop());

  it('is retried after a cool-down, not failed: every job completes, one provider job each', async () => {
    const seen = recordResponses(stack);
    const refs = await Promise.all(
      [1, 2, 3].map((i) =>
        stack.client.startScrape({
          account: 'acme',
          url: `${pages.pageUrl('tumblr')}?apify-${i}`,
          key: `apify-${i}`,
          policy: FAST_POLICY,
        }),
      ),
    );
    for (const r of refs) {
      const row = await waitForState(stack.store, r.jobId, ['completed', 'failed'], 90_000);
      expect(row.state).toBe('completed');
    }
    expect(seen.some((e) => e.endpoint === 'submit' && e.status === 400)).toBe(true);
    expect(stack.sim.stats().jobsCreated.total).toBe(3);
  });
});
