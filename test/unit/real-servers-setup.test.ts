/**
 * The real-server suite's setup (`test/real/`) on a machine that lacks its tools: it fails with
 * every missing tool named and where to get it, before building anything; it is never skipped.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureFirecrawlBuild, missingFirecrawlTools, RealServerBuildError } from '../real/firecrawl/build.js';
import { ensureScrapydVenv } from '../real/scrapyd/server.js';

const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'no-tools-'));
afterAll(() => fs.rmSync(empty, { recursive: true, force: true }));

describe('real-server setup without its tools', () => {
  it('names every tool Firecrawl’s build and run need, with where to get it', () => {
    const missing = missingFirecrawlTools({ PATH: empty });
    expect(missing.map((m) => m.split(' ')[0])).toEqual(['npm', 'go', 'cargo', 'gcc', 'patch', 'redis-server']);
    expect(missing.find((m) => m.startsWith('redis-server'))).toMatch(/Debian redis-server/);
  });

  it('the Firecrawl build fails before building anything, naming what is missing', async () => {
    const cache = path.join(empty, 'cache');
    const err = await ensureFirecrawlBuild({
      source: empty,
      log: () => undefined,
      env: { PATH: empty, HOME: empty, SCRAPE_CACHE_DIR: cache },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RealServerBuildError);
    expect((err as Error).message).toMatch(/cannot be built or run on this machine; missing:[\s\S]*redis-server/);
    expect(fs.existsSync(cache)).toBe(false);
  });

  it('the Scrapyd venv fails naming python3 when there is none', async () => {
    const err = await ensureScrapydVenv(() => undefined, { PATH: empty, HOME: empty }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RealServerBuildError);
    expect((err as Error).message).toMatch(/python3 is missing \(Debian python3, python3-venv\)/);
  });
});
