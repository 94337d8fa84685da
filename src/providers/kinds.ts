/**
 * Every provider kind the product ships: one line per kind in {@link PROVIDER_DESCRIPTORS}. The
 * configuration's {@link ProviderEntrySchema}, the registry (adapters), the webhook receiver
 * (verification) and the tables of docs/providers.md are built from this list.
 */
import { z } from 'zod';
import { describeEvidence } from '../model/evidence.js';
import type { AnyProviderDescriptor } from './descriptor.js';
import { entryCost, type EntryCost } from './shared/cost.js';
import { hasCredentialFor, type Credentials } from './shared/credentials.js';
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

/** The entry schemas of a descriptor tuple, as a tuple (for `z.discriminatedUnion`). */
type EntrySchemas<T extends readonly AnyProviderDescriptor[]> = {
  -readonly [K in keyof T]: T[K]['entrySchema'];
};

/** The entry schemas of `descriptors`, in order. */
function entrySchemas<T extends readonly AnyProviderDescriptor[]>(descriptors: T): EntrySchemas<T> {
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

/** Whether the calls of `entry` send a credential (see `ProviderDescriptor.credentialNeeded`; true for an unknown kind). */
export function needsCredential(entry: { kind: string }): boolean {
  const needed = findDescriptor(entry.kind)?.credentialNeeded;
  return needed ? needed(entry) : true;
}

/**
 * Whether jobs of `account` have what the provider of `entry` needs as far as the configuration
 * says (what a client can check): the entry sends no credential, or it names one for the account
 * (its own or the default; the value may live in a worker's environment).
 */
export function credentialConfigured(entry: { kind: string; credentials?: Credentials }, account: string): boolean {
  return !needsCredential(entry) || hasCredentialFor(entry, account);
}

/** Whether the webhooks of `entry` are signed (false: per-job token route; undefined: the kind has no webhooks). */
export function webhookSigned(entry: { kind: string }): boolean | undefined {
  const hook = findDescriptor(entry.kind)?.webhook;
  return hook ? hook.signed(entry) : undefined;
}

/**
 * One configured provider: the fields of its `kind` (`<kind>/config.ts`) plus the common ones
 * (`shared/entry.ts`: credentials, limits, poll, results, reconcile, webhook), discriminated on
 * `kind`, strict. Composed from {@link PROVIDER_DESCRIPTORS}; the configuration's `providers`
 * section is a record of these.
 */
export const ProviderEntrySchema = z.discriminatedUnion('kind', entrySchemas(PROVIDER_DESCRIPTORS));
/** A parsed provider entry of any shipped kind (a discriminated union on `kind`). */
export type ProviderEntry = z.infer<typeof ProviderEntrySchema>;

/**
 * The part of the configuration the providers read (the whole configuration satisfies it):
 * the entries by provider name, and the environment variables that hold the API's webhook
 * verification secrets (the registry scrubs their values like every other secret).
 */
export interface ProvidersConfig {
  providers: Record<string, ProviderEntry>;
  api?: { webhookSecrets?: Record<string, { secretEnv: string }> };
}

/**
 * The evidence table of docs/providers.md (Markdown), one row per kind and entry shape: what a
 * lost submit is decided from (see `src/model/evidence.ts`). `npm run docs:providers` writes these
 * lines there (`tools/docs/providersPage.ts`); a unit test keeps the two equal.
 */
export function evidenceTable(): string {
  const rows = PROVIDER_DESCRIPTORS.flatMap((d) =>
    d.evidence.map((e) => `| \`${d.kind}\`: ${e.label} | ${describeEvidence(e.evidence)} |`),
  );
  return [
    '| kind | what a lost submit is decided from (lag: how long a new job may be missing; strong: our reference read back; weak: URL and time only) |',
    '|---|---|',
    ...rows,
  ].join('\n');
}

/** What a job of `entry` costs: its kind's unit and estimate (the entry's `cost.estimate` first). Throws for an unknown kind. */
export function costOf(entry: ProviderEntry): EntryCost {
  return entryCost(descriptorOf(entry.kind).cost, entry);
}
