/**
 * Scenarios of the `apify` kind on the provider harness: jobs go through the real workflow on the
 * shared Temporal dev server against the Apify fixture (`test/fixtures/providers/apify/server.ts`,
 * the API v2 contract with its awkward answers). Asserted: runs created (one per job, never a
 * duplicate), states, result rows and documents, errors and incidents, and that no secret leaked.
 *
 * Acceptance (201, our reference in the input, Bearer token) with a dataset read page by page under
 * `clean` (a window of empty items mid-dataset); every status word (and unknown ones); a run that
 * briefly 404s right after creation (replica lag: completes) against one deleted later (expired,
 * never resubmitted) and a deleted dataset; abort; 429 + Retry-After; the concurrency refusal
 * (402 `concurrent-runs-limit-exceeded`) teaching the adaptive limit; a lost submit reconciled by
 * listing runs and reading their inputs through a lagging list; a lost submit whose reconciliation
 * hits its bound (waits in `unknown` for an operator, no duplicate); the ad-hoc webhook on the
 * per-job token URL, its duplicate deliveries and a second dispatch, and forged deliveries refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import { providerKeys } from '../../../src/providers/shared/keys.js';
import { startApifyFixture, type ApifyFixture } from '../../fixtures/providers/apify/server.js';
import { FIXTURE_KEYS, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';
import { providerLimit, listQuarantine } from '../../helpers/storeQueries.js';

const ACTOR = 'acme~site-crawler';

/** An Apify scenario; `extra` names further entries on the same fixture: this entry with their fields over it. */
function apify(
  opts: { entry?: Record<string, unknown>; webhooks?: boolean; extra?: Record<string, Record<string, unknown>> } = {},
) {
  const entry = (fx: ApifyFixture) => ({
    baseUrl: fx.url,
    actorId: ACTOR,
    readTimeoutMs: 3_000,
    submitTimeoutMs: 3_000,
    notFoundGraceMs: 1_500,
    clean: true,
    results: { pageSize: 2 },
    ...opts.entry,
  });
  return startProviderScenario<ApifyFixture>({
    kind: 'apify',
    fixture: () => startApifyFixture(),
    entry,
    extraEntries: (fx) =>
      Object.fromEntries(Object.entries(opts.extra ?? {}).map(([name, e]) => [name, { ...entry(fx), ...e }])),
    webhooks: opts.webhooks,
  });
}

/** The provider statuses the job's timeline recorded (status changes and unrecognised words). */
async function statusesSeen(s: Scenario<ApifyFixture>, jobId: string): Promise<string[]> {
  return (await s.store.findings.timeline(jobId))
    .filter((e) => e.type === 'provider_status' || e.type === 'unrecognised_status')
    .map((e) => (JSON.parse(e.detail!) as { status: string }).status);
}

const RAW_ITEMS = [
  { url: 'https://shop.example/p/1', title: 'One', text: 'first', '#debug': { ms: 12 } },
  {},
  {},
  {},
  { url: 'https://shop.example/p/2', title: 'Two', markdown: '# Two', crawl: { httpStatusCode: 200 } },
  { url: 'https://shop.example/p/3', metadata: { title: 'Three' } },
  { url: 'https://shop.example/p/4', statusCode: 404 },
];

describe('apify through the whole workflow', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await apify();
  });
  afterAll(async () => s?.stop());

  it('acceptance: 201 + run ID recorded; the input carries the URL and our reference; the dataset is read page by page (clean: an empty window mid-dataset) and written once with every document; Bearer token only; no secret leaked', async () => {
    s.fixture.plan('accept', { items: RAW_ITEMS });
    const url = 'https://shop.example/accept';
    const ref = await s.start({ url, key: 'accept-1' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted', 'expired']);
    expect(row.state).toBe('completed');
    const runs = s.fixture.runsFor('accept');
    expect(runs).toHaveLength(1);
    expect(row.task_id).toBe(runs[0]!.id);
    expect(runs[0]!.input).toEqual({
      startUrls: [{ url }],
      scrapeOrchestratorRef: providerKeys('acme', ref.key).clientRef,
    });
    const out = await s.outcome(ref.jobId);
    // The row keeps Apify's own final word.
    expect(out).toMatchObject({
      state: 'completed',
      providerStatus: 'SUCCEEDED',
      results: 1,
      documents: { total: 4, rows: 4 },
    });
    const docs = await s.client.getResultDocuments('acme', ref.jobId);
    expect(docs.documents.map((d) => d.url)).toEqual([
      'https://shop.example/p/1',
      'https://shop.example/p/2',
      'https://shop.example/p/3',
      'https://shop.example/p/4',
    ]);
    expect(docs.documents.map((d) => d.title)).toEqual(['One', 'Two', 'Three', null]);
    expect(docs.documents[3]).toMatchObject({ httpStatus: 404 });
    const reads = s.fixture.requestsTo('GET', `/v2/actor-runs/${row.task_id}/dataset/items`);
    expect(reads.map((r) => [r.query.offset, r.query.limit, r.query.clean])).toEqual([
      ['0', '2', '1'],
      ['2', '2', '1'],
      ['4', '2', '1'],
      ['6', '2', '1'],
    ]);
    const submit = s.fixture
      .requestsTo('POST', `/v2/actors/${ACTOR}/runs`)
      .filter((r) => JSON.stringify(r.body).includes(url));
    expect(submit).toHaveLength(1);
    expect(submit[0]!.headers.authorization).toBe(`Bearer ${FIXTURE_KEYS.acme}`);
    expect(s.fixture.requests.every((r) => r.query.token === undefined)).toBe(true);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('every status word: FAILED keeps the status message and an incident; TIMED-OUT is failed; ABORTED by someone else is cancelled; TIMING-OUT, ABORTING and unknown words (PAUSED, Succeeded) only keep polling', async () => {
    const f = s.fixture;
    f.plan('w-failed', { statuses: ['READY', 'RUNNING', 'FAILED'], statusMessage: 'The actor crashed: out of memory' });
    f.plan('w-timedout', { statuses: ['RUNNING', 'TIMING-OUT', 'TIMED-OUT'], statusMessage: 'Run timed out' });
    f.plan('w-aborted', { statuses: ['RUNNING', 'ABORTING', 'ABORTED'] });
    f.plan('w-odd', { statuses: ['READY', 'PAUSED', 'Succeeded', 'SUCCEEDED'] });
    const [failed, timedOut, aborted, odd] = await Promise.all(
      ['w-failed', 'w-timedout', 'w-aborted', 'w-odd'].map((w) =>
        s.start({ url: `https://shop.example/${w}`, key: w }),
      ),
    );

    expect((await s.waitFor(failed!.jobId, ['failed', 'completed'])).state).toBe('failed');
    const fo = await s.outcome(failed!.jobId);
    expect(fo.lastError).toMatchObject({
      kind: 'provider_failed',
      code: 'FAILED',
      message: 'The actor crashed: out of memory',
    });
    expect(fo.incidents).toHaveLength(1);
    expect(fo.results).toBe(0);

    expect((await s.waitFor(timedOut!.jobId, ['failed', 'completed'])).state).toBe('failed');
    expect((await s.outcome(timedOut!.jobId)).lastError).toMatchObject({ kind: 'provider_failed', code: 'TIMED-OUT' });
    expect(await statusesSeen(s, timedOut!.jobId)).toContain('TIMING-OUT');

    expect((await s.waitFor(aborted!.jobId, ['cancelled', 'failed', 'completed'])).state).toBe('cancelled');
    expect(await statusesSeen(s, aborted!.jobId)).toContain('ABORTING');

    expect((await s.waitFor(odd!.jobId, ['completed', 'failed'])).state).toBe('completed');
    const oddTimeline = await s.store.findings.timeline(odd!.jobId);
    expect(
      oddTimeline.filter((e) => e.type === 'unrecognised_status').map((e) => JSON.parse(e.detail!).status),
    ).toEqual(['PAUSED', 'Succeeded']);
    expect((await s.outcome(odd!.jobId)).documents.total).toBe(3);
    for (const w of ['w-failed', 'w-timedout', 'w-aborted', 'w-odd']) expect(f.runsFor(w), w).toHaveLength(1);
  });

  it('a run that answers 404 twice right after creation (replica lag) completes: never counted as expiry', async () => {
    s.fixture.plan('lag', { lag404: 2 });
    const ref = await s.start({ url: 'https://shop.example/lag', key: 'lag-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'expired', 'failed'])).state).toBe('completed');
    // The 404s are in the timeline, each read as "not visible yet" (younger than the window), none counted toward expiry.
    const notFound = (await s.store.findings.timeline(ref.jobId))
      .filter((e) => e.type === 'status_not_found')
      .map((e) => JSON.parse(e.detail!) as { ageMs: number; graceMs: number });
    expect(notFound.length).toBeLessThanOrEqual(2);
    for (const n of notFound) expect(n.ageMs).toBeLessThan(n.graceMs);
    expect(s.fixture.runsFor('lag')).toHaveLength(1);
    expect(s.fixture.runsFor('lag')[0]!.statusReads.length).toBeGreaterThanOrEqual(4);
  });

  it('a run deleted after the job knew it (retention) ends expired after notFoundLimit 404s in a row, never resubmitted; a deleted dataset ends expired at the result read', async () => {
    s.fixture.plan('gone-later', { statuses: ['READY', 'RUNNING', 'SUCCEEDED'], hold: true });
    const t0 = Date.now();
    const ref = await s.start({ url: 'https://shop.example/gone-later', key: 'gone-1' });
    const row = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.task_id && r.status_checks >= 1 && Date.now() - t0 > 1_800 ? r : undefined;
      },
      30_000,
      'a check past the replica-lag grace',
    );
    s.fixture.expire(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'completed', 'tracking_interrupted'])).state).toBe(
      'expired',
    );
    const out = await s.outcome(ref.jobId);
    expect(out.events.filter((e) => e === 'status_not_found')).toHaveLength(4); // the kind's notFoundLimit
    expect(out.lastError).toMatchObject({ kind: 'not_found', code: 'record-not-found', httpStatus: 404 });
    expect(s.fixture.runsFor('gone-later')).toHaveLength(1);

    s.fixture.plan('no-dataset', { statuses: ['SUCCEEDED'], datasetGone: true });
    const gone = await s.start({ url: 'https://shop.example/no-dataset', key: 'gone-2' });
    expect((await s.waitFor(gone.jobId, ['expired', 'failed', 'completed'])).state).toBe('expired');
    expect((await s.outcome(gone.jobId)).lastError).toMatchObject({ kind: 'expired', httpStatus: 404 });
  });

  it('cancel: abort is called once, the run is ABORTED, the job cancelled with no result', async () => {
    s.fixture.plan('cancel-me', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    const ref = await s.start({ url: 'https://shop.example/cancel-me', key: 'cancel-1' });
    const row = await waitFor(async () => {
      const r = await s.store.jobs.get(ref.jobId);
      return r?.state === 'pending' && r.status_checks > 0 ? r : undefined;
    });
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    expect(s.fixture.requestsTo('POST', `/v2/actor-runs/${row.task_id}/abort`)).toHaveLength(1);
    expect(s.fixture.runs.get(row.task_id!)!.status).toBe('ABORTED');
    expect((await s.outcome(ref.jobId)).results).toBe(0);
  });

  it('429 rate-limit-exceeded with Retry-After: 2 on a status read: the next read of the run comes no sooner than 2 s later, and the job completes', async () => {
    s.fixture.plan('limited', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    const ref = await s.start({ url: 'https://shop.example/limited', key: 'limited-1' });
    const row = await waitFor(async () => {
      const r = await s.store.jobs.get(ref.jobId);
      return r?.task_id && r.status_checks >= 1 ? r : undefined;
    });
    const run = s.fixture.runs.get(row.task_id!)!;
    const before = run.statusReads.length;
    s.fixture.fault({
      endpoint: 'run',
      status: 429,
      type: 'rate-limit-exceeded',
      message: 'You have exceeded the rate limit of 60 requests per second',
      retryAfterSeconds: 2,
      urlContains: 'limited',
    });
    s.fixture.release(run.id);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    const limitedAt = run.statusReads[before]!;
    expect(run.statusReads[before + 1]! - limitedAt).toBeGreaterThanOrEqual(2_000 - 50);
  });
});

describe('apify: the concurrency refusal teaches the adaptive limit', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await apify({ entry: { limits: { activeJobs: { initial: 6 } } } });
  });
  afterAll(async () => s?.stop());

  it('402 concurrent-runs-limit-exceeded ("limit of 2") lowers the key’s limit to 2: 5 jobs, at most 3 refused submits, all completed, one run each', async () => {
    const f = s.fixture;
    f.concurrencyLimit = 2;
    f.plan('busy', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    const refs = await Promise.all(
      Array.from({ length: 5 }, (_, i) => s.start({ url: `https://shop.example/busy/${i}`, key: `busy-${i}` })),
    );
    await waitFor(
      async () => (await providerLimit(s.store, s.providerKey()))?.ceiling === 2,
      30_000,
      'the learned ceiling',
    );
    expect(f.concurrencyRefusals).toBeGreaterThanOrEqual(1);
    // Let the held runs finish as they come: a freed slot admits the next job.
    const releaser = setInterval(() => {
      for (const r of f.runsFor('busy')) if (r.status === 'RUNNING') f.release(r.id);
    }, 300);
    try {
      for (const r of refs) expect((await s.waitFor(r.jobId, ['completed', 'failed'], 90_000)).state).toBe('completed');
    } finally {
      clearInterval(releaser);
    }
    expect(f.runsFor('busy')).toHaveLength(5);
    expect(f.concurrencyRefusals).toBeLessThanOrEqual(3);
    expect(await providerLimit(s.store, s.providerKey())).toMatchObject({ ceiling: 2 });
    const refused = (await s.store.findings.timeline(refs[0]!.jobId))
      .concat(...(await Promise.all(refs.slice(1).map((r) => s.store.findings.timeline(r.jobId)))))
      .filter((e) => e.type === 'submit_rejected');
    expect(refused.length).toBe(f.concurrencyRefusals);
    expect(refused.every((e) => JSON.parse(e.detail!).error.code === 'concurrent-runs-limit-exceeded')).toBe(true);
  }, 150_000);
});

describe('apify: a lost submit reconciled by listing runs since the submit and reading their inputs', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await apify({
      entry: { reconcileList: { marginMs: 1_000, maxInputReads: 5 }, reconcile: { settleMs: 1_500 } },
    });
  });
  afterAll(async () => s?.stop());

  it('the 201 is lost; the lagging list misses the run once, then shows it among other runs: exactly one run, adopted, completed once; bounded requests', async () => {
    const f = s.fixture;
    f.listLagMs = 600;
    f.dropAfterCommit('lost', { decoys: { api: 2, web: 3 } });
    const ref = await s.start({ url: 'https://shop.example/lost', key: 'lost-1' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    const ours = f.runsFor('shop.example/lost');
    expect(ours).toHaveLength(1);
    expect(row.task_id).toBe(ours[0]!.id);
    const out = await s.outcome(ref.jobId);
    expect(out.results).toBe(1);
    expect(out.events).toContain('submit_ambiguous');
    expect(out.events.indexOf('reconcile_settling')).toBeLessThan(out.events.indexOf('reconcile_found'));
    const recorded = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'task_recorded')!;
    expect(JSON.parse(recorded.detail!).source).toMatch(/client reference/);
    // Two reads: the first, before the lag, missed our run (the decoys' inputs read: not ours);
    // the one after the lag walked 2 pages of 5 and read the decoys' inputs again, then ours.
    expect(f.requestsTo('GET', `/v2/actors/${ACTOR}/runs`).length).toBeLessThanOrEqual(4);
    expect(f.requestsTo('GET', '/v2/key-value-stores/').length).toBeLessThanOrEqual(5);
    expect(f.requestsTo('POST', `/v2/actors/${ACTOR}/runs`)).toHaveLength(1);
  });
  it('the INPUT record answers 302 to a signed URL (a documented redirect): followed, our reference read, the one run adopted and completed once', async () => {
    const f = s.fixture;
    f.listLagMs = 0;
    f.recordRedirect = true;
    try {
      f.dropAfterCommit('redirected-input');
      const ref = await s.start({ url: 'https://shop.example/redirected-input', key: 'redirected-input' });
      const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
      expect(row.state).toBe('completed');
      const ours = f.runsFor('shop.example/redirected-input');
      expect(ours).toHaveLength(1);
      expect(row.task_id).toBe(ours[0]!.id);
      const recorded = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'task_recorded')!;
      expect(JSON.parse(recorded.detail!).source).toMatch(/client reference/);
    } finally {
      f.recordRedirect = false;
    }
  });
});

describe('apify: an actor whose input schema refuses unknown fields (additionalProperties: false)', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    const reconcile = { reconcileList: { marginMs: 1_000, maxInputReads: 5 }, reconcile: { settleMs: 1_000 } };
    s = await apify({ entry: reconcile, extra: { apify_noref: { input: { clientRefField: null } } } });
    s.fixture.inputSchemaFields = ['startUrls'];
  });
  afterAll(async () => s?.stop());

  it('with our reference field the run is refused 400 invalid-input naming the field: failed at once, one request; with clientRefField null the same job runs and completes', async () => {
    const refused = await s.start({ url: 'https://shop.example/strict', key: 'strict-ref' });
    expect((await s.waitFor(refused.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(refused.jobId);
    expect(out.lastError).toMatchObject({ kind: 'permanent', httpStatus: 400 });
    expect(String(out.lastError!.message)).toMatch(/scrapeOrchestratorRef is not allowed/);
    expect(s.fixture.runsFor('shop.example/strict')).toHaveLength(0);
    const ran = await s.start({ url: 'https://shop.example/strict', key: 'strict-noref', provider: 'apify_noref' });
    expect((await s.waitFor(ran.jobId, ['failed', 'completed', 'tracking_interrupted'], 60_000)).state).toBe(
      'completed',
    );
    const runs = s.fixture.runsFor('shop.example/strict');
    expect(runs).toHaveLength(1);
    expect(Object.keys(runs[0]!.input as object)).toEqual(['startUrls']);
  });

  it('without a reference a lost submit’s run matches by URL only (weak): never adopted on its own; the job waits in unknown naming it, never resubmitted', async () => {
    s.fixture.dropAfterCommit('strict-lost');
    const ref = await s.start({ url: 'https://shop.example/strict-lost', key: 'strict-lost', provider: 'apify_noref' });
    const view = await s.waitForOperator(ref.jobId);
    const ours = s.fixture.runsFor('shop.example/strict-lost');
    expect(ours).toHaveLength(1);
    expect(view.note).toContain(ours[0]!.id);
    expect(
      s.fixture
        .requestsTo('POST', `/v2/actors/${ACTOR}/runs`)
        .filter((r) => JSON.stringify(r.body).includes('strict-lost')),
    ).toHaveLength(1);
  });
});

describe('apify: a lost submit whose reconciliation reaches its bound', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await apify({ entry: { reconcileList: { marginMs: 1_000, maxInputReads: 1 }, reconcile: { settleMs: 500 } } });
  });
  afterAll(async () => s?.stop());

  it('more candidate runs than maxInputReads: absence is not proven, the job waits in unknown for an operator with zero duplicates, then completes on the given run', async () => {
    const f = s.fixture;
    f.dropAfterCommit('crowded', { decoys: { api: 2, web: 0 } });
    const ref = await s.start({ url: 'https://shop.example/crowded', key: 'crowded-1' });
    await s.waitFor(ref.jobId, ['unknown']);
    const view = await s.waitForOperator(ref.jobId);
    expect(view.note).toContain('absence cannot be proven');
    expect(view.note).toMatch(/reconcileList\.maxInputReads/);
    expect(f.requestsTo('POST', `/v2/actors/${ACTOR}/runs`)).toHaveLength(1);
    const ours = f.runsFor('shop.example/crowded');
    expect(ours).toHaveLength(1);
    await s.client.resolve('acme', ref.jobId, { taskId: ours[0]!.id, by: 'scenario' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect(f.requestsTo('POST', `/v2/actors/${ACTOR}/runs`)).toHaveLength(1);
  });
});

/** First status check 30 s × webhookSlowdown 5 = 150 s after submit: only a webhook can finish the job sooner. */
const SLOW: Partial<PollPolicy> = {
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0,
  deadlineMs: 600_000,
  activityTimeoutMs: 5_000,
  cancelConfirmDeadlineMs: 10_000,
};

describe('apify: ad-hoc webhooks on the per-job token URL', () => {
  let s: Scenario<ApifyFixture>;
  beforeAll(async () => {
    s = await apify({ webhooks: true });
  });
  afterAll(async () => s?.stop());

  it('the run’s webhook (registered with the per-job token URL) wakes the job long before its first poll; a redelivery of one dispatch is a duplicate; a second dispatch of the same event changes nothing; no secret or token recorded', async () => {
    const f = s.fixture;
    // Every 500 ms one step: READY → RUNNING → SUCCEEDED; dispatch A delivered twice, then dispatch B once.
    f.plan('hooked', { advance: 500, deliveries: [{ times: 2 }, { times: 1 }] });
    const t0 = Date.now();
    const ref = await s.start({ url: 'https://shop.example/hooked', key: 'hooked-1', policy: SLOW });
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(50_000);
    const run = f.runsFor('hooked')[0]!;
    const token = s.callbackToken(ref.jobId);
    expect(run.webhooks).toEqual([
      {
        eventTypes: ['ACTOR.RUN.SUCCEEDED', 'ACTOR.RUN.FAILED', 'ACTOR.RUN.ABORTED', 'ACTOR.RUN.TIMED_OUT'],
        requestUrl: `${s.api!.webhookUrl}/${token}`,
      },
    ]);
    const sent = await waitFor(
      () =>
        f.deliveries.filter((d) => d.runId === run.id).length === 3
          ? f.deliveries.filter((d) => d.runId === run.id)
          : undefined,
      20_000,
      'three deliveries',
    );
    expect(sent.map((d) => d.status)).toEqual([200, 200, 200]);
    expect(sent[0]!.dispatchId).toBe(sent[1]!.dispatchId);
    expect(sent[2]!.dispatchId).not.toBe(sent[0]!.dispatchId);
    expect(sent.map((d) => (d.body as { outcome: string }).outcome).slice(0, 2)).toEqual(['woken', 'duplicate']);
    expect(['woken', 'job_final', 'not_running']).toContain((sent[2]!.body as { outcome: string }).outcome);
    const stored = await s.store.webhooks.listDeliveries({ jobId: ref.jobId });
    expect(stored.map((d) => d.event_id).sort()).toEqual([sent[0]!.dispatchId, sent[2]!.dispatchId].sort());
    expect(f.runsFor('hooked')).toHaveLength(1);
    expect((await s.outcome(ref.jobId)).documents.total).toBe(3);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    const logs = s.api!.logs();
    expect(logs).not.toContain(token);
    expect(logs).toContain('/v1/webhooks/apify/[REDACTED]');
    expect(JSON.stringify(await s.store.findings.timeline(ref.jobId))).not.toContain(token);
  });

  it('a delivery whose answer Apify never got is retried on its back-off with the same dispatch ID: the first woke the job, the retry is a duplicate answered 2xx (what stops Apify’s retries); one run, one result', async () => {
    const f = s.fixture;
    const delays = f.webhookRetryDelaysMs;
    f.webhookRetryDelaysMs = [300, 600, 1_200];
    f.webhookAnswersLost = 1;
    try {
      f.plan('retried-hook', { advance: 500 });
      const t0 = Date.now();
      const ref = await s.start({ url: 'https://shop.example/retried-hook', key: 'retried-hook-1', policy: SLOW });
      await s.waitFor(ref.jobId, ['completed'], 60_000);
      expect(Date.now() - t0).toBeLessThan(50_000);
      const run = f.runsFor('retried-hook')[0]!;
      const sent = await waitFor(
        () => {
          const ds = f.deliveries.filter((d) => d.runId === run.id);
          return ds.length >= 2 && ds.at(-1)!.status === 200 ? ds : undefined;
        },
        20_000,
        'the retried delivery answered',
      );
      expect(sent.map((d) => [d.retry, d.status])).toEqual([
        [0, 'error'],
        [1, 200],
      ]);
      expect(sent[1]!.dispatchId).toBe(sent[0]!.dispatchId);
      expect((sent[0]!.body as { lost: { outcome: string } }).lost.outcome).toBe('woken');
      expect((sent[1]!.body as { outcome: string }).outcome).toBe('duplicate');
      const stored = await s.store.webhooks.listDeliveries({ jobId: ref.jobId });
      expect(stored.map((d) => d.event_id)).toEqual([sent[0]!.dispatchId]);
      expect(f.runsFor('retried-hook')).toHaveLength(1);
      expect((await s.outcome(ref.jobId)).results).toBe(1);
    } finally {
      f.webhookRetryDelaysMs = delays;
      f.webhookAnswersLost = 0;
    }
  });

  it('forged deliveries: no token, a wrong token or another job’s token are 401 and quarantined without their body; nothing changes', async () => {
    const f = s.fixture;
    f.plan('forged', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    f.plan('other-job', { statuses: ['RUNNING', 'SUCCEEDED'], hold: true });
    const ref = await s.start({ url: 'https://shop.example/forged', key: 'forged-1', policy: SLOW });
    const other = await s.start({ url: 'https://shop.example/other-job', key: 'forged-2', policy: SLOW });
    const row = await s.waitFor(ref.jobId, ['pending']);
    await s.waitFor(other.jobId, ['pending']);
    const event = {
      userId: 'u',
      createdAt: new Date().toISOString(),
      eventType: 'ACTOR.RUN.SUCCEEDED',
      eventData: { actorId: 'a', actorRunId: row.task_id },
      resource: { id: row.task_id, status: 'SUCCEEDED' },
    };
    for (const token of [undefined, '0'.repeat(64), s.callbackToken(other.jobId)]) {
      const res = await s.api!.call(
        null,
        'POST',
        token === undefined ? '/v1/webhooks/apify' : `/v1/webhooks/apify/${token}`,
        {
          json: event,
          headers: { 'x-apify-webhook-dispatch-id': 'forged-dispatch' },
        },
      );
      expect(res.status, String(token)).toBe(401);
      expect(await res.json()).toMatchObject({ type: '/problems/invalid-webhook-token' });
    }
    const kept = (await listQuarantine(s.store, { provider: 'apify' })).filter((q) => q.event_id === 'forged-dispatch');
    expect(kept.map((q) => [q.reason, q.body])).toEqual([
      ['invalid_token', ''],
      ['invalid_token', ''],
      ['invalid_token', ''],
    ]);
    expect(await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).toEqual([]);
    expect((await s.store.jobs.get(ref.jobId))!.state).toBe('pending');
    for (const r of [...f.runsFor('forged'), ...f.runsFor('other-job')]) f.setStatus(r.id, 'ABORTED');
  });
});
