/**
 * The package as a service installs it: `examples/service/` (its own package.json, depending on
 * this package by `file:../..`) is installed with npm, type-checked and compiled against the
 * package's exported `.d.ts` files, and run against the test run's dev server with a worker of
 * this test: it starts a scrape, awaits its result, starts a second one and cancels it. And
 * `npm pack` packs what the `exports` need and nothing from `test/`, `src/` or `.data/`.
 *
 * The package's exports point into `dist/`, which `npm ci` builds. When `src/` has changed since
 * (a developer's edit before `npm run build`), the test does not use the old build: it builds the
 * current source into a private copy of the package (package.json, bin/, a fresh dist/, the
 * repository's node_modules linked) with the example beside it, and runs that.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordCli } from '../helpers/evidence.js';
import { REPO, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let privateCopy: string | undefined;
let site: http.Server;
let siteUrl: string;

/** Newest modification time (ms) of the files under `dir`. */
function newest(dir: string): number {
  return fs.readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
    const p = path.join(dir, e.name);
    return Math.max(m, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs);
  }, 0);
}

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
  // A slow provider (each job runs 3 s) so that the second job is still running when it is cancelled.
  stack = await startStack({ profile: { minRunMs: 3_000 } });
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
  if (privateCopy) fs.rmSync(privateCopy, { recursive: true, force: true });
});

/**
 * The package to install: the repository when its `dist/` is current, else a private copy built
 * from the current source (see the module documentation).
 */
async function packageRoot(): Promise<string> {
  const entry = path.join(REPO, 'dist', 'lib', 'scrapeService.js');
  if (fs.existsSync(entry) && newest(path.join(REPO, 'src')) <= fs.statSync(entry).mtimeMs) return REPO;
  const root = (privateCopy = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-package-')));
  for (const f of ['package.json', 'README.md']) fs.copyFileSync(path.join(REPO, f), path.join(root, f));
  fs.cpSync(path.join(REPO, 'bin'), path.join(root, 'bin'), { recursive: true });
  fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
  // Type errors elsewhere in the tree are the type check's business: what counts here is the emitted package.
  await run(
    process.execPath,
    [
      path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      path.join(REPO, 'tsconfig.build.json'),
      '--outDir',
      path.join(root, 'dist'),
    ],
    { cwd: REPO, timeoutMs: 600_000 },
  );
  fs.cpSync(path.join(REPO, 'examples', 'service'), path.join(root, 'examples', 'service'), {
    recursive: true,
    filter: (src) => !/[/\\](node_modules|dist)$/.test(src),
  });
  return root;
}

describe('a service that installs the package', () => {
  it('examples/service installs, type-checks against the exported types, and starts, awaits and cancels scrapes', async () => {
    const root = await packageRoot();
    const EXAMPLE = path.join(root, 'examples', 'service');
    for (const f of ['dist/lib/scrapeService.js', 'dist/lib/scrapeService.d.ts'])
      expect(fs.existsSync(path.join(root, f)), `${f} of the package`).toBe(true);

    const install = await run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: EXAMPLE,
      timeoutMs: 300_000,
    });
    expect(install.code, install.out).toBe(0);
    expect(fs.realpathSync(path.join(EXAMPLE, 'node_modules', 'scrape-orchestrator'))).toBe(fs.realpathSync(root)); // the file: link
    const build = await run('npm', ['run', 'build'], { cwd: EXAMPLE });
    expect(build.code, build.out).toBe(0);

    const { address, namespace } = inject('temporal');
    const target = `${siteUrl}/orders/42`;
    const service = await run(process.execPath, [path.join(EXAMPLE, 'dist', 'main.js')], {
      cwd: EXAMPLE,
      env: {
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        SCRAPE_STORE_URL: stack.config.storeUrl,
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
        SCRAPE_STORE_URL: stack.config.storeUrl,
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
