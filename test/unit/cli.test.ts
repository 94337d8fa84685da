/**
 * The command line's own parts, without a stack: the reference page is what the commands
 * define, every command takes `--json`, errors map to one stable JSON shape and exit code, every
 * table fits 120 columns whatever it holds (a long URL, a 200-character key, many columns) without
 * losing a character of an ID or URL, and nothing printed carries a URL's credentials.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BatchRowOutcome } from '../../src/batch/run.js';
import { CliError } from '../../src/cli/context.js';
import { buildCli, describeError, wantsJson } from '../../src/cli/main.js';
import {
  fitColumns,
  fitTable,
  MAX_TABLE_WIDTH,
  outcomeTable,
  printDocuments,
  printJob,
  printJson,
  printLiveView,
} from '../../src/cli/print.js';
import { CLI_REFERENCE_PATH, renderCliReference } from '../../tools/docs/cliReference.js';
import { InvalidInputError, JobNotFoundError, ResultNotReadyError } from '../../src/client/errors.js';
import type { JobSummary } from '../../src/client/views.js';
import type { JobView } from '../../src/model/types.js';
import { REPO } from '../helpers/stack.js';

const LONG_KEY = `k-${'0123456789abcdef'.repeat(12)}`.slice(0, 200);
const LONG_URL = `https://www.example.com/${'very-long-path-segment/'.repeat(12)}page.html?${'q=1&'.repeat(20)}end=1`;
const PASSWORD = 'pw-7f3a9c1e5b2d';
const CREDENTIAL_URL = `https://operator:${PASSWORD}@intranet.example/report?api_key=ak-55c0ffee0123&page=2`;

/** Everything `fn` writes with console.log, as one string. */
async function captured(fn: () => Promise<void> | void): Promise<string> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return lines.join('\n');
}

/** Lines wider than the limit (code points; the tables here hold ASCII and box characters only). */
const tooWide = (text: string) => text.split('\n').filter((l) => [...l].length > MAX_TABLE_WIDTH);

/** The text of column `i` (0-based) of a table, its wrapped pieces joined, rows of the body only. */
function column(table: string, i: number): string {
  return table
    .split('\n')
    .filter((l) => l.startsWith('│'))
    .map((l) => (l.split('│')[i + 1] ?? '').trim())
    .join('');
}

afterEach(() => vi.restoreAllMocks());

describe('reference page', () => {
  it(`${CLI_REFERENCE_PATH} is what the command definitions render (run \`npm run docs:cli\` after changing a command)`, () => {
    const page = fs.readFileSync(path.join(REPO, CLI_REFERENCE_PATH), 'utf8');
    expect(page).toBe(renderCliReference());
  });

  it('names every command, each of its options, and exit codes', () => {
    const page = renderCliReference();
    for (const c of buildCli().commands) {
      expect(page).toContain(`## \`${c.name()}\``);
      for (const o of c.options) expect(page, `${c.name()} ${o.flags}`).toContain(`\`${o.flags}\``);
    }
    expect(page).toContain('Exit codes: 0 done; 1 failed or not completed');
    expect(page).toMatch(
      /## `submit`[\s\S]*Exit codes: 0 started \(with --wait-s: the job completed within the wait\)/,
    );
  });
});

describe('--json', () => {
  it('every command takes --json', () => {
    const without = buildCli()
      .commands.filter((c) => !c.options.some((o) => o.long === '--json'))
      .map((c) => c.name());
    expect(without).toEqual([]);
  });

  it('is read before parsing (so usage errors are JSON too), never after `--`', () => {
    expect(wantsJson(['node', 'scrape', 'list', '--json'])).toBe(true);
    expect(wantsJson(['node', 'scrape', '--json', 'list', '--limit', 'lots'])).toBe(true);
    expect(wantsJson(['node', 'scrape', 'list'])).toBe(false);
    expect(wantsJson(['node', 'scrape', 'npm', '--', '--json'])).toBe(false);
  });

  it('maps every error to one stable shape: code, message, the exit code, details when safe and present', () => {
    expect(describeError(new JobNotFoundError('scrape:acme:k'))).toEqual({
      code: 'not_found',
      message: 'no job scrape:acme:k for this account',
      exitCode: 3,
    });
    expect(describeError(new InvalidInputError('bad url', [{ path: ['url'] }]))).toEqual({
      code: 'invalid',
      message: 'bad url',
      exitCode: 2,
      details: { issues: [{ path: ['url'] }] },
    });
    expect(describeError(new ResultNotReadyError('scrape:acme:k', 'pending'))).toMatchObject({
      code: 'not_ready',
      exitCode: 1,
      details: { state: 'pending' },
    });
    expect(describeError(new CliError('usage', "unknown option '--x'", 2))).toEqual({
      code: 'usage',
      message: "unknown option '--x'",
      exitCode: 2,
    });
    const unavailable = Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });
    expect(describeError(new Error('could not start job', { cause: unavailable }))).toMatchObject({
      code: 'temporal_unreachable',
      exitCode: 1,
    });
    expect(describeError(new Error('boom'))).toEqual({ code: 'error', message: 'boom', exitCode: 1 });
  });
});

describe('tables fit 120 columns', () => {
  it('fitColumns keeps columns that fit, caps the widest, and stays within the width', () => {
    expect(fitColumns([10, 20, 30], 120)).toEqual([10, 20, 30]);
    const w = fitColumns([8, 60, 250, 26], 120, [6, 12, 30, 12]);
    expect(w.reduce((a, b) => a + b, 0) + w.length + 1).toBe(120);
    expect(w[0]).toBe(8); // fits: untouched
    expect(w[1]).toBeLessThanOrEqual(60);
    // Too narrow for every least width: they shrink in proportion, and the sum still fits.
    const narrow = fitColumns([40, 40, 40, 40, 40, 40, 40, 40], 60, [20, 20, 20, 20, 20, 20, 20, 20]);
    expect(narrow.reduce((a, b) => a + b, 0) + narrow.length + 1).toBeLessThanOrEqual(60);
  });

  it('a table of many columns, long IDs and URLs: no line wider than 120, no character of an ID or URL lost', async () => {
    const rows = Array.from({ length: 3 }, (_, i) => [
      `scrape:acme:${LONG_KEY}-${i}`,
      'tracking_interrupted',
      '3f0c2a9e-5b1d-4e7a-9c3b-0d8e7f6a5b4c',
      LONG_URL,
      '2026-12-05T10:00:00.000Z',
      'a note with several words that wrap at spaces when the column is narrow',
      'x',
      'y',
    ]);
    const table = await fitTable({ head: ['job', 'state', 'task', 'url', 'updated', 'note', 'a', 'b'], rows });
    expect(tooWide(table)).toEqual([]);
    // One row alone, so that the column's pieces are that row's.
    const one = await fitTable({ head: ['job', 'state', 'task', 'url', 'updated'], rows: [rows[0]!.slice(0, 5)] });
    expect(tooWide(one)).toEqual([]);
    expect(column(one, 0)).toBe(`job${rows[0]![0]}`);
    expect(column(one, 3)).toBe(`url${LONG_URL}`);
  });

  it("status, the live view, a batch's outcomes and result documents fit, with a long URL and key", async () => {
    const job: JobSummary = {
      jobId: `scrape:acme:${LONG_KEY}`,
      account: 'acme',
      key: LONG_KEY,
      provider: 'reference',
      state: 'pending',
      providerStatus: 'running',
      taskId: '3f0c2a9e-5b1d-4e7a-9c3b-0d8e7f6a5b4c',
      url: LONG_URL,
      typedUrl: LONG_URL.toUpperCase(),
      createdAt: '2026-12-05T10:00:00.000Z',
      updatedAt: '2026-12-05T10:00:00.000Z',
      submittedAt: '2026-12-05T10:00:00.000Z',
      finishedAt: null,
      deadlineAt: null,
      statusChecks: 3,
      lastCheckedAt: '2026-12-05T10:00:00.000Z',
      failingChecks: 2,
      lastError: { kind: 'transient', message: `GET ${LONG_URL} answered 503 `.repeat(3), httpStatus: 503 },
    } as unknown as JobSummary;
    const status = await captured(() => printJob(job));
    expect(tooWide(status)).toEqual([]);
    expect(column(status, 1)).toContain(`scrape:acme:${LONG_KEY}`);
    expect(column(status, 1)).toContain(LONG_URL);

    const live = await captured(() =>
      printLiveView({ jobId: job.jobId, state: 'pending', statusChecks: 3, note: LONG_URL } as unknown as JobView),
    );
    expect(tooWide(live)).toEqual([]);

    const outcomes: BatchRowOutcome[] = [
      { line: 2, url: LONG_URL, state: 'completed', title: 'A title '.repeat(20), jobId: job.jobId },
      { line: 3, url: `"${LONG_URL}",note`, state: 'rejected', error: 'CSV cannot be parsed here: '.repeat(5) },
    ];
    const batch = await outcomeTable(outcomes, 50);
    expect(tooWide(batch)).toEqual([]);

    const docs = await captured(() =>
      printDocuments(
        {
          total: 1,
          offset: 0,
          limit: 20,
          nextOffset: null,
          documents: [{ seq: 0, httpStatus: 200, url: LONG_URL, title: 'T'.repeat(150) }],
        } as never,
        false,
      ),
    );
    expect(tooWide(docs)).toEqual([]);
  });
});

describe('status of a partial result', () => {
  it('shows the note (how many of how many, and why) and that the result is partial, with the provider’s count', async () => {
    const note = "partial: kept 86 of the 121 documents Firecrawl's `completed` counts (its pages repeated)";
    const job = {
      jobId: 'scrape:acme:big',
      account: 'acme',
      key: 'big',
      provider: 'fc-crawl',
      state: 'completed',
      providerStatus: 'completed',
      taskId: 't',
      url: 'https://e.x/',
      createdAt: '2026-12-05T10:00:00.000Z',
      updatedAt: '2026-12-05T10:00:00.000Z',
      submittedAt: null,
      finishedAt: null,
      deadlineAt: null,
      statusChecks: 3,
      lastCheckedAt: null,
      failingChecks: 0,
      lastError: null,
      waiting: null,
      contentNote: note,
      partial: true,
      expectedDocuments: 121,
    } as JobSummary;
    const out = (await captured(() => printJob(job))).replace(/\s+/g, ' ');
    expect(out).toContain(note);
    expect(out).toContain('partial: fewer documents than the provider counts (121)');
  });
});

describe('credentials in URLs are never shown', () => {
  it('not in a table, not in JSON', async () => {
    const table = await fitTable({ head: ['line', 'url'], rows: [['2', CREDENTIAL_URL]] });
    const json = await captured(() => printJson([{ line: 2, url: CREDENTIAL_URL, error: `bad: ${CREDENTIAL_URL}` }]));
    for (const out of [table, json]) {
      expect(out).not.toContain(PASSWORD);
      expect(out).not.toContain('ak-55c0ffee0123');
      expect(out).not.toContain('operator');
    }
    expect(json).toContain('https://[REDACTED]@intranet.example/report?api_key=[REDACTED]&page=2');
  });
});
