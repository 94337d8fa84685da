/**
 * One real job per provider kind for `npm run smoke:providers`: which environment variables a kind
 * needs (its credential and anything the job needs), the provider entry for the real service, and
 * the job to run. THE place where each adapter's author fills in the kind's recipe: a kind whose
 * recipe has no `entry`/`job` yet, or whose kind is not shipped (`src/providers/kinds.ts`),
 * is reported as skipped with the reason.
 *
 * Credentials are named by environment variable (`apiKeyEnv`), so the configuration never holds
 * them; a Basic `user:password` pair assembled from two variables is the one exception (kept in
 * memory only).
 */

import { readFileSync } from 'node:fs';

/** Environment of the smoke run. */
export type SmokeEnv = Record<string, string | undefined>;

/** One kind's smoke recipe. */
export interface SmokeRecipe {
  /** Provider kind (`src/providers/<kind>`). */
  kind: string;
  /** Variables that must all be set (non-empty) for this kind to run. */
  env: readonly string[];
  /** Optional variables the recipe reads (documented in docs/providers.md). */
  optionalEnv?: readonly string[];
  /** The provider entry for the real service, without `kind` (credentials by `apiKeyEnv`). */
  entry?: (env: SmokeEnv) => Record<string, unknown>;
  /** The job to run: its target URL and provider options. */
  job?: (env: SmokeEnv) => { url: string; options?: Record<string, unknown> };
  /** How long the job may take before the run calls it failed, ms (default 5 min). */
  deadlineMs?: number;
}

/** Every kind's recipe, in the order of docs/providers.md. */
export const SMOKE_RECIPES: readonly SmokeRecipe[] = [
  {
    // The reference provider wherever you run it (`npm run sim`); also how the runner itself is tested.
    kind: 'reference',
    env: ['SMOKE_REFERENCE_URL', 'SMOKE_REFERENCE_KEY'],
    optionalEnv: ['SMOKE_REFERENCE_TARGET'],
    entry: (env) => ({
      baseUrl: env.SMOKE_REFERENCE_URL,
      credentials: { default: { apiKeyEnv: 'SMOKE_REFERENCE_KEY' } },
    }),
    job: (env) => ({ url: env.SMOKE_REFERENCE_TARGET ?? 'https://example.com/' }),
    deadlineMs: 120_000,
  },
  // Filled in by each adapter's author (entry + job); until then the kind is skipped with the reason.
  {
    // A one-URL batch scrape (the default) or, with FIRECRAWL_OPERATION=crawl, a crawl of at most 3 pages.
    kind: 'firecrawl',
    env: ['FIRECRAWL_API_KEY'],
    optionalEnv: ['FIRECRAWL_OPERATION', 'FIRECRAWL_TARGET'],
    entry: (env) => ({
      operation: env.FIRECRAWL_OPERATION === 'crawl' ? 'crawl' : 'batch',
      credentials: { default: { apiKeyEnv: 'FIRECRAWL_API_KEY' } },
    }),
    job: (env) => ({
      url: env.FIRECRAWL_TARGET ?? 'https://example.com/',
      options: env.FIRECRAWL_OPERATION === 'crawl' ? { limit: 3 } : {},
    }),
  },
  {
    // Any actor that takes `startUrls`; the default crawls one page of the target (Website Content Crawler).
    kind: 'apify',
    env: ['APIFY_TOKEN'],
    optionalEnv: ['APIFY_ACTOR_ID', 'APIFY_TARGET'],
    entry: (env) => ({
      actorId: env.APIFY_ACTOR_ID ?? 'apify~website-content-crawler',
      credentials: { default: { apiKeyEnv: 'APIFY_TOKEN' } },
      input: env.APIFY_ACTOR_ID ? {} : { defaults: { maxCrawlPages: 1, maxCrawlDepth: 0 } },
      results: { maxDocuments: 100 },
    }),
    job: (env) => ({ url: env.APIFY_TARGET ?? 'https://example.com/' }),
    deadlineMs: 10 * 60_000,
  },
  {
    // ScraperAPI async: one job, the key from the variable (sent in the JSON body).
    kind: 'scraperapi',
    env: ['SCRAPERAPI_KEY'],
    optionalEnv: ['SCRAPERAPI_TARGET'],
    entry: () => ({ credentials: { default: { apiKeyEnv: 'SCRAPERAPI_KEY' } } }),
    job: (env) => ({ url: env.SCRAPERAPI_TARGET ?? 'https://example.com/' }),
    deadlineMs: 10 * 60_000,
  },
  {
    // Bright Data: one trigger of the dataset you name, with the target URL as its input (a
    // "collect by URL" scraper; BRIGHTDATA_TARGET must be a page that scraper accepts).
    kind: 'brightdata',
    env: ['BRIGHTDATA_API_TOKEN', 'BRIGHTDATA_DATASET_ID'],
    optionalEnv: ['BRIGHTDATA_TARGET'],
    entry: (env) => ({
      datasetId: env.BRIGHTDATA_DATASET_ID,
      credentials: { default: { apiKeyEnv: 'BRIGHTDATA_API_TOKEN' } },
      limits: { maxConcurrent: 2 },
    }),
    job: (env) => ({ url: env.BRIGHTDATA_TARGET ?? 'https://example.com/' }),
    deadlineMs: 15 * 60_000,
  },
  {
    // Oxylabs Push-Pull, source `universal`: the Basic pair is assembled in memory from the two variables.
    kind: 'oxylabs',
    env: ['OXYLABS_USER', 'OXYLABS_PASS'],
    optionalEnv: ['OXYLABS_TARGET'],
    entry: (env) => ({ credentials: { default: { apiKey: `${env.OXYLABS_USER}:${env.OXYLABS_PASS}` } } }),
    job: (env) => ({ url: env.OXYLABS_TARGET ?? 'https://example.com/' }),
    deadlineMs: 10 * 60_000,
  },
  {
    // A spider deployed to your Scrapy Cloud project that takes the page as a spider argument (`url` unless ZYTE_URL_ARGUMENT says otherwise).
    kind: 'zyte',
    env: ['ZYTE_API_KEY', 'ZYTE_PROJECT_ID', 'ZYTE_SPIDER'],
    optionalEnv: ['ZYTE_URL_ARGUMENT', 'ZYTE_TARGET'],
    entry: (env) => ({
      project: env.ZYTE_PROJECT_ID,
      spider: env.ZYTE_SPIDER,
      urlArgument: env.ZYTE_URL_ARGUMENT ?? 'url',
      credentials: { default: { apiKeyEnv: 'ZYTE_API_KEY' } },
      results: { maxDocuments: 1_000 },
    }),
    job: (env) => ({ url: env.ZYTE_TARGET ?? 'https://quotes.toscrape.com/' }),
    deadlineMs: 15 * 60_000,
  },
  {
    // Your own declarative provider: SMOKE_HTTP_CONFIG is a JSON file with one `http` entry (without
    // "kind"; credentials by apiKeyEnv, which must be exported too), e.g. `hyperbrowser` in docs/providers.md.
    kind: 'http',
    env: ['SMOKE_HTTP_CONFIG'],
    optionalEnv: ['SMOKE_HTTP_TARGET'],
    entry: (env) => JSON.parse(readFileSync(env.SMOKE_HTTP_CONFIG!, 'utf8')) as Record<string, unknown>,
    job: (env) => ({ url: env.SMOKE_HTTP_TARGET ?? 'https://example.com/' }),
  },
];
