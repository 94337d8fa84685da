/**
 * The obtaining step of outside test material (test/material/), on real folders and real git:
 * a matching mirror beside the checkout is used (also beside the main checkout of a linked
 * worktree); a missing mirror, a mirror with a missing or changed file, and a folder named by the
 * environment variable that does not match each end in one error naming the problem and every
 * way to provide the material; the pinned commit is fetched from a local bare repository standing
 * in for the public one (the public hosts are out of reach here), kept in the cache, fetched again
 * when the cached copy is damaged, and refused when its files do not match the manifest.
 *
 * The committed manifests and the repository's own pages are checked too: every page under
 * test/fixtures/pages is an unchanged copy of the pinned corpus.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  buildManifest,
  checkAgainst,
  corpusPageNames,
  MATERIALS,
  MaterialMissingError,
  obtain,
  obtainMaterial,
  parseManifest,
  readManifest,
  type ManifestEntry,
  type Material,
} from '../material/index.js';
import { FIXTURE_PAGES_DIR, fixturePageNames } from '../helpers/pages.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'material-test-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Runs git in `cwd` with a fixed identity and no signing, whatever the user's configuration. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync(
    'git',
    ['-c', 'user.name=material-test', '-c', 'user.email=material@example.test', '-c', 'commit.gpgsign=false', ...args],
    { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  ).trim();
}

/** Writes `files` (path → text) under `dir`. */
function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
}

const PAGES: Record<string, string> = {
  'a/source.html': '<!doctype html><title>A</title><p>First page.</p>',
  'a/expected-metadata.json': '{"title":"A"}\n',
  'b/source.html': '<!doctype html><title>B</title><p>Second page.</p>',
  'b/expected-metadata.json': '{"title":"B"}\n',
};

/** A two-page material laid out as the real `pages` is (folder `test/test-pages` of its repository). */
function tinyMaterial(commit: string): Material {
  return {
    name: 'tiny-pages',
    what: 'two pages for the tests of the obtaining step',
    envVar: 'TINY_PAGES_DIR',
    mirror: ['shared', 'tiny-pages'],
    repository: 'example/tiny',
    commit,
    subdir: 'test/test-pages',
    checkout: ['/test/test-pages/'],
    manifestIncludes: MATERIALS.pages.manifestIncludes,
  };
}

// The public repository's stand-in: commit 1 holds the pages (the pinned one), commit 2 on top
// changes one, so a fetch of the branch's tip instead of the pinned commit is seen.
const work = path.join(root, 'upstream-work');
fs.mkdirSync(work);
git(work, 'init', '--quiet');
writeFiles(path.join(work, 'test', 'test-pages'), PAGES);
writeFiles(work, { 'README.md': 'not part of the material\n' });
git(work, 'add', '.');
git(work, 'commit', '--quiet', '-m', 'pages');
const PINNED = git(work, 'rev-parse', 'HEAD');
writeFiles(path.join(work, 'test', 'test-pages'), { 'b/expected-metadata.json': '{"title":"B, later"}\n' });
git(work, 'commit', '--quiet', '-am', 'later');
const LATER = git(work, 'rev-parse', 'HEAD');
const gitBase = path.join(root, 'hosts');
git(root, 'clone', '--quiet', '--bare', work, path.join(gitBase, 'example', 'tiny.git'));

const tiny = tinyMaterial(PINNED);
let manifest: ManifestEntry[];

// Each test: a fresh checkout folder, nothing beside it, an empty cache, a base with no repositories.
let n = 0;
let place: { dir: string; checkout: string; mirror: string; cache: string; nowhere: string };
beforeEach(async () => {
  manifest ??= parseManifest(await pinnedManifest());
  const dir = path.join(root, `case-${++n}`);
  place = {
    dir,
    checkout: path.join(dir, 'repo'),
    mirror: path.join(dir, 'shared', 'tiny-pages'),
    cache: path.join(dir, 'cache'),
    nowhere: path.join(dir, 'no-such-host'),
  };
  fs.mkdirSync(place.checkout, { recursive: true });
});

/** The manifest of the pinned commit's pages (built from a copy of commit 1's files). */
async function pinnedManifest(): Promise<string> {
  const copy = path.join(root, 'pinned-copy');
  writeFiles(copy, PAGES);
  return buildManifest(tiny, copy);
}

/** The environment of one call: only git's `PATH` and a `HOME` of the test's own, plus `extra`. */
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: root,
  ...extra,
});

async function missing(p: Promise<string>): Promise<MaterialMissingError> {
  const err = await p.then(
    (dir) => new Error(`expected MaterialMissingError, got ${dir}`),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MaterialMissingError);
  return err as MaterialMissingError;
}

describe('obtaining outside test material', () => {
  it('uses a matching mirror beside the checkout, as is', async () => {
    writeFiles(place.mirror, PAGES);
    const dir = await obtain(tiny, manifest, {
      env: env(),
      repoRoot: place.checkout,
      cacheRoot: place.cache,
      gitBase: place.nowhere,
    });
    expect(dir).toBe(place.mirror);
    expect(fs.existsSync(place.cache)).toBe(false);
  });

  it('finds the mirror beside the main checkout when the checkout is a linked worktree', async () => {
    const main = path.join(place.dir, 'main');
    fs.mkdirSync(main);
    git(main, 'init', '--quiet');
    git(main, 'commit', '--quiet', '--allow-empty', '-m', 'start');
    const linked = path.join(place.dir, 'worktrees', 'feature');
    git(main, 'worktree', 'add', '--quiet', '-b', 'feature', linked);
    const beside = path.join(place.dir, 'shared', 'tiny-pages');
    writeFiles(beside, PAGES);
    const dir = await obtain(tiny, manifest, {
      env: env(),
      repoRoot: linked,
      cacheRoot: place.cache,
      gitBase: place.nowhere,
    });
    expect(dir).toBe(beside);
  });

  it('with no mirror and no reachable host: one error naming each source and every way to provide it', async () => {
    const err = await missing(
      obtain(tiny, manifest, { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase: place.nowhere }),
    );
    const url = path.join(place.nowhere, 'example', 'tiny.git');
    expect(err.material).toBe('tiny-pages');
    expect(err.attempts.map((a) => [a.source, a.where])).toEqual([
      ['env', 'TINY_PAGES_DIR'],
      ['mirror', place.mirror],
      ['fetch', `${url} at ${PINNED}`],
    ]);
    expect(err.message).toContain(
      'test material "tiny-pages" is missing: two pages for the tests of the obtaining step.',
    );
    expect(err.message).toContain('- TINY_PAGES_DIR: not set');
    expect(err.message).toContain(`- mirror ${place.mirror}: not found`);
    expect(err.message).toMatch(/- fetch .* at [0-9a-f]{40}: `git fetch` exited with code \d+/);
    expect(err.message).toContain('1. set TINY_PAGES_DIR to a folder holding it');
    expect(err.message).toContain(`2. put a copy at ${path.join('..', 'shared', 'tiny-pages')} beside the checkout`);
    expect(err.message).toContain(
      `3. let the test fetch commit ${PINNED} of example/tiny with git into ${path.join(place.cache, 'tiny-pages', PINNED)}`,
    );
    expect(err.message).toContain('SCRAPE_MATERIAL_GIT_BASE=<URL or folder>');
    // A failed fetch leaves nothing in the cache that a later run could take for a copy.
    expect(fs.readdirSync(path.join(place.cache, 'tiny-pages'))).toEqual([]);
  });

  it('a mirror with a missing file and one with a changed file: each named', async () => {
    writeFiles(place.mirror, PAGES);
    fs.rmSync(path.join(place.mirror, 'a', 'source.html'));
    let err = await missing(
      obtain(tiny, manifest, { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase: place.nowhere }),
    );
    expect(err.message).toContain(`- mirror ${place.mirror}: 1 of 4 expected files missing (a/source.html)`);

    writeFiles(place.mirror, PAGES);
    writeFiles(place.mirror, { 'b/expected-metadata.json': '{"title":"edited by hand"}\n' });
    err = await missing(
      obtain(tiny, manifest, { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase: place.nowhere }),
    );
    expect(err.message).toContain(`- mirror ${place.mirror}: 1 differ from the manifest (b/expected-metadata.json)`);
  });

  it('the folder named by the variable is used first; when it does not match, nothing else is tried', async () => {
    const named = path.join(place.dir, 'elsewhere');
    writeFiles(named, PAGES);
    writeFiles(place.mirror, PAGES);
    const opts = { repoRoot: place.checkout, cacheRoot: place.cache, gitBase };
    expect(await obtain(tiny, manifest, { ...opts, env: env({ TINY_PAGES_DIR: named }) })).toBe(named);

    fs.rmSync(path.join(named, 'b'), { recursive: true });
    const err = await missing(obtain(tiny, manifest, { ...opts, env: env({ TINY_PAGES_DIR: named }) }));
    expect(err.attempts).toHaveLength(1);
    expect(err.message).toContain(
      `- TINY_PAGES_DIR=${named}: 2 of 4 expected files missing (b/expected-metadata.json, b/source.html)`,
    );
    const gone = await missing(
      obtain(tiny, manifest, { ...opts, env: env({ TINY_PAGES_DIR: path.join(named, 'x') }) }),
    );
    expect(gone.message).toContain(`- TINY_PAGES_DIR=${path.join(named, 'x')}: not found`);
  });

  it('fetches the pinned commit (not the branch tip) from a local bare repository into the cache, then reuses it', async () => {
    const dir = await obtain(tiny, manifest, { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase });
    const copy = path.join(place.cache, 'tiny-pages', PINNED);
    expect(dir).toBe(path.join(copy, 'test', 'test-pages'));
    expect(fs.readFileSync(path.join(dir, 'b', 'expected-metadata.json'), 'utf8')).toBe(
      PAGES['b/expected-metadata.json'],
    );
    // Only the material's paths are checked out; git's folder and the partial folder are gone.
    expect(fs.readdirSync(copy)).toEqual(['test']);
    expect(fs.readdirSync(path.join(place.cache, 'tiny-pages'))).toEqual([PINNED]);

    // Reused without the host: the stand-in is out of reach for the second call.
    expect(
      await obtain(tiny, manifest, {
        env: env(),
        repoRoot: place.checkout,
        cacheRoot: place.cache,
        gitBase: place.nowhere,
      }),
    ).toBe(dir);

    // A damaged cached copy is fetched again.
    fs.writeFileSync(path.join(dir, 'a', 'source.html'), 'truncated');
    expect(
      await obtain(tiny, manifest, { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase }),
    ).toBe(dir);
    expect(fs.readFileSync(path.join(dir, 'a', 'source.html'), 'utf8')).toBe(PAGES['a/source.html']);

    // SCRAPE_MATERIAL_GIT_BASE is the base when no option names one.
    const other = path.join(place.dir, 'cache-2');
    expect(
      await obtain(tiny, manifest, {
        env: env({ SCRAPE_MATERIAL_GIT_BASE: gitBase }),
        repoRoot: place.checkout,
        cacheRoot: other,
      }),
    ).toBe(path.join(other, 'tiny-pages', PINNED, 'test', 'test-pages'));
  });

  it('refuses a fetched commit whose files do not match the manifest, and keeps nothing of it', async () => {
    const err = await missing(
      obtain(tinyMaterial(LATER), manifest, { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase }),
    );
    expect(err.message).toContain(
      `does not hold the expected files: 1 differ from the manifest (b/expected-metadata.json)`,
    );
    expect(fs.readdirSync(path.join(place.cache, 'tiny-pages'))).toEqual([]);
  });
});

describe('the committed material', () => {
  it('pins each material to a full commit and lists its files with their sha256', () => {
    for (const m of Object.values(MATERIALS)) expect(m.commit, m.name).toMatch(/^[0-9a-f]{40}$/);
    const pages = readManifest('pages');
    expect(pages).toHaveLength(208);
    expect(corpusPageNames()).toHaveLength(104);
    expect(pages.every((e) => MATERIALS.pages.manifestIncludes(e.path))).toBe(true);
    const server = readManifest('firecrawl-source');
    expect(server.length).toBeGreaterThan(300);
    expect(server.map((e) => e.path)).toEqual(
      expect.arrayContaining(['LICENSE', 'SELF_HOST.md', 'apps/api/package.json']),
    );
    expect(server.every((e) => MATERIALS['firecrawl-source'].manifestIncludes(e.path))).toBe(true);
  });

  it('the repository’s pages are unchanged copies of corpus pages, with their licence notice', async () => {
    const names = fixturePageNames();
    expect(names.length).toBeGreaterThanOrEqual(5);
    expect(names.length).toBeLessThanOrEqual(15);
    const corpus = new Set(corpusPageNames());
    expect(names.filter((p) => !corpus.has(p))).toEqual([]);
    const entries = readManifest('pages').filter((e) => names.includes(e.path.split('/')[0]!));
    expect(entries).toHaveLength(2 * names.length);
    expect(await checkAgainst(FIXTURE_PAGES_DIR, entries)).toEqual({
      missing: [],
      differing: [],
      expected: entries.length,
    });
    const notice = fs.readFileSync(path.join(FIXTURE_PAGES_DIR, 'NOTICE'), 'utf8');
    expect(notice).toContain('Apache License, Version 2.0');
    expect(notice).toContain(MATERIALS.pages.commit);
    expect(fs.readFileSync(path.join(FIXTURE_PAGES_DIR, 'LICENSE-2.0'), 'utf8')).toContain('Apache License');
  });

  it('the corpus missing everywhere: the error names PAGES_DIR, the mirror and the pinned fetch of mozilla/readability', async () => {
    // A mirror that holds only the repository's pages is one with files missing.
    fs.mkdirSync(path.join(place.dir, 'shared', 'pages'), { recursive: true });
    for (const p of fixturePageNames())
      fs.symlinkSync(path.join(FIXTURE_PAGES_DIR, p), path.join(place.dir, 'shared', 'pages', p));
    const err = await missing(
      obtainMaterial('pages', { env: env(), repoRoot: place.checkout, cacheRoot: place.cache, gitBase: place.nowhere }),
    );
    const missingFiles = 2 * (104 - fixturePageNames().length);
    expect(err.message).toContain(`test material "pages" is missing: ${MATERIALS.pages.what}.`);
    expect(err.message).toContain('- PAGES_DIR: not set');
    expect(err.message).toContain(
      `- mirror ${path.join(place.dir, 'shared', 'pages')}: ${missingFiles} of 208 expected files missing (`,
    );
    expect(err.message).toContain(
      '1. set PAGES_DIR to a folder holding it (checked against test/material/manifests/pages.sha256)',
    );
    expect(err.message).toContain(`3. let the test fetch commit ${MATERIALS.pages.commit} of mozilla/readability`);
  });
});
