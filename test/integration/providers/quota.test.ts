/**
 * Quota or credit exhaustion, per kind that documents such an answer (each fixture's CONTRACT.md):
 * Firecrawl `402` "Insufficient credits", Apify's `402` usage limit, ScraperAPI's `403` out of
 * credits (and its `max_cost` `403`, which is not), Bright Data's progress `failed` "Account is
 * suspended". Real workflow, real dev server, real SQLite store, the kinds' fixtures. The job that
 * meets it ends `failed` at once with code `QUOTA_EXHAUSTED` and the provider's answer in its
 * incident; the key's next submit waits out `limits.quotaHoldMs` without calling the provider,
 * then goes as the probe (credits refilled meanwhile) and completes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import { startApifyFixture, type ApifyFixture } from '../../fixtures/providers/apify/server.js';
import {
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
} from '../../fixtures/providers/brightdata/server.js';
import { startFirecrawlFixture, type FirecrawlFixture } from '../../fixtures/providers/firecrawl/server.js';
import type { Fixture, Scenario } from '../../fixtures/providers/harness.js';
import { startProviderScenario, waitFor } from '../../fixtures/providers/harness.js';
import type { RecordedRequest } from '../../fixtures/providers/fixtureServer.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../../fixtures/providers/scraperapi/server.js';

/** The hold configured in these scenarios, ms (the default is 10 minutes). */
const HOLD_MS = 4_000;
/** Latency allowed between the worker learning the hold and the fixture's record of the answer, ms. */
const MARGIN_MS = 150;

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

/** What the job that met the exhaustion shows: failed, `QUOTA_EXHAUSTED`, the provider's answer in its incident. */
async function expectSpent<F extends Fixture>(s: Scenario<F>, jobId: string, httpStatus: number, text: RegExp) {
  const row = await s.waitFor(jobId, ['failed', 'completed', 'tracking_interrupted']);
  expect(row.state).toBe('failed');
  const out = await s.outcome(jobId);
  expect(out.lastError).toMatchObject({ code: 'QUOTA_EXHAUSTED' });
  const incident = out.incidents.find((i) => i.code === 'QUOTA_EXHAUSTED');
  expect(incident).toMatchObject({ http_status: httpStatus });
  expect(incident?.response ?? '').toMatch(text);
  expect(await s.leakedSecrets(jobId)).toEqual([]);
  return out;
}

/**
 * Starts the next job of the key and checks that its submit waited out the hold without reaching
 * the provider (`submits()` unchanged until then, the timeline naming the hold), then completed.
 */
async function expectHeldThenProbe<F extends Fixture>(
  s: Scenario<F>,
  submits: () => RecordedRequest[],
  heldSince: number,
  url: string,
  key: string,
) {
  const before = submits().length;
  const next = await s.start({ url, key });
  await s.waitFor(next.jobId, ['completed'], 60_000);
  const after = submits().slice(before);
  expect(after).toHaveLength(1); // one probe, accepted
  expect(after[0]!.at - heldSince).toBeGreaterThanOrEqual(HOLD_MS - MARGIN_MS);
  // Held in the attempt (`submit_held`) or sent away to be retried at its slot (`LOCAL_COOLDOWN`):
  // either way the timeline names the hold.
  const held = (await s.store.findings.timeline(next.jobId)).filter(
    (e) => e.type === 'submit_held' || (e.type === 'submit_rejected' && e.detail?.includes('LOCAL_COOLDOWN')),
  );
  expect(held.length).toBeGreaterThan(0);
  expect(held[0]!.detail).toContain('are held (quota exhausted');
}

describe('firecrawl: 402 Insufficient credits', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<FirecrawlFixture>({
      kind: 'firecrawl',
      fixture: () => startFirecrawlFixture({}),
      entry: (fx) => ({
        baseUrl: fx.url,
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
        reconcile: { settleMs: 500 },
        limits: { quotaHoldMs: HOLD_MS },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('the job fails at once with QUOTA_EXHAUSTED (one request, no retry); the next submit of the key waits out the hold, then one probe completes it', async () => {
    const submits = () => s.fixture.server.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v2/'));
    s.fixture.setCredits('acme', 0);
    const spent = await s.start({ url: 'https://example.com/?credits=none', key: 'no-credits' });
    const out = await expectSpent(s, spent.jobId, 402, /Insufficient credits/);
    expect(out.lastError).toMatchObject({ httpStatus: 402 });
    expect(out.events).toContain('quota_exhausted');
    expect(submits()).toHaveLength(1);
    s.fixture.setCredits('acme', null); // refilled; the hold still runs its course
    await expectHeldThenProbe(s, submits, submits()[0]!.at, 'https://example.com/?credits=back', 'after-hold');
  });
});

describe('apify: 402 usage limit exceeded', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ApifyFixture>({
      kind: 'apify',
      fixture: () => startApifyFixture(),
      entry: (fx) => ({
        baseUrl: fx.url,
        actorId: 'acme~site-crawler',
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
        notFoundGraceMs: 1_500,
        limits: { quotaHoldMs: HOLD_MS },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('the job fails at once with QUOTA_EXHAUSTED, the type kept in the evidence; the next submit waits out the hold, then one probe completes it', async () => {
    const submits = () => s.fixture.requestsTo('POST', /\/runs$/);
    s.fixture.paymentRequired = { type: 'not-enough-usage-to-run-paid-actor' };
    const spent = await s.start({ url: 'https://shop.example/usage-spent', key: 'usage-spent' });
    await expectSpent(s, spent.jobId, 402, /not-enough-usage-to-run-paid-actor/);
    expect(submits()).toHaveLength(1);
    s.fixture.paymentRequired = undefined;
    await expectHeldThenProbe(s, submits, submits()[0]!.at, 'https://shop.example/usage-back', 'usage-back');
  });

  it('402 on the dataset read of a run that SUCCEEDED: tracking is interrupted with the run kept (no result, never resubmitted); once usage is back, resume completes it from the same run', async () => {
    const url = 'https://shop.example/usage-reads';
    s.fixture.plan('usage-reads', { hold: true });
    const ref = await s.start({ url, key: 'usage-reads' });
    const row = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.task_id && r.status_checks >= 1 ? r : undefined;
      },
      30_000,
      'the held run checked',
    );
    s.fixture.paymentRequired = { reads: true };
    try {
      s.fixture.release(row.task_id!);
      const stopped = await s.waitFor(ref.jobId, ['tracking_interrupted', 'failed', 'completed'], 60_000);
      expect(stopped).toMatchObject({ state: 'tracking_interrupted', task_id: row.task_id });
      const out = await s.outcome(ref.jobId);
      expect(out.lastError).toMatchObject({ code: 'QUOTA_EXHAUSTED' });
      expect(out.incidents.find((i) => i.code === 'QUOTA_EXHAUSTED')).toMatchObject({ http_status: 402 });
      expect(out.results).toBe(0);
    } finally {
      s.fixture.paymentRequired = undefined;
    }
    await s.client.resume('acme', ref.jobId);
    // The row says tracking_interrupted until the resumed run moves it: wait for a final state after it.
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    expect(s.fixture.runsFor('usage-reads')).toHaveLength(1);
    expect(
      s.fixture.requestsTo('POST', /\/runs$/).filter((r) => JSON.stringify(r.body).includes('usage-reads')),
    ).toHaveLength(1);
    expect((await s.outcome(ref.jobId)).results).toBe(1);
  });

  it('the memory refusal (402 actor-memory-limit-exceeded) is not quota: the submit is retried once runs finish, and no hold is set', async () => {
    s.fixture.memoryLimitMb = 1; // any run is over it
    const ref = await s.start({ url: 'https://shop.example/memory', key: 'memory' });
    await waitFor(
      async () =>
        (await s.store.findings.timeline(ref.jobId)).some(
          (e) => e.type === 'submit_rejected' && e.detail?.includes('actor-memory-limit-exceeded'),
        ),
      30_000,
      'a memory refusal',
    );
    s.fixture.memoryLimitMb = undefined;
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect((await s.outcome(ref.jobId)).events).not.toContain('quota_exhausted');
  });
});

describe('scraperapi: 403 out of credits (and max_cost, which is not)', () => {
  let s: Scenario<ScraperApiFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ScraperApiFixture>({
      kind: 'scraperapi',
      fixture: () => startScraperApiFixture(),
      entry: (f) => ({
        baseUrl: f.url,
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
        limits: { quotaHoldMs: HOLD_MS },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('a 403 naming max_cost fails only its job, without QUOTA_EXHAUSTED and without a hold', async () => {
    s.fixture.rule('max-cost', { kind: 'max_cost' });
    const ref = await s.start({ url: `${pages.pageUrl('001')}?max-cost`, key: 'max-cost' });
    const row = await s.waitFor(ref.jobId, ['failed']);
    expect(JSON.parse(row.last_error!)).toMatchObject({ kind: 'permanent', httpStatus: 403 });
    expect(JSON.parse(row.last_error!).code).not.toBe('QUOTA_EXHAUSTED');
    expect((await s.outcome(ref.jobId)).events).not.toContain('quota_exhausted');
  });

  it('the out-of-credits 403 fails the job at once with QUOTA_EXHAUSTED; the next submit waits out the hold, then one probe completes it', async () => {
    const submits = () => s.fixture.requestsTo('POST', '/jobs');
    s.fixture.rule('no-credits', { kind: 'no_credits' });
    const before = submits().length;
    const spent = await s.start({ url: `${pages.pageUrl('001')}?no-credits`, key: 'no-credits' });
    await expectSpent(s, spent.jobId, 403, /exhausted the API Credits/);
    expect(submits().length - before).toBe(1);
    await expectHeldThenProbe(s, submits, submits().at(-1)!.at, `${pages.pageUrl('002')}?credits-back`, 'credits-back');
  });
});

describe('brightdata: progress failed "Account is suspended"', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<BrightDataFixture>({
      kind: 'brightdata',
      fixture: () => startBrightDataFixture(),
      entry: (f) => ({
        baseUrl: f.url,
        readTimeoutMs: 5_000,
        submitTimeoutMs: 3_000,
        datasetId: BRIGHTDATA_FIXTURE_DATASET,
        limits: { quotaHoldMs: HOLD_MS },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('the job ends failed with QUOTA_EXHAUSTED and the progress answer in its incident; the next trigger waits out the hold, then one probe completes it', async () => {
    const submits = () => s.fixture.requestsTo('POST', '/datasets/v3/trigger');
    s.fixture.rule('suspended', { kind: 'fail', message: 'Account is suspended' });
    const spent = await s.start({ url: `${pages.pageUrl('001')}?suspended`, key: 'suspended' });
    await expectSpent(s, spent.jobId, 200, /Account is suspended/);
    const snapshot = s.fixture.snapshotsWith('suspended')[0]!;
    const told = s.fixture.requestsTo('GET', `/datasets/v3/progress/${snapshot.id}`).at(-1)!;
    await expectHeldThenProbe(s, submits, told.at, `${pages.pageUrl('002')}?after-suspension`, 'after-suspension');
  });
});
