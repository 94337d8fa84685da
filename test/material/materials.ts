/**
 * What each piece of outside test material is and where it can come from: the environment variable
 * naming a folder that holds it, the mirror beside the checkout, and the public repository and
 * commit it is pinned to. The expected files (names and sha256) are in `manifests/<name>.sha256`,
 * in `sha256sum` form relative to the material's folder, so `sha256sum -c` checks a copy by hand.
 */
import path from 'node:path';

/** A piece of outside test material. */
export type MaterialName = 'pages' | 'firecrawl-source';

/** Every material, in a stable order. */
export const MATERIAL_NAMES: readonly MaterialName[] = ['pages', 'firecrawl-source'];

/** Where a material comes from and what it is. */
export interface Material {
  /** Its name: a {@link MaterialName}, or another for a test of the obtaining step itself. */
  readonly name: string;
  /** One line saying what it is (used in error messages). */
  readonly what: string;
  /** Environment variable naming a folder that holds it (checked, then used as is). */
  readonly envVar: string;
  /** The mirror, relative to the folder that holds the checkout (path segments). */
  readonly mirror: readonly string[];
  /** The public repository, `owner/name` (fetched from `<git base>/<owner>/<name>.git`). */
  readonly repository: string;
  /** The pinned commit (40 hex digits). */
  readonly commit: string;
  /** The material's folder inside the repository at that commit (`''`: its root). */
  readonly subdir: string;
  /** The paths of the repository checked out (a sparse checkout; the rest is never written). */
  readonly checkout: readonly string[];
  /**
   * Which files of a folder belong in the manifest when it is written (`manifest.ts write`), as
   * paths relative to the material's folder with `/` separators.
   */
  readonly manifestIncludes: (relPath: string) => boolean;
}

/** The material definitions. */
export const MATERIALS: Readonly<Record<MaterialName, Material>> = {
  pages: {
    name: 'pages',
    what: 'the page corpus: 104 real article pages with expected metadata, from the test pages of mozilla/readability (Apache-2.0)',
    envVar: 'PAGES_DIR',
    mirror: ['shared', 'pages'],
    repository: 'mozilla/readability',
    // The last commit that changed the test pages (2025-09-29); every page file here is unchanged
    // since 2025-03-25 (a07e62c8).
    commit: 'd7949dc47dd9ed9ee1d3b34ffdcf3bce28cde435',
    subdir: 'test/test-pages',
    checkout: ['/test/test-pages/'],
    manifestIncludes: (rel) => /^[^/]+\/(source\.html|expected-metadata\.json)$/.test(rel),
  },
  'firecrawl-source': {
    name: 'firecrawl-source',
    what: "Firecrawl's API server source (apps/api, LICENSE, SELF_HOST.md of firecrawl/firecrawl, AGPL-3.0), built and run by the real-server tests",
    envVar: 'FIRECRAWL_SOURCE_DIR',
    mirror: ['shared', 'firecrawl', 'source'],
    repository: 'firecrawl/firecrawl',
    // 2025-08-25, "fix(api): hide "Raced redirect error" from users (#2030)": the v2 API that the
    // `firecrawl` provider kind follows.
    commit: '61e38dc893a50bcaaaaac89c1117a7b51e9824fb',
    subdir: '',
    checkout: ['/apps/api/', '/LICENSE', '/SELF_HOST.md'],
    // Every file of those paths but the sample environment files (`.env.*`), which the copies
    // made for these tests leave out.
    manifestIncludes: (rel) =>
      (rel.startsWith('apps/api/') || rel === 'LICENSE' || rel === 'SELF_HOST.md') && !/(^|\/)\.env[^/]*$/.test(rel),
  },
};

/** Folder of the committed manifests. */
export const MANIFEST_DIR = path.join(import.meta.dirname, 'manifests');

/** Path of a material's manifest. */
export function manifestPath(name: string): string {
  return path.join(MANIFEST_DIR, `${name}.sha256`);
}
