/**
 * Every provider kind the product ships: one line per kind in {@link PROVIDER_DESCRIPTORS}. The
 * configuration's `ProviderEntrySchema` (`config.ts`), the registry (adapters), the webhook
 * receiver (verification) and the README's capabilities table are built from this list.
 */
import type { z } from 'zod';
import { describeEvidence } from '../model/evidence.js';
import type { AnyProviderDescriptor } from './descriptor.js';
import { firecrawlProvider } from './firecrawl/index.js';
import { httpProvider } from './http/index.js';
import { apifyProvider } from './apify/index.js';
import { referenceProvider } from './reference/index.js';
import { zyteProvider } from './zyte/index.js';
import { scraperApiProvider } from './scraperapi/index.js';
import { brightDataProvider } from './brightdata/index.js';
import { oxylabsProvider } from './oxylabs/index.js';

/** The shipped kinds. Add a kind: import its descriptor above and append it here. */
export const PROVIDER_DESCRIPTORS = [
  referenceProvider,
  firecrawlProvider,
  httpProvider,
  apifyProvider,
  zyteProvider,
  scraperApiProvider,
  brightDataProvider,
  oxylabsProvider,
] as const;

/** A shipped kind name (`reference`, …). */
export type ProviderKind = (typeof PROVIDER_DESCRIPTORS)[number]['kind'];

/** The entry schemas of a descriptor tuple, as a tuple (for `z.discriminatedUnion`). */
export type EntrySchemas<T extends readonly AnyProviderDescriptor[]> = { -readonly [K in keyof T]: T[K]['entrySchema'] };

/** The entry schemas of `descriptors`, in order. */
export function entrySchemas<T extends readonly AnyProviderDescriptor[]>(descriptors: T): EntrySchemas<T> {
  return descriptors.map((d) => d.entrySchema) as EntrySchemas<T>;
}

const BY_KIND = new Map<string, AnyProviderDescriptor>(PROVIDER_DESCRIPTORS.map((d) => [d.kind, d]));
if (BY_KIND.size !== PROVIDER_DESCRIPTORS.length) throw new Error('two provider descriptors share a kind');

/** The descriptor of `kind`, or undefined. */
export function findDescriptor(kind: string): AnyProviderDescriptor | undefined {
  return BY_KIND.get(kind);
}

/** The descriptor of `kind`; throws an `Error` naming the known kinds when there is none. */
export function descriptorOf(kind: string): AnyProviderDescriptor {
  const d = BY_KIND.get(kind);
  if (!d) throw new Error(`unknown provider kind "${kind}" (known: ${[...BY_KIND.keys()].join(', ')})`);
  return d;
}

/** Whether the webhooks of `entry` are signed (false: per-job token route; undefined: the kind has no webhooks). */
export function webhookSigned(entry: { kind: string }): boolean | undefined {
  const hook = findDescriptor(entry.kind)?.webhook;
  return hook ? hook.signed(entry) : undefined;
}

/** Parsed entry of any shipped kind (a discriminated union on `kind`). */
export type AnyEntry = z.infer<EntrySchemas<typeof PROVIDER_DESCRIPTORS>[number]>;

/**
 * The README's evidence table (Markdown), one row per kind and entry shape: what a lost submit is
 * decided from (see `src/model/evidence.ts`). The README holds exactly these lines; a unit test
 * keeps the two equal.
 */
export function evidenceTable(): string {
  const rows = PROVIDER_DESCRIPTORS.flatMap((d) => d.evidence.map((e) => `| \`${d.kind}\`: ${e.label} | ${describeEvidence(e.evidence)} |`));
  return ['| kind | what a lost submit is decided from (lag: how long a new job may be missing; strong: our reference read back; weak: URL and time only) |', '|---|---|', ...rows].join('\n');
}
