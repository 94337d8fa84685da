/**
 * Identifiers and user input at unit level: readable derived keys from the WHATWG-serialised URL,
 * old keys still job IDs, the list cursor; durations as typed on the command line; the poll
 * policy's bounds and messages; API keys reloaded from their file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiKeyring, hashApiKey, watchApiKeys } from '../../src/api/auth.js';
import { InvalidInputError } from '../../src/client/errors.js';
import {
  canonicalUrl,
  decodeCursor,
  derivedKey,
  encodeCursor,
  hostLabel,
  jobIdOf,
  legacyClientKey,
  parseJobId,
} from '../../src/client/ids.js';
import { formatDuration, parseDuration } from '../../src/lib/duration.js';
import { PollPolicySchema } from '../../src/model/schemas.js';

describe('canonical URLs and derived keys', () => {
  it('serialises one address one way: host case, IDN, default port, empty path', () => {
    expect(canonicalUrl('HTTP://Example.COM')).toBe('http://example.com/');
    expect(canonicalUrl('http://example.com:80')).toBe('http://example.com/');
    expect(canonicalUrl('https://example.com:443/a?b=1#c')).toBe('https://example.com/a?b=1#c');
    expect(canonicalUrl('http://bücher.example/katalog')).toBe('http://xn--bcher-kva.example/katalog');
    expect(canonicalUrl('http://xn--bcher-kva.example/katalog')).toBe('http://xn--bcher-kva.example/katalog');
    expect(canonicalUrl('https://example.com:8443')).toBe('https://example.com:8443/'); // another port stays
  });

  it('derives <host>-<10 hex>, a valid key, for every kind of host', () => {
    const hash = 'abcdef0123456789';
    expect(derivedKey('http://example.com/', hash)).toBe('example.com-abcdef0123');
    expect(derivedKey('http://xn--bcher-kva.example/', hash)).toBe('xn--bcher-kva.example-abcdef0123');
    expect(hostLabel('http://[::1]:8080/')).toBe('--1');
    expect(hostLabel('http://127.0.0.1:8080/')).toBe('127.0.0.1');
    for (const url of [
      'http://example.com/',
      'http://[::1]:8080/',
      `http://${'a'.repeat(63)}.${'b'.repeat(63)}.example/`,
    ]) {
      const id = jobIdOf(derivedKey(url, hash), 'acme');
      expect(parseJobId(id), id).toEqual({ account: 'acme', key: derivedKey(url, hash) });
    }
  });

  it('keeps old keys as job IDs and knows how the client derived them', () => {
    const old = legacyClientKey('reference', { url: 'HTTP://Example.com', format: 'markdown', options: {} });
    expect(old).toMatch(/^r-[0-9a-f]{32}$/);
    expect(parseJobId(`scrape:acme:${old}`)).toEqual({ account: 'acme', key: old });
    expect(parseJobId('scrape:acme:row-0123456789abcdef0123456789abcdef')).toBeDefined();
    expect(jobIdOf('example.com-abcdef0123', 'acme')).toBe('scrape:acme:example.com-abcdef0123');
    expect(jobIdOf('scrape:other:k', 'acme')).toBe('scrape:other:k');
  });

  it('round-trips the list cursor and refuses anything else as invalid input', () => {
    const c = { createdAt: '2026-01-01T00:00:00.000Z', id: 'scrape:acme:k' };
    expect(decodeCursor(encodeCursor(c))).toEqual(c);
    expect(() => decodeCursor('not-a-cursor')).toThrow(InvalidInputError);
  });
});

describe('durations and the poll policy', () => {
  it('reads durations with units, bare numbers as seconds, and says what it accepts', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('90')).toBe(90_000);
    expect(() => parseDuration('soon')).toThrow(
      /"soon" is not a duration: use a number with a unit \(500ms, 30s, 5m, 2h, 1d\)/,
    );
    expect(() => parseDuration('-1s')).toThrow(RangeError);
    expect(formatDuration(1_800_000)).toBe('30m');
    expect(formatDuration(1_500)).toBe('1500ms');
  });

  it('validates the policy with messages that name the field and its bounds with units', () => {
    const err = (v: unknown) => {
      const r = PollPolicySchema.safeParse(v);
      return r.success ? 'ok' : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    };
    expect(err({ deadlineMs: 500 })).toBe(
      'deadlineMs: deadlineMs must be a whole number of milliseconds from 1000 (1 s) to 2592000000 (30 d)',
    );
    expect(err({ initialDelayMs: 5, maxDelayMs: 1_000 })).toMatch(
      /initialDelayMs must be a whole number of milliseconds from 10 \(10 ms\) to 3600000 \(1 h\)/,
    );
    expect(err({ initialDelayMs: 120_000, maxDelayMs: 60_000 })).toBe(
      'initialDelayMs: initialDelayMs (120000 ms) is longer than maxDelayMs (60000 ms)',
    );
    expect(err({ jitter: 2 })).toBe('jitter: jitter must be a fraction from 0 to 1');
    expect(
      err({
        deadlineMs: 1_800_000,
        initialDelayMs: 500,
        maxDelayMs: 10_000,
        multiplier: 2,
        jitter: 0.1,
        onDeadline: 'cancel',
      }),
    ).toBe('ok');
    expect(z.toJSONSchema(PollPolicySchema, { io: 'input' }).properties?.deadlineMs).toMatchObject({
      description: expect.stringMatching(/CLI --deadline/),
    });
  });
});

describe('API keys reload', () => {
  it('the keyring takes a new set at once; the file watch reloads on change and keeps the old keys on a broken file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keys-'));
    const file = path.join(dir, 'api-keys.json');
    const write = (keys: string[]) =>
      fs.writeFileSync(file, JSON.stringify({ keys: keys.map((k) => ({ account: 'acme', sha256: hashApiKey(k) })) }));
    write(['key-a']);
    const ring = new ApiKeyring([{ account: 'acme', sha256: hashApiKey('key-a') }]);
    const outcomes: unknown[] = [];
    const watch = watchApiKeys({
      keyring: ring,
      keysFile: file,
      keysEnv: 'NO_SUCH_ENV_VAR_FOR_KEYS',
      env: {},
      debounceMs: 20,
      onReload: (o) => outcomes.push(o),
    });
    const until = async (cond: () => boolean) => {
      for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
      return cond();
    };
    try {
      expect(ring.authenticate('Bearer key-b')).toBeUndefined();
      write(['key-a', 'key-b']);
      expect(await until(() => ring.authenticate('Bearer key-b') !== undefined)).toBe(true);
      fs.writeFileSync(file, '{"keys": [ broken');
      expect(await until(() => outcomes.some((o) => (o as { ok: boolean }).ok === false))).toBe(true);
      expect(ring.authenticate('Bearer key-b')).toEqual({ account: 'acme' }); // still in force
      write(['key-b']);
      expect(await until(() => ring.authenticate('Bearer key-a') === undefined)).toBe(true);
      expect(ring.authenticate('Bearer key-b')).toEqual({ account: 'acme' });
      // reload() (what SIGHUP does) without any watch event:
      const ring2 = new ApiKeyring([]);
      const manual = watchApiKeys({ keyring: ring2, keysFile: file, keysEnv: 'X', env: {}, watch: false });
      expect(ring2.size).toBe(0);
      expect(manual.reload()).toEqual({ ok: true, keys: 1 });
      expect(ring2.authenticate('Bearer key-b')).toEqual({ account: 'acme' });
      manual.close();
    } finally {
      watch.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
