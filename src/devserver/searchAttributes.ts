/**
 * Registers custom search attributes on a namespace of a running Temporal cluster (for an external
 * server given by `TEMPORAL_ADDRESS`; the dev server gets them as `--search-attribute` flags instead).
 *
 * Source of the contract: Temporal API `temporal.api.operatorservice.v1.OperatorService`
 * (`ListSearchAttributes`, `AddSearchAttributes`) and `temporal.api.enums.v1.IndexedValueType`.
 */
import type { Connection } from '@temporalio/client';
import { z } from 'zod';
import { stderrLogger, type LineLogger } from './process.js';

/** Search attribute type names as the CLI and the Web UI spell them. */
export const SEARCH_ATTRIBUTE_TYPE_NAMES = [
  'Text',
  'Keyword',
  'Int',
  'Double',
  'Bool',
  'Datetime',
  'KeywordList',
] as const;

/** A search attribute type name, e.g. `Keyword`. */
export type SearchAttributeTypeName = (typeof SEARCH_ATTRIBUTE_TYPE_NAMES)[number];

/** Zod schema of a search attribute map: identifier → type name. */
export const SearchAttributeMapSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'search attribute names must be identifiers'),
  z.enum(SEARCH_ATTRIBUTE_TYPE_NAMES),
);

/** Wire values of `temporal.api.enums.v1.IndexedValueType` (api/enums/v1/common.proto). */
export const INDEXED_VALUE_TYPE: Record<SearchAttributeTypeName, number> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

/** Reverse of {@link INDEXED_VALUE_TYPE}: wire value → type name (undefined for unknown values). */
export function searchAttributeTypeName(value: number | null | undefined): SearchAttributeTypeName | undefined {
  return SEARCH_ATTRIBUTE_TYPE_NAMES.find((n) => INDEXED_VALUE_TYPE[n] === value);
}

/**
 * Lists the custom search attributes of `namespace` as name → type name (types the enum does not
 * know are omitted). Throws the gRPC error of `ListSearchAttributes` (e.g. NOT_FOUND for a missing
 * namespace).
 */
export async function listCustomSearchAttributes(
  connection: Connection,
  namespace: string,
): Promise<Record<string, SearchAttributeTypeName>> {
  const res = await connection.operatorService.listSearchAttributes({ namespace });
  const out: Record<string, SearchAttributeTypeName> = {};
  for (const [name, type] of Object.entries(res.customAttributes ?? {})) {
    const t = searchAttributeTypeName(type as number);
    if (t) out[name] = t;
  }
  return out;
}

/** Result of {@link ensureSearchAttributes}. */
export interface EnsureSearchAttributesResult {
  /** Names registered by this call. */
  added: string[];
  /** Names that were already registered with the wanted type. */
  existing: string[];
}

/**
 * Makes sure every attribute in `wanted` exists on `namespace` with the given type: lists the
 * namespace's custom attributes, adds the missing ones with `AddSearchAttributes`, tolerates
 * ALREADY_EXISTS (another process registered them first), then polls `ListSearchAttributes` until all
 * are visible (at most `visibleTimeoutMs`, default 10 000 ms).
 *
 * @throws Error if an attribute exists with a different type (it cannot be changed in place), if the
 *   cluster rejects the registration (e.g. no free slot of that type in SQL visibility, or missing
 *   permission), or if the attributes do not become visible in time.
 */
export async function ensureSearchAttributes(
  connection: Connection,
  namespace: string,
  wanted: Record<string, SearchAttributeTypeName>,
  opts: { logger?: LineLogger; visibleTimeoutMs?: number } = {},
): Promise<EnsureSearchAttributesResult> {
  const want = SearchAttributeMapSchema.parse(wanted);
  const log = opts.logger ?? stderrLogger;
  const current = await listCustomSearchAttributes(connection, namespace);
  const mismatched = Object.entries(want).filter(([n, t]) => current[n] !== undefined && current[n] !== t);
  if (mismatched.length) {
    throw new Error(
      `search attributes on namespace ${namespace} have the wrong type: ` +
        mismatched.map(([n, t]) => `${n} is ${current[n]}, want ${t}`).join('; ') +
        ' (a search attribute type cannot be changed; remove it with `temporal operator search-attribute remove` or use another namespace)',
    );
  }
  const missing = Object.entries(want).filter(([n]) => current[n] === undefined);
  const existing = Object.keys(want).filter((n) => current[n] !== undefined);
  if (!missing.length) return { added: [], existing };

  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map(([n, t]) => [n, INDEXED_VALUE_TYPE[t]])),
    });
  } catch (err) {
    const e = err as { code?: number; message?: string };
    // gRPC status 6 = ALREADY_EXISTS: someone else registered them between our list and add.
    if (e.code !== 6 && !/already exists/i.test(e.message ?? '')) {
      throw new Error(
        `registering search attributes ${missing.map(([n, t]) => `${n}=${t}`).join(', ')} on namespace ${namespace} failed: ${e.message ?? String(err)}`,
      );
    }
  }

  const deadline = Date.now() + (opts.visibleTimeoutMs ?? 10_000);
  for (;;) {
    const now = await listCustomSearchAttributes(connection, namespace);
    const notYet = missing.filter(([n]) => now[n] === undefined);
    const wrong = missing.filter(([n, t]) => now[n] !== undefined && now[n] !== t);
    if (wrong.length)
      throw new Error(
        `search attributes registered concurrently with another type: ${wrong.map(([n]) => `${n}=${now[n]}`).join(', ')}`,
      );
    if (!notYet.length) break;
    if (Date.now() > deadline)
      throw new Error(`search attributes not visible after registration: ${notYet.map(([n]) => n).join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  log(`registered search attributes on namespace ${namespace}: ${missing.map(([n, t]) => `${n}=${t}`).join(', ')}`);
  return { added: missing.map(([n]) => n), existing };
}
