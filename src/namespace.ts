/**
 * The scrape workflows' namespace: the search attributes they set (`src/workflows/searchAttributes.ts`)
 * checked before a worker polls ({@link checkSearchAttributes}: a namespace that is not set up is
 * refused with {@link MissingSearchAttributesError}) and registered on a namespace of a running
 * cluster by `scrape setup` and the test and demo tools ({@link ensureSearchAttributes}; a dev
 * server gets them as `--search-attribute` flags instead).
 *
 * Source of the contract: Temporal API `temporal.api.operatorservice.v1.OperatorService`
 * (`ListSearchAttributes`, `AddSearchAttributes`) and `temporal.api.enums.v1.IndexedValueType`.
 */
import { Runtime, type NativeConnection } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from './workflows/searchAttributes.js';
import type { Connection } from '@temporalio/client';
import { z } from 'zod';

/** One line per event of a registration (default: stderr). */
export type LineLogger = (line: string) => void;

const stderrLogger: LineLogger = (line) => void process.stderr.write(`[namespace] ${line}\n`);

/** A search attribute the scrape workflows set that a namespace lacks, or holds with another type. */
export interface SearchAttributeProblem {
  name: string;
  /** The Temporal type the workflows need (`Keyword`, …). */
  type: string;
  /** The type registered on the namespace, when the attribute exists with another one. */
  registeredAs?: string;
}

/**
 * Thrown by {@link createScrapeWorker} (before anything polls) when the namespace lacks search
 * attributes the scrape workflows set, or holds one with another type: every upsert of a job's
 * state would fail there, so jobs would stall on their first workflow task. `problems` names each
 * attribute and its type; the message also says how to register them.
 */
export class MissingSearchAttributesError extends Error {
  override readonly name = 'MissingSearchAttributesError';
  constructor(
    readonly namespace: string,
    readonly problems: SearchAttributeProblem[],
  ) {
    const missing = problems.filter((p) => !p.registeredAs);
    const wrong = problems.filter((p) => p.registeredAs);
    super(
      [
        `namespace "${namespace}" is not set up for the scrape workflows:`,
        missing.length
          ? ` it lacks the search attribute${missing.length > 1 ? 's' : ''} ${missing.map((p) => `${p.name} (${p.type})`).join(', ')}`
          : '',
        missing.length && wrong.length ? ';' : '',
        wrong.length
          ? ` ${wrong.map((p) => `${p.name} is registered as ${p.registeredAs}, the workflows need ${p.type}`).join('; ')}`
          : '',
        '.',
        missing.length
          ? ` Register ${missing.length > 1 ? 'them' : 'it'} with \`npm run cli -- setup\` (the same configuration; see docs/operations.md, "Pointing it at a real Temporal cluster"), or ${createCommands(namespace, missing)}.`
          : '',
        wrong.length
          ? ' A search attribute’s type cannot be changed in place: remove it (`temporal operator search-attribute remove`) and run setup, or use another namespace.'
          : '',
      ].join(''),
    );
  }
}

/** The Temporal CLI commands that register `missing` (the CLI takes one `--type` per command). */
function createCommands(namespace: string, missing: SearchAttributeProblem[]): string {
  const byType = new Map<string, string[]>();
  for (const p of missing) byType.set(p.type, [...(byType.get(p.type) ?? []), p.name]);
  return [...byType]
    .map(
      ([type, names]) =>
        `\`temporal operator search-attribute create --namespace ${namespace} ${names.map((n) => `--name ${n}`).join(' ')} --type ${type}\``,
    )
    .join(' and ');
}

/** gRPC status codes of a namespace whose search attributes cannot be read by this connection. */
const CANNOT_LIST = new Set([7 /* PERMISSION_DENIED */, 12 /* UNIMPLEMENTED */, 16 /* UNAUTHENTICATED */]);

/**
 * Checks that `namespace` has every search attribute of `src/workflows/searchAttributes.ts` with
 * its type (`OperatorService.ListSearchAttributes`). Resolves when it has; resolves with a warning
 * in the SDK log when the connection may not read them (the operator service is refused on
 * Temporal Cloud, where nothing can be concluded).
 *
 * @throws {MissingSearchAttributesError} naming each attribute missing or of another type.
 * @throws Error when the namespace does not exist, or the gRPC error of the call.
 */
export async function checkSearchAttributes(
  connection: Pick<NativeConnection, 'operatorService'>,
  namespace: string,
): Promise<void> {
  let registered: Record<string, number>;
  try {
    const res = await connection.operatorService.listSearchAttributes({ namespace });
    registered = Object.fromEntries(Object.entries(res.customAttributes ?? {}).map(([n, t]) => [n, Number(t)]));
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === 5 /* NOT_FOUND */)
      throw new Error(
        `namespace "${namespace}" does not exist on the Temporal cluster (create it, e.g. \`temporal operator namespace create --namespace ${namespace}\`, then run \`npm run cli -- setup\`)`,
        { cause: e },
      );
    if (typeof code === 'number' && CANNOT_LIST.has(code)) {
      Runtime.instance().logger.warn(
        'the search attributes of the namespace could not be read, so they were not checked',
        {
          namespace,
          error: e instanceof Error ? e.message : String(e),
        },
      );
      return;
    }
    throw e;
  }
  const problems: SearchAttributeProblem[] = [];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    if (registered[name] === undefined) problems.push({ name, type });
    else {
      const has = searchAttributeTypeName(registered[name]) ?? `type ${registered[name]}`;
      if (has !== type) problems.push({ name, type, registeredAs: has });
    }
  }
  if (problems.length) throw new MissingSearchAttributesError(namespace, problems);
}

/** Search attribute type names as the CLI and the Web UI spell them. */
const SEARCH_ATTRIBUTE_TYPE_NAMES = ['Text', 'Keyword', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList'] as const;

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
function searchAttributeTypeName(value: number | null | undefined): SearchAttributeTypeName | undefined {
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
