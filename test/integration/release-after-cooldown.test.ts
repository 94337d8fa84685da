/**
 * After a `429` cool-down the calls it held leave one at a time, a probe first, never all at once
 * (the defect: once a cool-down ended every waiting job was released together, and another job's
 * request went out 6 ms after a fresh 429). Real workflow, real dev server, real SQLite store, the
 * `http` kind's fixture (`test/fixtures/providers/http/server.ts`) answering `429 RATE_LIMITED`
 * with `Retry-After`; the assertions read the fixture's recorded request times.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELEASE_SPACING_FLOOR_MS } from '../../src/providers/shared/limiter.js';
import { SCENARIO_POLICY, startProviderScenario, waitFor, type Scenario } from '../fixtures/providers/harness.js';
import { startRunsFixture, type RunsFixture } from '../fixtures/providers/http/server.js';

/** Timer and loopback latency allowed between a release slot and the request reaching the fixture, ms. */
const MARGIN_MS = 150;

/** The runs API as an `http` entry (submit, status, items). */
function runsEntry(url: string) {
  return {
    baseUrl: url,
    readTimeoutMs: 3_000,
    submitTimeoutMs: 3_000,
    auth: { in: 'query', name: 'api_key' },
    submit: {
      path: '/v3/runs',
      body: { target: { url: '{{url}}' }, reference: '{{clientRef}}' },
      taskIdPath: '/data/id',
      statusPath: '/data/state',
    },
    status: {
      path: '/v3/runs/{{taskId}}',
      statusPath: '/data/state',
      map: { pending: 'queued', running: 'running', done: 'completed', error: 'failed', aborted: 'cancelled' },
    },
    result: {
      request: { path: '/v3/runs/{{taskId}}/items' },
      documentsPath: '/items',
      fields: { url: '/link', title: '/heading', text: '/content', error: '/problem' },
    },
    errors: { concurrencyCodes: ['TOO_MANY_RUNS'] },
  };
}

describe('release after a cool-down: a probe first, then one at a time', () => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 1 }),
      entry: (fx) => runsEntry(fx.url),
    });
  });
  afterAll(async () => s?.stop());

  it('one job gets 429 + Retry-After while four more wait; the first request after it goes alone, meets a new 429 whose cool-down holds the rest, and then they leave spaced apart; every job completes', async () => {
    // Attempts long enough for every waiter to wait for its slot inside the attempt (≤ 10 s).
    const policy = { ...SCENARIO_POLICY, activityTimeoutMs: 30_000, deadlineMs: 120_000 };
    s.fixture.rateLimit('submit', { times: 2, retryAfterSeconds: 3 });
    const submits = () => s.fixture.server.requestsTo('POST', '/v3/runs');
    const first = await s.start({ url: 'https://shop.example.com/first', key: 'first', policy });
    await waitFor(() => submits().length >= 1, 30_000, 'the first submit (answered 429)');
    const refusedAt = submits()[0]!.at;
    const waiting = await Promise.all(
      [1, 2, 3, 4].map((i) => s.start({ url: `https://shop.example.com/waiting-${i}`, key: `waiting-${i}`, policy })),
    );
    for (const ref of [first, ...waiting]) await s.waitFor(ref.jobId, ['completed'], 90_000);

    const times = submits().map((r) => r.at);
    expect(times).toHaveLength(7); // two refused, five accepted: no job submitted twice
    expect(s.fixture.runs.size).toBe(5);
    const [, probe, ...rest] = times;
    // Nothing went out during the first cool-down (3 s), and the first request after it went alone:
    // it met the second 429 (3 s again), and the next one waited for that cool-down to end.
    expect(probe! - refusedAt).toBeGreaterThanOrEqual(3_000 - MARGIN_MS);
    expect(rest[0]! - probe!).toBeGreaterThanOrEqual(3_000 - MARGIN_MS);
    // The probe of the second cool-down went alone for the floor spacing; the others followed one at
    // a time (the spacing halves every second after the end: a slow start).
    expect(rest[1]! - rest[0]!).toBeGreaterThanOrEqual(RELEASE_SPACING_FLOOR_MS - MARGIN_MS);
    for (let k = 2; k < rest.length; k++) expect(rest[k]! - rest[k - 1]!).toBeGreaterThan(100);
    // The waiting jobs learned of the cool-down in the store (shared by every worker).
    expect((await s.store.providerKeys.readCooldown(s.providerKey()))?.reason).toBe('RATE_LIMITED');
  });
});
