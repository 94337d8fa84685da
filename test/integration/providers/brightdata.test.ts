/**
 * Scenarios of the `brightdata` kind (Bright Data Web Scraper API, datasets v3) on the provider
 * harness: real workflow, real dev server, the kind's fixture
 * (`test/fixtures/providers/brightdata/server.ts`). Acceptance, a snapshot downloaded in parts,
 * every progress word (and `202 building`, unknown words), `ready` while the download still
 * answers `202`, `400` "Snapshot is empty" (plain text and JSON code) ending `failed`, `400`
 * "Snapshot is expired" ending `expired`, cancel, "too many running jobs", a burst of `429`s that
 * never gets near Bright Data's 25-in-5-minutes IP block, a lost trigger reconciled by comparing
 * snapshot inputs (found, and proved absent; an input that reads `400` never proves "not ours"),
 * a `400 validation_error` naming the refused field, a `401` for an unknown key, and `notify`
 * pings on the per-job token URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import {
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
  type BrightDataFixtureOptions,
} from '../../fixtures/providers/brightdata/server.js';
import {
  FIXTURE_KEYS,
  SCENARIO_POLICY,
  startProviderScenario,
  waitFor,
  type Scenario,
} from '../../fixtures/providers/harness.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Bright Data scenario; `extra` names further entries on the same fixture: this entry with their fields over it. */
function brightdata(
  fx: BrightDataFixtureOptions = {},
  opts: { entry?: Record<string, unknown>; webhooks?: boolean; extra?: Record<string, Record<string, unknown>> } = {},
) {
  const entry = (f: BrightDataFixture) => ({
    baseUrl: f.url,
    readTimeoutMs: 5_000,
    submitTimeoutMs: 3_000,
    datasetId: BRIGHTDATA_FIXTURE_DATASET,
    reconcile: { settleMs: 1_000 },
    listing: { marginMs: 5_000 },
    ...opts.entry,
  });
  return startProviderScenario<BrightDataFixture>({
    kind: 'brightdata',
    fixture: () => startBrightDataFixture(fx),
    entry,
    extraEntries: (f) =>
      Object.fromEntries(Object.entries(opts.extra ?? {}).map(([name, e]) => [name, { ...entry(f), ...e }])),
    webhooks: opts.webhooks,
  });
}

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

describe('brightdata: polling', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata({ listLagMs: 600 });
  });
  afterAll(async () => s?.stop());

  it('acceptance: Bearer key, dataset_id and include_errors in the query, one input per trigger; the snapshot’s record is the one document; nothing leaked', async () => {
    const url = pages.pageUrl('wikipedia');
    const ref = await s.start({ url, key: 'accept-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const snaps = s.fixture.snapshotsWith(url);
    expect(snaps).toHaveLength(1);
    expect(snaps[0]!.inputs).toEqual([{ url }]);
    expect(snaps[0]!.query).toMatchObject({ dataset_id: BRIGHTDATA_FIXTURE_DATASET, include_errors: 'true' });
    expect(snaps[0]!.key).toBe(FIXTURE_KEYS.acme);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'completed', taskId: snaps[0]!.id, results: 1, documents: { total: 1 } });
    const docs = await s.client.getResultDocuments('acme', ref.jobId);
    expect(docs.documents[0]).toMatchObject({ url, title: expect.any(String) });
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('a snapshot of 2,500 records is downloaded in three parts of 1,000 (the part count asked once) and written as 2,500 documents', async () => {
    s.fixture.rule('many-records', { kind: 'records', count: 2_500 });
    const ref = await s.start({ url: `${pages.pageUrl('cnet')}?many-records`, key: 'parts-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const id = (await s.store.jobs.get(ref.jobId))!.task_id!;
    const downloads = s.fixture
      .requestsTo('GET', `/datasets/v3/snapshot/${id}`)
      .filter((r) => !r.path.endsWith('/parts') && !r.path.endsWith('/input'));
    expect(downloads.map((r) => r.query)).toEqual(
      [1, 2, 3].map((part) => ({ format: 'json', batch_size: '1000', part: String(part) })),
    );
    expect(s.fixture.requestsTo('GET', `/datasets/v3/snapshot/${id}/parts`)).toHaveLength(1);
    expect((await s.outcome(ref.jobId)).documents).toEqual({ total: 2_500, rows: 2_500 });
  });

  it('every progress word: starting/running keep polling, failed (still 200) keeps error_message, canceled at the provider ends cancelled; 202 building, an unknown word and another case are not ready', async () => {
    s.fixture.rule('word=hold', { kind: 'hold' });
    s.fixture.rule('word=failed', { kind: 'fail', message: 'No data found in discovery' });
    s.fixture.rule('word=canceled', { kind: 'hold' });
    const [hold, failed, canceled] = await Promise.all(
      ['hold', 'failed', 'canceled'].map((w) =>
        s.start({ url: `${pages.pageUrl('002')}?word=${w}`, key: `word-${w}` }),
      ),
    );

    const h = await checked(s, hold!.jobId, 2);
    expect(h).toMatchObject({ state: 'pending', provider_status: 'running' });
    const words = (await s.store.findings.timeline(hold!.jobId))
      .filter((e) => e.type === 'provider_status')
      .map((e) => JSON.parse(e.detail!).status);
    expect(words.every((w: string) => w === 'starting' || w === 'running')).toBe(true);
    const before = s.fixture.statusReads(h.task_id!).length;
    s.fixture.script(
      h.task_id!,
      { status: 202, json: { status: 'building' } },
      { status: 200, json: { status: 'stalled' } },
      ...Array.from({ length: 3 }, () => ({ status: 200, json: { status: 'Ready' } })),
    );
    await waitFor(
      async () => (await s.store.jobs.get(hold!.jobId))?.provider_status === 'Ready',
      30_000,
      'the word "Ready" recorded',
    );
    expect(await s.store.jobs.get(hold!.jobId)).toMatchObject({ state: 'pending', provider_state: 'unrecognised' });
    const reads = s.fixture.statusReads(h.task_id!).slice(before, before + 3);
    for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).toBeGreaterThanOrEqual(170);
    await s.fixture.finish(h.task_id!);
    expect((await s.waitFor(hold!.jobId, ['completed', 'failed'])).state).toBe('completed');

    expect((await s.waitFor(failed!.jobId, ['failed', 'completed'])).state).toBe('failed');
    const fo = await s.outcome(failed!.jobId);
    expect(fo.lastError).toMatchObject({ kind: 'provider_failed', message: 'No data found in discovery' });
    expect(fo.incidents).toHaveLength(1);

    const c = await checked(s, canceled!.jobId);
    s.fixture.setWord(c.task_id!, 'canceled');
    expect((await s.waitFor(canceled!.jobId, ['cancelled', 'failed', 'completed'])).state).toBe('cancelled');
  });

  it('progress says ready while the download still answers 202 building: not ready, retried after the stated wait, then completed', async () => {
    s.fixture.rule('late-download', { kind: 'late_download', times: 2 });
    const ref = await s.start({ url: `${pages.pageUrl('heise')}?late-download`, key: 'late-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
      'completed',
    );
    const id = (await s.store.jobs.get(ref.jobId))!.task_id!;
    const downloads = s.fixture
      .requestsTo('GET', `/datasets/v3/snapshot/${id}`)
      .filter((r) => !r.path.endsWith('/parts'));
    expect(downloads).toHaveLength(3);
    expect(downloads[1]!.at - downloads[0]!.at).toBeGreaterThanOrEqual(1_000 - 50); // "try again in 1s"
    expect((await s.outcome(ref.jobId)).incidents).toEqual([]);
  });

  it('400 "Snapshot is empty" (plain text or JSON code) ends failed with code SNAPSHOT_EMPTY; 400 "Snapshot is expired" ends expired; none is resubmitted', async () => {
    s.fixture.rule('empty-text', { kind: 'download', answer: 'empty' });
    s.fixture.rule('empty-json', { kind: 'download', answer: 'empty_json' });
    s.fixture.rule('expired-snap', { kind: 'download', answer: 'expired' });
    const [text, json, expired] = await Promise.all(
      ['empty-text', 'empty-json', 'expired-snap'].map((w) => s.start({ url: `${pages.pageUrl('001')}?${w}`, key: w })),
    );
    for (const ref of [text!, json!]) {
      expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
      const out = await s.outcome(ref.jobId);
      expect(out.lastError).toMatchObject({ kind: 'task_failed', code: 'SNAPSHOT_EMPTY' });
      expect(out.incidents[0]).toMatchObject({ http_status: 400 });
    }
    expect((await s.waitFor(expired!.jobId, ['expired', 'failed', 'tracking_interrupted'])).state).toBe('expired');
    for (const w of ['empty-text', 'empty-json', 'expired-snap']) expect(s.fixture.snapshotsWith(w)).toHaveLength(1);
  });

  it('progress answered 400 "Snapshot is empty" (the JSON code a stand-in sends, or the plain text) ends failed SNAPSHOT_EMPTY with Bright Data’s words, never tracking_interrupted; 400 "Snapshot is expired" on progress ends expired', async () => {
    s.fixture.rule('progress-empty', { kind: 'hold' });
    s.fixture.rule('progress-expired', { kind: 'hold' });
    const [json, text, expired] = await Promise.all(
      ['progress-empty-json', 'progress-empty-text', 'progress-expired'].map((w) =>
        s.start({ url: `${pages.pageUrl('001')}?${w}`, key: w }),
      ),
    );
    const answers = [
      { status: 400, json: { error: { code: 'SNAPSHOT_EMPTY', message: 'Snapshot is empty' } } },
      { status: 400, text: 'Snapshot is empty' },
      { status: 400, text: 'Snapshot is expired' },
    ];
    for (const [i, ref] of [json!, text!, expired!].entries()) {
      const row = await checked(s, ref.jobId);
      s.fixture.script(row.task_id!, ...Array.from({ length: 5 }, () => answers[i]!));
    }
    for (const ref of [json!, text!]) {
      expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
      const out = await s.outcome(ref.jobId);
      expect(out.lastError).toMatchObject({
        kind: 'task_failed',
        code: 'SNAPSHOT_EMPTY',
        httpStatus: 400,
        message: expect.stringContaining('Snapshot is empty'),
      });
      expect((await s.client.getLiveView('acme', ref.jobId)).lastError?.message).toContain('Snapshot is empty');
    }
    expect((await s.waitFor(expired!.jobId, ['expired', 'failed', 'tracking_interrupted'])).state).toBe('expired');
  });

  it('a ready snapshot whose download is 200 [] (documented: no records) completes with a content note saying it is empty, never silently, never resubmitted', async () => {
    s.fixture.rule('no-records', { kind: 'download', answer: 'empty_array' });
    const ref = await s.start({ url: `${pages.pageUrl('001')}?no-records`, key: 'no-records' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ results: 1, documents: { total: 0, rows: 0 } });
    expect(out.events).toContain('result_empty');
    expect((await s.store.results.forJob(ref.jobId))?.content_note).toMatch(/empty/);
    expect(s.fixture.snapshotsWith('no-records')).toHaveLength(1);
  });

  it('cancel: POST …/cancel once; progress then says canceled and the job ends cancelled', async () => {
    s.fixture.rule('cancel-me', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-me`, key: 'cancel-1' });
    const row = await checked(s, ref.jobId);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    expect(s.fixture.requestsTo('POST', `/datasets/v3/snapshot/${row.task_id}/cancel`)).toHaveLength(1);
    expect(s.fixture.snapshots.get(row.task_id!)!.status).toBe('canceled');
  });

  it('"too many running jobs" (429, plain text, no Retry-After) is a concurrency refusal: the trigger is repeated after the back-off, one snapshot, completed', async () => {
    s.fixture.rule('busy', { kind: 'running_jobs', running: 3, limit: 3 }, 1);
    const url = `${pages.pageUrl('cnn')}?busy`;
    const ref = await s.start({ url, key: 'busy-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    const triggers = s.fixture
      .requestsTo('POST', '/datasets/v3/trigger')
      .filter((r) => JSON.stringify(r.body).includes('?busy'));
    expect(triggers).toHaveLength(2);
    expect(triggers[1]!.at - triggers[0]!.at).toBeGreaterThanOrEqual(2_000 - 50);
    expect(s.fixture.snapshotsWith('?busy')).toHaveLength(1);
    const rejected = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'submit_rejected')!;
    expect(JSON.parse(rejected.detail!).error).toMatchObject({ kind: 'cooldown', code: 'too-many-concurrent-runs' });
  });

  it('a trigger answered 429 with Retry-After: 8 (longer than the default cool-down of 5 s): the next trigger comes no sooner than 8 s later; one snapshot, completed', async () => {
    s.fixture.rule('retry-after', { kind: 'rate_limit', retryAfterS: 8 }, 1);
    const url = `${pages.pageUrl('cnn')}?retry-after`;
    const ref = await s.start({ url, key: 'retry-after-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    const triggers = s.fixture
      .requestsTo('POST', '/datasets/v3/trigger')
      .filter((r) => JSON.stringify(r.body).includes('?retry-after'));
    expect(triggers).toHaveLength(2);
    expect(triggers[1]!.at - triggers[0]!.at).toBeGreaterThanOrEqual(8_000 - 50);
    expect(s.fixture.snapshotsWith('?retry-after')).toHaveLength(1);
  });

  it('a lost trigger answer: the snapshot with our input is only a weak match (Bright Data keeps nothing of ours), so it is never adopted on its own; the job waits in unknown with the candidate named, and the operator’s task ID completes it: one snapshot', async () => {
    const url = `${pages.pageUrl('aclu')}?lost`;
    s.fixture.addForeign([{ url: `${pages.pageUrl('aclu')}?someone-else` }]);
    s.fixture.rule('?lost', { kind: 'drop_after_commit' }, 1);
    const ref = await s.start({ url, key: 'lost-1' });
    const view = await s.waitForOperator(ref.jobId);
    const mine = s.fixture.snapshotsWith('?lost');
    expect(mine).toHaveLength(1);
    expect(view.state).toBe('unknown');
    expect(view.note).toContain(`match only by URL and time (${mine[0]!.id})`);
    const undecided = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'reconcile_undecided')!;
    const evidence = JSON.parse(undecided.detail!).evidence;
    expect(evidence.readings[0].candidates).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ taskId: mine[0]!.id, match: 'weak' }),
        expect.objectContaining({ match: 'foreign' }),
      ]),
    );
    await s.client.resolve('acme', ref.jobId, { taskId: mine[0]!.id, by: 'vitest' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
      'completed',
    );
    expect(s.fixture.snapshotsWith('?lost')).toHaveLength(1);
    const audit = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'operator_resolve')!;
    expect(JSON.parse(audit.detail!)).toMatchObject({ by: 'vitest', taskId: mine[0]!.id, outcome: 'adopted' });
  });

  it('a trigger refused 400 validation_error (JSON, the field and the reason): failed at once with the reason, one trigger, nothing created, never resubmitted', async () => {
    s.fixture.rule('?invalid-input', {
      kind: 'validation_error',
      field: 'url',
      reason: 'This field must be a valid url',
    });
    const url = `${pages.pageUrl('cnn')}?invalid-input`;
    const ref = await s.start({ url, key: 'invalid-input' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ kind: 'permanent', httpStatus: 400 });
    expect(String(out.lastError!.message)).toMatch(/This field must be a valid url/);
    const triggers = s.fixture
      .requestsTo('POST', '/datasets/v3/trigger')
      .filter((r) => JSON.stringify(r.body).includes('?invalid-input'));
    expect(triggers).toHaveLength(1);
    expect(s.fixture.snapshotsWith('?invalid-input')).toHaveLength(0);
  });

  it('a trigger lost before Bright Data created anything is proved absent by a list read after its lag (the first read waits it out), then resubmitted once', async () => {
    const url = `${pages.pageUrl('tumblr')}?never`;
    s.fixture.rule('?never', { kind: 'drop_before_commit' }, 1);
    const ref = await s.start({ url, key: 'never-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
      'completed',
    );
    expect(s.fixture.snapshotsWith('?never')).toHaveLength(1);
    const events = (await s.store.findings.timeline(ref.jobId)).map((e) => e.type);
    expect(events).toContain('reconcile_absent');
    expect(events.indexOf('reconcile_settling')).toBeLessThan(events.indexOf('reconcile_absent'));
  });
});

describe('brightdata: a snapshot whose input cannot be read', () => {
  // Its own fixture: an unreadable snapshot blocks every later proof of absence within its window.
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata({ listLagMs: 600 });
  });
  afterAll(async () => s?.stop());

  it('a lost trigger whose snapshot input reads 400 "Snapshot input does not exist": the snapshot is unreadable, never counted as not ours; the job waits in unknown naming it, never resubmitted: one snapshot', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?input-gone`;
    s.fixture.rule('?input-gone', { kind: 'drop_after_commit' }, 1);
    s.fixture.rule('?input-gone', { kind: 'input_gone' });
    const ref = await s.start({ url, key: 'input-gone' });
    await s.waitForOperator(ref.jobId);
    const mine = s.fixture.snapshotsWith('?input-gone');
    expect(mine).toHaveLength(1);
    expect(s.fixture.requestsTo('GET', `/datasets/v3/snapshot/${mine[0]!.id}/input`).length).toBeGreaterThan(0);
    const undecided = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'reconcile_undecided')!;
    const candidates = JSON.parse(undecided.detail!).evidence.readings[0].candidates;
    expect(candidates).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ taskId: mine[0]!.id, match: 'unreadable', why: expect.stringMatching(/400/) }),
      ]),
    );
    const triggers = s.fixture
      .requestsTo('POST', '/datasets/v3/trigger')
      .filter((r) => JSON.stringify(r.body).includes('?input-gone'));
    expect(triggers).toHaveLength(1);
    expect((await s.store.jobs.get(ref.jobId))!.state).toBe('unknown');
  });
});

describe('brightdata: a burst of 429s never nears the 25-in-5-minutes IP block', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata(
      {},
      { entry: { rateLimit: { maxRefusals: 5, backoffMs: 500, maxBackoffMs: 4_000 }, limits: { maxConcurrent: 2 } } },
    );
  });
  afterAll(async () => s?.stop());

  it('eight jobs whose triggers all get 429 without Retry-After: at most maxRefusals + maxConcurrent − 1 = 6 refusals, then no call reaches Bright Data', async () => {
    s.fixture.rule('storm', { kind: 'rate_limit' });
    // A deadline longer than the guard's hold: the submits wait it out (a shorter one fails the job with the cool-down as reason).
    const policy = { ...SCENARIO_POLICY, deadlineMs: 900_000 };
    const refs = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        s.start({ url: `${pages.pageUrl('002')}?storm=${i}`, key: `storm-${i}`, policy }),
      ),
    );
    await waitFor(() => s.fixture.refusals.length >= 5, 60_000, 'five refusals');
    const atGuard = s.fixture.requests.length;
    await sleep(8_000);
    expect(s.fixture.refusals.length).toBeLessThanOrEqual(6);
    expect(s.fixture.requests.length - atGuard).toBeLessThanOrEqual(1); // one call may have been in flight
    expect(s.fixture.snapshotsWith('storm')).toHaveLength(0);
    for (const ref of refs) expect((await s.store.jobs.get(ref.jobId))?.state).toBe('submitting');
    const rejected = (await Promise.all(refs.map((r) => s.store.findings.timeline(r.jobId))))
      .flat()
      .filter((e) => e.type === 'submit_rejected');
    expect(rejected.length).toBeGreaterThan(0);
  });
});

const SLOW: Partial<PollPolicy> = {
  ...SCENARIO_POLICY,
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  jitter: 0,
  deadlineMs: 600_000,
};

describe('brightdata: notify pings on the per-job token URL', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata({ runMs: 1_000 }, { webhooks: true });
  });
  afterAll(async () => s?.stop());

  it('notify is the token URL; the ping wakes the job long before its first poll; a redelivery is a duplicate; a wrong token is 401', async () => {
    const url = `${pages.pageUrl('001')}?notify`;
    const t0 = Date.now();
    const ref = await s.start({ url, key: 'notify-1', policy: SLOW });
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(25_000);
    const snap = s.fixture.snapshotsWith(url)[0]!;
    expect(snap.query.notify).toBe(`${s.api!.webhookUrl}/${s.callbackToken(ref.jobId)}`);
    const sent = s.fixture.deliveries.filter((d) => (d.body as { snapshot_id?: string }).snapshot_id === snap.id);
    expect(sent.map((d) => [d.status, d.body])).toEqual([[200, { snapshot_id: snap.id, status: 'ready' }]]);
    const again = await s.api!.call(null, 'POST', `/v1/webhooks/brightdata/${s.callbackToken(ref.jobId)}`, {
      json: sent[0]!.body,
    });
    expect(await again.json()).toMatchObject({ outcome: 'duplicate' });
    const wrong = await s.api!.call(null, 'POST', `/v1/webhooks/brightdata/${'f'.repeat(64)}`, { json: sent[0]!.body });
    expect(wrong.status).toBe(401);
    expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome)).toEqual(['woken']);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });
});

describe('brightdata: a key Bright Data does not know', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata(
      {},
      { extra: { brightdata_revoked: { credentials: { default: { apiKey: 'fx-key-revoked-0123456789abcdef' } } } } },
    );
  });
  afterAll(async () => s?.stop());

  it('a trigger answered 401 "Invalid credentials" (plain text) fails at once with the provider’s words, never retried: nothing created, no secret in the record', async () => {
    const url = `${pages.pageUrl('cnn')}?revoked`;
    const ref = await s.start({ url, key: 'revoked', provider: 'brightdata_revoked' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ httpStatus: 401 });
    expect(String(out.lastError!.message)).toMatch(/Invalid credentials/);
    // One answer, one incident: never retried (the fixture does not record requests it refuses at authentication).
    expect(out.incidents.filter((i) => i.http_status === 401)).toHaveLength(1);
    expect(out.events.filter((e) => e === 'submit_rejected').length).toBeLessThanOrEqual(1);
    expect(s.fixture.snapshotsWith('?revoked')).toHaveLength(0);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });
});
