/**
 * Configuration fields of the `zyte` kind (Zyte Scrapy Cloud jobs). Scrapy Cloud has no webhooks,
 * so an entry with `webhook` is refused. The credential is the Scrapy Cloud API key (not the Zyte
 * API key: they differ).
 */
import { z } from 'zod';
import { HttpUrlSchema, httpEndpointFields, type EntryFor } from '../shared/entry.js';

/** Form fields of `run.json` that are not spider arguments (Jobs API: "any other parameter will be treated as a spider argument"). */
export const ZYTE_RESERVED_FIELDS = [
  'project',
  'spider',
  'jobq_id',
  'add_tag',
  'priority',
  'job_settings',
  'units',
  'apikey',
  'job',
  'meta',
  'cmd_args',
  'environment',
] as const;

const reserved = (name: string) => (ZYTE_RESERVED_FIELDS as readonly string[]).includes(name);

/** Our state for a close reason of a finished job (see `zyteState`). */
const CloseReasonOutcomeSchema = z.enum(['completed', 'failed', 'cancelled']);

/**
 * The kind's own fields:
 * - `baseUrl`: the Jobs API (default `https://app.zyte.com/api`: `run.json`, `jobs/list.json`,
 *   `jobs/stop.json`); `storageUrl`: the storage API (default `https://storage.zyte.com`: job
 *   metadata `jobs/…`, `items/…`); `submitTimeoutMs` (30 s), `readTimeoutMs` (15 s);
 * - `project` (numeric project ID) and `spider` (spider name), both required;
 * - `auth`: `basic` (default: HTTP Basic with the key as user name and an empty password) or
 *   `query` (`?apikey=`; every recorded URL is redacted either way);
 * - `tagPrefix` (default `scrape-ref-`): the tag `<prefix><client reference>` is added to every
 *   job (`add_tag`) and reconciliation lists jobs by it;
 * - `refArgument` (default `scrape_ref`, null: none): a spider argument carrying our reference —
 *   this makes Zyte's refusal of a second pending/running job with the same spider arguments a
 *   dedupe of our own submits only (see the adapter);
 * - `urlArgument` (default `url`, null: none): the spider argument carrying the URL to scrape;
 * - `jobArgs`: more spider arguments sent with every job (strings), under the job's `options`;
 * - `jobSettings` (Scrapy settings for the job, JSON), `units` (1–6), `priority` (0–4);
 * - `closeReasons`: what a finished job's `close_reason` means, over the adapter's defaults
 *   (e.g. `{"closespider_errorcount": "completed"}`).
 */
export const ZyteConfigSchema = z.strictObject({
  kind: z.literal('zyte'),
  ...httpEndpointFields({ baseUrl: 'https://app.zyte.com/api', submitTimeoutMs: 30_000, readTimeoutMs: 15_000 }),
  storageUrl: HttpUrlSchema.default('https://storage.zyte.com'),
  project: z.union([z.string().regex(/^\d+$/, 'a numeric project ID'), z.number().int().positive()]).transform(String),
  spider: z.string().min(1).max(200),
  auth: z.enum(['basic', 'query']).default('basic'),
  tagPrefix: z
    .string()
    .max(40)
    .regex(/^[A-Za-z0-9_.:-]*$/, 'letters, digits and _ . : - only')
    .default('scrape-ref-'),
  refArgument: z
    .string()
    .min(1)
    .max(100)
    .refine((n) => !reserved(n), 'a reserved run.json field')
    .nullable()
    .default('scrape_ref'),
  urlArgument: z
    .string()
    .min(1)
    .max(100)
    .refine((n) => !reserved(n), 'a reserved run.json field')
    .nullable()
    .default('url'),
  jobArgs: z
    .record(z.string(), z.string())
    .refine((o) => Object.keys(o).every((k) => !reserved(k)), {
      message: `jobArgs may not use the run.json fields ${ZYTE_RESERVED_FIELDS.join(', ')}`,
    })
    .default({}),
  jobSettings: z.record(z.string(), z.unknown()).optional(),
  units: z.number().int().min(1).max(6).optional(),
  priority: z.number().int().min(0).max(4).optional(),
  closeReasons: z.record(z.string().min(1), CloseReasonOutcomeSchema).default({}),
});

/** A parsed `zyte` entry (its fields plus the common ones). */
export type ZyteEntry = EntryFor<typeof ZyteConfigSchema>;
