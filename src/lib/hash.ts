/**
 * Canonical hashing used to derive idempotency keys and request fingerprints.
 *
 * Uses `node:crypto`, so import it from activities, the client and the CLI, never from workflow code.
 */
import { createHash } from 'node:crypto';

/**
 * Serialise a JSON-compatible value with object keys sorted at every level, so that two requests
 * that differ only in key order get the same fingerprint. `undefined` members are dropped, as
 * `JSON.stringify` does.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortDeep(value));
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortDeep);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value as Record<string, unknown>).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortDeep(v);
    }
    return out;
  }
  return value;
}

/** Hex SHA-256 of a string. */
function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Hex SHA-256 of the canonical JSON of a value (see {@link canonicalJson}). */
export function fingerprint(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * A deterministic UUID-shaped string (version nibble 8, RFC 9562 "custom") derived from `parts`.
 * Used as the idempotency key sent to providers, some of which (Firecrawl's
 * `x-idempotency-key`) require a UUID; the same (account, key) always maps to the same UUID.
 */
export function deterministicUuid(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\u0000')).digest();
  h[6] = (h[6]! & 0x0f) | 0x80; // version 8
  h[8] = (h[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
