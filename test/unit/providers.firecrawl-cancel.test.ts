/**
 * The `firecrawl` adapter's cancel against a real loopback server answering `DELETE
 * /v2/crawl/{id}` with a 2xx. Firecrawl's own controller answers `200 {status: "cancelled"}`;
 * only that answer shows the job cancelled. A `200 {success: false, …}` is a refusal dressed as a
 * success and must never be recorded as `cancelled`; any other 2xx body is not Firecrawl's word
 * either, and must never be taken as an acceptance (after which a `404` reads as cancelled).
 */
import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { FirecrawlAdapter, firecrawlProvider, type FirecrawlEntry } from '../../src/providers/firecrawl/index.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { serveCannedAnswers } from '../helpers/answers.js';

/** The answer to `DELETE /v2/crawl/<name>`. */
const ANSWERS: Record<string, string> = {
  documented: '{"status": "cancelled"}',
  refused: '{"success": false, "error": "Job could not be cancelled"}',
  other: '{"ok": true}',
  html: '<html><body>OK</body></html>',
};

const base = serveCannedAnswers((req) => {
  const name = /^\/v2\/crawl\/([a-z]+)$/.exec(req.url ?? '')?.[1] ?? '';
  return { type: name === 'html' ? 'text/html' : 'application/json', body: ANSWERS[name] ?? '{}' };
});

function cancel(name: string) {
  const entry = firecrawlProvider.entrySchema.parse({
    kind: 'firecrawl',
    credentials: {},
    baseUrl: base(),
    operation: 'crawl',
  }) as FirecrawlEntry;
  return new FirecrawlAdapter('fc', entry).cancel(name, { apiKey: FIXTURE_KEYS.acme, secrets: [] });
}

describe('firecrawl: a 2xx answer to a cancel', () => {
  it('the documented {status: "cancelled"} is the job cancelled', async () => {
    expect(await cancel('documented')).toEqual({ accepted: true, state: 'cancelled', providerStatus: 'cancelled' });
  });

  it('{success: false} is never read as cancelled: the call fails as an unexpected answer, to be tried again', async () => {
    const err = await cancel('refused').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe('transient');
    expect((err as ProviderError).details).toMatchObject({ httpStatus: 200, code: 'INVALID_RESPONSE' });
  });

  it("any other 2xx (a proxy's page, JSON that is not Firecrawl's) is not an acceptance: the call fails as an unexpected answer, to be tried again", async () => {
    // An acceptance is evidence: after it, a 404 reads as "stopped and forgotten" (cancelled).
    for (const name of ['other', 'html']) {
      const err = await cancel(name).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ProviderError);
      expect((err as ProviderError).kind).toBe('transient');
      expect((err as ProviderError).details).toMatchObject({ httpStatus: 200, code: 'INVALID_RESPONSE' });
    }
  });
});
