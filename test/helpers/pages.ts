/**
 * The page server of the tests (tools/sim/pageServer.ts), on one of two folders of real article
 * pages:
 *
 * - {@link startPageServer}: the repository's own 15 pages (`test/fixtures/pages/`, unchanged
 *   copies from the test pages of mozilla/readability, licence in its NOTICE), which every test
 *   that scrapes "a page" uses. A bare clone has them: no network, nothing beside the checkout.
 * - {@link startCorpusPageServer}: the whole 104-page corpus, obtained through `test/material/`
 *   (`PAGES_DIR`, the mirror `../shared/pages`, or the pinned fetch); it throws
 *   `MaterialMissingError`, naming every way to provide the corpus, when none gives it.
 */
import path from 'node:path';
import {
  listCorpusPages,
  startPageServer as startServer,
  type PageServer,
  type PageServerOptions,
} from '../../tools/sim/pageServer.js';
import { obtainMaterial, type ObtainMaterialOptions } from '../material/index.js';

export type { PageServer } from '../../tools/sim/pageServer.js';

/** The repository's subset of the page corpus (one folder per page). */
export const FIXTURE_PAGES_DIR = path.resolve(import.meta.dirname, '..', 'fixtures', 'pages');

/** Names of the pages in {@link FIXTURE_PAGES_DIR}, sorted. */
export function fixturePageNames(): string[] {
  return listCorpusPages(FIXTURE_PAGES_DIR);
}

/** The page server on the repository's pages ({@link FIXTURE_PAGES_DIR}); `host` as in tools/sim. */
export function startPageServer(options: Omit<PageServerOptions, 'pagesDir'> = {}): Promise<PageServer> {
  return startServer({ ...options, pagesDir: FIXTURE_PAGES_DIR });
}

/**
 * The page server on the whole corpus (see the module docs).
 * @throws MaterialMissingError when the corpus cannot be obtained.
 */
export async function startCorpusPageServer(
  options: Omit<PageServerOptions, 'pagesDir'> & { material?: ObtainMaterialOptions } = {},
): Promise<PageServer> {
  const { material, ...server } = options;
  return startServer({ ...server, pagesDir: await obtainMaterial('pages', material) });
}
