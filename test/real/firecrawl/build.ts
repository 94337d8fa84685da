/**
 * Builds Firecrawl's own API server (a test dependency, AGPL-3.0, run as a separate server; none of
 * it enters the product) from its source, following the recipe of `shared/firecrawl/README.md`,
 * into a cache outside the repository keyed by the source commit:
 * `<cache>/firecrawl/<commit>/` where `<cache>` is `$SCRAPE_CACHE_DIR`, else
 * `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator`.
 *
 * The source folder is never modified: `apps/api` is copied to `<commit>/api`, and the copy gets
 * - `loopback.patch` (this folder): one environment switch letting loopback targets through the
 *   server's address guard (see the patch's own header for what and why);
 * - pnpm 9 installed from the npm registry into `<cache>/firecrawl/pnpm-9/` (never globally), then
 *   `pnpm install --frozen-lockfile` and `pnpm run build` (tsc);
 * - the native libraries in `sharedLibs/`: `go build -buildmode=c-shared` (go-html-to-md),
 *   `cargo build --release --locked` (crawler, pdf-parser), `cargo build --release`
 *   (html-transformer, whose git-only dependency `nodesig` is replaced by the stub in
 *   `nodesig-stub/` through a `[patch."https://github.com/firecrawl/nodesig"]` section appended to
 *   the copy's `Cargo.toml`).
 *
 * Each step leaves a marker (`<commit>/steps/<step>.json`, with a hash of what the step depends
 * on), so an interrupted build resumes and a complete one is reused in seconds. Cold: ~8 min on
 * 2 cores. Missing tools are all named in one error before anything is built.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeFailure, runCommand, type LineLogger } from '../../../tools/devserver/process.js';
import { temporalCacheRoot } from '../../../tools/devserver/temporalCli.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The Firecrawl commit the source is (`shared/firecrawl/README.md`); the cache key. */
export const FIRECRAWL_COMMIT = '61e38dc8';
/** pnpm major version of the recipe (Firecrawl's lockfile is pnpm 9's format). */
const PNPM_VERSION = '9';
const PATCH_FILE = path.join(HERE, 'loopback.patch');
const STUB_DIR = path.join(HERE, 'nodesig-stub');
/** The environment switch the patch adds. */
export const LOOPBACK_SWITCH = 'TEST_ALLOW_LOOPBACK_TARGETS';

/** A built server: where to run it from. */
export interface FirecrawlBuild {
  /** The built `apps/api` copy (the servers' working directory: the native libraries are found relative to it). */
  apiDir: string;
  /** Environment with the toolchains on PATH. */
  env: NodeJS.ProcessEnv;
  /** Whether anything was built this time (false: every step came from the cache). */
  built: boolean;
  /** Wall time of this call, ms. */
  tookMs: number;
}

/** Thrown when a tool the build needs is missing or a step fails; the message says which and how to get it. */
export class RealServerBuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RealServerBuildError';
  }
}

/** The cache directory of the real servers (`<cache>/<name>`). Pure. */
export function realServerCache(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(temporalCacheRoot(env), name);
}

/** PATH with the usual install places of Go and Cargo appended (CI images put them there without a login shell). */
export function toolchainEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const extra = ['/usr/local/go/bin', path.join(env.HOME || os.homedir(), '.cargo', 'bin')];
  return { ...env, PATH: [env.PATH ?? '', ...extra].filter(Boolean).join(path.delimiter) };
}

/** True when `cmd` is an executable file on `env.PATH`. */
export function onPath(cmd: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? '').split(path.delimiter).some((d) => {
    try {
      fs.accessSync(path.join(d, cmd), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The tools the Firecrawl build and run need that `env` lacks, each with where to get it. Empty
 * when all are there.
 */
export function missingFirecrawlTools(env: NodeJS.ProcessEnv): string[] {
  const need: [string, string][] = [
    ['npm', 'npm (ships with Node.js; installs pnpm from the npm registry)'],
    ['go', 'go (the Go toolchain, for sharedLibs/go-html-to-md: https://go.dev/dl or Debian golang-go)'],
    ['cargo', 'cargo (the Rust toolchain, for the crawler, pdf-parser and html-transformer libraries: rustup)'],
    ['gcc', 'gcc (C compiler for the Go c-shared build and Rust linking: Debian build-essential)'],
    ['patch', 'patch (applies the test-only loopback patch: Debian patch)'],
    ['redis-server', 'redis-server (Debian redis-server: Firecrawl queues its jobs in Redis)'],
  ];
  return need.filter(([cmd]) => !onPath(cmd, env)).map(([, why]) => why);
}

const sha = (...parts: (string | Buffer)[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex').slice(0, 16);
};

/** Hash of every file under `dir` (names and contents), for step keys. */
function treeHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'target') walk(p);
      } else {
        h.update(path.relative(dir, p));
        h.update(fs.readFileSync(p));
      }
    }
  };
  walk(dir);
  return h.digest('hex').slice(0, 16);
}

/** Makes every file and folder under `dir` writable by its owner (the source is read-only). */
function makeWritable(dir: string): void {
  fs.chmodSync(dir, fs.statSync(dir).mode | 0o200);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) makeWritable(p);
    else fs.chmodSync(p, fs.statSync(p).mode | 0o200);
  }
}

/** Options of {@link ensureFirecrawlBuild}. */
export interface FirecrawlBuildOptions {
  /** Firecrawl's source root (holding `apps/api`), from `obtainMaterial('firecrawl-source')`. */
  source: string;
  log: LineLogger;
  env?: NodeJS.ProcessEnv;
}

/**
 * Returns the built server, building what the cache lacks first.
 *
 * @throws RealServerBuildError naming every missing tool, or the step that failed with the tail of its output.
 */
export async function ensureFirecrawlBuild(opts: FirecrawlBuildOptions): Promise<FirecrawlBuild> {
  const t0 = Date.now();
  const env = toolchainEnv(opts.env ?? process.env);
  const missing = missingFirecrawlTools(env);
  if (missing.length > 0)
    throw new RealServerBuildError(
      `Firecrawl's API server cannot be built or run on this machine; missing:\n  - ${missing.join('\n  - ')}`,
    );
  const srcApi = path.join(opts.source, 'apps', 'api');
  if (!fs.existsSync(path.join(srcApi, 'package.json')))
    throw new RealServerBuildError(`no Firecrawl API source at ${srcApi}`);
  const root = realServerCache('firecrawl', env);
  const dir = path.join(root, FIRECRAWL_COMMIT);
  const apiDir = path.join(dir, 'api');
  const stepsDir = path.join(dir, 'steps');
  fs.mkdirSync(stepsDir, { recursive: true });
  const patchHash = sha(fs.readFileSync(PATCH_FILE));
  const stubHash = treeHash(STUB_DIR);
  let built = false;

  /** Runs `fn` unless the step's marker holds `key`; then writes the marker. */
  const step = async (name: string, key: string, fn: () => Promise<void>) => {
    const marker = path.join(stepsDir, `${name}.json`);
    try {
      if ((JSON.parse(fs.readFileSync(marker, 'utf8')) as { key?: string }).key === key) return;
    } catch {
      // no marker yet (or an unreadable one): run the step
    }
    const t = Date.now();
    opts.log(`${name}…`);
    await fn();
    built = true;
    fs.writeFileSync(marker, JSON.stringify({ key, tookMs: Date.now() - t, at: new Date().toISOString() }));
    opts.log(`${name} done in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  };
  /** Runs a command of a step; throws with its output's tail when it fails. */
  const run = async (label: string, cmd: string, args: string[], cwd: string, extraEnv: NodeJS.ProcessEnv = {}) => {
    const timeoutMs = 30 * 60_000;
    const r = await runCommand(cmd, args, { cwd, env: { ...env, ...extraEnv }, timeoutMs, tailBytes: 64 * 1024 });
    if (r.code !== 0)
      throw new RealServerBuildError(
        `Firecrawl build step "${label}" failed: ${describeFailure(cmd, r, timeoutMs)}\n${(r.stderr || r.stdout).split('\n').slice(-40).join('\n')}`,
      );
  };

  // The copy (the source's apps/api as published) and the patch on it. A changed patch re-copies
  // `src/` only, keeping node_modules and the native builds.
  await step('copy', FIRECRAWL_COMMIT, async () => {
    fs.rmSync(apiDir, { recursive: true, force: true });
    // Every later step built into the old copy: they all run again.
    for (const m of fs.readdirSync(stepsDir)) if (m !== 'pnpm.json') fs.rmSync(path.join(stepsDir, m));
    fs.cpSync(srcApi, apiDir, { recursive: true });
    makeWritable(apiDir);
  });
  await step('patch', `${FIRECRAWL_COMMIT}:${patchHash}`, async () => {
    fs.rmSync(path.join(apiDir, 'src'), { recursive: true, force: true });
    fs.cpSync(path.join(srcApi, 'src'), path.join(apiDir, 'src'), { recursive: true });
    makeWritable(path.join(apiDir, 'src'));
    await run('apply loopback.patch', 'patch', ['-p1', '--forward', '--batch', '-i', PATCH_FILE], apiDir);
  });

  const pnpmDir = path.join(root, `pnpm-${PNPM_VERSION}`);
  const pnpm = path.join(pnpmDir, 'node_modules', '.bin', 'pnpm');
  const node = async () => {
    await step('pnpm', PNPM_VERSION, async () => {
      fs.mkdirSync(pnpmDir, { recursive: true });
      await run(
        'npm i pnpm',
        'npm',
        ['i', '--prefix', pnpmDir, '--no-audit', '--no-fund', `pnpm@${PNPM_VERSION}`],
        pnpmDir,
      );
    });
    // pnpm's package store stays in the cache too.
    const pnpmEnv = { npm_config_store_dir: path.join(root, 'pnpm-store'), CI: 'true' };
    await step('pnpm-install', FIRECRAWL_COMMIT, () =>
      run('pnpm install --frozen-lockfile', pnpm, ['install', '--frozen-lockfile'], apiDir, pnpmEnv),
    );
    await step('tsc', `${FIRECRAWL_COMMIT}:${patchHash}`, () =>
      run('pnpm run build', pnpm, ['run', 'build'], apiDir, pnpmEnv),
    );
  };
  const native = async () => {
    const libs = path.join(apiDir, 'sharedLibs');
    await step('go-html-to-md', FIRECRAWL_COMMIT, () =>
      run(
        'go build -buildmode=c-shared',
        'go',
        ['build', '-buildmode=c-shared', '-o', 'html-to-markdown.so', 'html-to-markdown.go'],
        path.join(libs, 'go-html-to-md'),
        { GOTOOLCHAIN: 'local', CGO_ENABLED: '1' },
      ),
    );
    for (const lib of ['crawler', 'pdf-parser'])
      await step(`cargo-${lib}`, FIRECRAWL_COMMIT, () =>
        run(`cargo build (${lib})`, 'cargo', ['build', '--release', '--locked'], path.join(libs, lib)),
      );
    await step('cargo-html-transformer', `${FIRECRAWL_COMMIT}:${stubHash}`, async () => {
      const stub = path.join(dir, 'nodesig-stub');
      fs.rmSync(stub, { recursive: true, force: true });
      fs.cpSync(STUB_DIR, stub, { recursive: true });
      const toml = path.join(libs, 'html-transformer', 'Cargo.toml');
      const original = fs.readFileSync(path.join(srcApi, 'sharedLibs', 'html-transformer', 'Cargo.toml'), 'utf8');
      // The git-only crate is replaced by the stub (Cargo resolves the patch without fetching the git source).
      fs.writeFileSync(
        toml,
        `${original}\n[patch."https://github.com/firecrawl/nodesig"]\nnodesig = { path = ${JSON.stringify(stub)} }\n`,
      );
      await run('cargo build (html-transformer)', 'cargo', ['build', '--release'], path.join(libs, 'html-transformer'));
    });
  };
  // The JavaScript chain waits on the network mostly, the native one on the CPU: side by side.
  const results = await Promise.allSettled([node(), native()]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0)
    throw new RealServerBuildError(failed.map((f) => (f.reason as Error).message ?? String(f.reason)).join('\n\n'));
  for (const f of [
    'dist/src/index.js',
    'dist/src/services/queue-worker.js',
    'sharedLibs/go-html-to-md/html-to-markdown.so',
    'sharedLibs/crawler/target/release/libcrawler.so',
    'sharedLibs/pdf-parser/target/release/libpdf_parser.so',
    'sharedLibs/html-transformer/target/release/libhtml_transformer.so',
  ])
    if (!fs.existsSync(path.join(apiDir, f)))
      throw new RealServerBuildError(
        `the Firecrawl build in ${dir} lacks ${f} although its steps are marked done: delete ${stepsDir} to rebuild`,
      );
  return { apiDir, env, built, tookMs: Date.now() - t0 };
}
