/**
 * `cancelScrape`'s `timeoutMs` is checked before anything is asked: a value no timer can wait for
 * (NaN, infinite, past 2^31 − 1 ms, where Node fires at once) is a clear error, not a cancel that
 * answers at once.
 */
import { describe, expect, it } from 'vitest';
import { ScrapeClient } from '../../src/client/index.js';

describe('cancelScrape timeoutMs', () => {
  // Nothing behind the client: the check must come before any read or call.
  const client = new ScrapeClient({} as never);
  for (const timeoutMs of [Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31])
    it(`${timeoutMs} is refused as invalid input, naming the field`, async () => {
      await expect(client.cancelScrape('acme', 'scrape:acme:k', { timeoutMs })).rejects.toMatchObject({
        code: 'invalid',
        message: expect.stringMatching(/^timeoutMs must be/),
      });
    });
});
