/**
 * Payload encryption keys from the environment.
 *
 * `SCRAPE_CODEC_KEYS` (the name is configurable, `codec.keysEnv`) holds one or more keys as
 * `<id>:<key>` separated by commas, e.g. `k2026-02:q0V…=,k2025-11:8Hc…=`. Each key is 32 bytes
 * (AES-256), written as base64 (44 characters) or hex (64). The first key is the current one (new
 * payloads are encrypted with it) unless `SCRAPE_CODEC_CURRENT_KEY` (`codec.currentKeyEnv`) names
 * another; every listed key decrypts. Rotation: put the new key first, keep the old ones listed
 * for as long as histories encrypted with them are kept (the namespace's retention).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';

/** A key ID: what payload metadata `encryption-key-id` carries (never the key itself). */
const KeyIdSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'key IDs are 1–64 characters of A-Z a-z 0-9 . _ -');

/** One decoded key. */
export interface CodecKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** The keyring: the current key and every key by ID. */
export interface CodecKeyring {
  current: CodecKey;
  byId: ReadonlyMap<string, CodecKey>;
}

function decodeKey(id: string, text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new Error(`codec key "${id}" must be 32 bytes (base64 or hex), got ${key.length}`);
  return key;
}

/**
 * Parses a key list (see the module doc). Throws an Error naming the bad entry (never its value)
 * for an empty list, a malformed entry, a duplicate ID, a key that is not 32 bytes, or a current
 * key ID that is not in the list.
 */
export function parseKeyring(list: string, currentId?: string): CodecKeyring {
  const entries = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!entries.length) throw new Error('no codec keys given');
  const byId = new Map<string, CodecKey>();
  entries.forEach((entry, i) => {
    const at = entry.indexOf(':');
    if (at <= 0) throw new Error(`codec key #${i + 1} is not "<id>:<base64 key>"`);
    const id = entry.slice(0, at);
    const parsed = KeyIdSchema.safeParse(id);
    if (!parsed.success) throw new Error(`codec key #${i + 1}: ${parsed.error.issues[0]?.message}`);
    if (byId.has(id)) throw new Error(`codec key ID "${id}" is listed twice`);
    byId.set(id, { id, key: decodeKey(id, entry.slice(at + 1)) });
  });
  const current = currentId ? byId.get(currentId) : byId.values().next().value;
  if (!current)
    throw new Error(`current codec key "${currentId}" is not among the listed keys (${[...byId.keys()].join(', ')})`);
  return { current, byId };
}

/**
 * Reads the keyring from `env[keysEnv]` (and the current key ID from `env[currentKeyEnv]`).
 * @throws Error when the variable is unset or invalid (see {@link parseKeyring}).
 */
export function keyringFromEnv(
  env: NodeJS.ProcessEnv,
  keysEnv = 'SCRAPE_CODEC_KEYS',
  currentKeyEnv = 'SCRAPE_CODEC_CURRENT_KEY',
): CodecKeyring {
  const list = env[keysEnv];
  if (!list)
    throw new Error(
      `payload encryption is on but ${keysEnv} is not set (one or more "<id>:<base64 32-byte key>", comma-separated)`,
    );
  try {
    return parseKeyring(list, env[currentKeyEnv] || undefined);
  } catch (e) {
    throw new Error(`${keysEnv}: ${(e as Error).message}`);
  }
}

/** A new random key entry `<id>:<base64>` (for `SCRAPE_CODEC_KEYS`). */
export function newKeyEntry(id: string): string {
  KeyIdSchema.parse(id);
  return `${id}:${randomBytes(32).toString('base64')}`;
}
