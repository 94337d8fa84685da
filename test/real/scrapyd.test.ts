/**
 * The product against Scrapyd (PyPI `scrapyd` 1.6, the Scrapy job daemon) through the declarative
 * `http` kind, issue 35: the `realsite` project of `scrapyd/` deployed, its spider crawling the
 * repository's `sample-site/` served on loopback. Every assertion compares the product's record
 * with Scrapyd's own answers (`status.json`, the items feed it serves).
 *
 * Scrapyd's shape, as this server answers: `POST /schedule.json` (form: project, spider, spider
 * arguments) → `{"status":"ok","jobid":…}`, or `200 {"status":"error","message":…}`;
 * `GET /status.json?job=…` → `{"currstate":"pending"|"running"|"finished"|null}` (null: a job it
 * does not know, e.g. after a restart); the items feed `GET /items/<project>/<spider>/<job>.jl` in
 * JSON lines (404 when the run wrote none); `POST /cancel.json` (form: project, job) →
 * `{"prevstate":…}`, after which a running job reads `finished`. No authentication.
 *
 * The entry is the one `docs/providers/scrapyd.md` gives (its JSON block, read from the page: the
 * project and spider names replaced by the suite's, `baseUrl` the suite's Scrapyd), so the page's
 * configuration is the one these scenarios prove.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { runBatch } from '../../src/batch/run.js';
import { waitFor } from '../helpers/stack.js';
import { killWorker, REAL_POLICY, restartServer, useReal, type RealScenario } from './harness.js';
import { SCRAPYD_PROJECT, SCRAPYD_SPIDER } from './scrapyd/server.js';
import { startSite, type Site } from './site.js';

/** The Scrapyd entry of `docs/providers/scrapyd.md` (its one JSON block), for `spider` of the suite's project, without `kind` and `baseUrl`. */
function scrapydEntry(spider = SCRAPYD_SPIDER): Record<string, unknown> {
  const page = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/providers/scrapyd.md'), 'utf8');
  const block = /```json\n([\s\S]*?)\n```/.exec(page)?.[1];
  if (!block) throw new Error('docs/providers/scrapyd.md has no JSON block');
  const json = block.replaceAll('myproject', SCRAPYD_PROJECT).replaceAll('myspider', spider);
  const {
    kind: _kind,
    baseUrl: _baseUrl,
    ...entry
  } = (JSON.parse(json) as { providers: { scrapyd: Record<string, unknown> } }).providers.scrapyd;
  // The page configures no credential (auth none); the harness's default one is removed with it.
  return { ...entry, credentials: undefined };
}

/** Scrapyd's own word for job `taskId` (`status.json`). */
async function scrapydState(taskId: string): Promise<string | null> {
  const r = await fetch(`${inject('real').scrapyd}/status.json?job=${encodeURIComponent(taskId)}`);
  return ((await r.json()) as { currstate: string | null }).currstate;
}

/** The items Scrapyd serves for job `taskId` (its JSON-lines feed), or null on 404. */
async function scrapydItems(taskId: string): Promise<{ url: string; title: string }[] | null> {
  const r = await fetch(`${inject('real').scrapyd}/items/${SCRAPYD_PROJECT}/${SCRAPYD_SPIDER}/${taskId}.jl`);
  if (r.status === 404) return null;
  return (await r.text())
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { url: string; title: string });
}

/** The log Scrapyd serves for job `taskId` (`/logs/<project>/<spider>/<job>.log`), or `""` before it has one. */
async function scrapydLog(taskId: string): Promise<string> {
  const r = await fetch(`${inject('real').scrapyd}/logs/${SCRAPYD_PROJECT}/${SCRAPYD_SPIDER}/${taskId}.log`);
  return r.status === 200 ? r.text() : '';
}

/** The job's row once its task is known and checked `checks` times with Scrapyd's word `word`. */
async function polledAt(s: RealScenario, jobId: string, word: string) {
  return waitFor(
    async () => {
      const r = await s.store.jobs.get(jobId);
      return r?.task_id && r.status_checks >= 1 && r.provider_status === word ? r : undefined;
    },
    120_000,
    `job ${jobId} polled while Scrapyd says ${word}`,
  );
}

/** Every stored document of the job equals one item of Scrapyd's feed, none twice, none missing. */
async function expectItemsStored(s: RealScenario, jobId: string) {
  const row = (await s.store.jobs.get(jobId))!;
  await waitFor(async () => (await scrapydState(row.task_id!)) === 'finished', 60_000, 'Scrapyd to say finished');
  const items = (await scrapydItems(row.task_id!))!;
  const out = await s.outcome(jobId);
  const docs = await s.client.getResultDocuments('acme', jobId, { offset: 0, limit: 1_000 });
  expect({ state: out.state, results: out.results, documents: out.documents.total }).toEqual({
    state: 'completed',
    results: 1,
    documents: items.length,
  });
  expect(docs.documents.map((d) => d.url).sort()).toEqual(items.map((i) => i.url).sort());
  return items;
}

const FINAL = ['completed', 'failed', 'cancelled', 'expired', 'tracking_interrupted', 'unknown'];

describe('Scrapyd through the http kind', () => {
  const real = useReal({
    server: 'scrapyd',
    kind: 'http',
    name: 'scrapyd',
    entry: scrapydEntry(),
    extraEntries: { 'scrapyd-nospider': scrapydEntry('no-such-spider') },
  });
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(async () => site?.close());

  it('a job crawling the sample site (no credential configured: auth none) is stored once and complete: every item of Scrapyd’s JSON-lines feed, one document each', async () => {
    const s = real();
    const ref = await s.start({ url: `${site.url}/`, key: 'site-job', policy: REAL_POLICY, options: { follow: '1' } });
    expect((await s.waitFor(ref.jobId, FINAL, 240_000)).state).toBe('completed');
    const items = await expectItemsStored(s, ref.jobId);
    expect(items.length).toBeGreaterThanOrEqual(7);
    expect(site.served.filter((p) => p === '/')).toHaveLength(1);
  });

  it('a batch of the sample site’s pages (one Scrapyd job each): every job completes with its one page, as Scrapyd’s feed holds it', async () => {
    const s = real();
    const urls = [
      `${site.url}/index.html`,
      `${site.url}/articles/write-once.html`,
      `${site.url}/articles/poll-politely.html`,
    ];
    const outcomes = await runBatch(
      s.client,
      s.store,
      urls.map((url, i) => ({ line: i + 2, url, key: `scrapyd-batch-${i}-${Date.now()}`, row: { url } })),
      {
        account: 'acme',
        batchId: `scrapyd-batch-${Date.now()}`,
        provider: s.name,
        policy: REAL_POLICY,
        waitTimeoutMs: 240_000,
      },
    );
    expect(outcomes.map((o) => `${o.url} ${o.state}${o.error ? `: ${o.error}` : ''}`)).toEqual(
      urls.map((u) => `${u} completed`),
    );
    for (const [i, o] of outcomes.entries()) {
      const items = await expectItemsStored(s, o.jobId!);
      expect(items.map((it) => it.url)).toEqual([urls[i]]);
      expect(
        (await s.client.getResultDocuments('acme', o.jobId!, { offset: 0, limit: 10 })).documents[0],
      ).toMatchObject({
        title: items[0]!.title,
      });
    }
  });

  it('a cancel while the spider runs: one cancel call, accepted; Scrapyd’s final word `finished` cannot tell a stopped crawl from a finished one, so the outcome says only that (never “too late”), with the items Scrapyd’s feed holds, stored once', async () => {
    const s = real();
    const ref = await s.start({
      url: `${site.url}/`,
      key: 'cancel-running',
      policy: REAL_POLICY,
      options: { follow: '1', delay: '2' },
    });
    const row = await polledAt(s, ref.jobId, 'running');
    // The cancel lands once the spider has scraped its first page (its log says so, `site.py`), so
    // that the stopped crawl has items to keep; the crawl of the whole site takes ≥ 14 s more.
    await waitFor(
      async () => (await scrapydLog(row.task_id!)).includes('scraped page'),
      60_000,
      'the spider’s first item',
    );
    const res = await s.cancel(ref.jobId);
    await waitFor(async () => (await scrapydState(row.task_id!)) === 'finished', 60_000, 'Scrapyd to stop the crawl');
    // Scrapyd's own feed shows the crawl stopped before its end (the site has at least 8 pages).
    const items = (await scrapydItems(row.task_id!)) ?? [];
    expect(items.length).toBeLessThan(8);
    const view = await s.client.getLiveView('acme', ref.jobId);
    expect({ kind: res.kind, outcome: view.cancel?.outcome, calls: view.cancel?.providerCancelCalls }).toEqual({
      kind: 'observed',
      outcome: 'completed',
      calls: 1,
    });
    const detail = view.cancel?.detail ?? '';
    expect(detail).toContain('the provider accepted the cancel at');
    expect(detail).toContain('status finished');
    expect(detail).toContain('the same whether the work stopped early or finished');
    expect(detail).not.toMatch(/too late|before the cancel|ran to its end/);
    // What exists is kept, once: every item of Scrapyd's feed, nothing else.
    const docs = await s.client.getResultDocuments('acme', ref.jobId, { offset: 0, limit: 100 });
    expect(docs.documents.map((d) => d.url).sort()).toEqual(items.map((i) => i.url).sort());
  });

  it('a failing target (the spider fails on purpose: Scrapyd says finished and serves no items feed): the job fails with that evidence, never completed', async () => {
    const s = real();
    const ref = await s.start({
      url: `${site.url}/`,
      key: 'failing-spider',
      policy: REAL_POLICY,
      options: { fail: '1' },
    });
    const row = await s.waitFor(ref.jobId, FINAL, 180_000);
    expect(await scrapydState(row.task_id!)).toBe('finished');
    expect(await scrapydItems(row.task_id!)).toBeNull();
    const out = await s.outcome(ref.jobId);
    expect(out.state).toBe('failed');
    // Scrapyd's words: the 404 page of the feed it does not have (errors.resultNotFound: "failed").
    expect(out.lastError).toMatchObject({
      kind: 'task_failed',
      httpStatus: 404,
      message: expect.stringContaining('No Such Resource'),
    });
    expect(out.results).toBe(0);
  });

  it('an error in a 2xx answer (`200 {"status":"error","message":"spider … not found"}` on submit) fails the job with Scrapyd’s message', async () => {
    const s = real();
    const ref = await s.start({
      url: `${site.url}/`,
      key: 'no-spider',
      provider: 'scrapyd-nospider',
      policy: REAL_POLICY,
    });
    const row = await s.waitFor(ref.jobId, FINAL, 120_000);
    expect(row.state).toBe('failed');
    const words = "spider 'no-such-spider' not found";
    expect((await s.outcome(ref.jobId)).lastError).toMatchObject({ message: expect.stringContaining(words) });
    expect((await s.client.getLiveView('acme', ref.jobId)).lastError?.message).toContain(words);
  });

  it('Scrapyd restarted mid-poll (its crawls stop with it and it forgets them: `currstate: null`): the job ends expired saying Scrapyd does not know it, never polled forever, never completed', async () => {
    const s = real();
    const ref = await s.start({
      url: `${site.url}/`,
      key: 'server-restart',
      policy: { ...REAL_POLICY, notFoundLimit: 3 },
      options: { follow: '1', delay: '2' },
    });
    const row = await polledAt(s, ref.jobId, 'running');
    await restartServer('scrapyd');
    expect(await scrapydState(row.task_id!)).toBeNull();
    const end = await s.waitFor(ref.jobId, FINAL, 120_000);
    expect(end.state).toBe('expired');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ code: 'TASK_UNKNOWN', message: expect.stringContaining('null') });
    expect(out.results).toBe(0);
  });
});

describe('Scrapyd through the http kind, product worker SIGKILLed mid-poll', () => {
  const real = useReal({ server: 'scrapyd', kind: 'http', name: 'scrapyd', entry: scrapydEntry(), worker: false });
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(async () => site?.close());

  it('the worker is SIGKILLed while it polls a running spider; another worker finishes the job: the same Scrapyd job, stored once and complete', async () => {
    const s = real();
    const first = await s.spawnWorker();
    const ref = await s.start({
      url: `${site.url}/`,
      key: 'worker-kill',
      policy: REAL_POLICY,
      options: { follow: '1', delay: '1' },
    });
    const row = await polledAt(s, ref.jobId, 'running');
    await killWorker(first);
    await s.spawnWorker();
    expect((await s.waitFor(ref.jobId, FINAL, 240_000)).state).toBe('completed');
    expect((await s.store.jobs.get(ref.jobId))!.task_id).toBe(row.task_id);
    await expectItemsStored(s, ref.jobId);
    expect(site.served.filter((p) => p === '/')).toHaveLength(1);
  });
});
