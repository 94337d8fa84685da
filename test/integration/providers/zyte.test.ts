/**
 * Scenarios of the `zyte` kind on the provider harness: jobs go through the real workflow on the
 * shared Temporal dev server against the Zyte Scrapy Cloud fixture (two origins: the Jobs API and
 * the storage API, `test/fixtures/providers/zyte/server.ts`). Asserted: Scrapy Cloud jobs created
 * (one per scrape, never a duplicate), states, result rows and documents, errors, and that no
 * secret leaked.
 *
 * Acceptance (run.json with our tag and reference, Basic auth with the key as user name) and items
 * read page by page; every state and close reason (unknown ones only keep polling); `deleted` and
 * a `404` streak as expiry; stop; 429 + Retry-After; a lost submit reconciled by tag; and Zyte's
 * own dedupe — a list lagging beyond the settle window makes absence look proven, the resubmit is
 * refused "already scheduled", and the adapter adopts the job it finds by tag instead of running
 * a second one. Scrapy Cloud has no webhooks (a `webhook` entry is refused by the configuration).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerKeys } from '../../../src/providers/shared/keys.js';
import { FIXTURE_KEYS, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';
import { startZyteFixture, type ZyteFixture } from '../../fixtures/providers/zyte/server.js';

function zyte(entry: Record<string, unknown> = {}) {
  return startProviderScenario<ZyteFixture>({
    kind: 'zyte',
    fixture: () => startZyteFixture(),
    entry: (fx) => ({
      baseUrl: fx.url,
      storageUrl: fx.storageUrl,
      project: fx.project,
      spider: 'quotes',
      readTimeoutMs: 3_000,
      submitTimeoutMs: 3_000,
      results: { pageSize: 2 },
      ...entry,
    }),
  });
}

async function whenChecked(s: Scenario<ZyteFixture>, jobId: string, checks = 1) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= checks ? r : undefined;
    },
    30_000,
    `${checks} status check(s)`,
  );
}

describe('zyte through the whole workflow', () => {
  let s: Scenario<ZyteFixture>;
  beforeAll(async () => {
    s = await zyte();
  });
  afterAll(async () => s?.stop());

  it('acceptance: run.json carries project, spider, our tag, the URL and our reference (Basic auth, key as user name); the job key is recorded; 5 items read 2 per page and written once; no secret leaked', async () => {
    s.fixture.plan('accept', {
      items: Array.from({ length: 5 }, (_, i) => ({
        url: `https://quotes.example/q/${i}`,
        title: `Quote ${i}`,
        text: `text ${i}`,
        author: `Author ${i}`,
      })),
    });
    const url = 'https://quotes.example/accept';
    const ref = await s.start({ url, key: 'accept-1' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted', 'expired']);
    expect(row.state).toBe('completed');
    const jobs = s.fixture.jobsFor('accept');
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.id);
    expect(row.task_id).toMatch(/^123\/1\/\d+$/);
    const clientRef = providerKeys('acme', ref.key).clientRef;
    expect(jobs[0]!.form).toEqual({
      url,
      scrape_ref: clientRef,
      project: '123',
      spider: 'quotes',
      add_tag: `scrape-ref-${clientRef}`,
    });
    const run = s.fixture.app
      .requestsTo('POST', '/api/run.json')
      .find((r) => (r.body as { url?: string }).url === url)!;
    expect(run.headers.authorization).toBe(`Basic ${Buffer.from(`${FIXTURE_KEYS.acme}:`).toString('base64')}`);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'completed', results: 1, documents: { total: 5, rows: 5 } });
    const docs = await s.client.getResultDocuments('acme', ref.jobId);
    expect(docs.documents.map((d) => d.url)).toEqual([0, 1, 2, 3, 4].map((i) => `https://quotes.example/q/${i}`));
    expect(docs.documents[2]).toMatchObject({ title: 'Quote 2', text: 'text 2', data: { author: 'Author 2' } });
    expect(s.fixture.storage.requestsTo('GET', `/items/${row.task_id}`).map((r) => r.query.start)).toEqual(
      [0, 2, 4].map((n) => `${row.task_id}/${n}`),
    );
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('every state and close reason: failed, memusage_exceeded and shutdown fail with the reason as code; cancelled (also "cancelled (stalled)") ends cancelled; closespider_itemcount completes; an unknown state and close reason only keep polling', async () => {
    const f = s.fixture;
    const cases: [string, string, string][] = [
      ['cr-failed', 'failed', 'failed'],
      ['cr-memory', 'memusage_exceeded', 'failed'],
      ['cr-shutdown', 'shutdown', 'failed'],
      ['cr-cancelled', 'cancelled', 'cancelled'],
      ['cr-stalled', 'cancelled (stalled)', 'cancelled'],
      ['cr-itemcount', 'closespider_itemcount', 'completed'],
    ];
    for (const [w, reason] of cases) f.plan(w, { closeReason: reason });
    f.plan('cr-odd', { states: ['paused', 'running', 'finished'], closeReason: 'weird_reason', hold: true });
    const refs = await Promise.all(
      [...cases.map(([w]) => w), 'cr-odd'].map((w) => s.start({ url: `https://quotes.example/${w}`, key: w })),
    );
    for (const [i, [w, reason, state]] of cases.entries()) {
      expect((await s.waitFor(refs[i]!.jobId, ['completed', 'failed', 'cancelled', 'expired'])).state, w).toBe(state);
      if (state === 'failed') {
        const out = await s.outcome(refs[i]!.jobId);
        expect(out.lastError, w).toMatchObject({ kind: 'provider_failed', code: reason });
        expect(out.incidents, w).toHaveLength(1);
      }
    }
    const odd = refs.at(-1)!;
    const job = f.jobsFor('cr-odd')[0]!;
    await waitFor(
      async () => (await s.store.jobs.get(odd.jobId))?.provider_status === 'running',
      30_000,
      'past the word "paused"',
    );
    f.release(job.id);
    await waitFor(
      async () => (await s.store.jobs.get(odd.jobId))?.provider_status === 'finished/weird_reason',
      30_000,
      'the unknown close reason recorded',
    );
    expect(await s.store.jobs.get(odd.jobId)).toMatchObject({
      state: 'pending',
      provider_status: 'finished/weird_reason',
      provider_state: 'unrecognised',
    });
    const unknown = (await s.store.findings.timeline(odd.jobId))
      .filter((e) => e.type === 'unrecognised_status')
      .map((e) => JSON.parse(e.detail!).status);
    expect(unknown).toEqual(['paused', 'finished/weird_reason']);
    f.setState(job.id, 'finished', 'finished'); // an operator's mapping would say the same (closeReasons)
    expect((await s.waitFor(odd.jobId, ['completed', 'failed'])).state).toBe('completed');
    for (const w of [...cases.map(([x]) => x), 'cr-odd']) expect(f.jobsFor(w), w).toHaveLength(1);
  });

  it('a job deleted at Zyte is expired at once; a job whose metadata is gone (404) is expired after notFoundLimit reads, never rescheduled', async () => {
    const f = s.fixture;
    f.plan('deleted', { hold: true });
    f.plan('vanished', { hold: true });
    const del = await s.start({ url: 'https://quotes.example/deleted', key: 'deleted-1' });
    const gone = await s.start({ url: 'https://quotes.example/vanished', key: 'vanished-1' });
    f.setState((await whenChecked(s, del.jobId)).task_id!, 'deleted');
    f.expire((await whenChecked(s, gone.jobId)).task_id!);
    expect((await s.waitFor(del.jobId, ['expired', 'failed', 'completed'])).state).toBe('expired');
    expect((await s.outcome(del.jobId)).lastError).toMatchObject({ kind: 'expired', code: 'JOB_DELETED' });
    expect((await s.waitFor(gone.jobId, ['expired', 'failed', 'completed'])).state).toBe('expired');
    const out = await s.outcome(gone.jobId);
    // notFoundLimit (3) 404s counted; any read while the job was younger than the window is not counted.
    const counted = (await s.store.findings.timeline(gone.jobId))
      .filter((e) => e.type === 'status_not_found')
      .filter((e) => (JSON.parse(e.detail!) as { counted?: boolean }).counted !== false);
    expect(counted).toHaveLength(3);
    expect(out.events.filter((e) => e === 'status_not_found').length).toBeGreaterThanOrEqual(3);
    expect(out.lastError).toMatchObject({ kind: 'not_found', httpStatus: 404 });
    expect(f.jobsFor('deleted')).toHaveLength(1);
    expect(f.jobsFor('vanished')).toHaveLength(1);
  });

  it('cancel: stop.json is called once, the job finishes with close reason cancelled, ours ends cancelled with no result', async () => {
    s.fixture.plan('stop-me', { hold: true });
    const ref = await s.start({ url: 'https://quotes.example/stop-me', key: 'stop-1' });
    const row = await whenChecked(s, ref.jobId, 2);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    const stops = s.fixture.app
      .requestsTo('POST', '/api/jobs/stop.json')
      .filter((r) => (r.body as { job?: string }).job === row.task_id);
    expect(stops).toHaveLength(1);
    expect(s.fixture.jobs.get(row.task_id!)).toMatchObject({ state: 'finished', closeReason: 'cancelled' });
    expect((await s.outcome(ref.jobId)).results).toBe(0);
  });

  it('429 with Retry-After: 2 on a metadata read: the next read comes no sooner than 2 s later, and the job completes', async () => {
    s.fixture.plan('limited', { hold: true });
    const ref = await s.start({ url: 'https://quotes.example/limited', key: 'limited-1' });
    const row = await whenChecked(s, ref.jobId);
    const job = s.fixture.jobs.get(row.task_id!)!;
    const before = job.metaReads.length;
    s.fixture.fault({
      endpoint: 'meta',
      status: 429,
      message: 'Too many requests',
      retryAfterSeconds: 2,
      urlContains: 'limited',
    });
    s.fixture.release(job.id);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    expect(job.metaReads[before + 1]! - job.metaReads[before]!).toBeGreaterThanOrEqual(2_000 - 50);
  });
  it('a job beyond the organisation’s free Scrapy Cloud units stays pending (documented: never refused): polled on, never resubmitted, run once the first job frees its unit', async () => {
    s.fixture.capacityUnits = 1;
    try {
      s.fixture.plan('units-first', { hold: true });
      const first = await s.start({ url: 'https://quotes.example/units-first', key: 'units-first' });
      const firstRow = await whenChecked(s, first.jobId);
      const second = await s.start({ url: 'https://quotes.example/units-second', key: 'units-second' });
      const waiting = await whenChecked(s, second.jobId, 2);
      expect(waiting).toMatchObject({ state: 'pending', provider_status: 'pending' });
      s.fixture.release(firstRow.task_id!);
      for (const ref of [first, second])
        expect(
          (await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted', 'expired'], 60_000)).state,
        ).toBe('completed');
      expect(s.fixture.jobsFor('units-first')).toHaveLength(1);
      expect(s.fixture.jobsFor('units-second')).toHaveLength(1);
    } finally {
      s.fixture.capacityUnits = Number.POSITIVE_INFINITY;
    }
  });
});

describe('zyte: lost submits, reconciled by tag', () => {
  let s: Scenario<ZyteFixture>;
  beforeAll(async () => {
    s = await zyte({ reconcile: { settleMs: 4_000 } });
  });
  afterAll(async () => s?.stop());

  it('the answer of run.json is lost; the lagging list misses the job once, then shows it by our tag: one job, adopted, completed once', async () => {
    const f = s.fixture;
    f.listLagMs = 2_500; // the first read (right after the lost answer) misses it; the one after the lag (4 s) does not
    f.dropAfterCommit('lost');
    const ref = await s.start({ url: 'https://quotes.example/lost', key: 'lost-1' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(f.jobsFor('lost')).toHaveLength(1);
    expect(row.task_id).toBe(f.jobsFor('lost')[0]!.id);
    const out = await s.outcome(ref.jobId);
    expect(out.events).toEqual(expect.arrayContaining(['submit_ambiguous', 'reconcile_settling', 'reconcile_found']));
    const recorded = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'task_recorded')!;
    expect(JSON.parse(recorded.detail!).source).toMatch(/client reference/);
    expect(
      f.app.requestsTo('POST', '/api/run.json').filter((r) => (r.body as { url?: string }).url?.includes('lost')),
    ).toHaveLength(1);
  });

  it('Zyte’s own dedupe: the list lags past the declared lag so absence looks proven; the resubmit is refused "already scheduled" and the job found by our tag is adopted: still one job', async () => {
    const f = s.fixture;
    f.listLagMs = 9_000; // longer than the declared lag (4 s) after the submit's timeout (3 s): outside the contract
    f.plan('dedupe', { hold: true });
    f.dropAfterCommit('dedupe');
    const refusalsBefore = f.duplicateRefusals;
    const ref = await s.start({ url: 'https://quotes.example/dedupe', key: 'dedupe-1' });
    const row = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.task_id ? r : undefined;
      },
      60_000,
      'the adopted job',
    );
    const jobs = f.jobsFor('dedupe');
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.id);
    expect(f.duplicateRefusals - refusalsBefore).toBeGreaterThanOrEqual(1);
    const timeline = await s.store.findings.timeline(ref.jobId);
    expect(timeline.map((e) => e.type)).toContain('reconcile_absent');
    f.release(jobs[0]!.id);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    expect(f.jobsFor('dedupe')).toHaveLength(1);
    f.listLagMs = 0;
  });

  it('a refusal that proves our job exists is durable: once "already scheduled" answered, no later empty list makes the job absent, nothing is submitted again when the first job has finished, and the job is adopted when the list shows it', async () => {
    const f = s.fixture;
    f.listLagMs = 15_000; // past the declared lag: the first reconcile wrongly "proves" absence
    f.plan('proof', { hold: true });
    f.dropAfterCommit('proof');
    const refusalsBefore = f.duplicateRefusals;
    const submits = () =>
      f.app.requestsTo('POST', '/api/run.json').filter((r) => (r.body as { url?: string }).url?.includes('proof'))
        .length;
    const ref = await s.start({ url: 'https://quotes.example/proof', key: 'proof-1' });
    await waitFor(async () => f.duplicateRefusals > refusalsBefore, 60_000, 'the "already scheduled" refusal');
    // The first job finishes now: Zyte would no longer refuse a duplicate, so a resubmit would make a second job.
    f.release(f.jobsFor('proof')[0]!.id);
    const submitted = submits();
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 120_000);
    expect(row.state).toBe('completed');
    expect(f.jobsFor('proof')).toHaveLength(1);
    expect(row.task_id).toBe(f.jobsFor('proof')[0]!.id);
    expect(submits()).toBe(submitted);
    const types = (await s.store.findings.timeline(ref.jobId)).map((e) => e.type);
    expect(types).toContain('existence_proven');
    expect(types.lastIndexOf('reconcile_absent')).toBeLessThan(types.indexOf('existence_proven'));
    f.listLagMs = 0;
  }, 180_000);
});
