/**
 * Scenarios of the declarative `http` kind beyond the reference contract (which
 * `reference.test.ts` runs for this kind too): an API configured only by its entry
 * (`test/fixtures/providers/http/server.ts`: key in the query string, nested JSON, upper-case
 * words) through the real workflow — multi-document results paged by offset, cursor and `next`
 * link written once with every document, a terminal error code on the result read → failed with
 * the code, the provider's failure word, a 429 with Retry-After on a status read, an expired code,
 * an unknown word, cancel (at once, and an abort that takes effect later); no secret leaked.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCENARIO_POLICY, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';
import { startRunsFixture, type RunsFixture } from '../../fixtures/providers/http/server.js';

const PAGINATION = {
  offset: { style: 'offset', offsetParam: 'offset', limitParam: 'size' },
  cursor: { style: 'cursor', cursorParam: 'cursor', cursorPath: '/next_cursor', limitParam: 'size' },
  next: { style: 'next', nextPath: '/links/next' },
} as const;

/** Waits until job `jobId` (a held run) has its task and one status check; returns its row. */
function heldRun(s: Scenario<RunsFixture>, jobId: string) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= 1 ? r : undefined;
    },
    30_000,
    'the held run checked',
  );
}

/** The runs API declared as an `http` entry. */
function runsEntry(url: string, pagination: (typeof PAGINATION)[keyof typeof PAGINATION]) {
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
      errorCodePath: '/data/failure/reason',
      errorMessagePath: '/data/failure/detail',
      progress: { documents: '/data/items_total' },
    },
    result: {
      request: { path: '/v3/runs/{{taskId}}/items' },
      documentsPath: '/items',
      fields: { url: '/link', title: '/heading', text: '/content', error: '/problem' },
      pagination,
    },
    errors: { terminalCodes: ['EMPTY_DATASET'], expiredCodes: ['RUN_EXPIRED'], concurrencyCodes: ['TOO_MANY_RUNS'] },
    cancel: {
      method: 'POST',
      path: '/v3/runs/{{taskId}}/abort',
      statusPath: '/data/state',
      finalStatusPath: '/error/state',
    },
    list: {
      path: '/v3/runs',
      query: { reference: '{{clientRef}}' },
      itemsPath: '/runs',
      matchPath: '/reference',
      taskIdPath: '/id',
      statusPath: '/state',
    },
    results: { pageSize: 3 },
  };
}

describe.each(Object.keys(PAGINATION) as (keyof typeof PAGINATION)[])('http kind: documents paged by %s', (style) => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 7 }),
      entry: (fx) => runsEntry(fx.url, PAGINATION[style]),
    });
  });
  afterAll(async () => s?.stop());

  it('7 items over 3 pages are written once, in order, the failed one with its error; the key (in the query string) is in no record', async () => {
    const url = `https://shop.example.com/${style}`;
    const ref = await s.start({ url, key: `paged-${style}` });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    const run = [...s.fixture.runs.values()].find((r) => r.url === url)!;
    expect(row.task_id).toBe(run.id);
    const itemReads = s.fixture.server.requestsTo('GET', `/v3/runs/${run.id}/items`);
    expect(itemReads).toHaveLength(3);
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ results: 1, documents: { total: 7, rows: 7 } });
    const docs = await s.client.getResultDocuments('acme', ref.jobId, { offset: 0, limit: 100 });
    expect(docs.documents.map((d) => d.title)).toEqual([
      'Item 0',
      'Item 1',
      'Item 2',
      'Item 3',
      'Item 4',
      'Item 5',
      'Item 6',
    ]);
    expect(docs.documents[6]).toMatchObject({ url: `${url}#item-6`, error: { message: 'blocked by target' } });
    expect(docs.documents[0]).toMatchObject({ text: 'Body of item 0' });
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });
});

describe('http kind: the runs API’s words and errors', () => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 4 }),
      entry: (fx) => runsEntry(fx.url, PAGINATION.cursor),
    });
  });
  afterAll(async () => s?.stop());

  const held = (jobId: string) => heldRun(s, jobId);

  it('a terminal code on the result read (400 EMPTY_DATASET) ends failed with that code and the sanitised body; nothing written', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/empty', key: 'empty' });
    expect((await s.waitFor(ref.jobId, ['failed', 'completed', 'tracking_interrupted'])).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ kind: 'task_failed', code: 'EMPTY_DATASET', httpStatus: 400 });
    expect(out.incidents[0]).toMatchObject({ code: 'EMPTY_DATASET' });
    expect(out.results).toBe(0);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('the provider’s failure word (ERROR, any case) ends failed with the code and message at the configured paths', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/hold-error', key: 'error' });
    const row = await held(ref.jobId);
    s.fixture.setState(row.task_id!, 'ERROR');
    expect((await s.waitFor(ref.jobId, ['failed', 'completed'])).state).toBe('failed');
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({
      kind: 'provider_failed',
      code: 'TARGET_DOWN',
      message: 'the target answered 503',
    });
  });

  it('an unknown word is unrecognised (polled, never final); DONE then completes it', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/hold-review', key: 'review' });
    const row = await held(ref.jobId);
    s.fixture.setState(row.task_id!, 'IN_REVIEW');
    await waitFor(
      async () => (await s.store.jobs.get(ref.jobId))?.provider_status === 'IN_REVIEW',
      30_000,
      'IN_REVIEW recorded',
    );
    expect(await s.store.jobs.get(ref.jobId)).toMatchObject({ state: 'pending', provider_state: 'unrecognised' });
    s.fixture.setState(row.task_id!, 'DONE');
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
    expect((await s.outcome(ref.jobId)).documents.total).toBe(4);
  });

  it('a 429 with Retry-After: 2 on a status read: the run is read again no sooner than 2 s later, and the job completes', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/hold-limited', key: 'limited-status' });
    const row = await held(ref.jobId);
    const reads = () => s.fixture.server.requestsTo('GET', `/v3/runs/${row.task_id}`);
    const before = reads().length;
    s.fixture.rateLimit('status', { times: 1, retryAfterSeconds: 2 });
    await waitFor(async () => reads().length >= before + 2, 30_000, 'the refused read and the one after it');
    const [refused, next] = reads().slice(before, before + 2);
    expect(next!.at - refused!.at).toBeGreaterThanOrEqual(2_000 - 50);
    s.fixture.setState(row.task_id!, 'DONE');
    expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
  });

  it('an expired code (410 RUN_EXPIRED) ends expired at once', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/hold-expire', key: 'expire' });
    const row = await held(ref.jobId);
    s.fixture.runs.get(row.task_id!)!.expired = true;
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'tracking_interrupted'])).state).toBe('expired');
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ code: 'RUN_EXPIRED', httpStatus: 410 });
  });

  it('cancel: the configured abort call once, the job ends cancelled', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/hold-cancel', key: 'cancel' });
    const row = await held(ref.jobId);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    expect(s.fixture.server.requestsTo('POST', `/v3/runs/${row.task_id}/abort`)).toHaveLength(1);
    expect(s.fixture.runs.get(row.task_id!)!.state).toBe('ABORTED');
  });
});

describe('http kind: an abort that takes effect later (202 ABORTING, then ABORTED)', () => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 2, abortDelayMs: 1_500 }),
      entry: (fx) => runsEntry(fx.url, PAGINATION.cursor),
    });
  });
  afterAll(async () => s?.stop());

  it('the ABORTING answer is recorded and the job ends cancelled once the run reads ABORTED, never cancel_unconfirmed; one abort call', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/hold-slow-abort', key: 'slow-abort' });
    const row = await heldRun(s, ref.jobId);
    const res = await s.cancel(ref.jobId);
    expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
    expect(s.fixture.runs.get(row.task_id!)!.state).toBe('ABORTED');
    expect(s.fixture.server.requestsTo('POST', `/v3/runs/${row.task_id}/abort`)).toHaveLength(1);
    const timeline = await s.store.findings.timeline(ref.jobId);
    expect(JSON.stringify(timeline)).toContain('ABORTING');
    expect((await s.store.jobs.get(ref.jobId))!.state).toBe('cancelled');
  });
});

describe('http kind: 429 TOO_MANY_RUNS with a Retry-After header', () => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 2, maxActive: 1, retryAfterSeconds: 7, runMs: 1_500 }),
      entry: (fx) => runsEntry(fx.url, PAGINATION.cursor),
    });
  });
  afterAll(async () => s?.stop());

  it('a submit refused while the key’s one run is active is sent again no sooner than Retry-After (7 s, longer than the message’s 2 s); one run per job, both completed', async () => {
    const secondSubmits = () =>
      s.fixture.server
        .requestsTo('POST', '/v3/runs')
        .filter((r) => (r.body as { target?: { url?: string } }).target?.url?.includes('busy-second'));
    const first = await s.start({ url: 'https://shop.example.com/hold-busy-first', key: 'busy-first' });
    const held = await heldRun(s, first.jobId);
    const second = await s.start({ url: 'https://shop.example.com/busy-second', key: 'busy-second' });
    await waitFor(() => secondSubmits().length >= 1, 30_000, 'the refused submit');
    s.fixture.setState(held.task_id!, 'DONE'); // the key’s one active run ends
    for (const ref of [first, second])
      expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
        'completed',
      );
    const submits = secondSubmits();
    expect(submits.length).toBeGreaterThanOrEqual(2);
    expect(submits[1]!.at - submits[0]!.at).toBeGreaterThanOrEqual(7_000 - 50);
    expect([...s.fixture.runs.values()].filter((r) => r.url.includes('busy-second'))).toHaveLength(1);
  });
});

/**
 * The runs API's daemon routes (`/v2`, Scrapyd 1.6's shapes: see the fixture's CONTRACT.md)
 * declared as an entry the way `docs/providers/scrapyd.md` declares Scrapyd, with the project and
 * the spider taken from each job's options (templates over the request in every call).
 */
function daemonEntry(url: string) {
  return {
    baseUrl: url,
    readTimeoutMs: 3_000,
    submitTimeoutMs: 3_000,
    auth: { in: 'none' },
    credentials: undefined,
    notFoundGraceMs: 0,
    reconcile: { settleMs: 300 },
    submit: {
      path: '/v2/schedule.json',
      bodyEncoding: 'form',
      body: { '...': '{{options}}', jobid: '{{clientRef}}', url: '{{url}}' },
      taskIdPath: '/jobid',
    },
    status: {
      path: '/v2/status.json',
      query: { project: '{{options.project}}', job: '{{taskId}}' },
      statusPath: '/currstate',
      map: { pending: 'queued', running: 'running', finished: 'completed' },
      missing: 'not_found',
    },
    result: {
      request: { path: '/v2/items/{{options.project}}/{{options.spider}}/{{taskId}}.jl' },
      format: 'jsonl',
      documentsPath: '',
      fields: { url: '/url', title: '/title', text: '/text', error: '/problem' },
    },
    errors: { errorWhen: { path: '/status', equals: 'error' }, messagePath: '/message', resultNotFound: 'failed' },
    cancel: {
      method: 'POST',
      path: '/v2/cancel.json',
      bodyEncoding: 'form',
      body: { project: '{{options.project}}', job: '{{taskId}}' },
      statusPath: '/prevstate',
      completedMeans: 'stopped_or_completed',
    },
    list: {
      path: '/v2/listjobs.json',
      query: { project: '{{options.project}}' },
      itemsPath: ['/pending', '/running', '/finished'],
      matchPath: '/id',
      taskIdPath: '/id',
      lagMs: 0,
    },
  };
}

const SHOP = { project: 'shop', spider: 'pages' };

/** The failure a job's workflow run closed with (what the Web UI shows): its type and message. */
async function closedWith(s: Scenario<RunsFixture>, jobId: string): Promise<{ type?: string; message?: string }> {
  return s.temporal.workflow
    .getHandle(jobId)
    .result()
    .then(
      () => ({}),
      (e: unknown) => {
        const cause = e instanceof WorkflowFailedError ? e.cause : undefined;
        return cause instanceof ApplicationFailure ? { type: cause.type ?? undefined, message: cause.message } : {};
      },
    );
}

describe('http kind: a job daemon in Scrapyd’s shapes (form requests, 200 refusals, JSON lines, no credential)', () => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 4, runMs: 600 }),
      entry: (fx) => daemonEntry(fx.url),
    });
  });
  afterAll(async () => s?.stop());

  const daemonRun = (taskId: string) => s.fixture.runs.get(taskId)!;

  it('auth none with no credentials: the job’s options name the project and spider in every call, our reference is the job ID, and every line of the JSON-lines feed is one document', async () => {
    expect(s.entry.credentials).toBeUndefined();
    const url = 'https://shop.example.com/daemon-lines';
    const ref = await s.start({ url, key: 'daemon-lines', options: { ...SHOP, depth: '2' } });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'expired', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    const sent = s.fixture.server.requestsTo('POST', '/v2/schedule.json')[0]!;
    expect(sent.body).toEqual({ project: 'shop', spider: 'pages', depth: '2', jobid: row.task_id, url });
    expect(daemonRun(row.task_id!).daemon).toEqual({ project: 'shop', spider: 'pages', args: { depth: '2' } });
    expect(s.fixture.server.requestsTo('GET', '/v2/status.json').every((r) => r.query.project === 'shop')).toBe(true);
    expect(s.fixture.server.requestsTo('GET', `/v2/items/shop/pages/${row.task_id}.jl`)).toHaveLength(1);
    const docs = await s.client.getResultDocuments('acme', ref.jobId, { offset: 0, limit: 10 });
    expect(docs.documents.map((d) => [d.url, d.title, d.text])).toEqual(
      [0, 1, 2, 3].map((i) => [`${url}#item-${i}`, `Item ${i}`, `Body of item ${i}`]),
    );
    expect(docs.documents[3]).toMatchObject({ error: { message: 'blocked by target' } });
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('a schedule refused in a 200 answer (`{"status": "error", "message": "spider \'nope\' not found"}`) fails the job at once with the daemon’s words: in the store, the API’s view and the closed run; sent once', async () => {
    const url = 'https://shop.example.com/daemon-refused';
    const ref = await s.start({ url, key: 'daemon-refused', options: { project: 'shop', spider: 'nope' } });
    const row = await s.waitFor(ref.jobId, ['failed', 'unknown', 'completed', 'tracking_interrupted']);
    expect(row.state).toBe('failed');
    const words = "spider 'nope' not found";
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({
      kind: 'permanent',
      message: expect.stringContaining(words),
    });
    expect((await s.client.getLiveView('acme', ref.jobId)).lastError?.message).toContain(words);
    expect(await closedWith(s, ref.jobId)).toMatchObject({
      type: 'ScrapeJob.failed',
      message: expect.stringContaining(words),
    });
    expect(
      s.fixture.server.requestsTo('POST', '/v2/schedule.json').filter((r) => (r.body as { url?: string }).url === url),
    ).toHaveLength(1);
  });

  it('a spider that fails at start (finished, no feed: 404 HTML) fails the job with that answer’s words (errors.resultNotFound), never expired; the feed read once', async () => {
    const ref = await s.start({ url: 'https://shop.example.com/daemon-crash', key: 'daemon-crash', options: SHOP });
    const row = await s.waitFor(ref.jobId, ['failed', 'expired', 'completed', 'tracking_interrupted']);
    expect(row.state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({
      kind: 'task_failed',
      httpStatus: 404,
      message: expect.stringContaining('No Such Resource'),
    });
    expect(out.lastError!.message).not.toContain('<');
    expect(out.results).toBe(0);
    expect(await closedWith(s, ref.jobId)).toMatchObject({ type: 'ScrapeJob.failed' });
    expect(s.fixture.server.requestsTo('GET', `/v2/items/shop/pages/${row.task_id}.jl`)).toHaveLength(1);
  });

  it('the daemon restarts while the job runs and forgets it (`currstate: null`, status.missing: not_found): counted like a 404, then expired; never polled on, never completed', async () => {
    const ref = await s.start({
      url: 'https://shop.example.com/hold-daemon-restart',
      key: 'daemon-restart',
      options: SHOP,
      policy: { ...SCENARIO_POLICY, notFoundLimit: 3 },
    });
    const row = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.provider_status === 'running' ? r : undefined;
      },
      30_000,
      'the job polled while running',
    );
    s.fixture.restartDaemon();
    expect((await s.waitFor(ref.jobId, ['expired', 'failed', 'completed', 'tracking_interrupted'])).state).toBe(
      'expired',
    );
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ code: 'TASK_UNKNOWN', message: expect.stringContaining('null') });
    expect(out.results).toBe(0);
    expect(daemonRun(row.task_id!).forgotten).toBe(true);
  });

  it('a cancel while the spider runs: one form call naming project and job, accepted; `finished` afterwards cannot tell stopped from finished (cancel.completedMeans), so the outcome says so, with the items the feed kept', async () => {
    const url = 'https://shop.example.com/hold-daemon-cancel';
    const ref = await s.start({ url, key: 'daemon-cancel', options: SHOP });
    const row = await waitFor(
      async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.provider_status === 'running' ? r : undefined;
      },
      30_000,
      'the job polled while running',
    );
    const res = await s.cancel(ref.jobId);
    const calls = s.fixture.server.requestsTo('POST', '/v2/cancel.json');
    expect(calls.map((c) => c.body)).toEqual([{ project: 'shop', job: row.task_id }]);
    expect(daemonRun(row.task_id!)).toMatchObject({ stopped: true, state: 'ABORTED' });
    expect(res).toMatchObject({ kind: 'observed' });
    const view = await s.client.getLiveView('acme', ref.jobId);
    expect(view.cancel).toMatchObject({ outcome: 'completed', providerCancelCalls: 1 });
    expect(view.cancel?.detail).toContain('the same whether the work stopped early or finished');
    expect(view.cancel?.detail).not.toMatch(/too late|before the cancel|ran to its end/);
    const docs = await s.client.getResultDocuments('acme', ref.jobId, { offset: 0, limit: 10 });
    expect(docs.documents.map((d) => d.url)).toEqual([`${url}#item-0`, `${url}#item-1`]);
  });

  it('a cancel before the spider wrote any item: accepted, then `finished` with no feed (404) is cancelled, never failed, and says the work stopped before it produced any', async () => {
    const url = 'https://shop.example.com/hold-nofeed-cancel';
    const ref = await s.start({ url, key: 'daemon-cancel-nofeed', options: SHOP });
    await waitFor(
      async () => ((await s.store.jobs.get(ref.jobId))?.provider_status === 'running' ? true : undefined),
      30_000,
      'the job polled while running',
    );
    await s.cancel(ref.jobId);
    const view = await s.client.getLiveView('acme', ref.jobId);
    expect(view.cancel).toMatchObject({ outcome: 'cancelled', providerCancelCalls: 1 });
    expect(view.cancel?.detail).toMatch(/accepted the cancel.*no result.*stopped before it produced any/);
    expect((await s.store.jobs.get(ref.jobId))!.state).toBe('cancelled');
    expect(await closedWith(s, ref.jobId)).toEqual({});
  });

  it('a lost schedule answer: the job is found in one of listjobs’ three arrays by its job ID (our reference) and adopted; scheduled once', async () => {
    const url = 'https://shop.example.com/daemon-lost-answer';
    s.fixture.conformance.answerFault('submit', { kind: 'reset', urlContains: 'daemon-lost-answer' });
    const ref = await s.start({ url, key: 'daemon-lost', options: SHOP });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    const mine = [...s.fixture.runs.values()].filter((r) => r.url === url);
    expect(mine).toHaveLength(1);
    expect((await s.store.jobs.get(ref.jobId))!.task_id).toBe(mine[0]!.id);
    expect(s.fixture.server.requestsTo('GET', '/v2/listjobs.json').length).toBeGreaterThanOrEqual(1);
    expect((await s.outcome(ref.jobId)).events).toContain('task_recorded');
  });

  it('a schedule that never reached the daemon: every array of listjobs read and none holds our job, so absence is proven and it is scheduled again; one job, completed', async () => {
    const url = 'https://shop.example.com/daemon-never-sent';
    s.fixture.conformance.answerFault('submit', { kind: 'before', urlContains: 'daemon-never-sent' });
    const ref = await s.start({ url, key: 'daemon-never', options: SHOP });
    expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'])).state).toBe('completed');
    expect([...s.fixture.runs.values()].filter((r) => r.url === url)).toHaveLength(1);
    expect(
      s.fixture.server.requestsTo('POST', '/v2/schedule.json').filter((r) => (r.body as { url?: string }).url === url),
    ).toHaveLength(2);
  });
});

describe('http kind: templates over the submit’s answer (returned URLs), NDJSON results, an abort with a JSON body and a query', () => {
  let s: Scenario<RunsFixture>;
  beforeAll(async () => {
    s = await startProviderScenario({
      kind: 'http',
      fixture: () => startRunsFixture({ items: 5 }),
      entry: (fx) => {
        const base = runsEntry(fx.url, PAGINATION.cursor);
        return {
          ...base,
          status: { ...base.status, path: undefined, url: '{{submitAnswer.data.links.self}}' },
          result: {
            request: { url: '{{submitAnswer.data.links.items_jsonl}}' },
            format: 'ndjson',
            documentsPath: '',
            fields: base.result.fields,
          },
          cancel: {
            ...base.cancel,
            path: undefined,
            url: '{{submitAnswer.data.links.abort}}',
            query: { mode: 'graceful' },
            body: { reason: 'cancelled by job {{clientRef}} for {{url}}' },
          },
        };
      },
    });
  });
  afterAll(async () => s?.stop());

  it('status and items are read at the URLs the submit answered (only those fields kept with the task ID); every NDJSON line one document', async () => {
    const url = 'https://shop.example.com/linked';
    const ref = await s.start({ url, key: 'linked' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
    expect(row.state).toBe('completed');
    const self = `/v3/runs/${row.task_id}`;
    expect(JSON.parse(row.submit_answer!)).toEqual({
      data: { links: { self, items_jsonl: `${self}/items.jsonl`, abort: `${self}/abort` } },
    });
    expect(s.fixture.server.requestsTo('GET', `${self}/items.jsonl`)).toHaveLength(1);
    expect(s.fixture.server.requestsTo('GET', `${self}/items`).filter((r) => r.path === `${self}/items`)).toEqual([]);
    expect((await s.outcome(ref.jobId)).documents.total).toBe(5);
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });

  it('the abort goes to the returned URL with its JSON body (over the request and our reference) and query; the job ends cancelled', async () => {
    const url = 'https://shop.example.com/hold-linked-abort';
    const ref = await s.start({ url, key: 'linked-abort' });
    const row = await heldRun(s, ref.jobId);
    expect(await s.cancel(ref.jobId)).toMatchObject({ kind: 'observed', state: 'cancelled' });
    const clientRef = s.fixture.runs.get(row.task_id!)!.ref; // our reference, sent at submit
    expect(s.fixture.runs.get(row.task_id!)!.abortRequests).toEqual([
      { reason: `cancelled by job ${clientRef} for ${url}`, mode: 'graceful' },
    ]);
  });
});
