/**
 * Budgets against the provider fixtures, through the whole workflow on the shared dev server:
 * each fixture reports a job's cost as the provider documents it, and the job settles at that
 * report, in the provider's unit, after its kind's estimate was reserved. Firecrawl (a crawl):
 * `creditsUsed` of the status answer, one credit per page scraped, against an estimate of the
 * crawl's page `limit`. Apify (an actor run): `usageTotalUsd` of the Run, against the run's cap
 * `maxTotalChargeUsd`, which the adapter sends with the run. ScraperAPI reports nothing: a job
 * settles at its estimate, from its `apiParams` (10 credits with `render`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApifyFixture, type ApifyFixture } from '../../fixtures/providers/apify/server.js';
import { startFirecrawlFixture, type FirecrawlFixture } from '../../fixtures/providers/firecrawl/server.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../../fixtures/providers/scraperapi/server.js';
import { startProviderScenario, type Scenario } from '../../fixtures/providers/harness.js';

describe('budgets: Firecrawl crawl settles at creditsUsed', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<FirecrawlFixture>({
      kind: 'firecrawl',
      fixture: () => startFirecrawlFixture({ crawl: { pages: 4, errors: 1, robotsBlocked: 0 } }),
      entry: (fx) => ({ baseUrl: fx.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000, operation: 'crawl' }),
    });
  });
  afterAll(async () => s?.stop());

  it('a crawl limited to 10 pages reserves 10 credits and settles at the 4 its status reported', async () => {
    await s.store.budgets.set(
      { account: 'acme', provider: s.name, unit: 'credits', period: 'month', amount: 25 },
      'operator',
    );
    const ref = await s.start({ url: 'https://example.com/docs', key: 'crawl-budget', options: { limit: 10 } });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    const job = s.fixture.job(row.task_id!)!;
    expect(job.pages).toHaveLength(4);
    expect(row).toMatchObject({
      cost_unit: 'credits',
      cost_estimated: 10,
      cost_reported: 4,
      cost_settled: 4,
      cost_reserved: 0,
    });
    expect((await s.store.budgets.list({ account: 'acme' }))[0]).toMatchObject({
      spent: 4,
      reserved: 0,
      remaining: 21,
    });
    // What is left (21) cannot take a second crawl of 100 pages (the default limit): refused before its submit.
    const big = await s.start({ url: 'https://example.com/all', key: 'crawl-too-big' });
    const refused = await s.waitFor(big.jobId, ['failed', 'completed'], 60_000);
    expect(JSON.parse(refused.last_error!)).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(s.fixture.jobs().filter((j) => j.url?.includes('/all'))).toHaveLength(0);
    expect(await s.store.budgets.leaks()).toEqual([]);
  }, 90_000);
});

describe('budgets: an Apify run settles at usageTotalUsd', () => {
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
        run: { maxTotalChargeUsd: 0.5 },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('reserves the run cap (0.5 USD, sent as maxTotalChargeUsd) and settles at the 0.37 USD the run reported', async () => {
    await s.store.budgets.set({ account: 'acme', provider: '*', unit: 'usd', period: 'total', amount: 1 }, 'operator');
    s.fixture.plan('usage', { usageUsd: 0.37 });
    const ref = await s.start({ url: 'https://shop.example/usage', key: 'usage-1' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    const [run] = s.fixture.runsFor('usage');
    expect(run!.options.maxTotalChargeUsd).toBe(0.5);
    expect(row).toMatchObject({ cost_unit: 'usd', cost_estimated: 0.5, cost_settled: 0.37, cost_source: 'reported' });
    const [usage] = await s.store.budgets.list({ account: 'acme' });
    expect(usage!.spent).toBeCloseTo(0.37, 9);
    expect(usage!.reserved).toBe(0);
  }, 90_000);
});

describe('budgets: ScraperAPI reports nothing, so a job settles at its estimate', () => {
  let s: Scenario<ScraperApiFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ScraperApiFixture>({
      kind: 'scraperapi',
      fixture: () => startScraperApiFixture(),
      entry: (fx) => ({ baseUrl: fx.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000, apiParams: { render: true } }),
    });
  });
  afterAll(async () => s?.stop());

  it('a rendered request is estimated, reserved and settled at 10 credits', async () => {
    await s.store.budgets.set(
      { account: 'acme', provider: s.name, unit: 'credits', period: 'day', amount: 100 },
      'operator',
    );
    const ref = await s.start({ url: 'https://example.com/rendered', key: 'render-1' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(row).toMatchObject({ cost_estimated: 10, cost_reported: null, cost_settled: 10, cost_source: 'estimate' });
    expect((await s.store.budgets.list({ account: 'acme' }))[0]).toMatchObject({ spent: 10, reserved: 0 });
  }, 90_000);
});
