/**
 * What an installed `node_modules` tree holds: its packages, which of them are native modules, and
 * the room it takes on disk. Used by the install benchmark (`bench/install.ts`) and by the tests
 * that keep the client package light (`test/unit/client-package.test.ts`,
 * `test/integration/example-service.test.ts`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** One installed package. */
export interface InstalledPackage {
  name: string;
  version: string;
  /** Absolute path of its folder. */
  dir: string;
  /** A native module: see {@link isNativePackage}. */
  native: boolean;
  /** It declares a `preinstall`, `install` or `postinstall` script (run by npm at install). */
  installScript: boolean;
}

/**
 * Whether the package in `dir` is a native module: it builds one (`binding.gyp`, or `gypfile` in its
 * manifest), ships a compiled one (a `.node` file anywhere in its folder, nested `node_modules`
 * aside), or is built for one platform (its manifest names both `os` and `cpu`, as the prebuilt
 * binaries' packages `@swc/core-linux-x64-gnu` or `@esbuild/linux-x64` do).
 */
export function isNativePackage(dir: string): boolean {
  if (fs.existsSync(path.join(dir, 'binding.gyp'))) return true;
  const manifest = readManifest(dir);
  if (manifest?.gypfile === true) return true;
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop()!;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') stack.push(path.join(d, e.name));
      } else if (e.name.endsWith('.node')) return true;
    }
  }
  // A package built for one platform (esbuild's `@esbuild/linux-x64` holds an executable): native code all the same.
  return Array.isArray(manifest?.os) && Array.isArray(manifest?.cpu);
}

interface Manifest {
  name?: string;
  version?: string;
  gypfile?: boolean;
  os?: unknown;
  cpu?: unknown;
  scripts?: Record<string, string>;
}

function readManifest(dir: string): Manifest | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/** The package described by the manifest in `dir` (undefined when it has none). */
export function packageAt(dir: string): InstalledPackage | undefined {
  const m = readManifest(dir);
  if (!m?.name) return undefined;
  return {
    name: m.name,
    version: m.version ?? '',
    dir,
    native: isNativePackage(dir),
    installScript: ['preinstall', 'install', 'postinstall'].some((s) => typeof m.scripts?.[s] === 'string'),
  };
}

/** Every package installed under the `node_modules` folder `nodeModules`, nested ones included, by path. */
export function installedPackages(nodeModules: string): InstalledPackage[] {
  const out: InstalledPackage[] = [];
  const visit = (modules: string) => {
    if (!fs.existsSync(modules)) return;
    for (const e of fs.readdirSync(modules, { withFileTypes: true })) {
      if (e.name.startsWith('.') || !(e.isDirectory() || e.isSymbolicLink())) continue;
      const dirs = e.name.startsWith('@')
        ? fs.readdirSync(path.join(modules, e.name)).map((n) => path.join(modules, e.name, n))
        : [path.join(modules, e.name)];
      for (const dir of dirs) {
        const p = packageAt(dir);
        if (p) out.push(p);
        visit(path.join(dir, 'node_modules'));
      }
    }
  };
  visit(nodeModules);
  return out;
}

/**
 * Size of `dir` in bytes as `du` counts it: the disk blocks its files take (hard links once), or with
 * `apparent` the sum of their lengths (what a package registry calls unpacked size). Blocks count
 * every small file as at least one block (4 KiB on most file systems), so the first is the larger.
 */
export function diskUsageBytes(dir: string, opts: { apparent?: boolean } = {}): number {
  const args = ['-sk', ...(opts.apparent ? ['--apparent-size'] : []), dir];
  return Number(execFileSync('du', args, { encoding: 'utf8' }).split(/\s/)[0]) * 1024;
}

/** An entry of `package-lock.json`'s `packages` (lockfile version 3). */
export interface LockEntry {
  name?: string;
  version?: string;
  dev?: boolean;
  optional?: boolean;
  hasInstallScript?: boolean;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** The `packages` of the lockfile in `dir`, by path (`''` the root, `node_modules/x`, `packages/client`). */
export function readLockfile(dir: string): Record<string, LockEntry> {
  return (
    JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  ).packages;
}

/** The package name of a lockfile path (`node_modules/a/node_modules/@s/b` → `@s/b`). */
export function lockName(lockPath: string, entry: LockEntry): string {
  return entry.name ?? lockPath.slice(lockPath.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

/** Where Node resolves `name` from lockfile path `from`: its `node_modules`, then each parent's. */
function resolveInLock(lock: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (lock[candidate]) return candidate;
    if (!base) return undefined;
    const up = base.lastIndexOf('/node_modules/');
    base = up >= 0 ? base.slice(0, up) : '';
  }
}

/**
 * Lockfile paths of every package that installing lockfile entry `root` brings: its dependencies,
 * optional dependencies and required peers, and theirs, as Node resolves them (an optional
 * dependency the lockfile lacks, another platform's, is skipped).
 */
export function lockClosure(lock: Record<string, LockEntry>, root: string): string[] {
  const seen = new Set<string>();
  const queue = [root];
  while (queue.length > 0) {
    const at = queue.pop()!;
    const e = lock[at]!;
    const peers = Object.keys(e.peerDependencies ?? {}).filter((n) => !e.peerDependenciesMeta?.[n]?.optional);
    for (const name of [...Object.keys(e.dependencies ?? {}), ...Object.keys(e.optionalDependencies ?? {}), ...peers]) {
      const p = resolveInLock(lock, at, name);
      if (p && !seen.has(p)) {
        seen.add(p);
        queue.push(p);
      }
    }
  }
  return [...seen].sort();
}
