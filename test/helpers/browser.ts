/**
 * The Chromium that the browser tests drive with playwright-core, obtained the way the demo
 * obtains the Temporal CLI, never downloaded from anywhere:
 *
 * 1. `$SCRAPE_CHROMIUM` (a path), else `chromium` or `chromium-browser` on `PATH` (Debian's);
 * 2. else the headless shell shipped inside the npm package `@sparticuz/chromium` (a devDependency:
 *    `npm ci` installs it with the binary inside, Brotli-compressed), unpacked once into
 *    `<cache>/chromium/<package version>/` — `<cache>` as for the Temporal CLI (`$SCRAPE_CACHE_DIR`,
 *    else `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator`), never inside the repository.
 *
 * The package's own unpacker writes into the OS temporary directory; it runs here in a child
 * process whose `TMPDIR` is a fresh directory inside the cache, which is then renamed into place,
 * so that two test files starting at once, or a run interrupted half-way, never leave a partial
 * browser behind.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { temporalCacheRoot } from '../../tools/devserver/temporalCli.js';
import { describeFailure, runCommand } from '../../tools/devserver/process.js';

const REPO = path.resolve(import.meta.dirname, '..', '..');

/** Where the browser came from. */
export type ChromiumSource = 'env' | 'path' | 'package';

/** A Chromium to launch. */
export interface ChromiumBinary {
  path: string;
  source: ChromiumSource;
}

/**
 * Flags for a headless run on a machine without a display, a sandbox or a network beyond
 * loopback: no GPU, no background requests, no first-run or sync prompts, no component updates.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

const PACKAGE = '@sparticuz/chromium';

/** `name` on `env.PATH`, or undefined. */
function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  try {
    return execFileSync('which', [name], { encoding: 'utf8', env }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The directory of the installed `@sparticuz/chromium` and its version, or undefined when it is not installed. */
function packageInfo(): { dir: string; version: string } | undefined {
  const require = createRequire(path.join(REPO, 'package.json'));
  try {
    const manifest = require.resolve(`${PACKAGE}/package.json`);
    return {
      dir: path.dirname(manifest),
      version: (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version: string }).version,
    };
  } catch {
    // Its `exports` may not list package.json: find it beside the resolved entry point.
    try {
      let dir = path.dirname(require.resolve(PACKAGE));
      while (
        !fs.existsSync(path.join(dir, 'package.json')) ||
        JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== PACKAGE
      ) {
        const up = path.dirname(dir);
        if (up === dir) return undefined;
        dir = up;
      }
      return {
        dir,
        version: (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version,
      };
    } catch {
      return undefined;
    }
  }
}

/** Path of the unpacked browser of package version `version` under `cacheRoot`. */
export function cachedChromiumPath(cacheRoot: string, version: string): string {
  return path.join(cacheRoot, 'chromium', version, 'chromium');
}

/**
 * Finds or unpacks a Chromium (see the module documentation).
 * @throws Error naming what was tried, when none is found and the package is not installed.
 */
export async function ensureChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumBinary> {
  if (env.SCRAPE_CHROMIUM) return { path: env.SCRAPE_CHROMIUM, source: 'env' };
  for (const name of ['chromium', 'chromium-browser']) {
    const found = onPath(name, env);
    if (found) return { path: found, source: 'path' };
  }
  const pkg = packageInfo();
  if (!pkg)
    throw new Error(
      `no Chromium: SCRAPE_CHROMIUM is not set, no chromium on PATH, and the npm package ${PACKAGE} is not installed (npm ci installs it; Debian: apt-get install chromium)`,
    );
  const cacheRoot = temporalCacheRoot(env);
  if (!path.relative(REPO, cacheRoot).startsWith('..'))
    throw new Error(`the cache ${cacheRoot} is inside the repository; set SCRAPE_CACHE_DIR to a directory outside it`);
  const dest = cachedChromiumPath(cacheRoot, pkg.version);
  if (fs.existsSync(dest)) return { path: dest, source: 'package' };
  const versionDir = path.dirname(dest);
  await mkdir(path.dirname(versionDir), { recursive: true });
  const tmp = await mkdtemp(path.join(path.dirname(versionDir), `.tmp-${pkg.version}-`));
  try {
    // The package's unpacker returns `<tmpdir>/chromium` and puts the libraries it needs beside it.
    const script = `const m = await import(${JSON.stringify(pathToFileURL(path.join(pkg.dir, 'build', 'esm', 'index.js')).href)}); process.stdout.write(await m.default.executablePath());`;
    const r = await runCommand(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...env, TMPDIR: tmp },
      timeoutMs: 300_000,
    });
    if (r.spawnError || r.code !== 0)
      throw new Error(`unpacking ${PACKAGE} ${pkg.version}: ${describeFailure('node', r, 300_000)}`);
    if (path.resolve(r.stdout.trim()) !== path.join(tmp, 'chromium'))
      throw new Error(
        `unpacking ${PACKAGE} ${pkg.version} gave ${r.stdout.trim()}, expected ${path.join(tmp, 'chromium')}`,
      );
    try {
      await rename(tmp, versionDir); // atomic: a concurrent run finds a whole browser or none
    } catch (e) {
      if (!fs.existsSync(dest)) throw e; // another run put its copy there first: use that one
    }
    return { path: dest, source: 'package' };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
