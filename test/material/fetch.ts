/**
 * The pinned fetch: one commit of a public repository, fetched with git (`--depth 1`, a sparse
 * checkout of the material's paths) into `<cache>/material/<name>/<commit>/`, outside the
 * repository, and checked against the manifest before it is used.
 *
 * The copy is built in a fresh folder beside its final place and renamed into it only once it is
 * complete and checked, so two test files fetching at once, or a fetch interrupted half-way, never
 * leave a partial copy where a later run would take it for a whole one (the first rename wins; the
 * other copy is removed). Its `.git` is removed: the manifest, not git, vouches for the copy.
 */
import fs from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { describeFailure, runCommand } from '../../tools/devserver/process.js';
import { temporalCacheRoot } from '../../tools/devserver/temporalCli.js';
import { checkAgainst, describeCheck, type ManifestEntry } from './manifest.js';
import type { Material } from './materials.js';

/** Default base of the repositories' URLs: `<base>/<owner>/<name>.git`. */
export const DEFAULT_GIT_BASE = 'https://github.com';

/** Environment variable overriding {@link DEFAULT_GIT_BASE} (a URL or a local folder of bare repositories). */
export const GIT_BASE_ENV = 'SCRAPE_MATERIAL_GIT_BASE';

/** Default limit of one git command, ms (the fetch of a commit is 20–30 MB). */
export const DEFAULT_FETCH_TIMEOUT_MS = 600_000;

/**
 * `<cache>/material`: `<cache>` is `$SCRAPE_CACHE_DIR`, else
 * `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator` (as for the Temporal CLI and the browser).
 */
export function materialCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(temporalCacheRoot(env), 'material');
}

/** URL of `m`'s repository under `base` (a trailing `/` of the base is ignored). */
export function repositoryUrl(m: Material, base: string): string {
  return `${base.replace(/\/+$/, '')}/${m.repository}.git`;
}

/** Where the fetched copy of `m` lives: `<cacheRoot>/<name>/<commit>`. */
export function cachedCopyDir(m: Material, cacheRoot: string): string {
  return path.join(cacheRoot, m.name, m.commit);
}

/** The material's folder inside a copy of its repository. */
function materialDirIn(m: Material, copy: string): string {
  return m.subdir ? path.join(copy, ...m.subdir.split('/')) : copy;
}

/** Options of {@link fetchPinned}. */
export interface FetchOptions {
  /** The expected files. */
  manifest: readonly ManifestEntry[];
  /** Repository URL to fetch from. */
  url: string;
  /** `<cache>/material` (see {@link materialCacheRoot}). */
  cacheRoot: string;
  /** Environment of the git processes. */
  env: NodeJS.ProcessEnv;
  /** Limit of each git command, ms. */
  timeoutMs: number;
}

/**
 * The cached copy of `m`: `{ dir }` when one is there and matches the manifest; `{ problem }` when
 * one was there but did not match (damaged or changed by hand: it is removed so that it is fetched
 * again); `{}` when there is none.
 */
export async function cachedCopy(
  m: Material,
  manifest: readonly ManifestEntry[],
  cacheRoot: string,
): Promise<{ dir?: string; problem?: string }> {
  const copy = cachedCopyDir(m, cacheRoot);
  if (!fs.existsSync(copy)) return {};
  const dir = materialDirIn(m, copy);
  const problem = describeCheck(await checkAgainst(dir, manifest));
  if (problem === undefined) return { dir };
  await rm(copy, { recursive: true, force: true });
  return { problem: `the cached copy ${copy} did not match (${problem}); removed` };
}

/**
 * Runs `git <args>`; `label` names the step in an error, which quotes git's own `fatal:`/`error:`
 * lines (its last line is often advice, such as "and the repository exists.").
 */
async function git(
  label: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<string> {
  const r = await runCommand('git', args, opts);
  if (r.code === 0 && !r.timedOut && !r.spawnError) return r.stdout.trim();
  const said = r.stderr
    .split(/\r?\n/)
    .filter((l) => /^(fatal|error):/.test(l))
    .join(' ');
  if (said && r.code !== null && !r.timedOut) throw new Error(`\`git ${label}\` exited with code ${r.code}: ${said}`);
  throw new Error(describeFailure(`git ${label}`, r, opts.timeoutMs));
}

/**
 * Fetch `m`'s pinned commit from `opts.url` into the cache and return the material's folder in it.
 * @throws Error saying which step failed (git missing, the host unreachable, the commit unknown
 *   there, or the fetched files not matching the manifest).
 */
export async function fetchPinned(m: Material, opts: FetchOptions): Promise<string> {
  const final = cachedCopyDir(m, opts.cacheRoot);
  await mkdir(path.dirname(final), { recursive: true });
  const tmp = await mkdtemp(path.join(path.dirname(final), `.${m.commit}.partial-`));
  // Never prompt for credentials: a test run has no one to answer.
  const env = { ...opts.env, GIT_TERMINAL_PROMPT: '0' };
  const run = (label: string, args: string[]) => git(label, args, { cwd: tmp, env, timeoutMs: opts.timeoutMs });
  try {
    await run('init', ['init', '--quiet']);
    await run('sparse-checkout', ['sparse-checkout', 'set', '--no-cone', ...m.checkout]);
    // Protocol v2 lets a client ask for any commit by its ID (a public host's default too).
    // A transfer slower than 1 kB/s for a minute is abandoned rather than left hanging.
    await run('fetch', [
      '-c',
      'protocol.version=2',
      '-c',
      'http.lowSpeedLimit=1000',
      '-c',
      'http.lowSpeedTime=60',
      'fetch',
      '--quiet',
      '--no-tags',
      '--depth',
      '1',
      opts.url,
      m.commit,
    ]);
    await run('checkout', ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', m.commit]);
    await rm(path.join(tmp, '.git'), { recursive: true, force: true });
    const problem = describeCheck(await checkAgainst(materialDirIn(m, tmp), opts.manifest));
    if (problem) throw new Error(`commit ${m.commit} of ${opts.url} does not hold the expected files: ${problem}`);
    try {
      await rename(tmp, final);
    } catch (err) {
      // Another process finished first: its copy, checked as this one was, is used.
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !fs.existsSync(final)) throw err;
      await rm(tmp, { recursive: true, force: true });
    }
    return materialDirIn(m, final);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}
