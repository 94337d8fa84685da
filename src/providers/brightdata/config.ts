/**
 * Configuration fields of the `brightdata` kind (Bright Data Web Scraper API, datasets v3;
 * docs.brightdata.com "Scraper async requests" (scraper-rest-api.json), "Management APIs",
 * "Download Snapshot", "Error codes by Endpoint", "Scraper API error codes", "Scraper API limits";
 * read 2026-11-30). The credential is the API key, sent as `Authorization: Bearer`.
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';

/** Bright Data blocks an IP that receives this many `429` answers within {@link BRIGHTDATA_BLOCK_WINDOW_MS}. */
export const BRIGHTDATA_BLOCK_AT = 25;
/** The window of Bright Data's IP block rule, ms (5 minutes). */
export const BRIGHTDATA_BLOCK_WINDOW_MS = 300_000;

/**
 * The kind's own fields:
 * - `baseUrl` (default `https://api.brightdata.com`), `submitTimeoutMs` (30 s), `readTimeoutMs` (60 s: a
 *   snapshot part can be large);
 * - `datasetId` (required): the scraper's dataset ID (`gd_…`), sent as `?dataset_id=`;
 * - `input`: fixed fields of every input object (a job's `options.input` overrides them; the job's
 *   URL is always the input's `url`);
 * - `trigger`: `includeErrors` (default true: failed records come back with `error`/`error_code`),
 *   `type` (`discover_new`), `discoverBy`, `limitPerInput`, `customOutputFields` (`a|b.c`);
 * - `download.batchSize`: records per downloaded part (≥ 1000, Bright Data's minimum; default 1000);
 * - `rateLimit`: the guard against Bright Data's IP block (25 × `429` in 5 min blocks the caller's IP
 *   until support clears it). Every `429` seen by this worker process for the same API host is
 *   counted in a sliding window of `windowMs` (default 5 min); once `maxRefusals` (default 10: the
 *   docs call 10 in 5 min "close to the block") are in the window, no Bright Data call leaves the
 *   process until the oldest leaves it. Below that, each `429` cools the key down for its
 *   `Retry-After`, else for `backoffMs` doubled per refusal in the window up to `maxBackoffMs`
 *   (the docs' 2, 4, 8, 16, 32 s). `maxRefusals + limits.maxConcurrent` must stay below 25 (calls
 *   already in flight when the guard closes can still be refused);
 * - `listing`: how a lost trigger is looked for: snapshots listed (`limit`, ≤ 5000, default 200)
 *   since the job's first submit minus `marginMs` (clock skew; default 1 min), and the inputs of at
 *   most `maxInputReads` (default 25) of them compared with ours: those created after the submit
 *   first (oldest first), then those in the margin (closest first).
 */
export const BrightDataConfigSchema = z.strictObject({
  kind: z.literal('brightdata'),
  ...httpEndpointFields({ baseUrl: 'https://api.brightdata.com', submitTimeoutMs: 30_000, readTimeoutMs: 60_000 }),
  datasetId: z.string().min(1).max(200),
  input: z.record(z.string(), z.unknown()).default({}),
  trigger: z
    .strictObject({
      includeErrors: z.boolean().default(true),
      type: z.literal('discover_new').optional(),
      discoverBy: z.string().min(1).optional(),
      limitPerInput: z.number().int().positive().optional(),
      customOutputFields: z.string().min(1).optional(),
    })
    .prefault({}),
  download: z.strictObject({ batchSize: z.number().int().min(1000).max(1_000_000).default(1000) }).prefault({}),
  rateLimit: z
    .strictObject({
      maxRefusals: z
        .number()
        .int()
        .min(1)
        .max(BRIGHTDATA_BLOCK_AT - 1)
        .default(10),
      windowMs: z.number().int().min(BRIGHTDATA_BLOCK_WINDOW_MS).max(3_600_000).default(BRIGHTDATA_BLOCK_WINDOW_MS),
      backoffMs: z.number().int().min(100).max(60_000).default(2_000),
      maxBackoffMs: z.number().int().min(100).max(600_000).default(32_000),
    })
    .prefault({}),
  listing: z
    .strictObject({
      limit: z.number().int().min(1).max(5000).default(200),
      maxInputReads: z.number().int().min(1).max(100).default(25),
      marginMs: z.number().int().min(0).max(3_600_000).default(60_000),
    })
    .prefault({}),
});

/** A parsed `brightdata` entry (its fields plus the common ones). */
export type BrightDataEntry = EntryFor<typeof BrightDataConfigSchema>;
