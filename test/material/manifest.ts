/**
 * The manifests of the outside test material: `manifests/<name>.sha256`, one line per expected
 * file, `<sha256 hex>  <path relative to the material's folder>` (the `sha256sum` form, sorted by
 * path). A copy is usable when every listed file is there with that digest; files beyond the list
 * are allowed (a pinned checkout holds more than a mirror).
 *
 * `main.ts write-manifest` writes one from a copy, for pinning a new commit.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { manifestPath, type Material, type MaterialName } from './materials.js';

/** One expected file. */
export interface ManifestEntry {
  /** Path relative to the material's folder, `/`-separated. */
  path: string;
  /** sha256 of its bytes, lower-case hex. */
  sha256: string;
}

/** What a copy lacks against its manifest (both empty: the copy is complete). */
export interface ManifestCheck {
  /** Listed files that are not there (or are not regular files). */
  missing: string[];
  /** Listed files whose sha256 differs. */
  differing: string[];
  /** How many files the manifest lists. */
  expected: number;
}

const LINE = /^([0-9a-f]{64}) {2}(\S(?:.*\S)?)$/;

/**
 * Parse a manifest's text.
 * @throws Error naming the first malformed line (1-based).
 */
export function parseManifest(text: string): ManifestEntry[] {
  const entries: ManifestEntry[] = [];
  text.split('\n').forEach((line, i) => {
    if (line === '') return;
    const m = LINE.exec(line);
    if (!m) throw new Error(`manifest line ${i + 1} is not "<sha256>  <path>": ${JSON.stringify(line.slice(0, 120))}`);
    entries.push({ sha256: m[1]!, path: m[2]! });
  });
  return entries;
}

const cache = new Map<MaterialName, readonly ManifestEntry[]>();

/** The committed manifest of `name` (read once per process). */
export function readManifest(name: MaterialName): readonly ManifestEntry[] {
  let entries = cache.get(name);
  if (!entries) {
    entries = parseManifest(fs.readFileSync(manifestPath(name), 'utf8'));
    cache.set(name, entries);
  }
  return entries;
}

/** sha256 of a file, hex; `undefined` when it is missing or not a regular file. */
async function sha256Of(file: string): Promise<string | undefined> {
  let bytes: Buffer;
  try {
    if (!fs.statSync(file).isFile()) return undefined;
    bytes = await readFile(file);
  } catch {
    return undefined;
  }
  return createHash('sha256').update(bytes).digest('hex');
}

/** Check the folder `dir` against `entries` (every file read and hashed). */
export async function checkAgainst(dir: string, entries: readonly ManifestEntry[]): Promise<ManifestCheck> {
  const missing: string[] = [];
  const differing: string[] = [];
  for (const e of entries) {
    const got = await sha256Of(path.join(dir, ...e.path.split('/')));
    if (got === undefined) missing.push(e.path);
    else if (got !== e.sha256) differing.push(e.path);
  }
  return { missing, differing, expected: entries.length };
}

/**
 * One line saying what a check found, naming the files (at most `limit` of each kind), or
 * `undefined` when the copy is complete.
 */
export function describeCheck(check: ManifestCheck, limit = 5): string | undefined {
  const list = (files: string[]): string =>
    files.slice(0, limit).join(', ') + (files.length > limit ? `, and ${files.length - limit} more` : '');
  const parts: string[] = [];
  if (check.missing.length === check.expected && check.expected > 0)
    return `none of the ${check.expected} expected files is there`;
  if (check.missing.length)
    parts.push(`${check.missing.length} of ${check.expected} expected files missing (${list(check.missing)})`);
  if (check.differing.length)
    parts.push(`${check.differing.length} differ from the manifest (${list(check.differing)})`);
  return parts.length ? parts.join('; ') : undefined;
}

/** Every regular file under `dir`, relative and `/`-separated, sorted. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const d of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(r);
      else if (d.isFile()) out.push(r);
    }
  };
  walk('');
  return out.sort();
}

/** The manifest text of the folder `dir` as a copy of `m` (the files its definition includes). */
export async function buildManifest(m: Material, dir: string): Promise<string> {
  const lines: string[] = [];
  for (const rel of filesUnder(dir).filter(m.manifestIncludes)) {
    lines.push(`${(await sha256Of(path.join(dir, rel)))!}  ${rel}`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
