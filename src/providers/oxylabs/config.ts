/**
 * Configuration fields of the `oxylabs` kind (Oxylabs Web Scraper API, Push-Pull integration;
 * developers.oxylabs.io "Push-Pull", "Response Codes", "Rate Limits"; read 2026-11-30). The
 * credential is `user:password` (HTTP Basic).
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/**
 * The kind's own fields:
 * - `source`: the Oxylabs scraper (`universal` by default; `amazon_product`, `google_search`, …);
 *   a job's `options.source` overrides it;
 * - `params`: job parameters sent with every job (`render`, `geo_location`, `parse`, …); a job's
 *   `options` override them field by field (our `url`, `callback_url` and `client_notes` win).
 */
export const OxylabsConfigSchema = z.strictObject({
  kind: z.literal('oxylabs'),
  ...httpEndpointFields({ baseUrl: 'https://data.oxylabs.io', submitTimeoutMs: 30_000, readTimeoutMs: 30_000 }),
  source: z.string().min(1).default('universal'),
  params: z.record(z.string(), z.unknown()).default({}),
});

/** A parsed `oxylabs` entry (its fields plus the common ones). */
export type OxylabsEntry = EntryFor<typeof OxylabsConfigSchema>;
