/**
 * Encrypted payloads on the production topology, read back in a real browser: a job runs with
 * payload encryption on; its raw history (read without the codec) holds no plaintext URL; the
 * standalone Web UI, pointed at the codec server, shows the decoded URL on the job's page to an
 * operator who signed in at the codec server, and only encrypted payloads to one who did not.
 * Headless Chromium from Debian (`chromium`), driven by playwright-core (no browser download).
 */
import { execFileSync } from 'node:child_process';
import { Client } from '@temporalio/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EncryptionCodec } from '../../src/codec/codec.js';
import { keyringFromEnv } from '../../src/codec/keys.js';
import { fixturePageNames, startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitForState, type Stack } from '../helpers/stack.js';
import { freshStoreUrl, useCodecEnv } from './helpers.js';

let stack: Stack;
let pages: PageServer;
let browser: Browser;
let jobId: string;
let runId: string;
let url: string;

/**
 * Every string of a history, plus every byte field (given as bytes or as base64 text, as the
 * history's JSON form has them) read as UTF-8: what someone reading Temporal's database sees.
 */
function rawText(value: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (v instanceof Uint8Array) out.push(Buffer.from(v).toString('utf8'));
    else if (typeof v === 'string') out.push(v, Buffer.from(v, 'base64').toString('utf8'));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return out.join('\n');
}

async function jobPageText(page: Page, needle: string, timeoutMs: number): Promise<boolean> {
  await page.goto(
    `${inject('cluster').uiUrl}/namespaces/default/workflows/${encodeURIComponent(jobId)}/${runId}/history`,
    { waitUntil: 'domcontentloaded' },
  );
  try {
    await page.waitForFunction((n) => document.body.innerText.includes(n), needle, { timeout: timeoutMs });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  useCodecEnv();
  pages = await startPageServer();
  stack = await startStack({ worker: true, storeUrl: await freshStoreUrl(), codec: true, providerTimeoutMs: 20_000 });
  url = `${pages.pageUrl(fixturePageNames()[0]!)}?webui-codec-check=1`;
  const ref = await stack.client.startScrape({ account: 'acme', url, key: 'webui-codec', policy: FAST_POLICY });
  jobId = ref.jobId;
  await waitForState(stack.store, jobId, ['completed'], 120_000);
  runId = (await stack.temporal.workflow.getHandle(jobId).describe()).runId;
  const executablePath = execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], {
    encoding: 'utf8',
  }).trim();
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await pages?.close();
});

describe('payload encryption and the codec server', () => {
  it('the raw history has no plaintext URL; the codec decodes it', async () => {
    const plainClient = new Client({ connection: stack.temporal.connection, namespace: inject('temporal').namespace });
    const history = await plainClient.workflow.getHandle(jobId).fetchHistory();
    const raw = rawText(history);
    expect(raw).toContain('binary/encrypted');
    expect(raw).not.toContain(url);
    expect(raw).not.toContain('webui-codec-check');
    const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const decoded = await new EncryptionCodec(keyringFromEnv(process.env)).decode(input as never);
    expect(rawText(decoded)).toContain(url);
  });

  it('the Web UI shows the decoded URL once the operator signed in at the codec server, and not before', async () => {
    const { codecUrl, codecToken } = inject('cluster');
    const anonymous = await browser.newContext();
    const anonPage = await anonymous.newPage();
    const decodeAnswers: number[] = [];
    anonPage.on('response', (r) => {
      if (r.url().startsWith(`${codecUrl}/codec/decode`)) decodeAnswers.push(r.status());
    });
    expect(await jobPageText(anonPage, url, 15_000)).toBe(false);
    expect(decodeAnswers.length, 'the UI called the codec server').toBeGreaterThan(0);
    expect(decodeAnswers.every((s) => s === 401)).toBe(true);
    await anonymous.close();

    const operator = await browser.newContext();
    const page = await operator.newPage();
    await page.goto(`${codecUrl}/codec/login`);
    await page.fill('input[name=token]', codecToken);
    await Promise.all([page.waitForLoadState('domcontentloaded'), page.click('button[type=submit]')]);
    expect(await page.textContent('body')).toContain('Signed in');
    expect(await jobPageText(page, url, 60_000), 'decoded URL on the job page').toBe(true);
    await operator.close();
  }, 180_000);
});
