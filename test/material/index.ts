/**
 * Test material from outside the repository, obtained one way by every test that needs some.
 *
 * `obtainMaterial(name)` returns the folder of a copy that matches the committed manifest
 * (`manifests/<name>.sha256`: every expected file there, with its sha256), taken from the first of:
 *
 * 1. the folder named by the material's environment variable (`PAGES_DIR`, `FIRECRAWL_SOURCE_DIR`).
 *    Setting it is a choice: when that folder does not match, nothing else is tried;
 * 2. the mirror beside the checkout (`../shared/pages`, `../shared/firecrawl/source`), relative to
 *    the repository's root; for a linked worktree (`git worktree add`), also beside the main
 *    checkout of the same repository;
 * 3. the pinned commit of the public repository (`mozilla/readability`, `firecrawl/firecrawl`),
 *    fetched with git into `<cache>/material/<name>/<commit>/` (`<cache>`: `$SCRAPE_CACHE_DIR`, else
 *    `${XDG_CACHE_HOME:-~/.cache}/scrape-orchestrator`) once, then reused. The repositories are
 *    fetched from `https://github.com/<owner>/<name>.git`; `SCRAPE_MATERIAL_GIT_BASE` replaces
 *    `https://github.com` (another host, or a local folder of bare repositories).
 *
 * When none gives a matching copy it throws {@link MaterialMissingError}, whose message names what
 * each source lacked (down to the missing or differing files) and every way to provide the
 * material. A test that needs the material fails with it: it is never skipped.
 *
 * The small part of the page corpus that most tests need is in the repository
 * (`test/fixtures/pages/`, see `test/helpers/pages.ts`): only tests that need the whole corpus, or
 * Firecrawl's source, come here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { checkAgainst, describeCheck, readManifest, type ManifestEntry } from './manifest.js';
import { MATERIALS, manifestPath, type Material, type MaterialName } from './materials.js';
import {
  cachedCopy,
  cachedCopyDir,
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_GIT_BASE,
  fetchPinned,
  GIT_BASE_ENV,
  materialCacheRoot,
  repositoryUrl,
} from './fetch.js';

export type { Material, MaterialName } from './materials.js';
export { MATERIALS, MATERIAL_NAMES } from './materials.js';
export type { ManifestEntry } from './manifest.js';
export { buildManifest, checkAgainst, parseManifest, readManifest } from './manifest.js';
export { GIT_BASE_ENV, materialCacheRoot } from './fetch.js';

/** This repository's root (two levels above this file). */
export const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Options of {@link obtainMaterial}. */
export interface ObtainMaterialOptions {
  /**
   * Environment to read (default `process.env`): the material's variable, `SCRAPE_MATERIAL_GIT_BASE`,
   * `SCRAPE_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME`; also the environment of git.
   */
  env?: NodeJS.ProcessEnv;
  /** Root of the checkout whose neighbour `shared/` holds the mirror (default {@link REPO_ROOT}). */
  repoRoot?: string;
  /** Folder of the fetched copies (default `<cache>/material`). */
  cacheRoot?: string;
  /** Base of the repositories' URLs (default `$SCRAPE_MATERIAL_GIT_BASE`, else `https://github.com`). */
  gitBase?: string;
  /** Limit of each git command, ms (default 600000). */
  fetchTimeoutMs?: number;
}

/** Where a copy was looked for and what was wrong with it. */
export interface MaterialAttempt {
  source: 'env' | 'mirror' | 'fetch';
  /** The folder or URL tried (or the variable's name when it is not set). */
  where: string;
  /** Why it was not used. */
  problem: string;
}

/** No source gave a copy of the material that matches its manifest. */
export class MaterialMissingError extends Error {
  override readonly name = 'MaterialMissingError';
  constructor(
    /** The material's name (a {@link MaterialName} but in the tests of this module). */
    readonly material: string,
    readonly attempts: readonly MaterialAttempt[],
    readonly ways: readonly string[],
    what: string,
  ) {
    super(
      [
        `test material "${material}" is missing: ${what}.`,
        ...attempts.map((a) => `- ${a.source === 'env' ? a.where : `${a.source} ${a.where}`}: ${a.problem}`),
        'Provide it in one of these ways:',
        ...ways.map((w, i) => `${i + 1}. ${w}`),
      ].join('\n'),
    );
  }
}

/**
 * The mirror folders of `m` beside the checkout at `repoRoot`: `<repoRoot>/../<mirror>`, and for a
 * linked worktree also `<main checkout>/../<mirror>`. Pure file reads (no git process).
 */
export function mirrorCandidates(m: Material, repoRoot: string): string[] {
  const roots = [repoRoot];
  const main = mainCheckoutOf(repoRoot);
  if (main && path.resolve(main) !== path.resolve(repoRoot)) roots.push(main);
  return roots.map((r) => path.resolve(r, '..', ...m.mirror));
}

/**
 * The main checkout of a linked worktree (whose `.git` is a file `gitdir: <common>/worktrees/<id>`,
 * and `<that>/commondir` names the common git folder), else `undefined`.
 */
function mainCheckoutOf(repoRoot: string): string | undefined {
  try {
    const dotGit = path.join(repoRoot, '.git');
    if (!fs.statSync(dotGit).isFile()) return undefined;
    const gitdir = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, 'utf8'))?.[1]?.trim();
    if (!gitdir) return undefined;
    const worktreeDir = path.resolve(repoRoot, gitdir);
    const common = path.resolve(worktreeDir, fs.readFileSync(path.join(worktreeDir, 'commondir'), 'utf8').trim());
    return path.basename(common) === '.git' ? path.dirname(common) : undefined;
  } catch {
    return undefined;
  }
}

/** Every way to provide `m`, for the error message. */
function waysToProvide(m: Material, cacheRoot: string, gitBase: string): string[] {
  const manifest = path.relative(REPO_ROOT, manifestPath(m.name));
  return [
    `set ${m.envVar} to a folder holding it (checked against ${manifest})`,
    `put a copy at ${path.join('..', ...m.mirror)} beside the checkout (the folder that holds the repository)`,
    `let the test fetch commit ${m.commit} of ${m.repository} with git into ${cachedCopyDir(m, cacheRoot)}: needs git and ${repositoryUrl(m, gitBase)} reachable (${GIT_BASE_ENV}=<URL or folder> fetches <base>/${m.repository}.git instead)`,
  ];
}

/** The problem of the folder `dir` as a copy, or `undefined` when it matches `manifest`. */
async function problemOf(dir: string, manifest: readonly ManifestEntry[]): Promise<string | undefined> {
  if (!fs.existsSync(dir)) return 'not found';
  if (!fs.statSync(dir).isDirectory()) return 'not a folder';
  return describeCheck(await checkAgainst(dir, manifest));
}

/**
 * Absolute path of a verified copy of the material `name` (see the module docs for the order of
 * the sources).
 * @throws MaterialMissingError naming what is missing and every way to provide it.
 */
export function obtainMaterial(name: MaterialName, opts: ObtainMaterialOptions = {}): Promise<string> {
  return obtain(MATERIALS[name], readManifest(name), opts);
}

/**
 * The steps of {@link obtainMaterial} for any definition and manifest (the tests of this module
 * use small ones of their own).
 * @throws MaterialMissingError naming what is missing and every way to provide it.
 */
export async function obtain(
  m: Material,
  manifest: readonly ManifestEntry[],
  opts: ObtainMaterialOptions = {},
): Promise<string> {
  const name = m.name;
  const env = opts.env ?? process.env;
  const repoRoot = path.resolve(opts.repoRoot ?? REPO_ROOT);
  const cacheRoot = path.resolve(opts.cacheRoot ?? materialCacheRoot(env));
  const gitBase = opts.gitBase ?? (env[GIT_BASE_ENV] || DEFAULT_GIT_BASE);
  const ways = waysToProvide(m, cacheRoot, gitBase);
  const attempts: MaterialAttempt[] = [];

  const named = env[m.envVar];
  if (named) {
    const dir = path.resolve(named);
    const problem = await problemOf(dir, manifest);
    if (problem === undefined) return dir;
    throw new MaterialMissingError(name, [{ source: 'env', where: `${m.envVar}=${dir}`, problem }], ways, m.what);
  }
  attempts.push({ source: 'env', where: m.envVar, problem: 'not set' });

  for (const dir of mirrorCandidates(m, repoRoot)) {
    const problem = await problemOf(dir, manifest);
    if (problem === undefined) return dir;
    attempts.push({ source: 'mirror', where: dir, problem });
  }

  const cached = await cachedCopy(m, manifest, cacheRoot);
  if (cached.dir) return warnIfMirrorUnusable(cached.dir, attempts);
  if (cached.problem) attempts.push({ source: 'fetch', where: cacheRoot, problem: cached.problem });
  const url = repositoryUrl(m, gitBase);
  try {
    const timeoutMs = opts.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    const dir = await fetchPinned(m, { manifest, url, cacheRoot, env, timeoutMs });
    return warnIfMirrorUnusable(dir, attempts);
  } catch (err) {
    attempts.push({
      source: 'fetch',
      where: `${url} at ${m.commit}`,
      problem: err instanceof Error ? err.message : String(err),
    });
  }
  throw new MaterialMissingError(name, attempts, ways, m.what);
}

/** A mirror that is there but does not match is said once on stderr when another copy is used. */
function warnIfMirrorUnusable(dir: string, attempts: readonly MaterialAttempt[]): string {
  for (const a of attempts) {
    if (a.source === 'mirror' && a.problem !== 'not found') {
      console.warn(`test material: the mirror ${a.where} is not used (${a.problem}); using ${dir}`);
    }
  }
  return dir;
}

/**
 * Names of the corpus pages the manifest lists (folders with `source.html`), sorted: the pages a
 * test of the whole corpus runs, whatever else the copy's folder holds.
 */
export function corpusPageNames(): string[] {
  return readManifest('pages')
    .filter((e) => e.path.endsWith('/source.html'))
    .map((e) => e.path.slice(0, -'/source.html'.length))
    .sort();
}
