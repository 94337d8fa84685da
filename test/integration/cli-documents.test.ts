/**
 * `npm run cli -- result <job> --documents`: the real CLI prints one page of a multi-document
 * result (position, HTTP status, URL, title or error) and the next offset, or the page as JSON;
 * another account's job is "not found" (exit 3) like a missing one.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, startStack, type Stack } from '../helpers/stack.js';
import { recordCli } from '../helpers/evidence.js';

const run = promisify(execFile);
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => stack?.stop());

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run('npx', ['tsx', 'src/cli.ts', ...args, '--config', stack.configFile], {
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

describe('cli result --documents', () => {
  it('prints a page of documents with the next offset, or JSON; another account sees nothing', async () => {
    const jobId = 'scrape:acme:cli-docs-1';
    await stack.store.jobs.insert({
      id: jobId,
      account: 'acme',
      idem_key: 'cli-docs-1',
      provider: 'reference',
      request_hash: 'h',
      url: 'https://crawl.example/',
      input: '{}',
      options: '{}',
      batch_id: null,
      workflow_id: jobId,
      task_id: null,
      deadline_at: null,
    });
    await stack.store.jobs.recordTaskId(jobId, 'crawl-cli-1', 'running', 'test');
    const documents = [
      { url: 'https://crawl.example/a', httpStatus: 200, title: 'Alpha' },
      { url: 'https://crawl.example/b', httpStatus: 200, title: 'Beta' },
      { url: 'https://crawl.example/c', error: { code: 'TIMEOUT', message: 'timed out' } },
      { url: 'https://crawl.example/d', httpStatus: 404, title: 'Delta' },
    ];
    await stack.store.results.writeOnce(
      jobId,
      'reference',
      'crawl-cli-1',
      {
        url: 'https://crawl.example/',
        finalUrl: null,
        httpStatus: null,
        title: 'Alpha',
        byline: null,
        excerpt: null,
        lang: null,
        siteName: null,
        publishedTime: null,
        text: null,
        markdown: null,
        links: [],
        contentLength: null,
        documents,
      },
      null,
    );

    const page = await cli('result', 'cli-docs-1', '--documents', '--offset', '1', '--limit', '2', '--account', 'acme');
    expect(page.code).toBe(0);
    expect(page.stdout).toContain('https://crawl.example/b');
    expect(page.stdout).toContain('Beta');
    expect(page.stdout).toContain('error TIMEOUT: timed out');
    expect(page.stdout).not.toContain('https://crawl.example/a');
    expect(page.stdout).toContain('documents 2-3 of 4 (next: --offset 3)');

    const json = await cli('result', jobId, '--documents', '--json', '--account', 'acme');
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as {
      total: number;
      nextOffset: number | null;
      documents: { seq: number; title?: string }[];
    };
    expect(parsed).toMatchObject({ total: 4, nextOffset: null });
    expect(parsed.documents.map((d) => d.seq)).toEqual([0, 1, 2, 3]);

    const other = await cli('result', jobId, '--documents', '--account', 'globex');
    expect(other.code).toBe(3);
    expect(other.stderr).toMatch(/not_found/);
  });
});
