/**
 * The command line at its edges, through the real CLI (`node --import tsx src/cli.ts`) against a
 * real stack (Temporal dev server, reference provider, SQLite store, worker):
 * - `submit --wait-s` past a job's end prints it; past the wait it says the job goes on and exits
 *   1, with no stack trace, and the job completes afterwards; the client's wait leaves no call to
 *   Temporal in flight when it ends (its long poll outlived the wait: the CLI then lingered until
 *   the server answered it, or crashed with `Channel has been shut down` after closing);
 * - with Temporal down, every command that needs it fails saying so, bounded by the CLI's connect
 *   budget (it used to take the client's ~20 s of retries); the time each took is printed;
 * - `--json` on every command, errors included: one JSON object on stdout, the same exit code;
 * - the `list` table fits 120 columns with a long URL and a 200-character key, losing nothing;
 * - a CSV with an unclosed quote on line 8 names line 8 and runs the other rows;
 * - a URL's credentials are never echoed (table, JSON, stderr) and never stored.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
} from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { jobIdFor, ScrapeClient } from '../../src/client/index.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { jsonError, runCli, type CliRun } from '../helpers/cli.js';
import { recordSecrets } from '../helpers/evidence.js';
import { FAST_POLICY, REPO, startStack, waitForState, type Stack } from '../helpers/stack.js';

let stack: Stack;
let pages: PageServer;
let downConfig: string;
let downAddress: string;

/** Passwords and keys in the URLs below: recorded, so the secrets scan proves them absent everywhere. */
const PASSWORD = 'pw-7f3a9c1e5b2d';
const COLUMN_PASSWORD = 'pw-2b8e4d6f0a1c';
const QUERY_KEY = 'ak-55c0ffee0123';

beforeAll(async () => {
  recordSecrets('cli-edges', [PASSWORD, COLUMN_PASSWORD, QUERY_KEY]);
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 50 } });
  // An address where nothing listens: a port the OS gave us, closed again.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  downAddress = `127.0.0.1:${(probe.address() as net.AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  downConfig = path.join(stack.dir, 'temporal-down.json');
  fs.writeFileSync(
    downConfig,
    JSON.stringify({ ...stack.config, temporal: { ...stack.config.temporal, address: downAddress } }),
  );
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

/** The CLI against the stack's configuration. */
const cli = (args: string[], config: string | null = stack.configFile) =>
  runCli(args, config === null ? {} : { config });

/** Fails with the run's output unless it exited `code`. */
function exited(r: CliRun, code: number): CliRun {
  expect(r.code, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(code);
  return r;
}

describe('submit --wait-s', () => {
  it('past the job’s end: prints the completed job and exits 0; --json gives the wait and the job', async () => {
    const url = `${pages.pageUrl('001')}?cli-wait-done`;
    const text = exited(await cli(['submit', url, '--wait-s', '60', '--poll-initial', '200ms', '--poll-max', '1s']), 0);
    const id = /started job (\S+)/.exec(text.stdout)?.[1];
    expect(id).toBeTruthy();
    expect(text.stdout).toMatch(/state\s+│?\s*completed/);
    expect(text.stderr).toBe('');
    const json = exited(await cli(['submit', url, '--wait-s', '60', '--json']), 0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      jobId: id,
      created: false,
      wait: { status: 'done', waitedS: 60 },
      job: { jobId: id, state: 'completed' },
    });
  });

  it('past the wait: says the job goes on, exits 1 without a stack trace; the job then completes', async () => {
    const tag = 'cli-wait-timeout';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const url = `${pages.pageUrl('002')}?${tag}`;
    const r = exited(
      await cli(['submit', url, '--key', tag, '--wait-s', '2', '--poll-initial', '200ms', '--poll-max', '1s']),
      1,
    );
    console.log(`submit --wait-s 2 on a job still running: exited after ${r.ms} ms`);
    expect(r.stdout).toContain(`started job ${jobIdFor('acme', tag)}`);
    expect(r.stdout).toMatch(/still running after 2 s \(the wait ended, not the job\): state (submitting|pending)/);
    expect(r.stdout).toContain(`follow it with \`status ${jobIdFor('acme', tag)}\``);
    expect(r.stderr).not.toMatch(/Channel has been shut down|^\s+at /m);
    expect(r.stderr).toBe('');
    const json = exited(await cli(['submit', url, '--key', tag, '--wait-s', '1', '--json']), 1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      jobId: jobIdFor('acme', tag),
      created: false,
      wait: { status: 'still_running', waitedS: 1 },
      job: { state: 'pending' },
    });
    // The wait ended, not the job: released at the provider, it completes.
    const row = await waitForState(stack.store, jobIdFor('acme', tag), ['pending'], 30_000);
    expect(stack.sim.release(row.task_id!)).toBe(true);
    await waitForState(stack.store, jobIdFor('acme', tag), ['completed'], 60_000);
  });
});

/** A gRPC interceptor that counts the calls started and not yet answered with a status. */
function inFlightCounter(): { interceptor: NonNullable<ConnectionOptions['interceptors']>[number]; count(): number } {
  let n = 0;
  return {
    count: () => n,
    interceptor: (options, nextCall) => {
      // The call as grpc-js makes it (an `InterceptingCall`), its `start` wrapped.
      const call = nextCall(options) as ReturnType<NonNullable<ConnectionOptions['interceptors']>[number]>;
      const start = call.start.bind(call);
      call.start = (metadata, listener) => {
        n++;
        start(metadata, {
          onReceiveMetadata: (m) => listener?.onReceiveMetadata?.(m),
          onReceiveMessage: (m: unknown) => listener?.onReceiveMessage?.(m),
          onReceiveStatus: (status) => {
            n--;
            listener?.onReceiveStatus?.(status);
          },
        });
      };
      return call;
    },
  };
}

describe('awaitResult past its timeout', () => {
  it('returns still_running with no call to Temporal left in flight, so closing the connection is safe', async () => {
    const tag = 'client-wait-inflight';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const counter = inFlightCounter();
    const connection = await Connection.connect({
      address: inject('temporal').address,
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), counter.interceptor],
    });
    try {
      const client = new ScrapeClient({
        temporal: new Client({ connection, namespace: stack.config.temporal.namespace }),
        store: stack.store,
        taskQueue: stack.config.temporal.taskQueue,
        defaultProvider: 'reference',
        providers: Object.keys(stack.config.providers),
      });
      const ref = await client.startScrape({ account: 'acme', url: `${pages.pageUrl('002')}?${tag}`, key: tag });
      const row = await waitForState(stack.store, ref.jobId, ['pending'], 30_000);
      const r = await client.awaitResult('acme', ref.jobId, { timeoutMs: 1_000 });
      expect(r).toMatchObject({ status: 'still_running', job: { state: 'pending' } });
      expect(counter.count()).toBe(0);
      stack.sim.release(row.task_id!);
      expect(await client.awaitResult('acme', ref.jobId, { timeoutMs: 60_000 })).toMatchObject({
        status: 'done',
        job: { state: 'completed' },
      });
      expect(counter.count()).toBe(0);
    } finally {
      await connection.close();
    }
  });
});

describe('Temporal down', () => {
  it('every command that needs Temporal fails within its connect budget, saying so, as text and as JSON', async () => {
    // A job in the store (the store is up), for the commands that name one.
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('003-metadata-preferred')}?cli-down`,
      key: 'cli-down',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed'], 60_000);
    const csv = path.join(stack.dir, 'down.csv');
    fs.writeFileSync(csv, `url\n${pages.pageUrl('001')}?cli-down-run\n`);
    const commands = [
      ['submit', `${pages.pageUrl('001')}?cli-down-submit`],
      ['status', 'cli-down', '--live'],
      ['cancel', 'cli-down'],
      ['resume', 'cli-down'],
      ['resolve', 'cli-down', '--resubmit'],
      ['run', csv],
      ['cancel-batch', 'batch-none'],
      ['setup'],
    ];
    // What starting the CLI costs on this machine, without Temporal: a command that reads only the store.
    const baseline = exited(await runCli(['list', '--limit', '1'], { config: downConfig }), 0);
    const figures: string[] = [`list (store only) ${baseline.ms} ms`];
    for (const args of commands) {
      const text = exited(await runCli(args, { config: downConfig }), 1);
      figures.push(`${args[0]}${args.includes('--live') ? ' --live' : ''} ${text.ms} ms`);
      expect(text.stderr, args.join(' ')).toContain(`cannot reach Temporal at`);
      expect(text.stderr, args.join(' ')).toContain(downAddress);
      expect(text.stderr, args.join(' ')).toMatch(/no answer within 3 s|Failed to connect before the deadline/);
      expect(text.stderr, args.join(' ')).not.toMatch(/^\s+at /m);
    }
    console.log(`with Temporal down (nothing listening at ${downAddress}), one at a time: ${figures.join(', ')}`);
    const json = await Promise.all(commands.map((args) => runCli([...args, '--json'], { config: downConfig })));
    json.forEach((r, i) => {
      const args = commands[i]!.join(' ');
      exited(r, 1);
      expect(jsonError(r), args).toMatchObject({ code: 'temporal_unreachable', exitCode: 1 });
      expect(r.stderr.includes('cannot reach'), args).toBe(false);
    });
    // Nothing was started or kept for the refused submit.
    expect(await stack.store.jobs.get(jobIdFor('acme', 'cli-down-submit'))).toBeUndefined();
  }, 400_000);
});

describe('--json, errors included', () => {
  it('each command prints its output as JSON', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?cli-json`,
      key: 'cli-json',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed'], 60_000);
    const parsed = async (args: string[], code = 0) => JSON.parse(exited(await cli(args), code).stdout) as unknown;
    expect(await parsed(['submit', `${pages.pageUrl('001')}?cli-json`, '--key', 'cli-json', '--json'])).toEqual({
      jobId: ref.jobId,
      account: 'acme',
      key: 'cli-json',
      created: false,
    });
    expect(await parsed(['status', 'cli-json', '--json'])).toMatchObject({ jobId: ref.jobId, state: 'completed' });
    expect(await parsed(['result', 'cli-json', '--json'])).toMatchObject({ jobId: ref.jobId });
    expect(await parsed(['result', 'cli-json', '--field', 'title', '--json'])).toMatchObject({ field: 'title' });
    expect(await parsed(['timeline', 'cli-json', '--json'])).toEqual(expect.arrayContaining([]));
    expect(await parsed(['incident', 'cli-json', '--json'])).toMatchObject({ job: { jobId: ref.jobId } });
    expect(await parsed(['list', '--json', '--limit', '1'])).toHaveLength(1);
    expect(await parsed(['orphans', '--json'])).toEqual(expect.any(Array));
    expect(await parsed(['cancel', 'cli-json', '--json'])).toMatchObject({ kind: 'already_final', state: 'completed' });
    expect(await parsed(['cancel-batch', 'batch-none', '--json'])).toEqual([]);
  });

  it('an error is one JSON object on stdout, nothing on stderr, with the exit code of its kind', async () => {
    const cases: { args: string[]; config?: string | null; code: number; error: string }[] = [
      { args: ['status', 'no-such-key'], code: 3, error: 'not_found' },
      { args: ['submit', 'ftp://example.com/'], code: 2, error: 'invalid' },
      { args: ['list', '--limit', 'lots'], code: 2, error: 'usage' },
      { args: ['frobnicate'], code: 2, error: 'usage' },
      { args: ['list'], config: path.join(stack.dir, 'absent.json'), code: 2, error: 'invalid' },
      { args: ['run', path.join(stack.dir, 'no-such-file.csv')], code: 2, error: 'invalid' },
    ];
    for (const c of cases) {
      const r = exited(await cli([...c.args, '--json'], c.config === undefined ? stack.configFile : c.config), c.code);
      expect(jsonError(r), c.args.join(' ')).toMatchObject({ code: c.error, exitCode: c.code });
      expect(r.stderr, c.args.join(' ')).toBe('');
    }
    // A result not ready says the job's state in its details.
    const tag = 'cli-json-not-ready';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'hold', holdIn: 'running' });
    const ref = await stack.client.startScrape({ account: 'acme', url: `${pages.pageUrl('002')}?${tag}`, key: tag });
    await waitForState(stack.store, ref.jobId, ['pending'], 30_000);
    const notReady = exited(await cli(['result', tag, '--json']), 1);
    expect(jsonError(notReady)).toMatchObject({ code: 'not_ready', exitCode: 1, details: { state: 'pending' } });
    await stack.client.cancelScrape('acme', ref.jobId, { wait: false });
  });

  it('every command answers a usage or configuration error as JSON', async () => {
    const absent = path.join(stack.dir, 'absent.json');
    const runs: [string[], number][] = [
      [['run', 'f.csv', '--config', absent], 2],
      [['submit', 'https://example.com/', '--config', absent], 2],
      [['status', 'k', '--config', absent], 2],
      [['result', 'k', '--config', absent], 2],
      [['cancel', 'k', '--config', absent], 2],
      [['resume', 'k', '--config', absent], 2],
      [['resolve', 'k', '--resubmit', '--config', absent], 2],
      [['timeline', 'k', '--config', absent], 2],
      [['incident', 'k', '--config', absent], 2],
      [['orphans', '--config', absent], 2],
      [['cancel-batch', 'b', '--config', absent], 2],
      [['list', '--config', absent], 2],
      [['setup', '--config', absent], 2],
      [['worker', '--config', absent], 2],
      [['api', '--config', absent], 2],
      [['upgrade-check', '--config', absent], 2],
    ];
    const results = await Promise.all(runs.map(([args]) => runCli([...args, '--json'])));
    results.forEach((r, i) => {
      const [args, code] = runs[i]!;
      exited(r, code);
      expect(jsonError(r), args.join(' ')).toMatchObject({ exitCode: code });
      expect(r.stderr, args.join(' ')).toBe('');
    });
    // The demo is a tool beside the command line (`npm run demo`): it answers the same way.
    const demo = await new Promise<CliRun>((resolve) =>
      execFile(
        process.execPath,
        [
          '--import',
          import.meta.resolve('tsx'),
          path.join(REPO, 'tools/demo/main.ts'),
          '--temporal-port',
          '70000',
          '--json',
        ],
        { cwd: REPO, env: { ...process.env, FORCE_COLOR: '0' } },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr, ms: 0 }),
      ),
    );
    exited(demo, 2);
    expect(jsonError(demo)).toMatchObject({ exitCode: 2 });
    expect(demo.stderr).toBe('');
  });
});

describe('tables', () => {
  it('the list table fits 120 columns with a long URL and a 200-character key, and loses no character of either', async () => {
    const key = `cli-long-${'0123456789abcdef'.repeat(13)}`.slice(0, 200);
    const url = `${pages.pageUrl('001')}?${'cli-long-url-parameter=1&'.repeat(8)}end=1`;
    const ref = await stack.client.startScrape({ account: 'acme', url, key, policy: FAST_POLICY });
    await waitForState(stack.store, ref.jobId, ['completed'], 60_000);
    const r = exited(await cli(['list', '--limit', '1']), 0);
    const wide = r.stdout.split('\n').filter((l) => [...l].length > 120);
    expect(wide, r.stdout).toEqual([]);
    const column = (i: number) =>
      r.stdout
        .split('\n')
        .filter((l) => l.startsWith('│'))
        .slice(1) // the head
        .map((l) => l.split('│')[i + 1]!.trim())
        .join('');
    expect(column(0)).toBe(ref.jobId);
    expect(column(3)).toBe(url);
    const status = exited(await cli(['status', key]), 0);
    expect(status.stdout.split('\n').filter((l) => [...l].length > 120)).toEqual([]);
  });
});

describe('CSV errors', () => {
  it('an unclosed quote on line 8 is reported at line 8; the other rows run and are reported', async () => {
    const rows = Array.from({ length: 9 }, (_, i) => `${pages.pageUrl('001')}?cli-csv-${i + 2},row ${i + 2}`);
    rows[6] = `"${pages.pageUrl('001')}?cli-csv-8,row 8`;
    const file = path.join(stack.dir, 'quote-line-8.csv');
    fs.writeFileSync(file, ['url,note', ...rows, ''].join('\n'));
    const r = exited(await cli(['run', file, '--json', '--poll-initial', '200ms', '--poll-max', '1s']), 2);
    expect(r.stderr).toContain('line 8: CSV cannot be parsed here: field 1 opens a quote that is never closed');
    expect(r.stderr).not.toMatch(/line 1\b/);
    const out = JSON.parse(r.stdout) as { line: number; state: string; error?: string }[];
    expect(out.map((o) => [o.line, o.state])).toEqual([
      [2, 'completed'],
      [3, 'completed'],
      [4, 'completed'],
      [5, 'completed'],
      [6, 'completed'],
      [7, 'completed'],
      [8, 'rejected'],
      [9, 'completed'],
      [10, 'completed'],
    ]);
    expect(out[6]!.error).not.toMatch(/line 1\b/);
  });
});

describe('credentials in URLs', () => {
  it('are shown redacted in the table, in JSON and on stderr, and the store keeps none', async () => {
    const secretUrl = `https://operator:${PASSWORD}@intranet.example/report?api_key=${QUERY_KEY}`;
    const clean = `${pages.pageUrl('001')}?cli-creds`;
    const file = path.join(stack.dir, 'credentials.csv');
    fs.writeFileSync(file, `url,source\n${secretUrl},a\n${clean},https://bob:${COLUMN_PASSWORD}@source.example/list\n`);
    const table = exited(await cli(['run', file, '--poll-initial', '200ms', '--poll-max', '1s']), 2);
    const json = exited(await cli(['run', file, '--json']), 2);
    const submitted = exited(await cli(['submit', secretUrl, '--json']), 2);
    for (const r of [table, json, submitted]) {
      for (const secret of [PASSWORD, COLUMN_PASSWORD, QUERY_KEY, 'operator:']) {
        expect(r.stdout, secret).not.toContain(secret);
        expect(r.stderr, secret).not.toContain(secret);
      }
    }
    const urlColumn = table.stdout
      .split('\n')
      .filter((l) => l.startsWith('│'))
      .map((l) => l.split('│')[3]!.trim())
      .join('');
    expect(urlColumn).toContain('https://[REDACTED]@intranet.example/report?api_key=[REDACTED],a');
    expect(table.stderr).toContain('line 2: url: url must not contain credentials (user-info)');
    const rows = JSON.parse(json.stdout) as { line: number; state: string; url: string; jobId?: string }[];
    expect(rows.map((o) => [o.line, o.state])).toEqual([
      [2, 'rejected'],
      [3, 'completed'],
    ]);
    expect(rows[0]!.url).toBe('https://[REDACTED]@intranet.example/report?api_key=[REDACTED],a');
    expect(jsonError(submitted)).toMatchObject({ code: 'invalid', exitCode: 2 });
    // The store: the rejected row never became a job; the other's `source` column lost its user-info.
    const stored = await stack.store.jobs.get(rows[1]!.jobId!);
    const everything = JSON.stringify(stored);
    for (const secret of [PASSWORD, COLUMN_PASSWORD, QUERY_KEY]) expect(everything).not.toContain(secret);
    expect(JSON.parse(stored!.input)).toMatchObject({ source: expect.stringMatching(/REDACTED.*@source\.example/) });
    const all = await stack.store.jobs.list({ account: 'acme', limit: 1000 });
    expect(all.filter((j) => j.url.includes('intranet.example'))).toEqual([]);
  });
});
