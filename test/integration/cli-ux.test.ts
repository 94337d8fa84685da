/**
 * The command line as a user meets it, through the real CLI (`node --import tsx src/cli.ts`) against a
 * real stack (Temporal dev server, reference provider, SQLite store, worker):
 * - exit codes as docs/cli.md says (missing input file, absent or invalid configuration,
 *   a refused `resolve`: 2; a bad argument: 2; no such job: 3);
 * - `status` reads only the store: with Temporal unreachable it answers and never tries it;
 * - a `;`-separated file is refused with the delimiter to pass, and `--delimiter ';'` runs it;
 * - while status checks fail and retry, `status` shows the failing count and the last error;
 * - two spellings of one address are one job; the typed form is kept as evidence;
 * - a request (`submit`, a batch row) whose job an earlier release started under a key derived then
 *   (`r-<hash>`, `<host>-<hash>`) finds that job: no second job, no second provider job;
 * - `--deadline` / `--poll-*` reach the workflow; bad values are refused with the bounds.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobIdFor } from '../../src/client/index.js';
import { readBatchFile } from '../../src/batch/input.js';
import { canonicalUrl, derivedKey, hostHashKey, legacyClientKey } from '../../src/client/ids.js';
import { fingerprint } from '../../src/lib/hash.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { Store } from '../../src/store/index.js';
import { FAST_POLICY, REPO, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';
import { recordCli } from '../helpers/evidence.js';

const run = promisify(execFile);
let stack: Stack;
let pages: PageServer;
let blackHole: net.Server;
let blackHoleConnections = 0;
let unreachableConfig: string;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 50 } });
  // A "Temporal" that accepts TCP connections and never answers: any attempt to use it would hang.
  blackHole = net.createServer((s) => {
    blackHoleConnections++;
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  const port = (blackHole.address() as net.AddressInfo).port;
  unreachableConfig = path.join(stack.dir, 'unreachable.json');
  fs.writeFileSync(
    unreachableConfig,
    JSON.stringify({ ...stack.config, temporal: { ...stack.config.temporal, address: `127.0.0.1:${port}` } }),
  );
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
  blackHole?.close();
});

/** Runs the CLI from source with `args` (and `--config <stack config>` unless `config: null`). */
async function cli(
  args: string[],
  opts: { config?: string | null; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const config = opts.config === undefined ? stack.configFile : opts.config;
  const argv = [
    '--import',
    import.meta.resolve('tsx'),
    path.join(REPO, 'src/cli.ts'),
    ...args,
    ...(config ? ['--config', config] : []),
  ];
  try {
    const r = await run(process.execPath, argv, {
      cwd: opts.cwd ?? REPO,
      env: { ...process.env, SCRAPE_CONFIG: '', FORCE_COLOR: '0', ...opts.env },
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

describe('exit codes', () => {
  it('a missing input file, an absent or invalid configuration and a bad argument exit 2 with the reason; an unknown job exits 3', async () => {
    const missing = await cli(['run', 'no-such-file.csv']);
    expect(missing, missing.stderr).toMatchObject({ code: 2 });
    expect(missing.stderr).toContain('cannot read input file no-such-file.csv: no such file');

    const absent = await cli(['status', 'k'], { config: path.join(stack.dir, 'absent.json') });
    expect(absent.code).toBe(2);
    expect(absent.stderr).toMatch(/cannot read configuration .*absent\.json/);

    const emptyDir = fs.mkdtempSync(path.join(stack.dir, 'empty-'));
    const none = await cli(['list'], { config: null, cwd: emptyDir });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no configuration: pass --config <file>, set SCRAPE_CONFIG/);

    const badFile = path.join(stack.dir, 'bad.json');
    fs.writeFileSync(badFile, JSON.stringify({ providers: { reference: { kind: 'reference' } } }));
    const invalid = await cli(['list'], { config: badFile });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/invalid configuration/);

    const badUrl = await cli(['submit', 'ftp://example.com/']);
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toMatch(/url scheme must be http or https/);

    const usage = await cli(['list', '--limit', 'lots']);
    expect(usage.code).toBe(2);

    const unknown = await cli(['status', 'no-such-key']);
    expect(unknown.code).toBe(3);
  });

  it('a refused resolve (the job is not in unknown) exits 2 and says why', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('001'),
      key: 'cli-resolve-refused',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed'], 60_000);
    const r = await cli(['resolve', ref.jobId, '--resubmit']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `cannot resolve job ${ref.jobId}: it is completed; only a job waiting in unknown can be resolved`,
    );
    const both = await cli(['resolve', ref.jobId]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give exactly one of --task-id or --resubmit/);
  });
});

describe('status reads only the store', () => {
  it('answers from the store while Temporal is unreachable, without ever connecting to it', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('002'),
      key: 'cli-status-offline',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed'], 60_000);
    for (const args of [
      ['status', 'cli-status-offline'],
      ['list'],
      ['result', 'cli-status-offline', '--field', 'title'],
      ['timeline', 'cli-status-offline'],
      ['incident', 'cli-status-offline'],
    ]) {
      const r = await cli(args, { config: unreachableConfig });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    const status = await cli(['status', 'cli-status-offline'], { config: unreachableConfig });
    expect(status.stdout).toMatch(/state\s+│?\s*completed/);
    expect(status.stdout).toContain(ref.jobId);
    expect(blackHoleConnections).toBe(0);
  });
});

describe('CSV delimiters', () => {
  it('refuses a ;-separated file with the delimiter to pass, and runs it with --delimiter', async () => {
    const file = path.join(stack.dir, 'semicolons.csv');
    fs.writeFileSync(file, `url;note\n${pages.pageUrl('aclu')};first\n${pages.pageUrl('heise')};second\n`);
    const refused = await cli(['run', file, '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'line 1: the CSV header has no "url" column; the delimiter looks like `;`; pass --delimiter \';\'',
    );
    const ok = await cli(['run', file, '--delimiter', ';', '--json', '--poll-initial', '200ms', '--poll-max', '1s']);
    expect(ok.code, ok.stderr).toBe(0);
    const rows = JSON.parse(ok.stdout) as { line: number; state: string; jobId: string }[];
    expect(rows.map((r) => [r.line, r.state])).toEqual([
      [2, 'completed'],
      [3, 'completed'],
    ]);
    expect(rows[0]!.jobId).toMatch(/^scrape:acme:127\.0\.0\.1-pages-aclu-[0-9a-f]{10}$/); // a readable job ID
    expect(JSON.parse((await stack.store.jobs.get(rows[0]!.jobId))!.input)).toEqual({
      url: pages.pageUrl('aclu'),
      note: 'first',
    });
  });
});

describe('status while checks fail', () => {
  it('shows the failing checks and their last error; --live adds the workflow’s own view', async () => {
    const tag = 'cli-failing-checks';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('ars-1')}?${tag}`,
      key: tag,
      // The job must still be pending when the last of the CLI's runs reads it: on a busy machine
      // five CLI processes took longer than FAST_POLICY's 60-s deadline.
      policy: { ...FAST_POLICY, deadlineMs: 600_000 },
    });
    await waitFor(async () => (await stack.store.jobs.get(ref.jobId))?.task_id, 30_000, 'the task ID');
    stack.sim.faults.add({ account: 'acme', endpoint: 'status', urlContains: tag, action: 'error_5xx', status: 503 });
    await waitFor(
      async () => ((await stack.store.jobs.get(ref.jobId))?.status_errors ?? 0) >= 1,
      30_000,
      'a failed status check',
    );
    const r = await cli(['status', tag]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /failing checks\s+│?\s*\d+ in a row since the last answer — being retried \(never resubmitted\)/,
    );
    expect(r.stdout).toMatch(/last error\s+│?\s*\S+.*503/);
    const json = JSON.parse((await cli(['status', tag, '--json'])).stdout) as {
      failingChecks: number;
      lastError: { message: string; httpStatus?: number };
    };
    expect(json.failingChecks).toBeGreaterThanOrEqual(1);
    expect(json.lastError.message).toMatch(/503|UPSTREAM_UNAVAILABLE/);
    const live = await cli(['status', tag, '--live', '--json']);
    expect(live.code, live.stderr).toBe(0);
    expect(JSON.parse(live.stdout)).toMatchObject({
      job: { jobId: ref.jobId, state: 'pending' },
      live: { jobId: ref.jobId, state: 'pending', taskId: expect.any(String) },
    });
    const liveText = await cli(['status', tag, '--live']);
    expect(liveText.stdout).toMatch(/live \(query state\)\s+│?\s*pending/);
    await stack.client.cancelScrape('acme', ref.jobId, { wait: false });
  });
});

describe('one address, one job', () => {
  it('HTTP://host/./path and http://host/path are the same job; the typed form stays as evidence', async () => {
    const url = pages.pageUrl('tumblr');
    const typed = `${url.replace('http://', 'HTTP://')}./`;
    const a = await cli(['submit', typed, '--poll-initial', '200ms']);
    const b = await cli(['submit', url]);
    expect(a.code, a.stderr).toBe(0);
    const id = /started job (\S+)/.exec(a.stdout)?.[1];
    expect(id).toMatch(/^scrape:acme:127\.0\.0\.1-pages-tumblr-[0-9a-f]{10}$/);
    expect(b.stdout).toContain(`existing job ${id}`);
    const row = await waitForState(stack.store, id!, ['completed'], 60_000);
    expect(row.url).toBe(url);
    expect(stack.sim.stats().requests.byEndpoint.submit).toBeGreaterThan(0);
    const status = await cli(['status', id!]);
    expect(status.stdout).toMatch(new RegExp(`url as typed\\s+│?\\s*${typed.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  });

  it('a request whose job was made under a key derived before readable keys finds that job', async () => {
    const typed = `${pages.pageUrl('herald-sun-1')}?old=1`.replace('http://', 'HTTP://');
    const request = { url: typed, format: 'markdown', options: {} };
    const oldKey = legacyClientKey('reference', request);
    // A job as the earlier version stored it: the URL as typed, the fingerprint of the typed URL.
    await stack.store.jobs.insert(
      Store.jobRow({
        jobId: jobIdFor('acme', oldKey),
        account: 'acme',
        key: oldKey,
        provider: 'reference',
        requestHash: fingerprint({ provider: 'reference', request }),
        request,
        workflowId: jobIdFor('acme', oldKey),
      }),
    );
    await stack.store.jobs.transition(jobIdFor('acme', oldKey), 'failed', {
      error: { kind: 'permanent', message: 'made by the old version', at: new Date().toISOString() },
    });
    const again = await stack.client.startScrape({ account: 'acme', url: typed });
    expect(again).toMatchObject({ jobId: jobIdFor('acme', oldKey), created: false });
    // The same old job with the caller's own key: the old fingerprint is no conflict.
    const keyed = await stack.client.startScrape({ account: 'acme', url: typed, key: oldKey });
    expect(keyed).toMatchObject({ jobId: jobIdFor('acme', oldKey), created: false });
  });
});

describe('keys derived before path slugs', () => {
  /** Jobs the provider holds for URLs containing `tag`. */
  const providerJobs = (tag: string) => stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag)).length;

  it('a request whose job was started under <host>-<hash> finds that job: created false, one provider job', async () => {
    const tag = 'pre-slug-request';
    const url = `${pages.pageUrl('wikipedia')}?${tag}=1`;
    const request = { url: canonicalUrl(url), format: 'markdown', options: {} };
    const hash = fingerprint({ provider: 'reference', request });
    const oldKey = hostHashKey(request.url, hash);
    expect(oldKey).toMatch(/^127\.0\.0\.1-[0-9a-f]{10}$/);
    expect(derivedKey(request.url, hash)).toMatch(/^127\.0\.0\.1-pages-wikipedia-[0-9a-f]{10}$/);
    // The job as the earlier release made it: it derived `oldKey` for this request, and a start
    // under a key stores and runs it the same way (row, workflow, provider job).
    const old = await stack.client.startScrape({ account: 'acme', url, key: oldKey, policy: FAST_POLICY });
    expect(old.created).toBe(true);
    await waitForState(stack.store, old.jobId, ['completed'], 60_000);
    expect((await stack.store.jobs.get(old.jobId))?.request_hash).toBe(hash);
    expect(providerJobs(tag)).toBe(1);

    const again = await stack.client.startScrape({ account: 'acme', url, policy: FAST_POLICY });
    expect(again).toEqual({ jobId: old.jobId, account: 'acme', key: oldKey, created: false });
    const submitted = await cli(['submit', url.replace('http://', 'HTTP://')]); // another spelling, the same request
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(submitted.stdout).toContain(`existing job ${old.jobId}`);
    expect(await stack.store.jobs.get(jobIdFor('acme', derivedKey(request.url, hash)))).toBeUndefined();
    expect(providerJobs(tag)).toBe(1);
  });

  it('a batch row whose job was started under <host>-<hash> finds that job on a re-run of the file', async () => {
    const tag = 'pre-slug-row';
    const url = `${pages.pageUrl('yahoo-4')}?${tag}=1`;
    const file = path.join(stack.dir, 'pre-slug.csv');
    fs.writeFileSync(file, `url,note\n${url},kept\n`);
    const canonical = canonicalUrl(url);
    const oldKey = hostHashKey(
      canonical,
      fingerprint({ url: canonical, format: null, provider: null, rest: { note: 'kept' } }),
    );
    // The row's job as the earlier release's `run` started it: its derived key, the row, the batch.
    const old = await stack.client.startScrape({
      account: 'acme',
      url,
      key: oldKey,
      row: { url, note: 'kept' },
      batchId: readBatchFile(file).batchId,
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, old.jobId, ['completed'], 60_000);
    expect(providerJobs(tag)).toBe(1);

    const r = await cli(['run', file, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      expect.objectContaining({ line: 2, jobId: old.jobId, state: 'completed', existed: true }),
    ]);
    expect(providerJobs(tag)).toBe(1);
  });
});

describe('poll policy flags', () => {
  it('--deadline and --poll-* reach the workflow: the job is tracking_interrupted at its deadline', async () => {
    const tag = 'cli-deadline';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const r = await cli([
      'submit',
      `${pages.pageUrl('cnn')}?${tag}`,
      '--key',
      tag,
      '--deadline',
      '3s',
      '--poll-initial',
      '200ms',
      '--poll-max',
      '500ms',
      '--poll-multiplier',
      '1.2',
      '--poll-jitter',
      '0',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const jobId = jobIdFor('acme', tag);
    const row = await waitForState(stack.store, jobId, ['tracking_interrupted'], 60_000);
    expect(JSON.parse(row.options).policy).toEqual({
      deadlineMs: 3_000,
      initialDelayMs: 200,
      maxDelayMs: 500,
      multiplier: 1.2,
      jitter: 0,
    });
    const deadlineAfterSubmit = Date.parse(row.deadline_at!) - Date.parse(row.submitted_at!);
    expect(deadlineAfterSubmit).toBeGreaterThanOrEqual(2_500);
    expect(deadlineAfterSubmit).toBeLessThanOrEqual(4_000);
  });

  it('refuses values out of bounds or not durations, naming the flag and the bounds, and starts nothing', async () => {
    const url = `${pages.pageUrl('cnet')}?cli-bad-policy`;
    const tooShort = await cli(['submit', url, '--deadline', '500ms']);
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toContain('--deadline 500ms: must be from 1s to 30d');
    const notDuration = await cli(['submit', url, '--deadline', 'soon']);
    expect(notDuration.code).toBe(2);
    expect(notDuration.stderr).toMatch(/"soon" is not a duration/);
    const crossed = await cli([
      'run',
      path.join(stack.dir, 'never-read.csv'),
      '--poll-initial',
      '2m',
      '--poll-max',
      '1m',
    ]);
    expect(crossed.code).toBe(2);
    expect(crossed.stderr).toContain('--poll-initial 2m is longer than --poll-max 1m');
    const jitter = await cli(['submit', url, '--poll-jitter', '2']);
    expect(jitter.code).toBe(2);
    expect(jitter.stderr).toContain('--poll-jitter 2: jitter must be a fraction from 0 to 1');
    expect(
      (await stack.store.jobs.list({ account: 'acme', limit: 1000 })).filter((j) => j.url.includes('cli-bad-policy')),
    ).toEqual([]);
  });
});
