/**
 * Reading jobs in the Web UI, in a real browser: the Temporal Web UI (2.54.1, embedded in Temporal CLI
 * 1.9.1) in headless Chromium driven by playwright-core: Debian's `chromium` on PATH, else the one
 * shipped inside the npm package `@sparticuz/chromium`, unpacked into the cache outside the
 * repository (`test/helpers/browser.ts`; nothing is downloaded). A dev server
 * with its UI, the reference provider, a worker and the maintenance worker run real jobs and a
 * real scheduled maintenance run; then, as an operator would:
 * - the list shows readable job IDs (`scrape:<account>:<host>-<path slug>-<hash>`);
 * - the saved view of docs/web-ui.md (`WorkflowType STARTS_WITH "scrapeWorkflow"`) lists the jobs and leaves the
 *   maintenance run out (which the unfiltered list shows);
 * - "Configure Columns" adds the ScrapeHost and ScrapeState columns, which show each job's site and
 *   state, and "Save as New" keeps the view as "Scrapes";
 * - a job's page shows the static summary (`Scrape <url>`), the details and the current details;
 * - the Status column says Completed, Failed and Canceled for a job that completed, one the
 *   provider failed and one cancelled; the counts above the list say 2, 1, 1; the UI's status
 *   filter (clicking the Failed count: `ExecutionStatus = "Failed"`) lists the failed job alone;
 *   the UI's "Failures" view (running workflows whose workflow task fails) lists none of them;
 * - the failed job's page says Failed, and its Result shows the `ScrapeJob.failed` failure whose
 *   message is the state, the provider's code and its reason.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScrapeClient } from '../../src/client/index.js';
import { ensureMaintenanceSchedules, JOBS_VIEW_QUERY } from '../../src/client/schedules.js';
import { parseConfig } from '../../src/config.js';
import { startDevServer, type DevServer } from '../../tools/devserver/devServer.js';
import { startSim, type Sim } from '../../tools/sim/index.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { openStore, type Store } from '../../src/store/index.js';
import { CHROMIUM_ARGS, ensureChromium } from '../helpers/browser.js';
import { keepSqliteFile, keepStore, recordSecrets } from '../helpers/evidence.js';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';
import { createMaintenanceWorker, createScrapeWorker } from '../../src/worker.js';
import { FAST_POLICY, waitFor, waitForState } from '../helpers/stack.js';

const TASK_QUEUE = 'scrapes-ui';
const KEY = 'sk-ui-test-0123456789abcdef';

let dir: string;
let server: DevServer;
let sim: Sim;
let pages: PageServer;
let store: Store;
let connection: Connection;
let native: NativeConnection;
let workers: Worker[] = [];
let running: Promise<unknown>;
let client: ScrapeClient;
let browser: Browser;
let page: Page;
/** Jobs that complete. */
const jobs: { jobId: string; url: string }[] = [];
const FAILED_TAG = 'webui-failed';
const FAILED_REASON = 'The target refused the crawler (simulated for the Web UI test).';
const CANCELLED_TAG = 'webui-cancelled';
/** A job the provider fails. */
let failed: { jobId: string; url: string };
/** A job cancelled while the provider runs it. */
let cancelled: { jobId: string; url: string };
let maintenanceRunId: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-webui-'));
  // First, so that a missing browser is reported before anything else starts.
  const chromium = await ensureChromium();
  console.log(`Chromium: ${chromium.path} (${chromium.source})`);
  server = await startDevServer({
    searchAttributes: SEARCH_ATTRIBUTES,
    dbFile: path.join(dir, 'temporal.db'),
    logger: () => undefined,
  });
  pages = await startPageServer();
  sim = await startSim({
    host: '127.0.0.1',
    port: 0,
    adminToken: 'admin-ui',
    allowFaultHeader: false,
    accounts: [{ name: 'acme', apiKeys: [KEY], profile: { concurrency: 10 } }],
    logger: false,
  });
  const config = parseConfig(
    {
      temporal: { address: server.address, namespace: 'default', taskQueue: TASK_QUEUE },
      storeUrl: `sqlite:${path.join(dir, 'store.db')}`,
      defaultAccount: 'acme',
      providers: { reference: { kind: 'reference', baseUrl: sim.url, credentials: { default: { apiKey: KEY } } } },
    },
    {},
  );
  recordSecrets('webui', [KEY, 'admin-ui']);
  store = await openStore(config.storeUrl);
  native = await NativeConnection.connect({ address: server.address });
  workers = [
    await createScrapeWorker({ connection: native, config, store }),
    await createMaintenanceWorker({ connection: native, config, store }),
  ];
  running = Promise.all(workers.map((w) => w.run()));
  connection = await Connection.connect({ address: server.address });
  const temporal = new Client({ connection, namespace: 'default' });
  client = new ScrapeClient({
    temporal,
    store,
    taskQueue: TASK_QUEUE,
    defaultProvider: 'reference',
    providers: ['reference'],
  });

  for (const name of ['001', 'aclu']) {
    const ref = await client.startScrape({ account: 'acme', url: pages.pageUrl(name), policy: FAST_POLICY });
    jobs.push({ jobId: ref.jobId, url: pages.pageUrl(name) });
  }
  await Promise.all(jobs.map((j) => waitForState(store, j.jobId, ['completed'], 60_000)));

  // A job the provider fails, and one cancelled while it runs: their runs close Failed and Canceled.
  sim.faults.add({
    account: 'acme',
    endpoint: 'submit',
    urlContains: FAILED_TAG,
    action: 'fail_job',
    code: 'TARGET_BLOCKED',
    message: FAILED_REASON,
  });
  sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: CANCELLED_TAG, action: 'never_finish' });
  const failedUrl = `${pages.pageUrl('heise')}?${FAILED_TAG}`;
  const cancelledUrl = `${pages.pageUrl('cnn')}?${CANCELLED_TAG}`;
  failed = {
    jobId: (await client.startScrape({ account: 'acme', url: failedUrl, policy: FAST_POLICY })).jobId,
    url: failedUrl,
  };
  cancelled = {
    jobId: (await client.startScrape({ account: 'acme', url: cancelledUrl, policy: FAST_POLICY })).jobId,
    url: cancelledUrl,
  };
  await waitForState(store, failed.jobId, ['failed'], 60_000);
  await waitFor(
    async () => (await store.jobs.get(cancelled.jobId))?.task_id,
    60_000,
    'the task ID of the job to cancel',
  );
  await client.cancelScrape('acme', cancelled.jobId, { reason: 'operator says stop' });
  await waitForState(store, cancelled.jobId, ['cancelled'], 60_000);
  // Until visibility (what the list reads) has every job closed: the list then shows final statuses.
  await waitFor(
    async () => {
      const closed: string[] = [];
      for await (const w of temporal.workflow.list({ query: `${JOBS_VIEW_QUERY} AND ExecutionStatus != "Running"` }))
        closed.push(w.workflowId);
      return closed.length === jobs.length + 2;
    },
    30_000,
    'every job closed in visibility',
  );

  const ids = await ensureMaintenanceSchedules(temporal, { taskQueue: TASK_QUEUE });
  await temporal.schedule.getHandle(ids.orphans).trigger();
  const run = await waitFor(
    async () => (await temporal.schedule.getHandle(ids.orphans).describe()).info.recentActions[0]?.action.workflow,
    30_000,
    'a maintenance run',
  );
  await temporal.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result();
  maintenanceRunId = run.workflowId;

  browser = await playwright.launch({ executablePath: chromium.path, args: [...CHROMIUM_ARGS] });
  page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  for (const w of workers) w.shutdown();
  await running;
  await native?.close();
  await connection?.close();
  if (store) await keepStore(store, 'webui'); // for the secrets scan
  await store?.close();
  await sim?.close();
  await pages?.close();
  await server?.stop();
  if (dir) keepSqliteFile(path.join(dir, 'temporal.db'), 'webui-temporal'); // its own server's histories (payload bytes in the blobs)
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const listUrl = (query?: string) =>
  `${server.uiUrl}/namespaces/default/workflows${query ? `?query=${encodeURIComponent(query)}` : ''}`;

/** Opens the list (reloading while visibility catches up) until every one of `expected` is shown. */
async function openList(query: string | undefined, expected: string[]): Promise<string> {
  let text = '';
  await waitFor(
    async () => {
      await page.goto(listUrl(query));
      await page
        .locator('table tbody tr')
        .first()
        .waitFor({ timeout: 15_000 })
        .catch(() => undefined);
      text = await page
        .locator('table')
        .first()
        .innerText()
        .catch(() => '');
      return expected.every((e) => text.includes(e));
    },
    60_000,
    `the list to show ${expected.join(', ')}`,
  );
  return text;
}

/** The text of every frame of the page (the job page renders user metadata in iframes). */
async function framesText(): Promise<string[]> {
  return Promise.all(
    page.frames().map((f) =>
      f
        .locator('body')
        .innerText()
        .catch(() => ''),
    ),
  );
}

describe('the Temporal Web UI, as an operator sees it', () => {
  it('lists jobs under readable IDs; the saved view of jobs leaves the maintenance run out', async () => {
    // Host, path slug and hash: two pages of one site read apart.
    expect(jobs.map((j) => j.jobId)).toEqual([
      expect.stringMatching(/^scrape:acme:127\.0\.0\.1-pages-001-[0-9a-f]{10}$/),
      expect.stringMatching(/^scrape:acme:127\.0\.0\.1-pages-aclu-[0-9a-f]{10}$/),
    ]);
    const all = await openList(undefined, [...jobs.map((j) => j.jobId), maintenanceRunId]);
    expect(all).toContain('findOrphansWorkflow');
    const view = await openList(
      JOBS_VIEW_QUERY,
      jobs.map((j) => j.jobId),
    );
    expect(view).not.toContain('scrape-maintenance:');
    expect(view).not.toContain('findOrphansWorkflow');
  });

  it('Configure Columns adds ScrapeHost and ScrapeState, which show each job’s site and state; the view is saved', async () => {
    await openList(
      JOBS_VIEW_QUERY,
      jobs.map((j) => j.jobId),
    );
    await page.getByRole('button', { name: /configure columns/i }).click();
    await page.getByText('Configure Workflows Table').waitFor();
    await page.getByRole('button', { name: 'Add ScrapeHost column' }).click();
    await page.getByRole('button', { name: 'Add ScrapeState column' }).click();
    await page.getByRole('button', { name: 'Close Workflows Table configuration' }).click();
    await page.getByText('Configure Workflows Table').waitFor({ state: 'hidden' });
    const heads = await page.locator('table thead th').allInnerTexts();
    expect(heads).toEqual(expect.arrayContaining(['Workflow ID', 'ScrapeHost', 'ScrapeState']));
    const rows = await page.locator('table tbody tr').allInnerTexts();
    const stateOf = (jobId: string) => rows.find((r) => r.includes(jobId));
    for (const j of jobs) expect(stateOf(j.jobId), j.jobId).toMatch(/127\.0\.0\.1\s+completed/);
    expect(stateOf(failed.jobId)).toMatch(/127\.0\.0\.1\s+failed/);
    expect(stateOf(cancelled.jobId)).toMatch(/127\.0\.0\.1\s+cancelled/);
    // Saved as docs/web-ui.md says: "Save as New", named "Scrapes".
    await page.getByRole('button', { name: 'Save as New' }).click();
    const dialog = page.getByRole('dialog').filter({ hasText: 'Save as New View' });
    await dialog.locator('input#view-name').fill('Scrapes');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: 'Scrapes' }).first().waitFor();
    await page.screenshot({ path: path.join(dir, 'list.png') });
  });

  it('a job’s page shows its summary, its details and its current details', async () => {
    const job = jobs[0]!;
    await page.goto(`${server.uiUrl}/namespaces/default/workflows/${encodeURIComponent(job.jobId)}`);
    await page.getByRole('heading', { name: job.jobId }).waitFor({ timeout: 30_000 });
    await page.getByRole('tab', { name: /User Metadata/ }).click();
    const shown = await waitFor(
      async () => {
        const texts = await framesText();
        // The summary, the details and the current details render separately: wait for all three.
        const ready =
          texts.some((t) => t.includes(`Scrape ${job.url}`)) &&
          texts.some((t) => /Account:\s*acme/.test(t) && t.includes('reference')) &&
          texts.some((t) => /completed/i.test(t));
        return ready ? texts : undefined;
      },
      30_000,
      'the user metadata',
    );
    expect(shown.some((t) => t.includes(`Scrape ${job.url}`))).toBe(true); // static summary
    expect(shown.some((t) => /Account:\s*acme/.test(t) && t.includes('reference'))).toBe(true); // static details
    expect(shown.some((t) => /completed/i.test(t))).toBe(true); // current details: the job's state
    await page.screenshot({ path: path.join(dir, 'job.png') });
  });

  it('the status column and the status filter tell a failed job from a completed one and a cancelled one', async () => {
    const all = [...jobs, failed, cancelled].map((j) => j.jobId);
    await openList(JOBS_VIEW_QUERY, all);
    /** Each job's Status cell, by job ID. */
    const statuses = async () =>
      Object.fromEntries(
        await Promise.all(
          all.map(async (id) => {
            const row = page.locator('table tbody tr').filter({ hasText: id });
            return [id, (await row.getByTestId('execution-status').innerText()).trim().toLowerCase()] as const;
          }),
        ),
      );
    expect(await statuses()).toEqual({
      [jobs[0]!.jobId]: 'completed',
      [jobs[1]!.jobId]: 'completed',
      [failed.jobId]: 'failed',
      [cancelled.jobId]: 'canceled',
    });
    // The counts above the list, one per status (visibility counts them a moment later: wait).
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(
          ['Completed', 'Failed', 'Canceled'].map(
            async (s) =>
              [
                s,
                await page
                  .getByTestId(`workflow-status-${s}`)
                  .innerText({ timeout: 1_000 })
                  .then((t) => t.trim().toLowerCase())
                  .catch(() => ''),
              ] as const,
          ),
        ),
      );
    await waitFor(
      async () => {
        const c = await counts();
        return c.Completed === '2 completed' && c.Failed === '1 failed' && c.Canceled === '1 canceled';
      },
      30_000,
      'the status counts 2 completed, 1 failed, 1 canceled',
    );
    // The UI's own status filter: clicking the Failed count adds `ExecutionStatus = "Failed"` to the
    // query, and the list then holds the failed job alone.
    await page.getByTestId('workflow-status-Failed').click();
    await page.waitForURL((u) => /`?ExecutionStatus`?\s*=\s*"Failed"/.test(u.searchParams.get('query') ?? ''));
    const filtered = await waitFor(
      async () => {
        const rows = await page.locator('table tbody tr').allInnerTexts();
        return rows.length === 1 && rows[0]!.includes(failed.jobId) ? rows : undefined;
      },
      30_000,
      'the Failed filter to list the failed job alone',
    );
    expect(filtered[0]).toMatch(/failed/i);
    for (const other of [...jobs, cancelled]) expect(filtered.join('\n')).not.toContain(other.jobId);
    // The same filter typed as a query, without the jobs' view: the failed job, and no other.
    const typed = await openList('ExecutionStatus = "Failed"', [failed.jobId]);
    for (const other of [...jobs, cancelled]) expect(typed).not.toContain(other.jobId);
    // Web UI 2.54's "Failures" view is another thing: running workflows whose workflow task fails
    // (`TemporalReportedProblems`). A job that failed is an outcome, not a stuck task: none is there.
    const failuresView = page.getByRole('link', { name: /^Failures/ });
    expect(await failuresView.getAttribute('href')).toContain('TemporalReportedProblems');
    await failuresView.click();
    await page.waitForURL((u) => (u.searchParams.get('query') ?? '').includes('TemporalReportedProblems'));
    await waitFor(
      async () =>
        (
          await page
            .getByTestId('workflow-count')
            .innerText()
            .catch(() => '')
        ).trim() === '0',
      30_000,
      'the Failures view to count 0',
    );
    expect(await page.locator('body').innerText()).not.toContain(failed.jobId);
    await page.screenshot({ path: path.join(dir, 'failed-filter.png') });
  });

  it('a failed job’s page says Failed, with the state and the provider’s code and reason', async () => {
    await page.goto(`${server.uiUrl}/namespaces/default/workflows/${encodeURIComponent(failed.jobId)}`);
    await page.getByRole('heading', { name: failed.jobId }).waitFor({ timeout: 30_000 });
    expect(
      (
        await page
          .getByRole('status')
          .filter({ hasText: /failed/i })
          .first()
          .innerText()
      ).toLowerCase(),
    ).toBe('failed');
    // The Result panel holds the run's failure: typed by the state, not retryable, its message the
    // state, the provider's code and the provider's words.
    const result = await waitFor(
      async () => {
        const t = await page
          .getByTestId('input-and-result')
          .innerText()
          .catch(() => '');
        return t.includes('ScrapeJob.failed') ? t : undefined;
      },
      30_000,
      'the failure in the Result panel',
    );
    expect(result).toContain(`job failed [TARGET_BLOCKED]: ${FAILED_REASON}`);
    expect(result).toMatch(/"nonRetryable":\s*true/);
    await page.screenshot({ path: path.join(dir, 'failed-job.png') });
  });
});
