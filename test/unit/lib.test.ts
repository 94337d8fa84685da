import { describe, expect, it } from 'vitest';
import { canonicalJson, deterministicUuid, fingerprint } from '../../src/lib/hash.js';
import { MAX_PROVIDER_WAIT_MS, parseRetryAfter, parseWaitFromMessage } from '../../src/lib/retryAfter.js';
import {
  isSecretName,
  REDACTED,
  redactSecrets,
  redactUrlCredentials,
  sanitizeBody,
  sanitizeHeaders,
  sanitizeInput,
  sanitizeUrl,
} from '../../src/lib/sanitize.js';
import { findSecret, secretPartsOfUrl } from '../../src/lib/secretDetection.js';
import { StartScrapeInputSchema } from '../../src/model/schemas.js';
import { MAX_JSON_DEPTH, parseJsonStrict, StrictJsonError, valueDepth } from '../../src/lib/json.js';

describe('canonical hashing', () => {
  it('ignores key order and undefined members, not values', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    expect(fingerprint({ a: 1, b: 2 })).toBe(fingerprint({ b: 2, a: 1 }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
  });

  it('derives a stable UUID-shaped idempotency key per (account, key)', () => {
    const a = deterministicUuid('acme', 'k1');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(deterministicUuid('acme', 'k1')).toBe(a);
    expect(deterministicUuid('globex', 'k1')).not.toBe(a);
    expect(deterministicUuid('acm', 'ek1')).not.toBe(a); // parts are delimited
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-29T07:00:00Z');
  it('reads delay-seconds and HTTP dates (RFC 9110)', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter(' 1.5 ', now)).toBe(1500);
    expect(parseRetryAfter('Sun, 29 Nov 2026 07:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 06:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
  it('reads a header sent twice (`10, 10`) as its longest wait, and never a lenient date parse of a number as 0', () => {
    expect(parseRetryAfter('10, 10', now)).toBe(10_000);
    expect(parseRetryAfter('5,30', now)).toBe(30_000);
    // Date.parse reads these as days of 2001: a wait of 0, a tight loop on a failing provider.
    expect(parseRetryAfter('7.', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter('1 2', now)).toBeUndefined();
    // A month's name alone is no HTTP-date: this was read as midnight of 5 May 2001.
    expect(parseRetryAfter('5, may', now)).toBeUndefined();
    expect(parseRetryAfter('may 5', now)).toBeUndefined();
    expect(parseRetryAfter('Sun, 29 Nov 2026', now)).toBeUndefined();
    // Nor is one with no year (a day of the month is none): these too were read as days of 2001.
    expect(parseRetryAfter('Sun, 06 Dec 08:00:00 GMT', now)).toBeUndefined();
    expect(parseRetryAfter('12 may 08:00:00', now)).toBeUndefined();
  });
  it("reads the three HTTP-date formats as UTC whatever the worker's time zone (asctime names none)", () => {
    const tz = process.env.TZ;
    try {
      for (const zone of ['UTC', 'America/New_York', 'Asia/Tokyo']) {
        process.env.TZ = zone;
        expect(parseRetryAfter('Sun, 29 Nov 2026 07:00:30 GMT', now)).toBe(30_000);
        expect(parseRetryAfter('Sunday, 29-Nov-26 07:00:30 GMT', now)).toBe(30_000);
        // asctime: a 30 s wait read as 5 h in New York and as 0 in Tokyo before.
        expect(parseRetryAfter('Sun Nov 29 07:00:30 2026', now)).toBe(30_000);
        expect(parseRetryAfter('Sun Nov  1 07:00:30 2026', now)).toBe(0);
        expect(parseRetryAfter('Sun, 29 Nov 2026 08:00:30 +0100', now)).toBe(30_000);
      }
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });
  it('takes a wait past a day (a typo, a date years ahead) as a day, so that every wait is a time the clock holds', () => {
    expect(parseRetryAfter('99999999999999', now)).toBe(MAX_PROVIDER_WAIT_MS);
    expect(parseRetryAfter('Fri, 29 Nov 2030 07:00:00 GMT', now)).toBe(MAX_PROVIDER_WAIT_MS);
    expect(parseWaitFromMessage('retry after 9999999 hours')).toBe(MAX_PROVIDER_WAIT_MS);
    expect(() => new Date(Date.now() + parseRetryAfter('99999999999999', now)!).toISOString()).not.toThrow();
  });
  it('reads a wait stated only in the message text', () => {
    expect(parseWaitFromMessage('Rate limit exceeded. Please retry after 7 seconds.')).toBe(7000);
    expect(parseWaitFromMessage('Too many requests, try again in 2 minutes')).toBe(120_000);
    expect(parseWaitFromMessage('please wait 30s before retrying')).toBe(30_000);
    expect(parseWaitFromMessage('retry after 250 ms')).toBe(250);
    expect(parseWaitFromMessage('Internal error')).toBeUndefined();
  });
});

describe('sanitising what we record', () => {
  it('removes credentials from URLs', () => {
    expect(sanitizeUrl('https://user:pw@api.example.com/x?token=abc&url=https%3A%2F%2Fa.b&apikey=zzz')).toBe(
      `https://${encodeURIComponent(REDACTED)}:${encodeURIComponent(REDACTED)}@api.example.com/x?token=${encodeURIComponent(REDACTED)}&url=https%3A%2F%2Fa.b&apikey=${encodeURIComponent(REDACTED)}`,
    );
  });
  it('shows the URLs inside a text without their user-info or credential parameters, the rest as written', () => {
    expect(redactUrlCredentials('https://user:hunter2@Host.example/a/./b?q=1')).toBe(
      `https://${REDACTED}@Host.example/a/./b?q=1`,
    );
    // A key as the user name (no password), a password with an unencoded @, a URL inside a CSV line.
    expect(redactUrlCredentials('https://sk_live_0123456789@api.example/v1')).toBe(
      `https://${REDACTED}@api.example/v1`,
    );
    expect(redactUrlCredentials('HTTP://u:p@ss@h.example/x')).toBe(`HTTP://${REDACTED}@h.example/x`);
    expect(redactUrlCredentials('"https://u:pw@h.example/",row 3')).toBe(`"https://${REDACTED}@h.example/",row 3`);
    expect(redactUrlCredentials('https://h.example/?api_key=zzz,row 3')).toBe(
      `https://h.example/?api_key=${REDACTED},row 3`,
    );
    expect(redactUrlCredentials('see https://h.example/?api_key=zzz&q=shoes#access_token=abc123def456ghi789')).toBe(
      `see https://h.example/?api_key=${REDACTED}&q=shoes#access_token=${REDACTED}`,
    );
    // Ordinary parameters, and text without URLs, are left alone.
    expect(redactUrlCredentials('https://h.example/?token=eth&key=shoes&sid=1')).toBe(
      'https://h.example/?token=eth&key=shoes&sid=1',
    );
    expect(redactUrlCredentials('user:password@host is not a URL')).toBe('user:password@host is not a URL');
  });
  it('removes secret headers and known secret values anywhere', () => {
    expect(sanitizeHeaders({ Authorization: 'Bearer sk-123456', 'x-request-id': 'r1', 'X-Api-Key': 'k' })).toEqual({
      Authorization: REDACTED,
      'x-request-id': 'r1',
      'X-Api-Key': REDACTED,
    });
    expect(redactSecrets('failed with key sk-live-9999 in Bearer abc.def', ['sk-live-9999'])).toBe(
      `failed with key ${REDACTED} in Bearer ${REDACTED}`,
    );
    expect(
      sanitizeBody(
        { password: 'p', nested: { api_key: 'x', note: 'uses sk-live-9999' }, list: ['https://h/?token=t'] },
        ['sk-live-9999'],
      ),
    ).toEqual({
      password: REDACTED,
      nested: { api_key: REDACTED, note: `uses ${REDACTED}` },
      list: [`https://h/?token=${encodeURIComponent(REDACTED)}`],
    });
  });
  it('knows the secret names providers and clouds use, and leaves ordinary names alone', () => {
    for (const n of [
      'apitoken',
      'accesstoken',
      'refreshtoken',
      'clientsecret',
      'authkey',
      'subscription-key',
      'Ocp-Apim-Subscription-Key',
      'x-functions-key',
      'auth_token',
      'private_token',
      'key',
      'X-Amz-Signature',
      'X-Amz-Credential',
      'X-Amz-Security-Token',
      'apiToken',
      'sessionid',
      'pass',
      'client_secret',
      'api-key',
      'accessKey',
      'jwt',
      'Authorization',
    ])
      expect(isSecretName(n), n).toBe(true);
    for (const n of [
      'url',
      'format',
      'Idempotency-Key',
      'keyword',
      'page',
      'author',
      'passenger',
      'content-type',
      'x-request-id',
      'monkey',
      'title',
    ])
      expect(isSecretName(n), n).toBe(false);
  });
  it('redacts credentials in any spelling without eating prose', () => {
    expect(redactSecrets('sent bearer abc123def456 and BASIC dXNlcjpwYXNz')).toBe(
      `sent bearer ${REDACTED} and BASIC ${REDACTED}`,
    );
    expect(redactSecrets('a basic understanding of bearer authentication')).toBe(
      'a basic understanding of bearer authentication',
    );
    expect(sanitizeBody({ apitoken: 'S1', refreshtoken: 'S2', next: ' https://x.example/?accesstoken=S3' })).toEqual({
      apitoken: REDACTED,
      refreshtoken: REDACTED,
      next: `https://x.example/?accesstoken=${encodeURIComponent(REDACTED)}`,
    });
  });
  it('refuses target URLs that carry credentials, not ordinary sites that use similar names', () => {
    const ordinary = [
      'https://www.booking.com/hotel/fr/x.html?aid=304142&sid=0123456789abcdef0123456789abcdef',
      'https://forum.example/viewtopic.php?t=42&sid=5f2b9c',
      'https://coinmarketcap.com/currencies/?token=eth',
      'https://opensea.io/assets?tokenId=1',
      'https://dexscreener.com/?tokenAddress=0x1234',
      'https://www.ticketmaster.com/?passType=season',
      'https://shop.example/search?key=shoes&session=1&sig_fig=3',
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ&pp=ygUEcmljaw%3D%3D',
    ];
    for (const url of ordinary) expect(secretPartsOfUrl(url), url).toEqual([]);
    const credentials = [
      'https://api.example/v1?token=sk-live-0123456789abcdef',
      'https://maps.googleapis.com/maps/api/geocode/json?key=AIzaSyA-0123456789abcdefghijklmnop',
      'https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=abcdEFGH1234%2Bxyz%3D',
      'https://api.example/cb?oauth_verifier=v1&oauth_token=t1',
      'https://gitlab.example/api/v4/projects?private_token=glpat-abc',
      'https://app.example/cb#access_token=abc',
      'https://u:p@example.com/',
    ];
    for (const url of credentials) expect(secretPartsOfUrl(url).length, url).toBeGreaterThan(0);
  });
  it('finds secrets in URL fragments and redacts them there too', () => {
    expect(secretPartsOfUrl('https://app.example/cb#access_token=abc&state=1')).toEqual([
      'fragment parameter "access_token"',
    ]);
    expect(secretPartsOfUrl('https://a.example/p?q=1#section-2')).toEqual([]);
    expect(sanitizeUrl('https://app.example/cb#access_token=abc&state=1')).toBe(
      `https://app.example/cb#access_token=${encodeURIComponent(REDACTED)}&state=1`,
    );
  });
  it('finds a secret at any depth of a value and names its path', () => {
    expect(findSecret({ headers: { Authorization: 'Bearer NESTED0123456789' } })).toBe('headers.Authorization');
    expect(findSecret({ extra: [{ note: 'x' }, { api_key: 'k' }] })).toBe('extra[1].api_key');
    expect(findSecret({ note: 'send Bearer abcdefgh12345678 please' })).toBe('note');
    expect(findSecret({ next: 'https://h.example/?X-Amz-Signature=abc' })).toBe('next');
    expect(findSecret({ wait_for: '#main', render: true, token: '', max_tokens: 100 })).toBeUndefined();
    expect(findSecret({ next: ' https://x.example/?token=sk-live-0123456789' })).toBe('next');
    expect(findSecret({ next: 'https://x.example/?token=eth&key=shoes&sid=abc123def456' })).toBeUndefined();
    expect(findSecret({ note: 'use bearer abc123def456' })).toBe('note');
    expect(findSecret({ note: 'a basic understanding of bearer authentication' })).toBeUndefined();
  });
  it('refuses scrape requests that would put a secret into workflow input', () => {
    const base = { account: 'acme', url: 'https://example.com/a' };
    const problems = (input: object) => {
      const r = StartScrapeInputSchema.safeParse({ ...base, ...input });
      return r.success ? [] : r.error.issues.map((i) => i.message);
    };
    expect(problems({ options: { headers: { Authorization: 'Bearer NESTED0123456789' } } })).toEqual([
      expect.stringMatching(/options\.headers\.Authorization looks like a credential/),
    ]);
    expect(problems({ url: 'https://gitlab.example/api?private_token=abc' })).toEqual([
      expect.stringMatching(/query parameter "private_token"/),
    ]);
    expect(problems({ url: 'https://bucket.s3.example/o?X-Amz-Signature=abc' })).toEqual([
      expect.stringMatching(/X-Amz-Signature/),
    ]);
    expect(problems({ url: 'https://app.example/cb#access_token=abc' })).toEqual([
      expect.stringMatching(/fragment parameter "access_token"/),
    ]);
    expect(problems({ url: 'https://example.com/a\u0000b' })).toEqual([expect.stringMatching(/control character/)]);
    expect(problems({ options: { wait_for: '#main' }, url: 'https://example.com/search?q=keys' })).toEqual([]);
  });
});

describe('strict JSON: nesting depth', () => {
  it('accepts 64 levels, refuses 65 with the reason, and never overflows the stack however deep the text is', () => {
    const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(() => parseJsonStrict(nest(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => parseJsonStrict(nest(MAX_JSON_DEPTH + 1))).toThrow(StrictJsonError);
    for (const n of [3_000, 100_000]) {
      let err: unknown;
      try {
        parseJsonStrict(`{"a":${nest(n)}}`);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(StrictJsonError);
      expect((err as StrictJsonError).reason).toBe('depth');
    }
    // Brackets inside strings are text, not nesting.
    expect(parseJsonStrict(JSON.stringify({ s: '['.repeat(1_000) }))).toEqual({ s: '['.repeat(1_000) });
  });

  it('a value built in code (the TypeScript client) nested too deep is an input error, not a RangeError', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 5_000; i++) deep = [deep];
    const r = StartScrapeInputSchema.safeParse({ account: 'a', url: 'https://example.com/', row: { deep } });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(/more than 64 levels/);
    // A sub-object shared at every level ([x, x] nested 30 times: 2^30 paths) is walked once per
    // depth; walking every path would not end within the test's timeout.
    let shared: unknown = 'x';
    for (let i = 0; i < 30; i++) shared = [shared, shared];
    expect(valueDepth(shared)).toBe(30);
  });
});

describe('findSecret: credentials in options under any usual name or shape', () => {
  it.each([
    [{ headers: { 'X-Api-Key': 'abc123def456' } }, 'headers.X-Api-Key'],
    [{ headers: { Cookie: 'session=abc123def456' } }, 'headers.Cookie'],
    [{ aws: { secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' } }, 'aws.secretAccessKey'],
    // A PEM header assembled at run time (no key-shaped text in the repository), with no key body.
    [{ note: `${'-'.repeat(5)}BEGIN RSA ${['PRIVATE', 'KEY'].join(' ')}${'-'.repeat(5)}\n(body left out)` }, 'note'],
    [{ note: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' }, 'note'],
    [{ note: 'ghp_0123456789abcdefghijABCDEFGHIJ012345' }, 'note'],
    [{ start: 'https://example.com/?x-api-key=abc123def456' }, 'start'],
  ])('%j is refused at %s', (options, path) => {
    expect(findSecret(options)).toBe(path);
  });

  it('ordinary settings stay accepted', () => {
    expect(
      findSecret({
        headers: { 'Accept-Language': 'de' },
        max_tokens: 100,
        session: { sticky: true },
        start: 'https://example.com/?auth=no&key=shoes',
      }),
    ).toBeUndefined();
  });
});

describe("a caller's input row (sanitizeInput)", () => {
  // Made-up values in credential shapes, joined at run time so that no repository scanner takes them for real.
  const gh = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
  const awsExample = 'AKIA' + 'IOSFODNN7EXAMPLE';
  const awsTemporary = 'ASIA' + 'Y34FZKBOKMUTVV7A';
  it('loses a credential of a known shape inside a URL-valued column too (query, path, fragment), as in text', () => {
    const out = JSON.stringify(
      sanitizeInput({
        link: `https://example.com/?q=${gh}`,
        page: `https://example.com/${awsExample}/x`,
        frag: `https://example.com/#${gh}`,
        note: `see https://example.com/?q=${gh} now`,
      }),
    );
    expect(out).not.toContain(gh);
    expect(out).not.toContain(awsExample);
    expect(out).toContain('https://example.com/?q=');
  });
  // The AWS shape once took any 16 of A–Z0–9 after AKIA/ASIA, so a region or SKU code of that
  // length was redacted from the row; real key IDs use base32 (A–Z, 2–7) there.
  it('keeps a code that only looks like an AWS key ID (outside the base32 alphabet of real ones)', () => {
    expect(sanitizeInput({ region: 'ASIAPACIFICSALES2024', sku: 'AKIA0000111122223333' })).toEqual({
      region: 'ASIAPACIFICSALES2024',
      sku: 'AKIA0000111122223333',
    });
    expect(sanitizeInput({ k: awsExample, t: awsTemporary })).toEqual({
      k: REDACTED,
      t: REDACTED,
    });
  });
});
