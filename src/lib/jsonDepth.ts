/**
 * How deep JSON nests, and how deep input may nest (RFC 8259 §9 lets a parser limit it): every
 * later recursive step — fingerprints, redaction, `JSON.stringify` — would otherwise overflow the
 * stack on a few thousand levels. Without dependencies, so that the request schemas (and the
 * client package) can check a value's depth; strict parsing of text is `json.ts`.
 */

/** Deepest nesting of arrays and objects accepted in input JSON (a row, options, a request or webhook body). */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays/objects in JSON `text` (strings skipped; no recursion, so any text is safe). */
export function jsonTextDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** The deepest nesting of arrays/objects in a value (iterative; stops counting past `limit`). */
export function valueDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  const deepestSeen = new Map<object, number>(); // a shared sub-object is walked again only when met deeper
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if ((deepestSeen.get(v) ?? -1) >= d) continue;
    deepestSeen.set(v, d);
    max = Math.max(max, d + 1);
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return max;
}
