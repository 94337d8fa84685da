/**
 * The real servers themselves, driven directly (no product): what the other files of this suite
 * rely on. Firecrawl crawls the sample site on 127.0.0.10 (the test-only loopback switch works) and
 * counts every page; Scrapyd runs the `realsite` spider over it and serves the items as JSON lines.
 * When these fail, the suite's servers are broken, not the product.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { waitFor } from '../helpers/stack.js';
import { firecrawlCall, firecrawlDocuments, settledStatus } from './firecrawl/api.js';
import { SCRAPYD_PROJECT, SCRAPYD_SPIDER } from './scrapyd/server.js';
import { startSite, type Site } from './site.js';

describe('the real servers of the suite', () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(async () => site?.close());

  it('Firecrawl crawls the sample site served on 127.0.0.10 and counts every page it serves', async () => {
    const { status, body } = await firecrawlCall<{ success: boolean; id: string }>('/v2/crawl', {
      method: 'POST',
      json: { url: `${site.url}/`, limit: 50 },
    });
    expect(status).toBe(200);
    const settled = await settledStatus(body.id, site);
    expect(settled.status).toBe('completed');
    const { docs, distinctUrls } = await firecrawlDocuments(body.id);
    expect(docs).toHaveLength(settled.completed);
    expect(distinctUrls.size).toBe(settled.completed);
    expect(settled.completed).toBeGreaterThanOrEqual(7);
    expect(docs.map((d) => d.metadata?.title)).toContain('Write once | Field Notes');
  });

  it('Scrapyd runs the realsite spider over the sample site and serves its items as JSON lines', async () => {
    const scrapyd = inject('real').scrapyd;
    const form = new URLSearchParams({
      project: SCRAPYD_PROJECT,
      spider: SCRAPYD_SPIDER,
      url: `${site.url}/`,
      follow: '1',
    });
    const scheduled = (await (await fetch(`${scrapyd}/schedule.json`, { method: 'POST', body: form })).json()) as {
      status: string;
      jobid: string;
    };
    expect(scheduled.status).toBe('ok');
    await waitFor(
      async () =>
        ((await (await fetch(`${scrapyd}/status.json?job=${scheduled.jobid}`)).json()) as { currstate: string })
          .currstate === 'finished',
      180_000,
      'the spider to finish',
    );
    const feed = await fetch(`${scrapyd}/items/${SCRAPYD_PROJECT}/${SCRAPYD_SPIDER}/${scheduled.jobid}.jl`);
    expect(feed.status).toBe(200);
    const items = (await feed.text())
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { url: string; title: string });
    expect(items.length).toBeGreaterThanOrEqual(7);
    expect(items.map((i) => i.title)).toContain('Write once | Field Notes');
  });
});
