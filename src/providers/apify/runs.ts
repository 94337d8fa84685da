/**
 * The Run answers of the Apify API v2 the adapter reads (kind `apify`), after the OpenAPI schemas
 * `Run`, `RunShort` and the list envelope of `GET /v2/actors/{actorId}/runs`; the call table and
 * the sources are in `adapter.ts`.
 */
import { z } from 'zod';

/** The fields of a Run (and RunShort) the adapter reads; Apify sends many more. */
export const RunSchema = z.looseObject({
  id: z.string().min(1),
  status: z.string().min(1),
  statusMessage: z.string().nullish(),
  startedAt: z.string().nullish(),
  finishedAt: z.string().nullish(),
  exitCode: z.number().nullish(),
  defaultDatasetId: z.string().nullish(),
  defaultKeyValueStoreId: z.string().nullish(),
  meta: z.looseObject({ origin: z.string().nullish() }).nullish(),
  /** What the run has cost so far, USD (eventually consistent for about 10 s after it ends). */
  usageTotalUsd: z.number().nullish(),
});
export const RunResponseSchema = z.looseObject({ data: RunSchema });
export const RunListSchema = z.looseObject({
  data: z.looseObject({
    total: z.number().int().nonnegative(),
    offset: z.number().int().nonnegative().optional(),
    items: z.array(RunSchema),
  }),
});
