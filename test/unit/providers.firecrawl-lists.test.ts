/**
 * The `firecrawl` adapter's lookups of a lost submit against a real loopback server whose lists
 * answer a 2xx without the list (`{success: true}` alone). Firecrawl's controllers always send the
 * list (`crawls` for `GET /v2/crawl/active`, `data` for `GET /v2/team/activity`); an answer without
 * it proves nothing, and reading it as an empty list would prove our job absent and let a resubmit
 * pay for it twice.
 */
import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { FirecrawlAdapter, firecrawlProvider, type FirecrawlEntry } from '../../src/providers/firecrawl/index.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { serveCannedAnswers } from '../helpers/answers.js';

/** What each list answers, by the server's mode (the first path segment). */
const MODES: Record<string, { active: string; activity: string }> = {
  documented: {
    active: '{"success": true, "crawls": []}',
    activity: '{"success": true, "data": [], "has_more": false}',
  },
  noactive: { active: '{"success": true}', activity: '{"success": true, "data": [], "has_more": false}' },
  noactivity: { active: '{"success": true, "crawls": []}', activity: '{"success": true}' },
};

const base = serveCannedAnswers((req) => {
  const [, mode = '', ...rest] = new URL(req.url ?? '', 'http://x').pathname.split('/');
  const m = MODES[mode];
  const path = `/${rest.join('/')}`;
  return {
    body: (path === '/v2/crawl/active' ? m?.active : path === '/v2/team/activity' ? m?.activity : '{}') ?? '{}',
  };
});

function find(mode: string) {
  const entry = firecrawlProvider.entrySchema.parse({
    kind: 'firecrawl',
    credentials: {},
    baseUrl: `${base()}/${mode}`,
    operation: 'crawl',
  }) as FirecrawlEntry;
  return new FirecrawlAdapter('fc', entry).findSubmitted({
    apiKey: FIXTURE_KEYS.acme,
    secrets: [],
    clientRef: 'ref-1',
    request: { url: 'https://docs.example/', format: 'markdown', options: {} },
    submittedAfter: new Date().toISOString(),
  });
}

describe('firecrawl: a lost submit’s list reads prove absence only from a list Firecrawl answered', () => {
  it('the documented empty lists are complete readings with no candidate', async () => {
    const readings = await find('documented');
    expect(readings.map((r) => [r.lookup, r.available, r.complete, r.candidates.length])).toEqual([
      ['GET /v2/crawl/active', true, true, 0],
      ['GET /v2/team/activity', true, true, 0],
    ]);
  });

  for (const mode of ['noactive', 'noactivity'])
    it(`${mode}: a 200 without its list is an unexpected answer (tried again), never an empty list`, async () => {
      const err = await find(mode).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect((err as ProviderError).kind).toBe('transient');
      expect((err as ProviderError).details).toMatchObject({ httpStatus: 200, code: 'INVALID_RESPONSE' });
    });
});
