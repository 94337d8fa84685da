/**
 * The AES-256-GCM payload codec and its keys: round trip, key ID in the metadata, rotation
 * (encrypt with the current key, decrypt with any listed key), refusal of an unknown key and of
 * altered data, and the key-list parser's errors (which never echo a key). The codec server's
 * contract: authentication by bearer token or login cookie, CORS for the Web UI's origin only.
 */
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { EncryptionCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../../src/codec/codec.js';
import { keyringFromEnv, newKeyEntry, parseKeyring } from '../../src/codec/keys.js';
import { buildCodecServer, CODEC_SESSION_COOKIE } from '../../src/codec/server.js';

const URL_TEXT = 'https://example.com/private/report?id=42';
const keyA = newKeyEntry('a');
const keyB = newKeyEntry('b');
const plain = (v: unknown) => defaultPayloadConverter.toPayload(v)!;
const text = (p: Payload) => Buffer.from(p.data ?? []).toString();

describe('EncryptionCodec', () => {
  it('encrypts with the current key, names it in the metadata, and decrypts back', async () => {
    const codec = new EncryptionCodec(parseKeyring(`${keyA},${keyB}`));
    const [enc] = await codec.encode([plain({ url: URL_TEXT })]);
    expect(Buffer.from(enc!.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(enc!.metadata![KEY_ID_METADATA]!).toString()).toBe('a');
    expect(text(enc!)).not.toContain('example.com');
    const [dec] = await codec.decode([enc!]);
    expect(defaultPayloadConverter.fromPayload(dec!)).toEqual({ url: URL_TEXT });
  });

  it('rotation: payloads of the old key still decrypt after a new key becomes current', async () => {
    const old = new EncryptionCodec(parseKeyring(keyA));
    const [encOld] = await old.encode([plain('written before the rotation')]);
    const rotated = new EncryptionCodec(parseKeyring(`${keyB},${keyA}`));
    const [encNew] = await rotated.encode([plain('written after')]);
    expect(Buffer.from(encNew!.metadata![KEY_ID_METADATA]!).toString()).toBe('b');
    const decoded = await rotated.decode([encOld!, encNew!]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      'written before the rotation',
      'written after',
    ]);
    // SCRAPE_CODEC_CURRENT_KEY picks another listed key as current.
    const pinned = new EncryptionCodec(
      keyringFromEnv({ SCRAPE_CODEC_KEYS: `${keyB},${keyA}`, SCRAPE_CODEC_CURRENT_KEY: 'a' }),
    );
    const [encPinned] = await pinned.encode([plain(1)]);
    expect(Buffer.from(encPinned!.metadata![KEY_ID_METADATA]!).toString()).toBe('a');
  });

  it('refuses a payload of an unknown key and altered ciphertext; passes unencrypted payloads through', async () => {
    const [enc] = await new EncryptionCodec(parseKeyring(keyA)).encode([plain('x')]);
    await expect(new EncryptionCodec(parseKeyring(keyB)).decode([enc!])).rejects.toThrow(
      /codec key "a", which is not in the keyring/,
    );
    const bad = { ...enc!, data: Uint8Array.from(enc!.data!) };
    bad.data[20] = bad.data[20]! ^ 1;
    await expect(new EncryptionCodec(parseKeyring(keyA)).decode([bad])).rejects.toThrow(/does not decrypt/);
    const raw = plain('history written before encryption');
    expect(await new EncryptionCodec(parseKeyring(keyA)).decode([raw])).toEqual([raw]);
  });

  it('reports a bad key list without echoing key material', () => {
    expect(() => parseKeyring('')).toThrow(/no codec keys/);
    expect(() => parseKeyring('nokey')).toThrow(/#1 is not "<id>:<base64 key>"/);
    expect(() => parseKeyring('a:c2hvcnQ=')).toThrow(/must be 32 bytes/);
    expect(() => parseKeyring(`${keyA},${keyA}`)).toThrow(/listed twice/);
    expect(() => parseKeyring(keyA, 'zz')).toThrow(/current codec key "zz"/);
    try {
      keyringFromEnv({ SCRAPE_CODEC_KEYS: `${keyA},bad id:xx` });
    } catch (e) {
      expect((e as Error).message).not.toContain(keyA.split(':')[1]!);
    }
    expect(() => keyringFromEnv({})).toThrow(/SCRAPE_CODEC_KEYS is not set/);
  });
});

describe('codec server', () => {
  const token = 'operator-token-0123456789';
  const origin = 'http://127.0.0.1:8088';

  it('decodes for a bearer token or a login session, refuses others, allows only the UI origin', async () => {
    const codec = new EncryptionCodec(parseKeyring(keyA));
    const app = await buildCodecServer({ codec, token, corsOrigins: [origin] });
    const [enc] = await codec.encode([plain({ url: URL_TEXT })]);
    const body = {
      payloads: [
        {
          metadata: Object.fromEntries(
            Object.entries(enc!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
          ),
          data: Buffer.from(enc!.data!).toString('base64'),
        },
      ],
    };

    const anon = await app.inject({ method: 'POST', url: '/codec/decode', payload: body });
    expect(anon.statusCode).toBe(401);
    const wrong = await app.inject({
      method: 'POST',
      url: '/codec/decode',
      payload: body,
      headers: { authorization: 'Bearer nope-nope-nope-nope' },
    });
    expect(wrong.statusCode).toBe(401);

    const ok = await app.inject({
      method: 'POST',
      url: '/codec/decode',
      payload: body,
      headers: { authorization: `Bearer ${token}`, 'x-namespace': 'default' },
    });
    expect(ok.statusCode).toBe(200);
    const decoded = ok.json() as { payloads: { data: string }[] };
    expect(Buffer.from(decoded.payloads[0]!.data, 'base64').toString()).toContain(URL_TEXT);

    const badLogin = await app.inject({
      method: 'POST',
      url: '/codec/login',
      payload: 'token=wrong',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(badLogin.statusCode).toBe(401);
    const login = await app.inject({
      method: 'POST',
      url: '/codec/login',
      payload: `token=${token}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(login.statusCode).toBe(200);
    const cookie = login.cookies.find((c) => c.name === CODEC_SESSION_COOKIE)!;
    expect(cookie.httpOnly).toBe(true);
    expect(cookie.value).not.toContain(token);
    const viaCookie = await app.inject({
      method: 'POST',
      url: '/codec/decode',
      payload: body,
      headers: { cookie: `${CODEC_SESSION_COOKIE}=${cookie.value}`, origin },
    });
    expect(viaCookie.statusCode).toBe(200);
    expect(viaCookie.headers['access-control-allow-origin']).toBe(origin);
    expect(viaCookie.headers['access-control-allow-credentials']).toBe('true');

    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.statusCode).toBeLessThan(300);
    expect(preflight.headers['access-control-allow-origin']).toBe(origin);
    const otherOrigin = await app.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(otherOrigin.headers['access-control-allow-origin']).toBeUndefined();

    const encoded = await app.inject({
      method: 'POST',
      url: '/codec/encode',
      payload: {
        payloads: [
          {
            metadata: { encoding: Buffer.from('json/plain').toString('base64') },
            data: Buffer.from('"x"').toString('base64'),
          },
        ],
      },
      headers: { authorization: `Bearer ${token}` },
    });
    expect(encoded.statusCode).toBe(200);
    expect(
      Buffer.from(
        (encoded.json() as { payloads: { metadata: Record<string, string> }[] }).payloads[0]!.metadata.encoding!,
        'base64',
      ).toString(),
    ).toBe(ENCRYPTED_ENCODING);
    await app.close();
  });
});
