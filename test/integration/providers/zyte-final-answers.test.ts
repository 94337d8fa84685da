/**
 * What a user of the orchestrator sees when Scrapy Cloud's answers are final before we look, and
 * when the key is refused, on the real workflow against the Zyte fixture
 * (`test/fixtures/providers/zyte/server.ts`, its `CONTRACT.md` for the sources):
 *
 * - the answer of run.json is lost and the job we tagged is already `finished` (or `deleted`) when
 *   the lookup finds it: nothing is submitted again (no second paid job) and the job ends with the
 *   provider's final outcome (its items, its close reason, or expiry);
 * - a cancel of a job the provider already finished: `jobs/stop.json` answers `{"status": "ok"}`
 *   and does nothing (Zyte: "Does nothing for finished or deleted jobs"), so the outcome is the
 *   provider's `finished` close reason, never `cancelled`;
 * - a bad key (401 `Authentication failed`) or a key without access to the project (403), at submit
 *   or later: the job fails fast with an authentication error, asks a bounded number of times, and
 *   the key is in no error record, history or row.
 *
 * The first block checks the fixture itself against the documents (plain HTTP, no product code).
 * Two cases found product defects, since fixed: a reconcile that never asked the list for
 * `deleted` jobs (and resubmitted: a second paid job), and a cancel of a job deleted after it ran
 * to its end reported `cancelled`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_KEYS, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';
import { startZyteFixture, type ZyteFixture } from '../../fixtures/providers/zyte/server.js';

/** A key Zyte does not know (configured on the `zyte-bad-key` entry). */
const BAD_KEY = 'zyte-revoked-key-5f0c2d9e71a4b3c8';

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

const items = (w: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    url: `https://quotes.example/${w}/${i}`,
    title: `Quote ${i}`,
    text: `text ${i}`,
  }));

describe('zyte fixture: the documented answers', () => {
  let fx: ZyteFixture;
  beforeAll(async () => {
    fx = await startZyteFixture();
  });
  afterAll(async () => fx?.close());

  const call = async (
    origin: 'app' | 'storage',
    method: string,
    path: string,
    body?: Record<string, string | string[]>,
    key: string = FIXTURE_KEYS.acme,
  ) => {
    const base = origin === 'app' ? fx.url : fx.storageUrl;
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(body ?? {})) for (const x of Array.isArray(v) ? v : [v]) form.append(k, x);
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: basic(key), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: body ? form.toString() : undefined,
    });
    return { status: res.status, text: await res.text() };
  };
  const run = async (w: string) => {
    const r = await call('app', 'POST', '/run.json', {
      project: '123',
      spider: 'quotes',
      url: `https://quotes.example/${w}`,
      add_tag: `tag-${w}`,
    });
    return (JSON.parse(r.text) as { jobid: string }).jobid;
  };

  it('a job settled before anyone looked is listed for its tag with its state and close reason (list.json, list.jl after a status line, JobQ)', async () => {
    fx.plan('fx-done', { settled: 'finished', closeReason: 'failed', items: items('fx-done', 2) });
    fx.plan('fx-deleted', { settled: 'deleted' });
    const done = await run('fx-done');
    const deleted = await run('fx-deleted');
    const list = JSON.parse(
      (await call('app', 'GET', '/jobs/list.json?project=123&has_tag=tag-fx-done&has_tag=tag-fx-deleted')).text,
    ) as {
      status: string;
      jobs: { id: string; state: string; close_reason?: string; items_scraped: number }[];
    };
    expect(list.status).toBe('ok');
    expect(list.jobs).toEqual([
      expect.objectContaining({ id: deleted, state: 'deleted', close_reason: 'finished' }),
      expect.objectContaining({ id: done, state: 'finished', close_reason: 'failed', items_scraped: 2 }),
    ]);
    const jl = (await call('app', 'GET', '/jobs/list.jl?project=123&has_tag=tag-fx-done')).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(jl[0]).toMatchObject({ status: 'ok' });
    expect(jl.slice(1)).toEqual([expect.objectContaining({ id: done, state: 'finished', close_reason: 'failed' })]);
    // JobQ: finished by default, deleted when asked.
    const q = (qs: string) =>
      call('storage', 'GET', `/jobq/123/list?${qs}`).then((r) =>
        r.text
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>),
      );
    expect(await q('has_tag=tag-fx-done&has_tag=tag-fx-deleted')).toEqual([
      expect.objectContaining({ key: done, state: 'finished', close_reason: 'failed' }),
    ]);
    expect(await q('has_tag=tag-fx-deleted&state=deleted')).toEqual([
      expect.objectContaining({ key: deleted, state: 'deleted' }),
    ]);
    expect(JSON.parse((await call('storage', 'GET', `/jobs/${done}`)).text)).toMatchObject({
      state: 'finished',
      close_reason: 'failed',
      tags: ['tag-fx-done'],
    });
  });

  it('stop.json answers {"status": "ok"} for a running job (stopped later) and for a finished one (left alone)', async () => {
    fx.plan('fx-stop', { hold: true });
    const running = await run('fx-stop');
    fx.setState(running, 'running');
    const finished = await run('fx-stopped-late');
    fx.setState(finished, 'finished', 'finished');
    for (const job of [running, finished]) {
      const r = await call('app', 'POST', '/jobs/stop.json', { project: '123', job });
      expect({ job, status: r.status, body: JSON.parse(r.text) }).toEqual({ job, status: 200, body: { status: 'ok' } });
    }
    expect(fx.jobs.get(running)).toMatchObject({ state: 'running', cancelRequested: true });
    await waitFor(async () => fx.jobs.get(running)?.state === 'finished', 10_000, 'the running job stopped');
    expect(fx.jobs.get(running)).toMatchObject({ closeReason: 'cancelled', cancelledBy: 'fixture-user' });
    expect(fx.jobs.get(finished)).toMatchObject({ state: 'finished', closeReason: 'finished' });
    expect(fx.jobs.get(finished)?.cancelledBy).toBeUndefined();
  });

  it('a bad key is 401 "Authentication failed" and a key without access 403, on every endpoint of both origins', async () => {
    const job = await run('fx-auth');
    const endpoints: [origin: 'app' | 'storage', method: string, path: string, body?: Record<string, string>][] = [
      ['app', 'POST', '/run.json', { project: '123', spider: 'quotes', url: 'https://quotes.example/fx-auth-2' }],
      ['app', 'GET', '/jobs/list.json?project=123'],
      ['app', 'GET', '/jobs/list.jl?project=123'],
      ['app', 'POST', '/jobs/stop.json', { project: '123', job }],
      ['storage', 'GET', `/jobs/${job}`],
      ['storage', 'GET', `/jobs/${job}/state`],
      ['storage', 'GET', `/items/${job}`],
      ['storage', 'GET', `/items/${job}/stats`],
      ['storage', 'GET', '/jobq/123/list'],
      ['storage', 'GET', '/jobq/123/count'],
      ['storage', 'POST', `/jobq/${job}/cancel`],
    ];
    for (const [origin, method, path, body] of endpoints) {
      expect({ path, ...(await call(origin, method, path, body, BAD_KEY)) }).toEqual({
        path,
        status: 401,
        text: JSON.stringify({ status: 'error', message: 'Authentication failed' }),
      });
    }
    try {
      fx.credential = 'bad-key';
      for (const [origin, method, path, body] of endpoints)
        expect({ path, status: (await call(origin, method, path, body)).status }).toEqual({ path, status: 401 });
      fx.credential = 'no-access';
      for (const [origin, method, path, body] of endpoints) {
        const r = await call(origin, method, path, body);
        expect({ path, status: r.status, body: JSON.parse(r.text) as unknown }).toEqual({
          path,
          status: 403,
          body: { status: 'error', message: 'Forbidden' },
        });
      }
    } finally {
      fx.credential = 'valid';
    }
    expect(fx.jobsFor('fx-auth-2')).toEqual([]);
    expect(fx.jobs.get(job)?.cancelRequested).toBe(false);
  });
});

function zyte() {
  const entry = (fx: ZyteFixture) => ({
    baseUrl: fx.url,
    storageUrl: fx.storageUrl,
    project: fx.project,
    spider: 'quotes',
    readTimeoutMs: 3_000,
    submitTimeoutMs: 3_000,
    results: { pageSize: 2 },
  });
  return startProviderScenario<ZyteFixture>({
    kind: 'zyte',
    fixture: () => startZyteFixture(),
    entry: (fx) => ({ ...entry(fx), reconcile: { settleMs: 1_000 } }),
    extraEntries: (fx) => ({ 'zyte-bad-key': { ...entry(fx), credentials: { default: { apiKey: BAD_KEY } } } }),
  });
}

describe('zyte: answers that were final before we looked', () => {
  let s: Scenario<ZyteFixture>;
  beforeAll(async () => {
    s = await zyte();
  });
  afterAll(async () => s?.stop());

  const submits = (w: string) =>
    s.fixture.app.requestsTo('POST', '/api/run.json').filter((r) => (r.body as { url?: string }).url?.includes(w));

  it('run.json’s answer is lost and our tagged job is already finished: found by tag, never submitted again, completed with its items', async () => {
    const f = s.fixture;
    f.plan('settled-ok', { settled: 'finished', items: items('settled-ok', 3) });
    f.dropAfterCommit('settled-ok');
    const ref = await s.start({ url: 'https://quotes.example/settled-ok', key: 'settled-ok' });
    const row = await s.waitFor(
      ref.jobId,
      ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted'],
      60_000,
    );
    expect(row.state).toBe('completed');
    expect(f.jobsFor('settled-ok')).toHaveLength(1);
    expect(row.task_id).toBe(f.jobsFor('settled-ok')[0]!.id);
    expect(submits('settled-ok')).toHaveLength(1);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ results: 1, documents: { total: 3, rows: 3 } });
    expect(out.events).toEqual(expect.arrayContaining(['submit_ambiguous', 'reconcile_found']));
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('run.json’s answer is lost and our tagged job already finished with close reason failed: never submitted again, failed with the provider’s reason', async () => {
    const f = s.fixture;
    f.plan('settled-failed', { settled: 'finished', closeReason: 'failed' });
    f.dropAfterCommit('settled-failed');
    const ref = await s.start({ url: 'https://quotes.example/settled-failed', key: 'settled-failed' });
    const row = await s.waitFor(
      ref.jobId,
      ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted'],
      60_000,
    );
    expect(row.state).toBe('failed');
    expect(row.task_id).toBe(f.jobsFor('settled-failed')[0]!.id);
    expect(f.jobsFor('settled-failed')).toHaveLength(1);
    expect(submits('settled-failed')).toHaveLength(1);
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ kind: 'provider_failed', code: 'failed' });
  });

  // The reconcile once read jobs/list.json?has_tag=…&state= for pending, running and finished only,
  // never `deleted` (a documented state, S11), and took the empty lists as proof of absence:
  // run.json was sent again and a second job made.
  it('run.json’s answer is lost and our tagged job is already deleted: never submitted again, expired (the provider holds no result for it)', async () => {
    const f = s.fixture;
    f.plan('settled-deleted', { settled: 'deleted' });
    f.dropAfterCommit('settled-deleted');
    const ref = await s.start({ url: 'https://quotes.example/settled-deleted', key: 'settled-deleted' });
    const row = await s.waitFor(
      ref.jobId,
      ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted'],
      60_000,
    );
    expect(submits('settled-deleted')).toHaveLength(1);
    expect(f.jobsFor('settled-deleted')).toHaveLength(1);
    expect(row).toMatchObject({ state: 'expired', task_id: f.jobsFor('settled-deleted')[0]!.id });
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ kind: 'expired', code: 'JOB_DELETED' });
  });

  /**
   * Starts a job held running, holds its next status read back (503, Retry-After 8 s, far longer than the cancel takes to reach Zyte), ends the
   * job at Zyte with `end`, then cancels it: the stop reaches Zyte after the job's end.
   */
  const cancelAfterEnd = async (w: string, end: (taskId: string) => void) => {
    const f = s.fixture;
    f.plan(w, { hold: true, items: items(w, 2) });
    const ref = await s.start({ url: `https://quotes.example/${w}`, key: w });
    const row = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.task_id && r.provider_status === 'running' ? r : undefined;
      },
      30_000,
      'the job seen running',
    );
    const job = f.jobs.get(row.task_id!)!;
    const reads = job.metaReads.length;
    f.fault({ endpoint: 'meta', status: 503, message: 'busy', retryAfterSeconds: 8, urlContains: w });
    await waitFor(async () => job.metaReads.length > reads, 30_000, 'the held-back read');
    end(job.id);
    const res = await s.cancel(ref.jobId);
    const final = await s.waitFor(
      ref.jobId,
      ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted', 'cancel_unconfirmed'],
      30_000,
    );
    const stops = f.app
      .requestsTo('POST', '/api/jobs/stop.json')
      .filter((r) => (r.body as { job?: string }).job === job.id);
    return { ref, job, res, final, stops };
  };

  it('a cancel of a job deleted after it closed for a reason of its own spider (no_more_pages): never reported cancelled', async () => {
    const { res, final } = await cancelAfterEnd('own-reason-before-cancel', (id) => {
      s.fixture.setState(id, 'finished', 'no_more_pages');
      s.fixture.markDeleted(id);
    });
    expect(res).not.toMatchObject({ state: 'cancelled' });
    expect(final.state).toBe('cancel_unconfirmed');
    expect(JSON.stringify(res)).toContain('does not say it was cancelled');
  });

  it('a cancel of a job the provider already finished: stop.json answers ok and does nothing; the job ends completed with its items, the cancel reports completed, never cancelled', async () => {
    const { ref, job, res, final, stops } = await cancelAfterEnd('done-before-cancel', (id) =>
      s.fixture.setState(id, 'finished', 'finished'),
    );
    expect(stops).toHaveLength(1);
    expect(res).toMatchObject({
      kind: 'observed',
      state: 'completed',
      report: { outcome: 'completed', providerCancelCalls: 1 },
    });
    expect(final.state).toBe('completed');
    expect(job).toMatchObject({ state: 'finished', closeReason: 'finished' });
    expect(job.cancelledBy).toBeUndefined();
    expect(await s.outcome(ref.jobId)).toMatchObject({ results: 1, documents: { total: 2, rows: 2 } });
    expect(submits('done-before-cancel')).toHaveLength(1);
  });

  it('a cancel of a job the provider already failed (close reason failed): stop.json does nothing; the job ends failed with the provider’s reason, never cancelled', async () => {
    const { ref, job, res, final } = await cancelAfterEnd('failed-before-cancel', (id) =>
      s.fixture.setState(id, 'finished', 'failed'),
    );
    expect(res).not.toMatchObject({ state: 'cancelled' });
    expect(final.state).toBe('failed');
    expect(job.cancelledBy).toBeUndefined();
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ kind: 'provider_failed', code: 'failed' });
  });

  // stop.json answers ok (Zyte does nothing for a deleted job) and the next read says `state:
  // deleted, close_reason: finished`: the job ran to its end on its own, and its result is gone.
  // Once reported `cancelled` ("the provider accepted the cancel and then no longer knows the
  // task"), though no answer shows a cancel.
  it('a cancel of a job already deleted at the provider after it finished: stop.json does nothing; the cancel is unconfirmed with the provider’s reason, never cancelled', async () => {
    const { ref, res, final } = await cancelAfterEnd('deleted-before-cancel', (id) => {
      s.fixture.setState(id, 'finished', 'finished');
      s.fixture.markDeleted(id);
    });
    expect(res).not.toMatchObject({ state: 'cancelled' });
    expect(final.state).toBe('cancel_unconfirmed');
    expect(JSON.stringify(res)).toContain('ran to its end on its own');
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ kind: 'expired', code: 'JOB_DELETED' });
  });
});

describe('zyte: a key Zyte refuses', () => {
  let s: Scenario<ZyteFixture>;
  beforeAll(async () => {
    s = await zyte();
  });
  afterAll(async () => s?.stop());

  const FINAL = ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted'];
  /** The job's final row and outcome. */
  const settle = async (jobId: string) => {
    const row = await s.waitFor(jobId, FINAL, 30_000);
    const out = await s.outcome(jobId);
    return { row, out };
  };
  const noKeyIn = (out: { lastError: unknown; incidents: unknown }) => {
    const text = JSON.stringify([out.lastError, out.incidents]);
    for (const key of [
      BAD_KEY,
      FIXTURE_KEYS.acme,
      Buffer.from(`${BAD_KEY}:`).toString('base64'),
      Buffer.from(`${FIXTURE_KEYS.acme}:`).toString('base64'),
    ])
      expect(text).not.toContain(key);
  };

  it('a bad key at submit (401 "Authentication failed"): failed at once with an authentication error, run.json asked once, no job at Zyte, the key nowhere', async () => {
    const ref = await s.start({
      url: 'https://quotes.example/bad-key-submit',
      key: 'bad-key-submit',
      provider: 'zyte-bad-key',
    });
    const { row, out } = await settle(ref.jobId);
    expect(row.state).toBe('failed');
    expect(out.lastError).toMatchObject({
      kind: 'permanent',
      httpStatus: 401,
      message: expect.stringContaining('Authentication failed'),
    });
    expect(
      s.fixture.app
        .requestsTo('POST', '/api/run.json')
        .filter((r) => (r.body as { url?: string }).url?.includes('bad-key-submit')),
    ).toHaveLength(1);
    expect(s.fixture.jobsFor('bad-key-submit')).toEqual([]);
    noKeyIn(out);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('a key without access to the project (403 on every endpoint): failed at once with the refusal, run.json asked once, the key nowhere', async () => {
    s.fixture.credential = 'no-access';
    try {
      const ref = await s.start({ url: 'https://quotes.example/no-access', key: 'no-access' });
      const { row, out } = await settle(ref.jobId);
      expect(row.state).toBe('failed');
      expect(out.lastError).toMatchObject({ kind: 'permanent', httpStatus: 403 });
      expect(s.fixture.authRefusals.filter((r) => r.status === 403 && r.path === '/api/run.json')).toHaveLength(1);
      noKeyIn(out);
      expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    } finally {
      s.fixture.credential = 'valid';
    }
  });

  it('the key is revoked while the job runs (status reads 401): the job stops polling after a bounded number of refused reads and ends with an authentication error, never resubmitted', async () => {
    const f = s.fixture;
    f.plan('revoked', { hold: true });
    const ref = await s.start({ url: 'https://quotes.example/revoked', key: 'revoked' });
    const task = (await waitFor(
      async () => (await s.store.jobs.get(ref.jobId))?.task_id ?? undefined,
      30_000,
      'the job key',
    )) as string;
    const refusedBefore = f.authRefusals.length;
    f.credential = 'bad-key';
    try {
      const { row, out } = await settle(ref.jobId);
      const refused = f.authRefusals.slice(refusedBefore).filter((r) => r.path.includes(task));
      // No result can be read any more: tracking ends (the job itself may still run at Zyte), with the refusal as its reason.
      expect(['tracking_interrupted', 'failed']).toContain(row.state);
      expect(out.lastError).toMatchObject({
        kind: 'permanent',
        httpStatus: 401,
        message: expect.stringContaining('Authentication failed'),
      });
      expect(refused.length).toBeGreaterThanOrEqual(1);
      expect(refused.length).toBeLessThanOrEqual(5);
      expect(
        f.app.requestsTo('POST', '/api/run.json').filter((r) => (r.body as { url?: string }).url?.includes('revoked')),
      ).toHaveLength(1);
      noKeyIn(out);
      expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    } finally {
      f.credential = 'valid';
    }
  });
});
