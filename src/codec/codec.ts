/**
 * An AES-256-GCM {@link PayloadCodec}: every payload leaving the client or the worker is encrypted
 * whole (its metadata and data, serialised as a `temporal.api.common.v1.Payload` protobuf), so
 * that workflow inputs (URLs), results, details, queries and failure messages are unreadable at
 * rest in Temporal. The encrypted payload's metadata says `encoding: binary/encrypted` and
 * `encryption-key-id: <id>` (the conventions of Temporal's encryption samples); its data is
 * `iv (12 bytes) ‖ ciphertext ‖ GCM tag (16 bytes)`, with the key ID as additional authenticated
 * data. Decoding leaves payloads without that encoding untouched (histories written before
 * encryption was turned on stay readable).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;
import type { CodecKeyring } from './keys.js';

/** `encoding` metadata value of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key that encrypted the payload. */
export const KEY_ID_METADATA = 'encryption-key-id';

const ProtoPayload = temporal.api.common.v1.Payload;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Encrypts with the keyring's current key; decrypts with whichever key the payload names. */
export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly keys: CodecKeyring) {}

  /** Encrypts each payload with the current key. */
  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys.current;
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id));
      const plain = ProtoPayload.encode(p as Parameters<typeof ProtoPayload.encode>[0]).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(id) }, data };
    });
  }

  /**
   * Decrypts each encrypted payload; other payloads pass through.
   * @throws ValueError naming the key ID when no listed key has that ID, or when the payload does
   *   not authenticate (wrong key, altered data).
   */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const encoding = p.metadata?.encoding ? Buffer.from(p.metadata.encoding).toString() : undefined;
      if (encoding !== ENCRYPTED_ENCODING) return p;
      const id = p.metadata?.[KEY_ID_METADATA] ? Buffer.from(p.metadata[KEY_ID_METADATA]).toString() : '';
      const k = this.keys.byId.get(id);
      if (!k)
        throw new ValueError(
          `payload encrypted with codec key "${id}", which is not in the keyring (known: ${[...this.keys.byId.keys()].join(', ')})`,
        );
      const data = Buffer.from(p.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('encrypted payload too short');
      try {
        const decipher = createDecipheriv('aes-256-gcm', k.key, data.subarray(0, IV_BYTES));
        decipher.setAAD(Buffer.from(id));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        const plain = Buffer.concat([
          decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
          decipher.final(),
        ]);
        return ProtoPayload.decode(plain) as Payload;
      } catch {
        throw new ValueError(`payload does not decrypt with codec key "${id}" (wrong key material or altered data)`);
      }
    });
  }
}
