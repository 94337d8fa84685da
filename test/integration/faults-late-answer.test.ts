/**
 * A submit whose answer arrives after the submit activity's start-to-close timeout: the attempt
 * gives up waiting shortly before its timeout and the job goes to `unknown` (`ANSWER_PENDING`),
 * while the HTTP call goes on; the late answer is recorded when it comes and adopted by the
 * reconciliation that follows, which concludes nothing before the submit's own HTTP timeout has
 * passed. Exactly one provider job, no second submit. On a kind with no lookups (ScraperAPI's
 * fixture) and on one with a lookup (the reference provider's list by client reference, lagging
 * longer than the answer). And a submit that outlives its HTTP timeout every time: the job never
 * ends `failed` claiming nothing runs while the provider holds the job; it is adopted by a strong
 * match where a lookup shows it, else waits in `unknown` for an operator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import type { JobEventRow, Store } from '../../src/store/index.js';
import { SCENARIO_POLICY, startProviderScenario, type Scenario } from '../fixtures/providers/harness.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../fixtures/providers/scraperapi/server.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

/** The submit activity's start-to-close timeout (the job's `activityTimeoutMs`), ms. */
const ATTEMPT_MS = 3_000;
/** The provider entry's `submitTimeoutMs`: the HTTP timeout of one submit, ms. */
const SUBMIT_TIMEOUT_MS = 15_000;
/** When the late answer comes: after the attempt gave up, well before the HTTP timeout, ms. */
const LATE_MS = 6_000;
/** An answer held past the HTTP timeout: it never arrives, ms. */
const NEVER_MS = SUBMIT_TIMEOUT_MS + 20_000;

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

type Event = JobEventRow & { data: Record<string, unknown> };

async function timeline(store: Store, jobId: string): Promise<Event[]> {
  return (await store.findings.timeline(jobId)).map((e) => ({
    ...e,
    data: e.detail ? (JSON.parse(e.detail) as Record<string, unknown>) : {},
  }));
}

/**
 * The events that prove the late answer was adopted: the attempt's `submit_ambiguous`
 * (`ANSWER_PENDING`, the job to `unknown`) and, after it, the `task_recorded` of the submit's own
 * answer (source `submit`) naming `taskId`; no other task recorded.
 */
function expectLateAnswerAdopted(events: Event[], taskId: string): void {
  const gaveUp = events.findIndex((e) => e.type === 'submit_ambiguous' && e.data.code === 'ANSWER_PENDING');
  expect(gaveUp, events.map((e) => e.type).join(' ')).toBeGreaterThanOrEqual(0);
  expect(events[gaveUp]!.state).toBe('unknown');
  const recorded = events.filter((e) => e.type === 'task_recorded');
  expect(recorded).toHaveLength(1);
  expect(recorded[0]!.data).toMatchObject({ taskId, source: 'submit' });
  expect(events.indexOf(recorded[0]!)).toBeGreaterThan(gaveUp);
  expect(events.some((e) => e.type === 'reconcile_absent')).toBe(false);
}

describe('a late submit answer on a kind with no lookups (ScraperAPI)', () => {
  let s: Scenario<ScraperApiFixture>;
  // Submit only (no fast path into the checks): the attempt is the short one whose end the answer outlives.
  const policy: Partial<PollPolicy> = { ...SCENARIO_POLICY, activityTimeoutMs: ATTEMPT_MS, fastPathMs: 0 };
  beforeAll(async () => {
    s = await startProviderScenario<ScraperApiFixture>({
      kind: 'scraperapi',
      fixture: () => startScraperApiFixture(),
      entry: (f) => ({ baseUrl: f.url, readTimeoutMs: 3_000, submitTimeoutMs: SUBMIT_TIMEOUT_MS }),
    });
  });
  afterAll(async () => s?.stop());

  const posts = (tag: string) =>
    s.fixture.requestsTo('POST', '/jobs').filter((r) => String((r.body as { url?: string }).url).includes(tag));

  it('an answer 6 s late with a 3 s attempt: recorded when it comes and adopted; one provider job, one POST', async () => {
    const tag = 'late-scraperapi';
    s.fixture.conformance.answerFault('submit', { kind: 'late', delayMs: LATE_MS, urlContains: tag, times: 1 });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?${tag}`, key: tag, policy });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    const jobs = s.fixture.jobsWith(tag);
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.id);
    expect(posts(tag)).toHaveLength(1);
    expectLateAnswerAdopted(await timeline(s.store, ref.jobId), jobs[0]!.id);
    expect(await s.store.results.count({ jobId: ref.jobId })).toBe(1);
  });

  it('an answer that never comes within the HTTP timeout: waits in unknown for an operator, never failed, one provider job, one POST', async () => {
    const tag = 'never-scraperapi';
    s.fixture.conformance.answerFault('submit', { kind: 'late', delayMs: NEVER_MS, urlContains: tag, times: 5 });
    const ref = await s.start({ url: `${pages.pageUrl('cnet')}?${tag}`, key: tag, policy });
    // The stable end of the evidence: nothing can show the job, so an operator must say.
    await waitFor(
      async () => (await s.client.getLiveView('acme', ref.jobId)).note?.includes('waiting for an operator'),
      60_000,
      'the operator note',
    );
    const row = (await s.store.jobs.get(ref.jobId))!;
    expect(row.state).toBe('unknown');
    expect(row.task_id).toBeNull();
    const events = await timeline(s.store, ref.jobId);
    expect(events.map((e) => e.type)).toContain('reconcile_undecided');
    expect(events.some((e) => e.type === 'reconcile_absent' || e.state === 'failed')).toBe(false);
    // The reconciliation waited out the submit's HTTP timeout before it concluded anything.
    const undecided = Date.parse(events.find((e) => e.type === 'reconcile_undecided')!.at);
    expect(undecided).toBeGreaterThanOrEqual(Date.parse(row.submit_intent_at!) + SUBMIT_TIMEOUT_MS);
    const jobs = s.fixture.jobsWith(tag);
    expect(jobs).toHaveLength(1); // the provider holds the job it was sent
    expect(posts(tag)).toHaveLength(1);

    // The operator hands the task over: the job completes with it, nothing new is sent.
    await s.client.resolve('acme', ref.jobId, { taskId: jobs[0]!.id, by: 'test-operator' });
    const done = await s.waitFor(ref.jobId, ['completed', 'failed'], 30_000);
    expect(done).toMatchObject({ state: 'completed', task_id: jobs[0]!.id });
    expect(posts(tag)).toHaveLength(1);
  });
});

describe('a late submit answer on a kind with a lookup (reference provider, list by client reference)', () => {
  let stack: Stack;
  const policy: Partial<PollPolicy> = { ...FAST_POLICY, activityTimeoutMs: ATTEMPT_MS, fastPathMs: 0 };
  beforeAll(async () => {
    // No idempotency key: only the list can find a lost submit; it shows a new job only 20 s after creation.
    stack = await startStack({
      profile: { concurrency: 8, idempotency: false, list: true, listLagMs: 20_000 },
      providerTimeoutMs: SUBMIT_TIMEOUT_MS,
    });
  });
  afterAll(async () => stack?.stop());

  it('an answer 6 s late with a 3 s attempt, the list lagging behind it: the late answer is adopted; one provider job, one submit', async () => {
    const tag = 'late-reference';
    const before = stack.sim.stats().requests.byEndpoint;
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'delay',
      delayMs: LATE_MS,
      commit: true,
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('ars-1')}?${tag}`,
      key: tag,
      policy,
    });
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    const jobs = stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.job_id);
    const after = stack.sim.stats().requests.byEndpoint;
    expect(after.submit - before.submit).toBe(1);
    expect(after.list - before.list).toBeGreaterThan(0); // the lookup was read, and showed nothing yet
    expectLateAnswerAdopted(await timeline(stack.store, ref.jobId), jobs[0]!.job_id);
  });
});

describe('a submit that outlives its HTTP timeout every time, on a kind with a lookup', () => {
  let stack: Stack;
  const policy: Partial<PollPolicy> = { ...FAST_POLICY, activityTimeoutMs: ATTEMPT_MS, fastPathMs: 0 };
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8, idempotency: false, list: true }, providerTimeoutMs: 4_000 });
  });
  afterAll(async () => stack?.stop());

  it('the job the provider holds is adopted by a strong match, never failed; one provider job, one submit', async () => {
    const tag = 'never-reference';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'delay',
      delayMs: NEVER_MS,
      commit: true,
    });
    const before = stack.sim.stats().requests.byEndpoint.submit;
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnn')}?${tag}`,
      key: tag,
      policy,
    });
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    const jobs = stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.job_id);
    expect(stack.sim.stats().requests.byEndpoint.submit - before).toBe(1);
    const events = await timeline(stack.store, ref.jobId);
    expect(events.filter((e) => e.type === 'task_recorded').map((e) => e.data.source)).toEqual([
      expect.stringMatching(/found by client reference/),
    ]);
    expect(events.some((e) => e.type === 'reconcile_absent' || e.state === 'failed')).toBe(false);
  });
});
