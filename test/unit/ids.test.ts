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
  hostHashKey,
  hostLabel,
  jobIdOf,
  legacyClientKey,
  parseJobId,
  PATH_SLUG_MAX_CHARS,
  pathSlug,
} from '../../src/client/ids.js';
import { IdempotencyKeySchema } from '../../src/model/schemas.js';
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

  it('derives <host>-<path slug>-<10 hex>, a valid key, for every kind of host and path', () => {
    const hash = 'abcdef0123456789';
    expect(derivedKey('http://example.com/articles/poll-politely.html', hash)).toBe(
      'example.com-articles-poll-politely-abcdef0123',
    );
    expect(derivedKey('http://example.com/', hash)).toBe('example.com-abcdef0123'); // the root: no slug
    expect(derivedKey('http://xn--bcher-kva.example/', hash)).toBe('xn--bcher-kva.example-abcdef0123');
    expect(hostLabel('http://[::1]:8080/')).toBe('--1');
    expect(hostLabel('http://127.0.0.1:8080/')).toBe('127.0.0.1');
    for (const url of [
      'http://example.com/',
      'http://[::1]:8080/a/b',
      `http://${'a'.repeat(63)}.${'b'.repeat(63)}.example/${'c'.repeat(300)}/${'d-'.repeat(300)}`,
      'http://example.com/%F0%9F%98%80/%E4%B8%AD%E6%96%87/?q=%00',
    ]) {
      const key = derivedKey(url, hash);
      expect(IdempotencyKeySchema.safeParse(key).success, key).toBe(true);
      const id = jobIdOf(key, 'acme');
      expect(parseJobId(id), id).toEqual({ account: 'acme', key });
    }
  });

  it('the key before path slugs is <host>-<10 hex>, and the same as the key for a root path', () => {
    const hash = 'abcdef0123456789';
    expect(hostHashKey('http://example.com/articles/poll-politely.html', hash)).toBe('example.com-abcdef0123');
    expect(hostHashKey('http://example.com/', hash)).toBe(derivedKey('http://example.com/', hash));
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

describe('the path slug of a derived key', () => {
  const slug = (path: string) => pathSlug(canonicalUrl(`https://example.com${path}`));

  it('is the words of the path, lower-case, joined by "-", without the page extension', () => {
    expect(slug('/articles/poll-politely.html')).toBe('articles-poll-politely');
    expect(slug('/Articles/Poll_Politely/')).toBe('articles-poll-politely');
    expect(slug('/wiki/Temporal_(software)')).toBe('wiki-temporal-software');
    expect(slug('/index.php')).toBe('index');
    expect(slug('/Default.ASPX')).toBe('default');
    expect(slug('/report.pdf')).toBe('report-pdf'); // not a page extension: a word like the others
    expect(slug('/v1.2/archive.tar.gz')).toBe('v1-2-archive-tar-gz');
    expect(slug('/.html')).toBe('');
  });

  it('is empty for the root path, and for a path of only separators', () => {
    expect(slug('/')).toBe('');
    expect(slug('')).toBe('');
    expect(slug('//--/__/.../')).toBe('');
    expect(slug('/%20%20/')).toBe('');
  });

  it('leaves out the query, the fragment, the port and the user-info', () => {
    expect(slug('/search?q=secret+words&session=abc123#results')).toBe('search');
    expect(slug('/?page=2')).toBe('');
    expect(pathSlug('https://user:pass@example.com:8443/a/b?c=d#e')).toBe('a-b');
  });

  it('spells accented letters in ASCII and drops other scripts; decodes percent-encoding first', () => {
    expect(slug('/bücher/über-uns')).toBe('bucher-uber-uns'); // serialised as /b%C3%BCcher/%C3%BCber-uns
    expect(slug('/Straße/Ærø/Łódź/Þing')).toBe('strasse-aero-lodz-thing');
    expect(slug('/café-crème/naïve')).toBe('cafe-creme-naive');
    expect(slug('/ﬁle/ＡＢＣ１２３')).toBe('file-abc123'); // compatibility forms: a ligature, full-width letters
    expect(slug('/新闻/2024/报道.html')).toBe('2024'); // no Latin letters: only the digits remain
    expect(slug('/новости/')).toBe('');
    expect(slug('/😀/party')).toBe('party');
    expect(slug('/a%2Fb%3Fc')).toBe('a-b-c'); // an encoded "/" or "?" separates words too
    expect(slug('/%E0%A4/ok/%FF%FE')).toBe('ok'); // not UTF-8: a separator, never replacement characters
    expect(slug('/100%/%zz')).toBe('100-zz'); // a "%" that starts no escape is a separator
  });

  it(`keeps the last words that fit in ${PATH_SLUG_MAX_CHARS} characters; a longer last word is cut`, () => {
    const long = slug('/news/world/europe/2024/05/12/heat-wave-breaks-june-record-across-southern-europe.html');
    expect(long).toBe('june-record-across-southern-europe'); // "breaks-" would make 41
    expect(slug(`/a/${'x'.repeat(100)}`)).toBe('x'.repeat(PATH_SLUG_MAX_CHARS));
    expect(slug(`/${'word-'.repeat(1000)}end`).length).toBeLessThanOrEqual(PATH_SLUG_MAX_CHARS);
    expect(slug(`/${'é'.repeat(5000)}`)).toBe('e'.repeat(PATH_SLUG_MAX_CHARS));
    for (let n = 1; n <= 60; n++) {
      const s = slug(`/${'ab-'.repeat(n)}z`);
      expect(s.length, s).toBeLessThanOrEqual(PATH_SLUG_MAX_CHARS);
      expect(s).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
      expect(s.endsWith('z')).toBe(true); // the end of the path is kept
    }
  });

  it('is always lower-case ASCII words joined by single "-", whatever the path', () => {
    const odd = [
      '/A--B__C..D',
      '/%00%01%7F',
      '/a b/c\td',
      '/it\'s/"quoted"/<tag>',
      '/%25/%2525',
      '/;param=1/;jsessionid=ABC',
      '/~user/@handle/+plus/$dollar',
      `/${'/'.repeat(50)}x`,
    ];
    for (const p of odd) {
      const s = slug(p);
      expect(s, p).toMatch(/^(?:[a-z0-9]+(?:-[a-z0-9]+)*)?$/);
      expect(s.length, p).toBeLessThanOrEqual(PATH_SLUG_MAX_CHARS);
    }
    expect(slug('/~user/@handle')).toBe('user-handle');
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
