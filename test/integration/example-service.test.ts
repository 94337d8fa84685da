/**
 * The client package as a service installs it: `@scrape-orchestrator/client` is packed (`npm pack`,
 * whose `prepare` builds it from the current `src/`), and `examples/service/` — copied to a
 * temporary folder outside the repository, so that nothing can resolve from the repository's
 * `node_modules` — is installed with its one dependency pointed at that tarball (npm, registries
 * only), type-checked and compiled against the package's `.d.ts` files, and run against the test
 * run's dev server, a worker of this test and a PostgreSQL store (a service's store in production;
 * the worker writes the same one): it starts a scrape, awaits its result, starts a second one and
 * cancels it. The installed tree holds no native module and none of the full package's heavy parts,
 * and there a `sqlite:` store fails with the error that names the optional `better-sqlite3`.
 *
 * And `npm pack` of the full package packs what its `exports` need and nothing from `test/`, `src/`
 * or `.data/`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { installedPackages } from '../../bench/lib/packages.js';
import { recordCli } from '../helpers/evidence.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { REPO, startStack, type Stack } from '../helpers/stack.js';

/** Packages of the full package that the client package must not install. */
const HEAVY = [
  'scrape-orchestrator',
  '@temporalio/worker',
  '@temporalio/workflow',
  '@temporalio/core-bridge',
  'better-sqlite3',
  'jsdom',
  'fastify',
  'unpdf',
  'prom-client',
];

let pg: TestPostgres | undefined;
let stack: Stack;
let work: string;
let site: http.Server;
let siteUrl: string;

/**
 * Runs a command to completion (no shell; SIGKILL after `timeoutMs`); its output is kept for the
 * secrets scan. Asynchronous: the worker of this test runs in this process and must go on meanwhile.
 */
function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<{ code: number | null; out: string; stdout: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, {
      cwd: opts.cwd,
      env: { ...process.env, FORCE_COLOR: '0', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    c.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => c.kill('SIGKILL'), opts.timeoutMs ?? 180_000);
    c.once('close', (code) => {
      clearTimeout(timer);
      recordCli([cmd, ...args], { code, stdout, stderr });
      resolve({ code, out: `${stdout}\n${stderr}`, stdout });
    });
  });
}

beforeAll(async () => {
  pg = await startTestPostgres();
  if (!pg)
    throw new Error(
      'PostgreSQL is not installed (initdb/pg_ctl not found): install the Debian package "postgresql" or set SCRAPE_TEST_PG_URL',
    );
  // A slow provider (each job runs 3 s) so that the second job is still running when it is cancelled.
  stack = await startStack({ storeUrl: pg.url, profile: { minRunMs: 3_000 } });
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-service-'));
  site = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><html><head><title>Example order ${req.url}</title></head><body><article><h1>Order</h1><p>${'A page for the example service. '.repeat(20)}</p><a href="/next">next</a></article></body></html>`,
    );
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((r) => site?.close(r));
  await stack?.stop();
  await pg?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Packs the client package into `work`; returns the tarball's path. */
async function packClient(): Promise<string> {
  const packed = await run('npm', ['pack', '-w', '@scrape-orchestrator/client', '--pack-destination', work], {
    cwd: REPO,
    timeoutMs: 600_000,
  });
  expect(packed.code, packed.out).toBe(0);
  const { version } = JSON.parse(fs.readFileSync(path.join(REPO, 'packages', 'client', 'package.json'), 'utf8')) as {
    version: string;
  };
  const tarball = path.join(work, `scrape-orchestrator-client-${version}.tgz`); // npm's name for @scope/name
  expect(fs.existsSync(tarball), `${tarball} after npm pack`).toBe(true);
  return tarball;
}

describe('a service that installs the client package', () => {
  it('examples/service installs the packed client alone, type-checks against its types, and starts, awaits and cancels scrapes', async () => {
    const tarball = await packClient();
    const EXAMPLE = path.join(work, 'service');
    fs.cpSync(path.join(REPO, 'examples', 'service'), EXAMPLE, {
      recursive: true,
      filter: (src) => !/[/\\](node_modules|dist)$/.test(src),
    });
    const manifestFile = path.join(EXAMPLE, 'package.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies)).toEqual(['@scrape-orchestrator/client']);
    manifest.dependencies['@scrape-orchestrator/client'] = `file:${tarball}`;
    fs.writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);

    const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: EXAMPLE,
      timeoutMs: 300_000,
    });
    expect(install.code, install.out).toBe(0);
    const installed = installedPackages(path.join(EXAMPLE, 'node_modules'));
    const names = new Set(installed.map((p) => p.name));
    expect(names).toContain('@scrape-orchestrator/client');
    expect(HEAVY.filter((n) => names.has(n))).toEqual([]);
    expect(installed.filter((p) => p.native).map((p) => p.name)).toEqual([]);
    const build = await run('npm', ['run', 'build'], { cwd: EXAMPLE });
    expect(build.code, build.out).toBe(0);

    // Without the optional better-sqlite3, a sqlite: store says what to install, and creates nothing.
    const sqlite = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { openStore } from '@scrape-orchestrator/client';
await openStore('sqlite:' + process.argv[1]).then(() => process.exit(3), (e) => console.log(e.message));`,
        path.join(EXAMPLE, 'store', 'x.db'),
      ],
      { cwd: EXAMPLE },
    );
    expect(sqlite.code, sqlite.out).toBe(0);
    expect(sqlite.stdout).toMatch(/needs the package better-sqlite3.*npm install better-sqlite3/);
    expect(fs.existsSync(path.join(EXAMPLE, 'store'))).toBe(false);

    const { address, namespace } = inject('temporal');
    const target = `${siteUrl}/orders/42`;
    const service = await run(process.execPath, [path.join(EXAMPLE, 'dist', 'main.js')], {
      cwd: EXAMPLE,
      env: {
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        SCRAPE_STORE_URL: pg!.url,
        SCRAPE_TASK_QUEUE: stack.config.temporal.taskQueue,
        SCRAPE_ACCOUNT: 'acme',
        TARGET_URL: target,
      },
    });
    expect(service.code, service.out).toBe(0);
    const steps = service.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown> & { step: string; jobId?: string });
    expect(steps.map((s) => s.step)).toEqual([
      'started',
      'finished',
      'result',
      'started',
      'cancelled',
      'other-account',
    ]);
    const [first, finished, result, second, cancelled, other] = steps as [(typeof steps)[0], ...typeof steps];
    expect(first.created).toBe(true);
    expect(finished).toMatchObject({ state: 'completed' });
    expect(result).toMatchObject({ title: 'Example order /orders/42', httpStatus: 200 });
    expect(cancelled).toMatchObject({ jobId: second!.jobId, result: 'observed', outcome: 'cancelled' });
    expect(other).toMatchObject({ found: false, notFound: true });

    // What the workers recorded: one result for the first job, the second cancelled with none.
    expect((await stack.store.jobs.get(first.jobId!))?.state).toBe('completed');
    expect(await stack.store.results.count({ jobId: first.jobId! })).toBe(1);
    expect((await stack.store.jobs.get(second!.jobId!))?.state).toBe('cancelled');
    expect(await stack.store.results.count({ jobId: second!.jobId! })).toBe(0);

    // Run again: the same key, the same job, nothing new.
    const again = await run(process.execPath, [path.join(EXAMPLE, 'dist', 'main.js')], {
      cwd: EXAMPLE,
      env: {
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        SCRAPE_STORE_URL: pg!.url,
        SCRAPE_TASK_QUEUE: stack.config.temporal.taskQueue,
        SCRAPE_ACCOUNT: 'acme',
        TARGET_URL: target,
      },
    });
    expect(again.code, again.out).toBe(0);
    expect(JSON.parse(again.stdout.split('\n')[0]!)).toMatchObject({
      step: 'started',
      jobId: first.jobId,
      created: false,
    });
  }, 400_000);

  it('npm pack holds what the exports need, and nothing from test/, src/, examples/ or .data/', async () => {
    const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO, timeoutMs: 120_000 });
    expect(r.code, r.out).toBe(0);
    const [packed] = JSON.parse(r.stdout) as [{ files: { path: string }[] }];
    const files = new Set(packed.files.map((f) => f.path));
    const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      exports: Record<string, string | Record<string, string>>;
      bin: Record<string, string>;
    };
    const targets = Object.values(manifest.exports)
      .flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t)))
      .map((t) => t.replace(/^\.\//, ''));
    for (const t of [...targets, ...Object.values(manifest.bin), 'dist/cli.js', 'dist/workflows/index.js'])
      expect(files.has(t), `${t} in the package`).toBe(true);
    const stray = [...files].filter((f) => /^(test|src|examples|bench|\.data|node_modules|\.ci)\//.test(f));
    expect(stray).toEqual([]);
  }, 180_000);
});
