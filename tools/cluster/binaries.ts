/**
 * The Go-built binaries of the production topology, obtained from the Go module proxy and cached
 * outside the repository by version:
 * - `<cache>/temporal-server/<version>/bin/server` and `…/bin/sql` (`go.temporal.io/server`, the
 *   server and its schema tool);
 * - `<cache>/temporal-ui-server/<version>/bin/server` (`github.com/temporalio/ui-server/v2`, the
 *   standalone Web UI with its assets embedded).
 * `<cache>` is `$SCRAPE_CACHE_DIR`, else `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator`.
 *
 * A missing binary is built with `go install <pkg>@v<version>` into a temporary directory next to
 * the cache entry and renamed into place (so two processes building at once both end with a whole
 * file). A cold server build takes 7–13 min on two cores; progress is printed every 30 s.
 */
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { runCommand, type LineLogger } from '../devserver/process.js';
import { temporalCacheRoot } from '../devserver/temporalCli.js';

/** Temporal server version of the topology (Go module `go.temporal.io/server`, same as the dev server's CLI 1.5.1). */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
/** Web UI version (Go module `github.com/temporalio/ui-server/v2`; the `temporalio/ui` image of the same tag). */
export const TEMPORAL_UI_VERSION = '2.42.1';

/** A Go-installable binary. */
export interface GoBinary {
  /** Cache folder name under `<cache>`, e.g. `temporal-server`. */
  cacheName: string;
  version: string;
  /** Go package path (without `@version`). */
  pkg: string;
  /** Name of the installed executable (the package's last path element). */
  exe: string;
  /** What it is, for progress lines. */
  label: string;
  /** Rough cold build time, for the first progress line. */
  expect: string;
}

export const SERVER_BINARY: GoBinary = {
  cacheName: 'temporal-server',
  version: TEMPORAL_SERVER_VERSION,
  pkg: 'go.temporal.io/server/cmd/server',
  exe: 'server',
  label: 'Temporal server',
  expect: '7–13 min on 2 cores',
};
export const SQL_TOOL_BINARY: GoBinary = {
  cacheName: 'temporal-server',
  version: TEMPORAL_SERVER_VERSION,
  pkg: 'go.temporal.io/server/cmd/tools/sql',
  exe: 'sql',
  label: 'Temporal SQL schema tool',
  expect: 'about 1 min after the server',
};
export const UI_BINARY: GoBinary = {
  cacheName: 'temporal-ui-server',
  version: TEMPORAL_UI_VERSION,
  pkg: 'github.com/temporalio/ui-server/v2/cmd/server',
  exe: 'server',
  label: 'Temporal Web UI server',
  expect: '2–4 min on 2 cores',
};

/** Path of the cached executable of `bin`. Pure. */
export function cachedBinaryPath(bin: GoBinary, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(temporalCacheRoot(env), bin.cacheName, bin.version, 'bin', bin.exe);
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isFile(),
    () => false,
  );
}

/**
 * Returns the cached executable of `bin`, building it with `go install` first when missing.
 *
 * @throws Error when `go` is not installed or the build fails (the message has the tail of its output).
 */
export async function ensureGoBinary(
  bin: GoBinary,
  opts: { log: LineLogger; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<string> {
  const env = opts.env ?? process.env;
  const dest = cachedBinaryPath(bin, env);
  if (await exists(dest)) return dest;
  const dir = path.dirname(path.dirname(dest));
  await mkdir(dir, { recursive: true });
  const tmp = await mkdtemp(path.join(dir, '.tmp-go-'));
  const target = `${bin.pkg}@v${bin.version}`;
  opts.log(`${bin.label} ${bin.version} not cached: go install ${target} (${bin.expect}) into ${dest}`);
  const started = Date.now();
  const ticker = setInterval(
    () => opts.log(`  still building ${bin.label} (${Math.round((Date.now() - started) / 1000)} s)…`),
    30_000,
  );
  try {
    const r = await runCommand('go', ['install', target], {
      env: { ...env, GOBIN: tmp, GOFLAGS: env.GOFLAGS ?? '-mod=mod', CGO_ENABLED: env.CGO_ENABLED ?? '0' },
      timeoutMs: opts.timeoutMs ?? 40 * 60_000,
    });
    if (r.spawnError)
      throw new Error(
        `cannot run \`go\` (${r.spawnError.message}): install Go 1.24+ (Debian: apt-get install golang) to build ${bin.label}`,
      );
    if (r.code !== 0)
      throw new Error(
        `go install ${target} failed (${r.signal ?? `exit ${r.code}`}):\n${r.stderr.split('\n').slice(-15).join('\n')}`,
      );
    await mkdir(path.dirname(dest), { recursive: true });
    await rename(path.join(tmp, bin.exe), dest);
    opts.log(`${bin.label} ${bin.version} built in ${Math.round((Date.now() - started) / 1000)} s`);
    return dest;
  } finally {
    clearInterval(ticker);
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * The directory of the `go.temporal.io/server` module source in the Go module cache (it holds
 * `schema/postgresql/v12/{temporal,visibility}/versioned`), downloaded when missing
 * (`go mod download -json`; seconds when the cache is warm).
 *
 * @throws Error when Go cannot download it.
 */
export async function serverModuleDir(opts: { env?: NodeJS.ProcessEnv; version?: string } = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const mod = `go.temporal.io/server@v${opts.version ?? TEMPORAL_SERVER_VERSION}`;
  const r = await runCommand('go', ['mod', 'download', '-json', mod], {
    env: { ...env, GOFLAGS: env.GOFLAGS ?? '-mod=mod' },
    timeoutMs: 10 * 60_000,
    tailBytes: 64 * 1024,
  });
  if (r.spawnError || r.code !== 0)
    throw new Error(`go mod download ${mod} failed: ${r.spawnError?.message ?? r.stderr.trim().slice(-500)}`);
  const dir = (JSON.parse(r.stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${mod} gave no directory`);
  return dir;
}
