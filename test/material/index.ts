/**
 * STAND-IN for the test material module (another branch writes the real one with this
 * interface): where the material the tests need beside the repository is. This stand-in only
 * knows `firecrawl-source`: Firecrawl's API server source in `shared/firecrawl/source` beside the
 * repository root (`../shared`, or `../../shared` for a worktree one level deeper), unverified.
 * `pages` is not served here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Thrown when material is missing; the message names what is missing and where it was looked for. */
export class MaterialMissingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MaterialMissingError';
  }
}

/**
 * The absolute path of the named material.
 *
 * @throws MaterialMissingError when it is not there (or, in this stand-in, for `pages`).
 */
export async function obtainMaterial(name: 'pages' | 'firecrawl-source'): Promise<string> {
  if (name !== 'firecrawl-source')
    throw new MaterialMissingError(`${name}: not provided by the stand-in material module`);
  const tried = ['../shared/firecrawl/source', '../../shared/firecrawl/source'].map((d) => path.resolve(REPO, d));
  const dir = tried.find((d) => fs.existsSync(path.join(d, 'apps/api/package.json')));
  if (!dir)
    throw new MaterialMissingError(
      `firecrawl-source: no Firecrawl API source (apps/api/package.json) in ${tried.join(' or ')}`,
    );
  return dir;
}
