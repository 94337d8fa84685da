/**
 * The check a worker makes of its namespace before anything polls: every search attribute the
 * scrape workflows set (`src/workflows/searchAttributes.ts`) must be registered with its type, else
 * each upsert of a job's state would fail and jobs would stall on their first workflow task. Read
 * with `OperatorService.ListSearchAttributes`; a namespace that is not set up is refused with
 * {@link MissingSearchAttributesError}, which says how to register what is missing.
 */
import { Runtime, type NativeConnection } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from './workflows/searchAttributes.js';

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
          ? ` Register ${missing.length > 1 ? 'them' : 'it'} with \`npm run cli -- setup\` (the same configuration; see the README, "Pointing it at a real Temporal cluster"), or ${createCommands(namespace, missing)}.`
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

/**
 * The Temporal type name (`Keyword`, `KeywordList`, …, as the CLI and the Web UI spell it) of a
 * wire value of `temporal.api.enums.v1.IndexedValueType`; undefined for a value the enum lacks.
 */
function indexedValueTypeName(value: number): string | undefined {
  const key = (proto.temporal.api.enums.v1.IndexedValueType as unknown as Record<number, string | undefined>)[value];
  if (!key || !key.startsWith('INDEXED_VALUE_TYPE_') || key.endsWith('_UNSPECIFIED')) return undefined;
  return key
    .slice('INDEXED_VALUE_TYPE_'.length)
    .split('_')
    .map((w) => w[0] + w.slice(1).toLowerCase())
    .join('');
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
      const has = indexedValueTypeName(registered[name]) ?? `type ${registered[name]}`;
      if (has !== type) problems.push({ name, type, registeredAs: has });
    }
  }
  if (problems.length) throw new MissingSearchAttributesError(namespace, problems);
}
