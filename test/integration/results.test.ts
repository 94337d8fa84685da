/**
 * Results fidelity through the real workflow, per provider kind, against each kind's fixture
 * server (its `conformance` controls, as its CONTRACT.md allows):
 *
 * - one document row per identity however the pages repeat: Firecrawl `next` pages that start one
 *   document back or serve an empty page first, Apify `clean` windows with an empty page, Zyte
 *   item keys served again (`start` is inclusive), the `http` kind's runs API in all three paging
 *   styles;
 * - binary bodies kept (bytes, media type, size, SHA-256) and a PDF's text and title read, for
 *   ScraperAPI (`response.base64EncodedBody`), Oxylabs (`content_encoding: base64`, and `render: png`
 *   screenshots) and Firecrawl
 *   (`parsers: []`), with a PDF made in the test;
 * - a result without content completes the job with a note that the store, the timeline, the
 *   workflow's view, the client, the HTTP API and the CLI (`status`, `result`, `result --field`)
 *   all show; `result --field` of an empty field exits 1 naming the field and why;
 * - Bright Data rows: `markdown`/`text`/`final_url` fill the documents (a one-record snapshot fills
 *   the result row, which `result --field markdown` prints), per-input error rows are per-document
 *   errors and never data, and a snapshot of error rows only ends `failed` with the provider's code.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApifyFixture, type ApifyFixture } from '../fixtures/providers/apify/server.js';
import {
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
} from '../fixtures/providers/brightdata/server.js';
import {
  startFirecrawlFixture,
  type FirecrawlFixture,
  type FirecrawlFixtureOptions,
} from '../fixtures/providers/firecrawl/server.js';
import { startProviderScenario, type Scenario } from '../fixtures/providers/harness.js';
import { startRunsFixture, type RunsFixture } from '../fixtures/providers/http/server.js';
import {
  OXYLABS_FIXTURE_CREDENTIALS,
  startOxylabsFixture,
  type OxylabsFixture,
} from '../fixtures/providers/oxylabs/server.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../fixtures/providers/scraperapi/server.js';
import { startZyteFixture, type ZyteFixture } from '../fixtures/providers/zyte/server.js';
import { recordCli } from '../helpers/evidence.js';
import { makePdf } from '../helpers/pdf.js';
import { REPO } from '../helpers/stack.js';
import { countResultDocuments } from '../helpers/storeQueries.js';

const run = promisify(execFile);
const FINAL = ['completed', 'failed', 'tracking_interrupted', 'expired', 'cancelled'];
const PDF = makePdf({
  title: 'Annual report 2026',
  pages: [['Revenue grew by a third.', 'Costs stayed flat.'], ['Outlook: steady.']],
});
const PDF_SHA = createHash('sha256').update(PDF).digest('hex');
/** A PNG's signature, IHDR chunk and a few more bytes: enough to be sniffed as image/png. */
const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a73', 'hex'),
  Buffer.from('screenshot pixels'),
]);
const PNG_SHA = createHash('sha256').update(PNG).digest('hex');

/** The real CLI against a scenario's store (its configuration written to a file). */
async function cli(
  s: { config: unknown },
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'results-cli-')), 'config.json');
  fs.writeFileSync(file, JSON.stringify(s.config));
  try {
    const r = await run('npx', ['tsx', 'src/cli.ts', ...args, '--config', file, '--account', 'acme'], {
      cwd: REPO,
      env: { ...process.env, SCRAPE_CONFIG: '' },
      timeout: 90_000,
    });
    return recordCli(args, { code: 0, stdout: r.stdout, stderr: r.stderr });
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return recordCli(args, {
      code: typeof err.code === 'number' ? err.code : -1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    });
  }
}

/** The identities of the job's stored documents, in order, and their titles. */
async function stored(s: Pick<Scenario<FirecrawlFixture>, 'client' | 'store'>, jobId: string) {
  const docs = await s.client.getResultDocuments('acme', jobId, { offset: 0, limit: 1_000 });
  return {
    total: docs.total,
    rows: await countResultDocuments(s.store, { jobId }),
    identities: docs.documents.map((d) => d.identity),
    titles: docs.documents.map((d) => d.title ?? null),
    documents: docs.documents,
  };
}

function firecrawl(fixture: FirecrawlFixtureOptions, entry: Record<string, unknown>, webhooks = false) {
  return startProviderScenario<FirecrawlFixture>({
    kind: 'firecrawl',
    fixture: () => startFirecrawlFixture(fixture),
    entry: (fx) => ({ baseUrl: fx.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000, ...entry }),
    webhooks,
  });
}

describe('firecrawl crawl: one row per scrapeId however the next pages repeat', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ pageSize: 2, crawl: { pages: 5, errors: 1, robotsBlocked: 0 } }, { operation: 'crawl' });
  });
  afterAll(async () => s?.stop());

  it('pages that each start with the previous page’s last document (repeat-boundary): 5 pages and 1 failure stored as 6 rows, not 9', async () => {
    s.fixture.conformance.setPages('repeat-boundary');
    try {
      const ref = await s.start({ url: 'https://docs.example/repeat/', key: 'repeat' });
      const row = await s.waitFor(ref.jobId, FINAL);
      expect(row.state).toBe('completed');
      // The provider served skip 0, 1, 2, 3 (pages of 2, each starting one back): 8 page documents.
      const reads = s.fixture.server
        .requestsTo('GET', `/v2/crawl/${row.task_id}`)
        .filter((r) => r.path === `/v2/crawl/${row.task_id}`);
      expect(reads.map((r) => r.query.skip ?? '0').slice(-4)).toEqual(['0', '1', '2', '3']);
      const docs = await stored(s, ref.jobId);
      expect(docs).toMatchObject({ total: 6, rows: 6 });
      expect(docs.titles).toEqual(['Page 0', 'Page 1', 'Page 2', 'Page 3', 'Page 4', null]);
      expect(new Set(docs.identities).size).toBe(6);
      expect(docs.identities.every((i) => i.startsWith('id:'))).toBe(true);
      expect(docs.documents.map((d) => d.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    } finally {
      s.fixture.conformance.setPages('normal');
    }
  });

  it('an empty page before the last one, whose next is its own position: read again, every page kept (5 pages and 1 failure)', async () => {
    s.fixture.conformance.setPages('empty-page');
    try {
      const ref = await s.start({ url: 'https://docs.example/empty-page/', key: 'empty-page' });
      const row = await s.waitFor(ref.jobId, FINAL);
      expect(row.state).toBe('completed');
      const reads = s.fixture.server.requestsTo('GET', `/v2/crawl/${row.task_id}`).filter((r) => r.query.skip === '4');
      expect(reads.length).toBeGreaterThanOrEqual(2); // the empty answer, then the page itself
      const docs = await stored(s, ref.jobId);
      expect(docs).toMatchObject({ total: 6, rows: 6 });
      expect(docs.titles).toEqual(['Page 0', 'Page 1', 'Page 2', 'Page 3', 'Page 4', null]);
    } finally {
      s.fixture.conformance.setPages('normal');
    }
  });
});

describe('firecrawl batch: a PDF scraped with parsers: [] (base64 in markdown)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({}, { operation: 'batch' });
    s.fixture.conformance.binaryBody('/files/annual.pdf', { contentType: 'application/pdf', bytes: PDF });
  });
  afterAll(async () => s?.stop());

  it('keeps the file’s bytes, type, size and SHA-256, and its text, paragraphs and title fill the page', async () => {
    const url = 'https://reports.example/files/annual.pdf';
    const ref = await s.start({ url, key: 'pdf', options: { parsers: [] } });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const [post] = s.fixture.server.requestsTo('POST', '/v2/batch/scrape');
    expect(post!.body).toMatchObject({ parsers: [] });
    const r = await s.client.getResult('acme', ref.jobId);
    expect(r).toMatchObject({
      title: 'Annual report 2026',
      contentLength: PDF.length,
      contentNote: null,
      body: { contentType: 'application/pdf', size: PDF.length, sha256: PDF_SHA },
    });
    expect(r.text).toBe('Revenue grew by a third.\nCosts stayed flat.\n\nOutlook: steady.');
    expect(r.markdown).toBe('Revenue grew by a third. Costs stayed flat.\n\nOutlook: steady.');
    expect(r.markdown).not.toContain(PDF.toString('base64').slice(0, 40));
    expect((await s.client.getResultBody('acme', ref.jobId))?.bytes.equals(PDF)).toBe(true);
    const docs = await stored(s, ref.jobId);
    expect(docs.documents[0]).toMatchObject({
      body: { contentType: 'application/pdf', size: PDF.length, sha256: PDF_SHA },
      title: 'Annual report 2026',
    });
    expect(JSON.stringify(docs.documents[0]!.data)).not.toContain(PDF.toString('base64').slice(0, 40));
    expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
  });
});

describe('a result without usable content (a crawl that found nothing)', () => {
  let s: Scenario<FirecrawlFixture>;
  beforeAll(async () => {
    s = await firecrawl({ crawl: { pages: 0, errors: 0, robotsBlocked: 0 } }, { operation: 'crawl' }, true);
  });
  afterAll(async () => s?.stop());

  it('completes (the provider did the work) with a content note shown by the store, timeline, workflow, client, HTTP API and CLI; result --field exits 1 naming the field', async () => {
    const ref = await s.start({ url: 'https://docs.example/nothing/', key: 'nothing' });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const note = 'empty: the provider returned no content';
    const out = await s.outcome(ref.jobId);
    expect(out).toMatchObject({ results: 1, documents: { total: 0, rows: 0 } });
    expect(out.events).toContain('result_empty');
    expect((await s.store.results.forJob(ref.jobId))?.content_note).toBe(note);
    expect(await s.client.getResult('acme', ref.jobId)).toMatchObject({
      contentNote: note,
      title: null,
      markdown: null,
    });
    expect(await s.client.getScrape('acme', ref.jobId, { execution: false })).toMatchObject({
      state: 'completed',
      contentNote: note,
    });
    expect((await s.client.getLiveView('acme', ref.jobId)).note).toBe(note);

    const api = await s.api!.call('acme', 'GET', `/v1/scrapes/${encodeURIComponent(ref.jobId)}/result`);
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({ content_note: note, body: null, markdown: null });

    const status = await cli(s, 'status', ref.jobId);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(note);
    const shown = await cli(s, 'result', ref.jobId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`Note: ${note}`);
    for (const field of ['markdown', 'links']) {
      const f = await cli(s, 'result', ref.jobId, '--field', field);
      expect(f.code).toBe(1);
      expect(f.stdout).toBe('');
      expect(f.stderr).toContain(`has no ${field}: ${note}`);
    }
    const json = await cli(s, 'result', ref.jobId, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ jobId: ref.jobId, contentNote: note, markdown: null });
  });
});

describe('apify: clean windows with an empty page', () => {
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
        clean: true,
        results: { pageSize: 2 },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('an empty window mid-dataset (empty-page) loses nothing and repeats nothing: 7 items, 7 rows', async () => {
    const items = Array.from({ length: 7 }, (_, i) => ({
      url: `https://shop.example/i/${i}`,
      title: `Item ${i}`,
      price: i,
    }));
    s.fixture.plan('clean-empty', { items: items.map((i) => ({ ...i })) }); // the fixture writes its empty window into the array it is given
    s.fixture.conformance.setPages('empty-page');
    try {
      const ref = await s.start({ url: 'https://shop.example/clean-empty', key: 'clean-empty' });
      expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
      const docs = await stored(s, ref.jobId);
      expect(docs).toMatchObject({ total: 7, rows: 7 });
      expect(docs.titles).toEqual(items.map((i) => i.title));
    } finally {
      s.fixture.conformance.setPages('normal');
    }
  });
});

describe('zyte: item keys served again at each page start', () => {
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
        results: { pageSize: 2 },
      }),
    });
  });
  afterAll(async () => s?.stop());

  it('repeat-boundary (start is inclusive): 5 items stored once each, identified by their _key', async () => {
    const url = 'https://quotes.example/repeat';
    s.fixture.plan('repeat', {
      items: Array.from({ length: 5 }, (_, i) => ({ url: `${url}#q-${i}`, title: `Quote ${i}` })),
    });
    s.fixture.conformance.setPages('repeat-boundary');
    try {
      const ref = await s.start({ url, key: 'repeat' });
      const row = await s.waitFor(ref.jobId, FINAL);
      expect(row.state).toBe('completed');
      const reads = s.fixture.storage.requestsTo('GET', `/items/${row.task_id}`);
      expect(reads.length).toBeGreaterThanOrEqual(3);
      expect(reads.every((r) => r.query.meta === '_key')).toBe(true);
      const docs = await stored(s, ref.jobId);
      expect(docs).toMatchObject({ total: 5, rows: 5 });
      expect(docs.titles).toEqual(['Quote 0', 'Quote 1', 'Quote 2', 'Quote 3', 'Quote 4']);
      expect(docs.identities).toEqual([0, 1, 2, 3, 4].map((n) => `id:${row.task_id}/${n}`));
    } finally {
      s.fixture.conformance.setPages('normal');
    }
  });
});

const PAGINATION = {
  offset: { style: 'offset', offsetParam: 'offset', limitParam: 'size', totalPath: '/total' },
  cursor: { style: 'cursor', cursorParam: 'cursor', cursorPath: '/next_cursor', limitParam: 'size' },
  next: { style: 'next', nextPath: '/links/next' },
} as const;

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
    },
    // The runs API's documents have no ID of their own: `link` is their identity (its CONTRACT.md).
    result: {
      request: { path: '/v3/runs/{{taskId}}/items' },
      documentsPath: '/items',
      fields: { id: '/link', url: '/link', title: '/heading', text: '/content', error: '/problem' },
      pagination,
    },
    errors: { terminalCodes: ['EMPTY_DATASET'], expiredCodes: ['RUN_EXPIRED'], concurrencyCodes: ['TOO_MANY_RUNS'] },
    results: { pageSize: 3 },
  };
}

describe.each(Object.keys(PAGINATION) as (keyof typeof PAGINATION)[])(
  'http kind (%s paging): repeated and empty pages',
  (style) => {
    let s: Scenario<RunsFixture>;
    beforeAll(async () => {
      s = await startProviderScenario({
        kind: 'http',
        fixture: () => startRunsFixture({ items: 7 }),
        entry: (fx) => runsEntry(fx.url, PAGINATION[style]),
      });
    });
    afterAll(async () => s?.stop());

    const titles = ['Item 0', 'Item 1', 'Item 2', 'Item 3', 'Item 4', 'Item 5', 'Item 6'];

    it('repeat-boundary: pages of 3 that start one item back hold 9 items; 7 rows, one per link', async () => {
      s.fixture.conformance.setPages('repeat-boundary');
      try {
        const url = `https://shop.example/${style}-repeat`;
        const ref = await s.start({ url, key: `repeat-${style}` });
        expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
        const docs = await stored(s, ref.jobId);
        expect(docs).toMatchObject({ total: 7, rows: 7 });
        expect(docs.titles).toEqual(titles);
        expect(docs.identities).toEqual(titles.map((_, i) => `id:${url}#item-${i}`));
      } finally {
        s.fixture.conformance.setPages('normal');
      }
    });

    // Offset paging computes its next position itself: the page's `total` tells an empty page
    // before the end from the end.
    it('empty-page: an empty page before the last one is read again at its position; 7 rows', async () => {
      s.fixture.conformance.setPages('empty-page');
      try {
        // (A URL with "empty" in it is the runs API's empty run: this one must not have it.)
        const ref = await s.start({ url: `https://shop.example/${style}-blank-page`, key: `blank-${style}` });
        expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
        const docs = await stored(s, ref.jobId);
        expect(docs).toMatchObject({ total: 7, rows: 7 });
        expect(docs.titles).toEqual(titles);
      } finally {
        s.fixture.conformance.setPages('normal');
      }
    });
  },
);

describe('scraperapi: a PDF relayed as response.base64EncodedBody', () => {
  let s: Scenario<ScraperApiFixture>;
  beforeAll(async () => {
    s = await startProviderScenario<ScraperApiFixture>({
      kind: 'scraperapi',
      fixture: () => startScraperApiFixture(),
      entry: (f) => ({ baseUrl: f.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000 }),
    });
    s.fixture.conformance.binaryBody('annual.pdf', { contentType: 'application/pdf', bytes: PDF });
  });
  afterAll(async () => s?.stop());

  it('completes with the bytes, type, size and SHA-256 kept and the PDF’s title, text, Markdown and length (were all empty)', async () => {
    const ref = await s.start({ url: 'https://reports.example/annual.pdf', key: 'pdf' });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const r = await s.client.getResult('acme', ref.jobId);
    expect(r).toMatchObject({
      httpStatus: 200,
      title: 'Annual report 2026',
      contentLength: PDF.length,
      contentNote: null,
      body: { contentType: 'application/pdf', size: PDF.length, sha256: PDF_SHA },
    });
    expect(r.text).toContain('Revenue grew by a third.');
    expect(r.markdown).toContain('Outlook: steady.');
    expect((await s.client.getResultBody('acme', ref.jobId))?.bytes.equals(PDF)).toBe(true);
    expect((await s.store.results.forJob(ref.jobId))?.body_sha256).toBe(PDF_SHA);
    const text = await cli(s, 'result', ref.jobId, '--field', 'text');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('Costs stayed flat.');
  });
});

describe('oxylabs: a PDF asked with content_encoding: base64', () => {
  let pages: PageServer;
  let s: Scenario<OxylabsFixture>;
  beforeAll(async () => {
    pages = await startPageServer();
    s = await startProviderScenario<OxylabsFixture>({
      kind: 'oxylabs',
      fixture: () => startOxylabsFixture(),
      entry: (f) => ({
        baseUrl: f.url,
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
        credentials: {
          default: { apiKey: OXYLABS_FIXTURE_CREDENTIALS.acme },
          accounts: { globex: { apiKey: OXYLABS_FIXTURE_CREDENTIALS.globex } },
        },
      }),
    });
    s.fixture.conformance.binaryBody('annual.pdf', { contentType: 'application/pdf', bytes: PDF });
    s.fixture.conformance.binaryBody('home-shot.png', { contentType: 'image/png', bytes: PNG });
  });
  afterAll(async () => {
    await s?.stop();
    await pages?.close();
  });

  it('the Base64 content is decoded and kept as a PDF with its text; an HTML page asked the same way is still extracted as a page', async () => {
    const ref = await s.start({
      url: 'https://reports.example/annual.pdf',
      key: 'pdf',
      options: { content_encoding: 'base64' },
    });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const r = await s.client.getResult('acme', ref.jobId);
    expect(r).toMatchObject({
      title: 'Annual report 2026',
      contentLength: PDF.length,
      body: { contentType: 'application/pdf', size: PDF.length, sha256: PDF_SHA },
    });
    expect(r.text).toContain('Outlook: steady.');
    expect((await s.client.getResultBody('acme', ref.jobId))?.bytes.equals(PDF)).toBe(true);

    const html = await s.start({
      url: pages.pageUrl('wikipedia'),
      key: 'html-b64',
      options: { content_encoding: 'base64' },
    });
    expect((await s.waitFor(html.jobId, FINAL)).state).toBe('completed');
    const page = await s.client.getResult('acme', html.jobId);
    expect(page.body).toBeNull();
    expect(page.title).toBeTruthy();
    expect(page.markdown?.length ?? 0).toBeGreaterThan(100);
  });

  it('a render: png screenshot (always Base64) is kept as image/png bytes with its size and SHA-256, not as text', async () => {
    const ref = await s.start({ url: 'https://shots.example/home-shot.png', key: 'png', options: { render: 'png' } });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const r = await s.client.getResult('acme', ref.jobId);
    expect(r.body).toMatchObject({ contentType: 'image/png', size: PNG.length, sha256: PNG_SHA });
    expect(r.text ?? '').toBe('');
    expect((await s.client.getResultBody('acme', ref.jobId))?.bytes.equals(PNG)).toBe(true);
  });
});

describe('brightdata: rows as documents', () => {
  let pages: PageServer;
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    pages = await startPageServer();
    s = await startProviderScenario<BrightDataFixture>({
      kind: 'brightdata',
      fixture: () => startBrightDataFixture(),
      entry: (f) => ({
        baseUrl: f.url,
        readTimeoutMs: 5_000,
        submitTimeoutMs: 3_000,
        datasetId: BRIGHTDATA_FIXTURE_DATASET,
        reconcile: { settleMs: 1_000 },
        listing: { marginMs: 5_000 },
      }),
    });
  });
  afterAll(async () => {
    await s?.stop();
    await pages?.close();
  });

  it('a one-record snapshot carrying markdown, text and final_url fills its document and the result row; result --field markdown prints it', async () => {
    const url = `${pages.pageUrl('wikipedia')}?md-record`;
    const markdown = '# Crawled page\n\nThe body as Markdown.';
    s.fixture.rule('md-record', {
      kind: 'records',
      count: 1,
      fields: { markdown, text: 'The body as text.', final_url: `${url}&final`, page_html: '<html></html>' },
    });
    const ref = await s.start({ url, key: 'md' });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const docs = await stored(s, ref.jobId);
    expect(docs.documents[0]).toMatchObject({
      url,
      finalUrl: `${url}&final`,
      markdown,
      text: 'The body as text.',
      httpStatus: 200,
      identity: `pos:${new URL(url).href}#0`,
    });
    const r = await s.client.getResult('acme', ref.jobId);
    expect(r).toMatchObject({ markdown, text: 'The body as text.', finalUrl: `${url}&final`, contentNote: null });
    expect(r.title).toBeTruthy();
    const printed = await cli(s, 'result', ref.jobId, '--field', 'markdown');
    expect(printed).toMatchObject({ code: 0, stderr: '' });
    expect(printed.stdout.trim()).toBe(markdown);
  });

  it('per-input error rows (include_errors=true) are per-document errors with Bright Data’s code, never data', async () => {
    const url = `${pages.pageUrl('cnet')}?mixed`;
    s.fixture.rule('mixed', { kind: 'records', count: 2 });
    s.fixture.rule('mixed', {
      kind: 'error_records',
      count: 1,
      error: '4XX page - dead page.',
      errorCode: 'dead_page',
    });
    const ref = await s.start({ url, key: 'mixed' });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('completed');
    const docs = await stored(s, ref.jobId);
    expect(docs).toMatchObject({ total: 3, rows: 3 });
    const errors = docs.documents.filter((d) => d.error);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ url, error: { code: 'dead_page', message: '4XX page - dead page.' } });
    expect(errors[0]!.data).toBeUndefined();
    expect(docs.documents.filter((d) => !d.error).every((d) => d.data !== undefined)).toBe(true);
  });

  it('a snapshot of error rows only ends failed with the first row’s code and the count, nothing written', async () => {
    const url = `${pages.pageUrl('cnet')}?all-errors`;
    s.fixture.rule('all-errors', { kind: 'error_records', count: 2, error: 'Page not found', errorCode: 'dead_page' });
    const ref = await s.start({ url, key: 'all-errors' });
    expect((await s.waitFor(ref.jobId, FINAL)).state).toBe('failed');
    const out = await s.outcome(ref.jobId);
    expect(out.lastError).toMatchObject({ kind: 'task_failed', code: 'dead_page' });
    expect(String(out.lastError?.message)).toContain('2 error row(s)');
    expect(out.results).toBe(0);
    expect(out.incidents[0]).toMatchObject({ code: 'dead_page' });
  });
});
