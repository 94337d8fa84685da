/**
 * Scenarios of the `oxylabs` kind (Oxylabs Web Scraper API, Push-Pull) on the provider harness:
 * real workflow, real dev server, the kind's fixture (`test/fixtures/providers/oxylabs/server.ts`).
 * Acceptance with a Basic `user:password` credential that reaches no record, every status word
 * (and `202`, unknown words), `204` on the results read while the job says `done`, a multi-page
 * query as documents, expiry, cancel `unsupported`, 429 on submit (the rate limit and the per-domain
 * throttle), 400/403 submit answers failing at once, 500/524 submit answers and a lost submit waiting
 * in `unknown` for an operator, callbacks on the per-job token URL, and a submission answered `202`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import { SCENARIO_POLICY, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';
import {
  OXYLABS_FIXTURE_CREDENTIALS,
  startOxylabsFixture,
  type OxylabsFixture,
} from '../../fixtures/providers/oxylabs/server.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An Oxylabs scenario; `extra` names further entries on the same fixture: this entry with their fields over it. */
function oxylabs(
  opts: {
    runMs?: number;
    webhooks?: boolean;
    faultShape?: 'statuses' | 'observed';
    submitStatus?: 200 | 202;
    extra?: Record<string, Record<string, unknown>>;
  } = {},
) {
  const entry = (f: OxylabsFixture) => ({
    baseUrl: f.url,
    readTimeoutMs: 3_000,
    submitTimeoutMs: 3_000,
    params: { geo_location: 'United States' },
    credentials: {
      default: { apiKey: OXYLABS_FIXTURE_CREDENTIALS.acme },
      accounts: { globex: { apiKey: OXYLABS_FIXTURE_CREDENTIALS.globex } },
    },
  });
  return startProviderScenario<OxylabsFixture>({
    kind: 'oxylabs',
    fixture: () =>
      startOxylabsFixture({ runMs: opts.runMs, faultShape: opts.faultShape, submitStatus: opts.submitStatus }),
    entry,
    extraEntries: (f) =>
      Object.fromEntries(Object.entries(opts.extra ?? {}).map(([name, e]) => [name, { ...entry(f), ...e }])),
    webhooks: opts.webhooks,
  });
}

async function checked(s: Scenario<OxylabsFixture>, jobId: string, checks = 1) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= checks ? r : undefined;
    },
    30_000,
    `${checks} status checks of ${jobId}`,
  );
}

describe('oxylabs: polling', () => {
  let s: Scenario<OxylabsFixture>;
  beforeAll(async () => {
    s = await oxylabs();
  });
  afterAll(async () => s?.stop());
  /** The submissions Oxylabs received for `url`. */
  const submitsOf = (url: string) =>
    s.fixture.requestsTo('POST', '/v1/queries').filter((r) => (r.body as { url?: string }).url === url);

  it('acceptance: Basic auth on every call, one query per job with our reference in client_notes, the raw page extracted, no form of the password in any record', async () => {
    const url = pages.pageUrl('wikipedia');
    const ref = await s.start({ url, key: 'accept-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const jobs = s.fixture.jobsWith(url);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.user).toBe('acme');
    expect(jobs[0]!.params).toMatchObject({
      source: 'universal',
      url,
      geo_location: 'United States',
      client_notes: expect.any(String),
    });
    expect(s.fixture.requests.every((r) => String(r.headers.authorization).startsWith('Basic '))).toBe(true);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ state: 'completed', taskId: jobs[0]!.id, results: 1, documents: { total: 0 } });
    const result = await s.client.getResult('acme', ref.jobId);
    expect(result).toMatchObject({ httpStatus: 200 });
    expect(result.title).toBeTruthy();
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('a query with pages: 3 is one job whose three results entries become three documents', async () => {
    const url = `${pages.pageUrl('cnet')}?pages`;
    const ref = await s.start({ url, key: 'pages-1', options: { pages: 3 } });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect(s.fixture.jobsWith('?pages')).toHaveLength(1);
    const docs = await s.client.getResultDocuments('acme', ref.jobId);
    expect(docs.total).toBe(3);
    expect(docs.documents.map((d) => (d.data as { page?: number }).page)).toEqual([1, 2, 3]);
  });

  it('every status word: pending keeps polling, done completes, faulted fails with the status code kept; 202, an unknown word and another case are not ready', async () => {
    s.fixture.rule('word=pending', { kind: 'hold' });
    s.fixture.rule('word=faulted', { kind: 'fault' });
    const [pending, faulted] = await Promise.all(
      ['pending', 'faulted'].map((w) => s.start({ url: `${pages.pageUrl('002')}?word=${w}`, key: `word-${w}` })),
    );
    const p = await checked(s, pending!.jobId, 2);
    expect(p).toMatchObject({ state: 'pending', provider_status: 'pending' });
    const before = s.fixture.statusReads(p.task_id!).length;
    s.fixture.script(
      p.task_id!,
      { status: 202, json: { status: 'building' } },
      { status: 200, json: { id: p.task_id, status: 'stalled' } },
      { status: 200, json: { id: p.task_id, status: 'Done' } },
      { status: 200, json: { id: p.task_id, status: 'Done' } },
      { status: 200, json: { id: p.task_id, status: 'Done' } },
    );
    await waitFor(
      async () => (await s.store.jobs.get(pending!.jobId))?.provider_status === 'Done',
      30_000,
      'the word "Done" recorded',
    );
    expect(await s.store.jobs.get(pending!.jobId)).toMatchObject({ state: 'pending', provider_state: 'unrecognised' });
    expect((await s.store.findings.timeline(pending!.jobId)).some((e) => e.type === 'unrecognised_status')).toBe(true);
    const reads = s.fixture.statusReads(p.task_id!).slice(before, before + 3);
    for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).toBeGreaterThanOrEqual(170);
    await s.fixture.finish(p.task_id!);
    expect((await s.waitFor(pending!.jobId, ['completed', 'failed'])).state).toBe('completed');

    expect((await s.waitFor(faulted!.jobId, ['failed', 'completed'])).state).toBe('failed');
    const fo = await s.outcome(faulted!.jobId);
    expect(fo.lastError).toMatchObject({ kind: 'provider_failed', code: '613' });
    expect(fo.results).toBe(0);
  });

  it('204 on the results read while the job says done is "not ready": retried, never failed; the job completes once the results come', async () => {
    s.fixture.rule('late-results', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('heise')}?late-results`, key: 'late-1' });
    const row = await checked(s, ref.jobId);
    s.fixture.scriptResults(row.task_id!, { status: 204 }, { status: 204 });
    await s.fixture.finish(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const reads = s.fixture.requestsTo('GET', `/v1/queries/${row.task_id}/results`);
    expect(reads.length).toBeGreaterThanOrEqual(3);
    expect((await s.outcome(ref.jobId)).incidents).toEqual([]);
  });

  it('expiry: 404 for a known job ends expired after notFoundLimit reads, never failed, never resubmitted', async () => {
    s.fixture.rule('expire-me', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('cnn')}?expire-me`, key: 'expire-1' });
    const row = await checked(s, ref.jobId);
    s.fixture.expire(row.task_id!);
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'completed'])).state).toBe('expired');
    expect(s.fixture.jobsWith('expire-me')).toHaveLength(1);
  });

  it('cancel is unsupported: nothing is sent to Oxylabs, the job is reported cancel_unconfirmed with the reason', async () => {
    s.fixture.rule('cancel-me', { kind: 'hold' });
    const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-me`, key: 'cancel-1' });
    await checked(s, ref.jobId);
    const before = s.fixture.requests.length;
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancel_unconfirmed' });
    expect(s.fixture.requests.slice(before).filter((r) => r.method !== 'GET')).toEqual([]);
    expect((await s.store.findings.timeline(ref.jobId)).some((e) => e.type === 'cancel_unsupported')).toBe(true);
  });

  it('429 on submit: retried after a cool-down; one job is created and completes', async () => {
    s.fixture.rule('limited', { kind: 'rate_limit' }, 1);
    const url = `${pages.pageUrl('002')}?limited`;
    const ref = await s.start({ url, key: 'limited-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    expect(
      s.fixture.requestsTo('POST', '/v1/queries').filter((r) => (r.body as { url?: string }).url === url),
    ).toHaveLength(2);
    expect(s.fixture.jobsWith('limited')).toHaveLength(1);
  });

  it('429 for the target domain (its documented throttle message): a cool-down, then one job that completes', async () => {
    s.fixture.rule('domain-limited', { kind: 'rate_limit_domain' }, 1);
    const url = `${pages.pageUrl('002')}?domain-limited`;
    const ref = await s.start({ url, key: 'domain-limited-1' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
    expect(submitsOf(url)).toHaveLength(2);
    expect(s.fixture.jobsWith('domain-limited')).toHaveLength(1);
  });

  it.each([400, 403] as const)(
    'a %i answer to the submit fails the job at once with one request, never resubmitted',
    async (status) => {
      const tag = `refused-${status}`;
      s.fixture.rule(tag, { kind: 'http_error', status }, 1);
      const url = `${pages.pageUrl('001')}?${tag}`;
      const ref = await s.start({ url, key: tag });
      const row = await s.waitFor(ref.jobId, ['failed', 'completed', 'unknown']);
      expect(row.state).toBe('failed');
      expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ httpStatus: status });
      expect(submitsOf(url)).toHaveLength(1);
    },
  );

  // Oxylabs has no idempotency key and no job list: after a 5xx the job may exist, and nothing can tell.
  it.each([500, 524] as const)(
    'a %i answer to the submit may have created the job: it waits in unknown with the answer shown, never resubmitted',
    async (status) => {
      const tag = `maybe-${status}`;
      s.fixture.rule(tag, { kind: 'http_error', status }, 1);
      const url = `${pages.pageUrl('001')}?${tag}`;
      const ref = await s.start({ url, key: tag });
      await s.waitFor(ref.jobId, ['unknown', 'failed', 'completed']);
      await waitFor(
        async () => (await s.store.findings.timeline(ref.jobId)).some((e) => e.type === 'submit_ambiguous'),
        30_000,
        `the ambiguous submit of ${ref.jobId} in its timeline`,
      );
      const row = (await s.store.jobs.get(ref.jobId))!;
      expect(row.state).toBe('unknown');
      expect(JSON.stringify(await s.store.findings.timeline(ref.jobId))).toContain(String(status));
      expect(submitsOf(url)).toHaveLength(1);
    },
  );

  it('a lost submit cannot be reconciled: the job waits in unknown with one provider job until an operator hands over the task ID; another Oxylabs user’s task is refused (404 to the job’s credential)', async () => {
    s.fixture.rule('orphan', { kind: 'drop_after_commit' }, 1);
    const ref = await s.start({ url: `${pages.pageUrl('001')}?orphan`, key: 'orphan-1' });
    await s.waitFor(ref.jobId, ['unknown']);
    await sleep(1_500);
    expect((await s.store.jobs.get(ref.jobId))!.state).toBe('unknown');
    const created = s.fixture.jobsWith('orphan');
    expect(created).toHaveLength(1);
    // Another Oxylabs user's job for the same URL (bound to no job of ours): Oxylabs checks
    // credentials, so the job's own credential reads 404 and the operator's task ID is refused.
    const theirs = await fetch(`${s.fixture.url}/v1/queries`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(OXYLABS_FIXTURE_CREDENTIALS.globex).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ source: 'universal', url: `${pages.pageUrl('001')}?orphan` }),
    }).then((r) => r.json() as Promise<{ id: string }>);
    await expect(s.client.resolve('acme', ref.jobId, { taskId: theirs.id, by: 'scenario' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/own credential cannot read/),
    });
    expect((await s.store.jobs.get(ref.jobId))!).toMatchObject({ state: 'unknown', task_id: null });
    await s.client.resolve('acme', ref.jobId, { taskId: created[0]!.id, by: 'scenario' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect(s.fixture.jobsWith('orphan').filter((j) => j.id !== theirs.id)).toHaveLength(1);
  });
});

const SLOW: Partial<PollPolicy> = {
  ...SCENARIO_POLICY,
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  jitter: 0,
  deadlineMs: 600_000,
};

describe('oxylabs: callbacks on the per-job token URL', () => {
  let s: Scenario<OxylabsFixture>;
  beforeAll(async () => {
    s = await oxylabs({ runMs: 1_000, webhooks: true });
  });
  afterAll(async () => s?.stop());

  it('callback_url is the token URL; the job object delivered wakes the job long before its first poll; a redelivery is a duplicate; a wrong token is 401', async () => {
    const url = `${pages.pageUrl('001')}?callback`;
    const t0 = Date.now();
    const ref = await s.start({ url, key: 'cb-1', policy: SLOW });
    await s.waitFor(ref.jobId, ['completed'], 60_000);
    expect(Date.now() - t0).toBeLessThan(25_000);
    const job = s.fixture.jobsWith(url)[0]!;
    expect(job.params.callback_url).toBe(`${s.api!.webhookUrl}/${s.callbackToken(ref.jobId)}`);
    const sent = s.fixture.deliveries.filter((d) => (d.body as { id?: string }).id === job.id);
    expect(sent.map((d) => d.status)).toEqual([200]);
    const again = await s.api!.call(null, 'POST', `/v1/webhooks/oxylabs/${s.callbackToken(ref.jobId)}`, {
      json: sent[0]!.body,
    });
    expect(await again.json()).toMatchObject({ outcome: 'duplicate' });
    const wrong = await s.api!.call(null, 'POST', `/v1/webhooks/oxylabs/${'0'.repeat(64)}`, { json: sent[0]!.body });
    expect(wrong.status).toBe(401);
    expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome)).toEqual(['woken']);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });
});

describe('oxylabs: a faulted job as live jobs show it', () => {
  let s: Scenario<OxylabsFixture>;
  beforeAll(async () => {
    s = await oxylabs({ faultShape: 'observed' });
  });
  afterAll(async () => s?.stop());

  it('faulted with an empty statuses list and the code only in the result entry: failed with that code (613), not a bare "faulted"', async () => {
    s.fixture.rule('observed-fault', { kind: 'fault' });
    const ref = await s.start({ url: `${pages.pageUrl('002')}?observed-fault`, key: 'observed-1' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ kind: 'provider_failed', code: '613' });
    expect(out.results).toBe(0);
  });
});

describe('oxylabs: a submission answered 202 (reported by a live run; the docs list 200 and 202)', () => {
  let s: Scenario<OxylabsFixture>;
  beforeAll(async () => {
    s = await oxylabs({ submitStatus: 202 });
  });
  afterAll(async () => s?.stop());

  it('the 202 is an accepted job: its ID recorded at once, one submission, the job completes', async () => {
    const url = `${pages.pageUrl('002')}?accepted-202`;
    const ref = await s.start({ url, key: 'accepted-202' });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'unknown'])).state).toBe('completed');
    const created = s.fixture.jobsWith('accepted-202');
    expect(created).toHaveLength(1);
    expect((await s.store.jobs.get(ref.jobId))!.task_id).toBe(created[0]!.id);
    expect(
      s.fixture.requestsTo('POST', '/v1/queries').filter((r) => (r.body as { url?: string }).url === url),
    ).toHaveLength(1);
  });
});

describe('oxylabs: a user Oxylabs does not know', () => {
  let s: Scenario<OxylabsFixture>;
  beforeAll(async () => {
    const removed = { default: { apiKey: 'removed-user:fx-key-removed-0123456789abcdef' } };
    s = await oxylabs({ extra: { oxylabs_removed: { credentials: removed } } });
  });
  afterAll(async () => s?.stop());

  it('a submission answered 401 {message: "Client not found"} fails at once with the provider’s words, never retried: no job created, no secret in the record', async () => {
    const url = `${pages.pageUrl('cnn')}?removed-user`;
    const ref = await s.start({ url, key: 'removed-user', provider: 'oxylabs_removed' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ httpStatus: 401 });
    expect(String(out.lastError!.message)).toMatch(/Client not found/);
    // One answer, one incident: never retried (the fixture does not record requests it refuses at authentication).
    expect(out.incidents.filter((i) => i.http_status === 401)).toHaveLength(1);
    expect(out.events.filter((e) => e === 'submit_rejected').length).toBeLessThanOrEqual(1);
    expect(s.fixture.jobsWith(url)).toHaveLength(0);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });
});
