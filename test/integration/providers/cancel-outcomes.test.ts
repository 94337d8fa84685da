/**
 * What an accepted cancel ends as, kind by kind, on the provider harness (real workflow, real dev
 * server, real SQLite store, each kind's fixture server). A cancel is a request: the outcome is
 * what the provider answers afterwards, in whatever words the kind knows.
 *
 * - Zyte: a job that took too long to stop finishes with close reason `cancel_timeout`: cancelled.
 * - ScraperAPI: a cancelled job that reads `failed` with `failReason: "cancelled"` is cancelled; a
 *   job that reads `404` right after an accepted cancel is cancelled, the `404` kept as evidence.
 * - Bright Data: a snapshot whose progress reads `failed` with "Collection was canceled" after an
 *   accepted cancel is cancelled.
 * - Apify: the job row's provider status follows the abort's answer (`ABORTED`).
 * - Firecrawl crawl: the documents that landed since the last status check before the cancel are
 *   listed among the cancel's remaining effects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import type { JobRow } from '../../../src/store/index.js';
import { startApifyFixture, type ApifyFixture } from '../../fixtures/providers/apify/server.js';
import {
  BRIGHTDATA_CANCELLED_MESSAGE,
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
} from '../../fixtures/providers/brightdata/server.js';
import { startFirecrawlFixture, type FirecrawlFixture } from '../../fixtures/providers/firecrawl/server.js';
import {
  SCENARIO_POLICY,
  startProviderScenario,
  waitFor,
  type Fixture,
  type Scenario,
} from '../../fixtures/providers/harness.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../../fixtures/providers/scraperapi/server.js';
import { startZyteFixture, type ZyteFixture } from '../../fixtures/providers/zyte/server.js';

/** Checks at about 0.3 s and 3.3 s, then none for 30 s: nothing is read between the second check and a cancel. */
const SPARSE: Partial<PollPolicy> = {
  ...SCENARIO_POLICY,
  initialDelayMs: 300,
  maxDelayMs: 30_000,
  multiplier: 10,
  jitter: 0,
};

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

/** The job's row once its task is known and was checked at least `checks` times. */
async function checked<F extends Fixture>(s: Scenario<F>, jobId: string, checks = 1): Promise<JobRow> {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= checks ? r : undefined;
    },
    30_000,
    `${checks} status check(s) of ${jobId}`,
  );
}

/** Cancels `jobId` through the `cancel` Update and returns what it observed. */
function cancel<F extends Fixture>(s: Scenario<F>, jobId: string) {
  return s.client.cancelScrape('acme', jobId, {
    reason: 'scenario',
    requestedBy: 'vitest',
    wait: true,
    timeoutMs: 30_000,
  });
}

/** The parsed details of the job's timeline events of `type`, oldest first. */
async function eventDetails<F extends Fixture>(s: Scenario<F>, jobId: string, type: string) {
  return (await s.store.findings.timeline(jobId))
    .filter((e) => e.type === type)
    .map((e) => (e.detail ? (JSON.parse(e.detail) as Record<string, unknown>) : null));
}

describe('zyte: a cancel that did not stop gracefully', () => {
  let s: Scenario<ZyteFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ZyteFixture>({
      kind: 'zyte',
      fixture: () => startZyteFixture(),
      entry: (fx) => ({
        baseUrl: fx.url,
        storageUrl: fx.storageUrl,
        project: fx.project,
        spider: 'quotes',
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('a running job that keeps running after stop.json and then finishes with close reason cancel_timeout ends cancelled, with no result and no failure', async () => {
    s.fixture.cancelDelayMs = 1_500; // still running at the first reads after the cancel
    s.fixture.cancelCloseReason = 'cancel_timeout';
    s.fixture.plan('slow-stop', { hold: true });
    const ref = await s.start({ url: 'https://quotes.example/slow-stop', key: 'slow-stop' });
    const row = await checked(s, ref.jobId);
    await waitFor(async () => s.fixture.jobs.get(row.task_id!)?.state === 'running', 30_000, 'the Zyte job running');
    const res = await cancel(s, ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    expect(s.fixture.jobs.get(row.task_id!)).toMatchObject({ state: 'finished', closeReason: 'cancel_timeout' });
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'cancelled', providerStatus: 'finished/cancel_timeout', results: 0 });
    expect(out.incidents).toEqual([]);
    expect(out.events).not.toContain('unrecognised_status');
    const stops = s.fixture.app
      .requestsTo('POST', '/api/jobs/stop.json')
      .filter((r) => (r.body as { job?: string }).job === row.task_id);
    expect(stops).toHaveLength(1);
  });
});

describe('scraperapi: what a job reads after an accepted cancel', () => {
  let s: Scenario<ScraperApiFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ScraperApiFixture>({
      kind: 'scraperapi',
      fixture: () => startScraperApiFixture(),
      entry: (f) => ({ baseUrl: f.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000 }),
    });
  });
  afterAll(async () => s?.stop());

  it('cancel answered and read as failed with failReason cancelled: the job ends cancelled, never failed; the cancel’s answer and the row say cancelled; no incident', async () => {
    s.fixture.setCancelMode('failed');
    s.fixture.rule('cancel-failed', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-failed`, key: 'cancel-failed' });
    const row = await checked(s, ref.jobId);
    const res = await cancel(s, ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    expect(s.fixture.jobs.get(row.task_id!)).toMatchObject({ status: 'failed', failReason: 'cancelled' });
    expect(await eventDetails(s, ref.jobId, 'cancel_requested_at_provider')).toEqual([
      expect.objectContaining({ accepted: true, state: 'cancelled', providerStatus: 'failed: cancelled' }),
    ]);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'cancelled', providerStatus: 'failed: cancelled', lastError: null });
    expect(out.row.provider_state).toBe('cancelled');
    expect(out.incidents).toEqual([]);
    expect(s.fixture.requestsTo('DELETE', `/jobs/${row.task_id}`)).toHaveLength(1);
  });

  it('cancel answered 200 and then the job reads 404: the job ends cancelled, the accepted answer and the 404 named as the evidence', async () => {
    s.fixture.setCancelMode('gone');
    s.fixture.rule('cancel-gone', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-gone`, key: 'cancel-gone' });
    const row = await checked(s, ref.jobId);
    const res = await cancel(s, ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    if (res.kind !== 'observed') throw new Error('unreachable');
    expect(res.report.detail).toMatch(/accepted the cancel/);
    expect(res.report.detail).toMatch(/404/);
    const notFound = await eventDetails(s, ref.jobId, 'status_not_found');
    expect(notFound).toEqual([expect.objectContaining({ error: expect.objectContaining({ httpStatus: 404 }) })]);
    const out = await s.outcome(ref.jobId);
    expect(out.state).toBe('cancelled');
    expect(out.incidents).toEqual([]);
    expect(s.fixture.requestsTo('DELETE', `/jobs/${row.task_id}`)).toHaveLength(1);
  });
});

describe('brightdata: a cancelled snapshot that reads failed', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<BrightDataFixture>({
      kind: 'brightdata',
      fixture: () => startBrightDataFixture({ cancelledProgress: 'failed' }),
      entry: (f) => ({
        baseUrl: f.url,
        readTimeoutMs: 5_000,
        submitTimeoutMs: 3_000,
        datasetId: BRIGHTDATA_FIXTURE_DATASET,
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('cancel accepted, then progress says failed with "Collection was canceled": the job ends cancelled, never failed, with no incident', async () => {
    s.fixture.rule('cancel-failed', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-failed`, key: 'cancel-failed' });
    const row = await checked(s, ref.jobId);
    const res = await cancel(s, ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    expect(s.fixture.snapshots.get(row.task_id!)).toMatchObject({
      status: 'failed',
      errorMessage: BRIGHTDATA_CANCELLED_MESSAGE,
    });
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({
      state: 'cancelled',
      providerStatus: `failed: ${BRIGHTDATA_CANCELLED_MESSAGE}`,
      lastError: null,
      results: 0,
    });
    expect(out.incidents).toEqual([]);
    expect(s.fixture.requestsTo('POST', `/datasets/v3/snapshot/${row.task_id}/cancel`)).toHaveLength(1);
  });
});

describe('apify: the row after an abort', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ApifyFixture>({
      kind: 'apify',
      fixture: () => startApifyFixture(),
      entry: (fx) => ({ baseUrl: fx.url, actorId: 'acme~site-crawler', readTimeoutMs: 3_000, submitTimeoutMs: 3_000 }),
    });
  });
  afterAll(async () => s?.stop());

  it('abort answered ABORTED while the run’s next reads fail: the job row’s provider status is ABORTED (not the RUNNING of the last check) from the answer on; the job ends cancelled', async () => {
    s.fixture.plan('abort-me', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    const ref = await s.start({ url: 'https://shop.example/abort-me', key: 'abort-me', policy: SPARSE });
    const row = await checked(s, ref.jobId, 2);
    expect(row.provider_status).toBe('RUNNING');
    // The reads after the abort fail for a while: only the abort's own answer can tell the row.
    s.fixture.fault({ endpoint: 'run', status: 503, type: 'server-error', times: 2, urlContains: 'abort-me' });
    const cancelling = cancel(s, ref.jobId);
    const during = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.state === 'cancelling' && r.status_errors >= 1 ? r : undefined;
      },
      30_000,
      'a failed read after the abort',
    );
    expect(during).toMatchObject({ provider_status: 'ABORTED', provider_state: 'cancelled' });
    const res = await cancelling;
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    expect(s.fixture.requestsTo('POST', `/v2/actor-runs/${row.task_id}/abort`)).toHaveLength(1);
    expect(s.fixture.runs.get(row.task_id!)!.status).toBe('ABORTED');
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'cancelled', providerStatus: 'ABORTED', results: 0 });
  });
});

describe('firecrawl crawl: documents that landed before the cancel took effect', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<FirecrawlFixture>({
      kind: 'firecrawl',
      fixture: () => startFirecrawlFixture({ pageSize: 2, crawl: { pages: 5, errors: 1, robotsBlocked: 1 } }),
      entry: (fx) => ({ baseUrl: fx.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000, operation: 'crawl' }),
    });
  });
  afterAll(async () => s?.stop());

  it('3 of 5 pages written after the last check and before the cancel: the cancel’s remaining effects list those 3 documents (not the 6 pages Firecrawl counts in total)', async () => {
    s.fixture.hold('cancel-crawl');
    const ref = await s.start({ url: 'https://cancel-crawl.example.com/', key: 'cancel-crawl', policy: SPARSE });
    const row = await checked(s, ref.jobId, 2);
    const job = s.fixture.job(row.task_id!)!;
    expect(job.done).toBe(0);
    const readsBefore = job.statusReads.length;
    s.fixture.progress(job.id, 3);
    const res = await cancel(s, ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled', report: { outcome: 'cancelled' } });
    if (res.kind !== 'observed') throw new Error('unreachable');
    expect(job.statusReads.length).toBeGreaterThan(readsBefore); // read after the cancel, not before
    expect(job).toMatchObject({ status: 'cancelled', done: 3 });
    expect(res.report.remainingEffects).toMatchObject({ documents: 3, pagesFetched: 3, creditsUsed: 3 });
    const outcome = (await eventDetails(s, ref.jobId, 'state')).at(-1) as { cancel?: { remainingEffects?: unknown } };
    expect(outcome.cancel?.remainingEffects).toMatchObject({ documents: 3 });
    expect((await s.outcome(ref.jobId)).results).toBe(0);
  });
});
