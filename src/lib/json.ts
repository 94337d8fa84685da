/**
 * Strict JSON parsing for request bodies and input rows: JSON (RFC 8259) with two refusals that
 * `JSON.parse` does not make —
 * - a **duplicate key** in one object (`{"url": "a", "url": "b"}`): RFC 8259 §4 leaves it to the
 *   parser and `JSON.parse` silently keeps the last one, so two readers of the same body could
 *   disagree about the request; here it is an error naming the key and where it is;
 * - a `__proto__` key or `constructor.prototype` (prototype poisoning; secure-json-parse);
 * - nesting deeper than {@link MAX_JSON_DEPTH} arrays/objects (RFC 8259 §9 lets a parser limit
 *   it): every later recursive step — fingerprints, redaction, `JSON.stringify` — would otherwise
 *   overflow the stack on a few thousand levels and answer a 500 or end a batch run.
 *
 * Duplicates are found with jsonc-parser's visitor (the scanner of VS Code), the value is built
 * by secure-json-parse; both read the text once.
 */
import { visit } from 'jsonc-parser';
import secureJson from 'secure-json-parse';
import { jsonTextDepth, MAX_JSON_DEPTH } from './jsonDepth.js';

export { jsonTextDepth, MAX_JSON_DEPTH, valueDepth } from './jsonDepth.js';

/** Thrown for JSON that is malformed, has a duplicate key or a forbidden prototype key. `path` is a JSON Pointer (RFC 6901) of the object holding the duplicate. */
export class StrictJsonError extends SyntaxError {
  override readonly name = 'StrictJsonError';
  constructor(
    message: string,
    readonly reason: 'syntax' | 'duplicate-key' | 'prototype' | 'depth',
    readonly path = '',
  ) {
    super(message);
  }
}

const pointer = (segments: (string | number)[]) =>
  segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * The first duplicate key of `text` (an object's key seen twice in that object), or undefined.
 * Never throws; malformed text gives undefined (the parser reports it).
 */
function findDuplicateKey(text: string): { key: string; path: string; offset: number } | undefined {
  const stack: Set<string>[] = [];
  let found: { key: string; path: string; offset: number } | undefined;
  visit(text, {
    onObjectBegin: () => void stack.push(new Set()),
    onObjectEnd: () => void stack.pop(),
    onObjectProperty: (key, offset, _length, _line, _char, pathSupplier) => {
      const keys = stack[stack.length - 1];
      if (!keys || found) return;
      if (keys.has(key)) found = { key, path: pointer(pathSupplier()), offset };
      keys.add(key);
    },
  });
  return found;
}

/**
 * Parses JSON text strictly (see the module comment).
 * @throws StrictJsonError `syntax` (with the parser's message), `duplicate-key` (naming the key,
 *   the JSON Pointer of its object and the character offset), `prototype` or `depth`.
 */
export function parseJsonStrict(text: string): unknown {
  const depth = jsonTextDepth(text);
  if (depth > MAX_JSON_DEPTH)
    throw new StrictJsonError(
      `arrays and objects nested ${depth} deep; at most ${MAX_JSON_DEPTH} levels are accepted`,
      'depth',
    );
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (e) {
    const message = (e as Error).message;
    if (/forbidden prototype property/i.test(message))
      throw new StrictJsonError('a "__proto__" or "constructor.prototype" key is not allowed', 'prototype');
    throw new StrictJsonError(message, 'syntax');
  }
  const dup = findDuplicateKey(text);
  if (dup)
    throw new StrictJsonError(
      `duplicate key "${dup.key}" in the object at ${dup.path || '/'} (character ${dup.offset + 1}); each key may appear once`,
      'duplicate-key',
      dup.path,
    );
  return value;
}
