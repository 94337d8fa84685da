/**
 * Bright Data behaviours the second documentation-only review added to the fixture
 * (`test/fixtures/providers/brightdata/CONTRACT.md`, gaps 22–35), met by the product through its
 * normal flow on the provider harness (real workflow, real dev server): progress carrying the live
 * timing fields and counts, a cancelled snapshot whose progress carries `error_codes.aborted_page`
 * and no counts (cancelled by the operator, or at Bright Data), the automatic running-jobs `429`
 * without `Retry-After`, results read in parts while `…/parts` refuses a `batch_size` below 1000,
 * the live `validation_error` body (`type`, `line`, `index`), and a snapshot paused at Bright Data.
 * The tests assert what a user relies on (final state, one snapshot, one result, no false
 * failure), never the fixture’s scripted replies; a direct read of the fixture only checks that
 * the behaviour under test was in place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import {
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
  type BrightDataFixtureOptions,
} from '../../fixtures/providers/brightdata/server.js';
import { FIXTURE_KEYS, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

function brightdata(fx: BrightDataFixtureOptions = {}) {
  return startProviderScenario<BrightDataFixture>({
    kind: 'brightdata',
    fixture: () => startBrightDataFixture(fx),
    entry: (f) => ({
      baseUrl: f.url,
      readTimeoutMs: 5_000,
      submitTimeoutMs: 3_000,
      datasetId: BRIGHTDATA_FIXTURE_DATASET,
      reconcile: { settleMs: 1_000 },
      listing: { marginMs: 5_000 },
    }),
  });
}

/** The job’s row once it has a task and at least `checks` status checks. */
async function checked(s: Scenario<BrightDataFixture>, jobId: string, checks = 1) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= checks ? r : undefined;
    },
    30_000,
    `${checks} status checks of ${jobId}`,
  );
}

const auth = { authorization: `Bearer ${FIXTURE_KEYS.acme}` };

/** What Bright Data’s progress says of a snapshot now (a direct read: checks the behaviour under test is in place). */
async function progressOf(s: Scenario<BrightDataFixture>, id: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${s.fixture.url}/datasets/v3/progress/${id}`, { headers: auth })).json()) as Record<
    string,
    unknown
  >;
}

/** Triggers whose body names `part`. */
const triggersWith = (s: Scenario<BrightDataFixture>, part: string) =>
  s.fixture.requestsTo('POST', '/datasets/v3/trigger').filter((r) => JSON.stringify(r.body).includes(part));

async function eventsOf(s: Scenario<BrightDataFixture>, jobId: string, type: string) {
  return (await s.store.findings.timeline(jobId)).filter((e) => e.type === type);
}

describe('brightdata docs: progress as seen live', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata({ progressCounts: true });
  });
  afterAll(async () => s?.stop());

  it('progress carrying running_time while running, then collection_duration, avg_duration_per_input and the counts once ready: the job completes once with its one record as the one document; one snapshot, one result, every word recognised', async () => {
    s.fixture.rule('?timing', { kind: 'hold' });
    const url = `${pages.pageUrl('wikipedia')}?timing`;
    const ref = await s.start({ url, key: 'timing' });
    const row = await checked(s, ref.jobId, 2);
    expect(row).toMatchObject({ state: 'pending', provider_status: 'running' });
    expect(await progressOf(s, row.task_id!)).toMatchObject({ status: 'running', running_time: expect.any(Number) });
    await s.fixture.finish(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    expect(await progressOf(s, row.task_id!)).toMatchObject({
      status: 'ready',
      records: 1,
      errors: 0,
      collection_duration: expect.any(Number),
      avg_duration_per_input: expect.any(Number),
    });
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({
      state: 'completed',
      taskId: row.task_id,
      results: 1,
      documents: { total: 1, rows: 1 },
    });
    expect(out.incidents).toEqual([]);
    expect(out.events).not.toContain('unrecognised_status');
    expect(out.events.filter((e) => e === 'task_recorded')).toHaveLength(1);
    // The record read is compared with the snapshot's own `records` count: complete.
    expect(await s.client.getResult('acme', ref.jobId)).toMatchObject({ partial: false, expectedDocuments: 1 });
    expect(s.fixture.snapshotsWith('?timing')).toHaveLength(1);
    expect(triggersWith(s, '?timing')).toHaveLength(1);
  });

  it('cancelled by the operator: progress then reads canceled with error_codes.aborted_page and no counts; the job ends cancelled, never failed: no error, no result, no incident, one cancel call', async () => {
    s.fixture.rule('?op-cancel', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?op-cancel`, key: 'op-cancel' });
    const row = await checked(s, ref.jobId);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    const progress = await progressOf(s, row.task_id!);
    expect(progress).toMatchObject({ status: 'canceled', error_codes: { aborted_page: 1 } });
    expect(progress).not.toHaveProperty('records');
    expect(progress).not.toHaveProperty('errors');
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'cancelled', lastError: null, results: 0 });
    expect(out.incidents).toEqual([]);
    expect(s.fixture.requestsTo('POST', `/datasets/v3/snapshot/${row.task_id}/cancel`)).toHaveLength(1);
    expect(s.fixture.snapshotsWith('?op-cancel')).toHaveLength(1);
  });

  it('cancelled at Bright Data by someone else (progress canceled with error_codes.aborted_page, no counts): the job ends cancelled, never failed and never stuck, with no result and no resubmit', async () => {
    s.fixture.rule('?bd-cancel', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('002')}?bd-cancel`, key: 'bd-cancel' });
    const row = await checked(s, ref.jobId);
    const res = await fetch(`${s.fixture.url}/datasets/v3/snapshot/${row.task_id}/cancel`, {
      method: 'POST',
      headers: auth,
    });
    expect(res.status).toBe(200);
    expect(await progressOf(s, row.task_id!)).toMatchObject({ status: 'canceled', error_codes: { aborted_page: 1 } });
    expect((await s.waitFor(ref.jobId, ['cancelled', 'failed', 'completed', 'tracking_interrupted'])).state).toBe(
      'cancelled',
    );
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'cancelled', results: 0 });
    expect(s.fixture.snapshotsWith('?bd-cancel')).toHaveLength(1);
    expect(triggersWith(s, '?bd-cancel')).toHaveLength(1);
  });

  it('a snapshot of 2,500 records read in parts while …/parts refuses a batch_size below 1000 (documented): no read refused, every part read once, 2,500 documents', async () => {
    s.fixture.rule('?parts-checked', { kind: 'records', count: 2_500 });
    const ref = await s.start({ url: `${pages.pageUrl('cnet')}?parts-checked`, key: 'parts-checked' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const id = (await s.store.jobs.get(ref.jobId))!.task_id!;
    const reads = s.fixture.requestsTo('GET', `/datasets/v3/snapshot/${id}`).filter((r) => !r.path.endsWith('/input'));
    for (const r of reads) expect(Number(r.query.batch_size ?? 1_000)).toBeGreaterThanOrEqual(1_000);
    const parts = reads.filter((r) => !r.path.endsWith('/parts')).map((r) => r.query.part);
    expect(new Set(parts).size).toBe(parts.length);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'completed', results: 1, documents: { total: 2_500, rows: 2_500 } });
    expect(out.incidents).toEqual([]);
  });

  it('a trigger refused with the live validation_error body (type validation, line, index, errors): failed at once naming the field and the reason; one trigger, nothing created', async () => {
    s.fixture.rule('?live-invalid', {
      kind: 'validation_error',
      field: 'url',
      reason: 'This field must be a valid url',
    });
    const ref = await s.start({ url: `${pages.pageUrl('cnn')}?live-invalid`, key: 'live-invalid' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ kind: 'permanent', httpStatus: 400 });
    expect(String(out.lastError!.message)).toMatch(/url/);
    expect(String(out.lastError!.message)).toMatch(/This field must be a valid url/);
    expect(triggersWith(s, '?live-invalid')).toHaveLength(1);
    expect(s.fixture.snapshotsWith('?live-invalid')).toHaveLength(0);
  });

  it('a snapshot paused at Bright Data (POST …/pause answered OK; progress still running past its planned end) keeps the job pending, never failed; once resumed it completes once with its document', async () => {
    s.fixture.conformance.setRunMs(3_000);
    try {
      const ref = await s.start({ url: `${pages.pageUrl('heise')}?paused`, key: 'paused' });
      const row = await checked(s, ref.jobId);
      const res = await fetch(`${s.fixture.url}/datasets/v3/snapshot/${row.task_id}/pause`, {
        method: 'POST',
        headers: auth,
      });
      expect([res.status, await res.text()]).toEqual([200, 'OK']);
      const planned = Date.parse(s.fixture.snapshots.get(row.task_id!)!.created) + 3_000;
      await waitFor(
        () => s.fixture.statusReads(row.task_id!).filter((t) => t > planned).length >= 2,
        30_000,
        'two progress reads after the planned end',
      );
      expect(s.fixture.snapshots.get(row.task_id!)!.status).toBe('running');
      expect(await s.store.jobs.get(ref.jobId)).toMatchObject({ state: 'pending', provider_status: 'running' });
      s.fixture.resume(row.task_id!);
      expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
      const out = await s.outcome(ref.jobId);
      expect(out).toMatchObject({ state: 'completed', results: 1, documents: { total: 1 } });
      expect(out.incidents).toEqual([]);
      expect(s.fixture.snapshotsWith('?paused')).toHaveLength(1);
    } finally {
      s.fixture.conformance.setRunMs(400);
    }
  });
});

describe('brightdata docs: the automatic running-jobs limit', () => {
  // Its own fixture: a limit of one running snapshot refuses every other trigger while one runs.
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata({ runningJobsLimit: 1 });
  });
  afterAll(async () => s?.stop());

  it('a trigger refused 429 "too many running jobs" (automatic, no Retry-After) while another snapshot runs is waited out: the job completes once the other ends, with exactly one snapshot of its own', async () => {
    s.fixture.rule('?first-running', { kind: 'hold' });
    const first = await s.start({ url: `${pages.pageUrl('001')}?first-running`, key: 'first-running' });
    const firstRow = await checked(s, first.jobId);
    const second = await s.start({ url: `${pages.pageUrl('cnn')}?second-waits`, key: 'second-waits' });
    await waitFor(
      async () => (await eventsOf(s, second.jobId, 'submit_rejected')).length > 0,
      30_000,
      'the second trigger refused',
    );
    expect(s.fixture.refusals.length).toBeGreaterThan(0);
    expect(s.fixture.snapshotsWith('?second-waits')).toHaveLength(0);
    expect((await s.store.jobs.get(second.jobId))?.state).toBe('submitting');
    await s.fixture.finish(firstRow.task_id!);
    expect((await s.waitFor(first.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect((await s.waitFor(second.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
      'completed',
    );
    expect(s.fixture.snapshotsWith('?second-waits')).toHaveLength(1);
    expect(triggersWith(s, '?second-waits').length).toBeGreaterThanOrEqual(2);
    const out = await s.outcome(second.jobId);
    expect(out).toMatchObject({ results: 1, documents: { total: 1 } });
    expect(out.events.filter((e) => e === 'task_recorded')).toHaveLength(1);
    expect(s.fixture.ipBlocked()).toBe(false);
  });
});
