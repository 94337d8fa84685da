/**
 * The provider framework without Temporal: descriptors and configuration, the common
 * entry fields, `effectivePolicy`, `registry.resolve` (result limits, settle window, per-job
 * callback), credentials, the HTTP helpers against a real loopback server (credential placement,
 * form bodies, plain-text errors, redaction of every recorded URL, header and body), pagination
 * with heartbeats and result limits, callback tokens and webhook verification.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactCallbackToken, requestLogger } from '../../src/api/requestLog.js';
import { redactSecrets } from '../../src/lib/sanitize.js';
import { parseConfig, type Config } from '../../src/config.js';
import { ProviderEntrySchema } from '../../src/providers/kinds.js';
import { DEFAULT_POLL_POLICY } from '../../src/model/types.js';
import { credentialSecrets, resolveCredential } from '../../src/providers/shared/credentials.js';
import { descriptorOf, evidenceTable, PROVIDER_DESCRIPTORS } from '../../src/providers/kinds.js';
import { PROVIDERS_PAGE_PATH, sectionOf } from '../../tools/docs/providersPage.js';
import { DEFAULT_SETTLE_MS } from '../../src/providers/shared/entry.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { errorDetails, joinUrl, path, ProviderHttp } from '../../src/providers/shared/http.js';
import {
  enforceResultLimits,
  paginateCursor,
  paginateNextLink,
  paginateOffset,
  resultFromDocuments,
} from '../../src/providers/shared/pagination.js';
import { effectivePolicy } from '../../src/providers/shared/policy.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { referenceState } from '../../src/providers/reference/index.js';
import { DEFAULT_RESULT_LIMITS, type CallContext } from '../../src/providers/adapter.js';
import {
  appendPathSegment,
  callbackToken,
  callbackTokenMatches,
  tokenOfCallbackUrl,
  verifySha256Signature,
} from '../../src/providers/shared/webhook.js';
import { simWebhookSignature } from '../../tools/sim/webhooks.js';

const KEY = 'sk-unit-provider-0123456789abcdef';

function config(entry: Record<string, unknown>, extra: Record<string, unknown> = {}): Config {
  return parseConfig(
    {
      providers: {
        p: { kind: 'reference', baseUrl: 'http://127.0.0.1:1', credentials: { default: { apiKey: KEY } }, ...entry },
      },
      ...extra,
    },
    {},
  );
}

describe('descriptors and configuration', () => {
  it('every descriptor names its contract, capabilities and expiry, and its entry schema is in the union', () => {
    for (const d of PROVIDER_DESCRIPTORS) {
      expect(d.contract.length).toBeGreaterThan(20);
      expect(d.expiry.length).toBeGreaterThan(3);
      expect(Object.keys(d.capabilities).sort()).toEqual(['cancel', 'idempotency', 'list', 'webhooks']);
      expect(descriptorOf(d.kind)).toBe(d);
    }
    expect(() => descriptorOf('nope')).toThrow(/unknown provider kind "nope" \(known: reference/);
  });

  it('every kind declares its reconcile evidence, and docs/providers.md shows exactly what each declares', () => {
    for (const d of PROVIDER_DESCRIPTORS) {
      expect(d.evidence.length, d.kind).toBeGreaterThan(0);
      for (const e of d.evidence) expect(e.evidence.source.length, d.kind).toBeGreaterThan(10);
    }
    const page = fs.readFileSync(new URL(`../../${PROVIDERS_PAGE_PATH}`, import.meta.url), 'utf8');
    expect(sectionOf(page, 'evidence'), 'the evidence table of docs/providers.md (run npm run docs:providers)').toBe(
      evidenceTable(),
    );
  });

  it('common entry fields are validated with a reason; misspelt fields and unknown kinds are refused', () => {
    const ok = config({
      poll: { initialDelayMs: 5_000, webhookSlowdown: 3 },
      results: { maxDocuments: 50 },
      reconcile: { settleMs: 30_000 },
      limits: { maxConcurrent: 2 },
    }).providers.p!;
    expect(ok).toMatchObject({
      limits: { maxConcurrent: 2, minIntervalMs: 0 },
      poll: { initialDelayMs: 5_000, webhookSlowdown: 3 },
      results: { maxDocuments: 50 },
      reconcile: { settleMs: 30_000 },
    });
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ pol: {} }, /Unrecognized key: "pol"/],
      [{ poll: { initialDelayMs: 1 } }, /initialDelayMs/],
      [{ poll: { initialDelayMs: 9_000, maxDelayMs: 1_000 } }, /initialDelayMs must not exceed poll.maxDelayMs/],
      [{ poll: { every: 1 } }, /every/],
      [{ results: { maxDocuments: 0 } }, /maxDocuments/],
      [{ reconcile: { settleMs: -1 } }, /settleMs/],
      [{ webhook: { url: 'http://127.0.0.1:2/v1/webhooks/p' } }, /secretEnv/],
      [{ webhook: { url: 'ftp://x/hook', secretEnv: 'S' } }, /http/],
      [{ credentials: { defualt: { apiKey: 'x' } } }, /defualt/],
      [{ kind: 'nope' }, /discriminator|kind/i],
    ];
    for (const [entry, why] of bad) expect(() => config(entry), JSON.stringify(entry)).toThrow(why);
    expect(ProviderEntrySchema.safeParse({ kind: 'reference', baseUrl: 'http://h', credentials: {} }).success).toBe(
      true,
    );
  });

  it('effectivePolicy: defaults ← provider entry poll ← job policy, field by field', () => {
    const c = config({ poll: { initialDelayMs: 5_000, maxDelayMs: 120_000, webhookSlowdown: 3 } });
    expect(effectivePolicy(c, 'p', undefined)).toEqual({
      ...DEFAULT_POLL_POLICY,
      initialDelayMs: 5_000,
      maxDelayMs: 120_000,
      webhookSlowdown: 3,
    });
    expect(effectivePolicy(c, 'p', { initialDelayMs: 300, deadlineMs: 60_000 })).toEqual({
      ...DEFAULT_POLL_POLICY,
      initialDelayMs: 300,
      maxDelayMs: 120_000,
      webhookSlowdown: 3,
      deadlineMs: 60_000,
    });
    expect(effectivePolicy(c, 'other', { jitter: 0 })).toEqual({ ...DEFAULT_POLL_POLICY, jitter: 0 });
    expect(effectivePolicy(undefined, 'p', undefined)).toEqual(DEFAULT_POLL_POLICY);
  });
});

describe('registry.resolve', () => {
  it('fills result limits and the settle window from the entry, defaults otherwise', () => {
    const r = new ProviderRegistry(
      config({ results: { maxDocuments: 7 }, reconcile: { settleMs: 2_500 } }),
      {},
    ).resolve('p', 'acme');
    expect(r.resultLimits).toEqual({ ...DEFAULT_RESULT_LIMITS, maxDocuments: 7 });
    expect(r.settleMs).toBe(2_500);
    const d = new ProviderRegistry(config({}), {}).resolve('p', 'acme');
    expect(d.resultLimits).toEqual(DEFAULT_RESULT_LIMITS);
    expect(d.settleMs).toBe(DEFAULT_SETTLE_MS);
    expect(d.callback('scrape:acme:k')).toEqual({});
  });

  it('callback(jobId): the signed URL and secret, or a per-job token URL for unsigned deliveries; an unset secret is a permanent error', () => {
    const env = { HOOK_SECRET: 'whsec-unit-0123456789' };
    const signed = new ProviderRegistry(
      config({ webhook: { url: 'https://api.example/v1/webhooks/p', secretEnv: 'HOOK_SECRET' } }),
      env,
    ).resolve('p', 'acme');
    expect(signed.callback('scrape:acme:k1')).toEqual({
      callbackUrl: 'https://api.example/v1/webhooks/p',
      webhookSecret: env.HOOK_SECRET,
    });
    const unsigned = new ProviderRegistry(
      config({
        webhookSignature: false,
        webhook: { url: 'https://api.example/v1/webhooks/p/', secretEnv: 'HOOK_SECRET' },
      }),
      env,
    ).resolve('p', 'acme');
    const a = unsigned.callback('scrape:acme:k1');
    const b = unsigned.callback('scrape:acme:k2');
    expect(a.webhookSecret).toBeUndefined();
    expect(a.callbackUrl).toBe(
      `https://api.example/v1/webhooks/p/${callbackToken(env.HOOK_SECRET, 'p', 'scrape:acme:k1')}`,
    );
    expect(a.callbackUrl).not.toBe(b.callbackUrl);
    expect(a.callbackUrl).not.toContain(env.HOOK_SECRET);
    const missing = new ProviderRegistry(
      config({ webhook: { url: 'https://api.example/v1/webhooks/p', secretEnv: 'HOOK_SECRET' } }),
      {},
    ).resolve('p', 'acme');
    expect(() => missing.callback('scrape:acme:k1')).toThrow(
      expect.objectContaining({ kind: 'permanent', details: expect.objectContaining({ code: 'NO_WEBHOOK_SECRET' }) }),
    );
  });

  it('allSecrets: every credential (with a Basic pair’s password and Base64) and every webhook secret', () => {
    const c = config({
      credentials: { default: { apiKey: 'user-1:pass-word-123' }, accounts: { b: { apiKeyEnv: 'B_KEY' } } },
      webhook: { url: 'https://api.example/v1/webhooks/p', secretEnv: 'HOOK_SECRET' },
    });
    const secrets = new ProviderRegistry(c, {
      B_KEY: 'b-key-0123456789',
      HOOK_SECRET: 'hook-secret-0123',
    }).allSecrets();
    expect(secrets).toEqual(
      expect.arrayContaining([
        'user-1:pass-word-123',
        'pass-word-123',
        Buffer.from('user-1:pass-word-123').toString('base64'),
        'b-key-0123456789',
        'hook-secret-0123',
      ]),
    );
  });

  it('resolveCredential: the account’s own, else the default; a label without the value; errors name the variable', () => {
    const entry = config({ credentials: { default: { apiKey: 'd-key' }, accounts: { b: { apiKeyEnv: 'B_KEY' } } } })
      .providers.p!;
    expect(resolveCredential(entry, 'p', 'a', {})).toEqual({ apiKey: 'd-key', label: 'p/default' });
    expect(resolveCredential(entry, 'p', 'b', { B_KEY: 'b-key' })).toEqual({ apiKey: 'b-key', label: 'p/b' });
    expect(() => resolveCredential(entry, 'p', 'b', {})).toThrow(/B_KEY/);
    expect(credentialSecrets('token-only')).toEqual(['token-only']);
    // A key from a mounted secret file ends in a newline: sent (and echoed) without it, so redacted without it too.
    const fromFile = config({
      credentials: { default: { apiKeyEnv: 'K' }, accounts: { a: { apiKey: 'lit-key-0123\n' } } },
    }).providers.p!;
    expect(resolveCredential(fromFile, 'p', 'x', { K: 'env-key-0123\n' }).apiKey).toBe('env-key-0123');
    expect(resolveCredential(fromFile, 'p', 'a', {}).apiKey).toBe('lit-key-0123');
    expect(credentialSecrets('env-key-0123\n')).toEqual(['env-key-0123', 'env-key-0123\n']);
  });
});

describe('URLs', () => {
  it('a baseUrl path prefix is kept when paths are joined (new URL drops it)', () => {
    expect(new URL('/api/x', 'https://h.example/prefix/v2').toString()).toBe('https://h.example/api/x');
    expect(joinUrl('https://h.example/prefix/v2', '/api/x')).toBe('https://h.example/prefix/v2/api/x');
    expect(joinUrl('https://h.example/prefix/v2/', 'api/x')).toBe('https://h.example/prefix/v2/api/x');
    expect(joinUrl('https://h.example', '/api/x', { a: 1, b: undefined, t: ['x', 'y'] })).toBe(
      'https://h.example/api/x?a=1&t=x&t=y',
    );
    expect(joinUrl('https://h.example/p?dataset_id=d1', '/trigger?format=json', { limit: 5 })).toBe(
      'https://h.example/p/trigger?dataset_id=d1&format=json&limit=5',
    );
    expect(path`/v2/crawl/${'a/b c'}/errors`).toBe('/v2/crawl/a%2Fb%20c/errors');
  });

  it('callback tokens: per job and provider, checked in constant time, redacted from logs', () => {
    const t = callbackToken('s3cret', 'apify', 'scrape:acme:k1');
    expect(t).toMatch(/^[0-9a-f]{64}$/);
    expect(callbackTokenMatches(t, 's3cret', 'apify', 'scrape:acme:k1')).toBe(true);
    expect(callbackTokenMatches(t, 's3cret', 'apify', 'scrape:acme:k2')).toBe(false);
    expect(callbackTokenMatches(t, 's3cret', 'oxylabs', 'scrape:acme:k1')).toBe(false);
    expect(callbackTokenMatches(t, 'other', 'apify', 'scrape:acme:k1')).toBe(false);
    expect(callbackTokenMatches(t.toUpperCase(), 's3cret', 'apify', 'scrape:acme:k1')).toBe(false);
    expect(callbackTokenMatches('abc', 's3cret', 'apify', 'scrape:acme:k1')).toBe(false);
    const url = appendPathSegment('https://api.example/v1/webhooks/apify?x=1', t);
    expect(url).toBe(`https://api.example/v1/webhooks/apify/${t}?x=1`);
    expect(tokenOfCallbackUrl(url)).toBe(t);
    expect(redactCallbackToken(`/v1/webhooks/apify/${t}?x=1`)).toBe('/v1/webhooks/apify/[REDACTED]?x=1');
    expect(redactCallbackToken('/v1/webhooks/apify')).toBe('/v1/webhooks/apify');
    // Spellings the router may also see (a 404, but logged): the token is still redacted.
    for (const u of [`//v1/webhooks/apify/${t}`, `/v1/webhooks//apify/${t}`, `/V1/Webhooks/apify/${t}`])
      expect(redactCallbackToken(u)).not.toContain(t);
  });

  it('the request log shows no key: not in the URL, a secret-named header, or a URL-valued header', () => {
    const logger = requestLogger({ stream: process.stdout }) as {
      serializers: { req: (r: unknown) => { url: string; headers: Record<string, unknown> } };
    };
    const line = logger.serializers.req({
      id: '1',
      method: 'GET',
      url: '/v1/scrapes?api_key=SECRET-1&access_token=SECRET-2&limit=5',
      headers: {
        authorization: 'Bearer SECRET-3',
        'x-api-key': 'SECRET-4',
        referer: 'https://app.example/v1/scrapes?api_key=SECRET-5',
        'x-original-url': '/v1/scrapes?token=SECRET-6abcdefgh',
        accept: 'application/json',
      },
    });
    expect(JSON.stringify(line)).not.toMatch(/SECRET/);
    expect(line.url).toContain('limit=5');
    expect(line.headers.accept).toBe('application/json');
  });

  it('credentials: a blank key or one with a control character inside is a configuration error, not an empty or split key sent', () => {
    for (const apiKey of ['   ', 'sk-live-part\nrest-of-key', 'sk-live\tkey']) {
      expect(() => config({ credentials: { default: { apiKey } } }), JSON.stringify(apiKey)).toThrow(
        /blank|control character/,
      );
    }
    const entry = config({ credentials: { default: { apiKeyEnv: 'K' } } }).providers.p!;
    expect(() => resolveCredential(entry, 'p', 'a', { K: '  ' })).toThrow(/K .* is blank/);
    expect(() => resolveCredential(entry, 'p', 'a', { K: 'sk-a\nsk-b' })).toThrow(/control character/);
  });

  it('a known key with a space or line break inside is redacted whole, before the Bearer pattern could split it', () => {
    const key = 'sk-live-AAAA BBBBBBBBsecretTail';
    expect(redactSecrets(`auth failed: Bearer ${key}`, [key])).not.toMatch(/secretTail|AAAA/);
    expect(redactSecrets(`Bearer sk-live-x\nTAILSECRET987`, ['sk-live-x\nTAILSECRET987'])).not.toMatch(/TAILSECRET/);
  });

  it('the reference webhook kind verifies X-Sim-Signature over the raw body', () => {
    const hook = descriptorOf('reference').webhook!;
    const body = Buffer.from('{"event_id":"e1","type":"job.completed","job_id":"j1","status":"completed"}');
    expect(hook.verify!(body, { 'x-sim-signature': simWebhookSignature(body, 'k') }, 'k')).toBe(true);
    expect(hook.verify!(body, { 'x-sim-signature': simWebhookSignature(body, 'k') }, 'other')).toBe(false);
    expect(verifySha256Signature(body, undefined, 'k')).toBe(false);
    expect(hook.parse(JSON.parse(body.toString()), {}, body)).toEqual({
      ok: true,
      event: { eventId: 'e1', type: 'job.completed', taskId: 'j1', clientRef: null, providerStatus: 'completed' },
    });
    expect(hook.parse({ hello: 1 }, {}, body).ok).toBe(false);
    expect(referenceState('completed')).toBe('completed');
    expect(referenceState('COMPLETED')).toBe('unrecognised');
    expect(referenceState('stalled')).toBe('unrecognised');
  });
});

describe('errorDetails', () => {
  it('reads code and message from the usual shapes and from plain text', () => {
    const d = (body: unknown, text = typeof body === 'string' ? body : JSON.stringify(body)) =>
      errorDetails({ body: typeof body === 'string' ? undefined : body, text });
    expect(d({ error: { code: 'CONCURRENCY_LIMIT', message: 'one at a time' } })).toEqual({
      code: 'CONCURRENCY_LIMIT',
      message: 'one at a time',
    });
    expect(d({ error: { type: 'concurrent-runs-limit-exceeded', message: 'too many runs' } })).toEqual({
      code: 'concurrent-runs-limit-exceeded',
      message: 'too many runs',
    });
    expect(d({ success: false, error: 'Rate limit exceeded. Please retry after 7 seconds.' })).toEqual({
      code: undefined,
      message: 'Rate limit exceeded. Please retry after 7 seconds.',
    });
    expect(d({ status: 'error', message: 'spider not found' })).toEqual({
      code: undefined,
      message: 'spider not found',
    });
    expect(d({ code: 'expired', detail: 'snapshot expired' })).toEqual({
      code: 'expired',
      message: 'snapshot expired',
    });
    expect(d('Snapshot is empty\n')).toEqual({ message: 'Snapshot is empty' });
    expect(d('')).toEqual({ message: undefined });
  });
});

describe('ProviderHttp against a loopback server', () => {
  interface Seen {
    method: string;
    url: string;
    headers: http.IncomingHttpHeaders;
    body: string;
  }
  let server: http.Server;
  let base: string;
  let seen: Seen[] = [];
  /** Answers by path. */
  const answers: Record<string, { status: number; type?: string; body: string; headers?: Record<string, string> }> = {};

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
        const a = answers[req.url!.split('?')[0]!] ?? { status: 200, body: '{"ok":true}' };
        res.writeHead(a.status, { 'content-type': a.type ?? 'application/json', ...(a.headers ?? {}) });
        res.end(a.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prefix`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const ctx = (apiKey = KEY): CallContext => ({ apiKey, secrets: ['other-secret-0123'] });
  const client = (auth: ConstructorParameters<typeof ProviderHttp>[0]['auth']) =>
    new ProviderHttp({ provider: 'p', baseUrl: base, auth, submitTimeoutMs: 2_000, readTimeoutMs: 2_000 });

  it('places the credential in a header, the query string, Basic auth or the body, and records none of it', async () => {
    seen = [];
    const cases = [
      { auth: { in: 'header' as const }, key: KEY },
      { auth: { in: 'header' as const, name: 'X-Api-Key', scheme: '' }, key: KEY },
      { auth: { in: 'query' as const, name: 'token' }, key: KEY },
      { auth: { in: 'query' as const, name: 'apikey' }, key: KEY },
      { auth: { in: 'basic' as const }, key: 'oxy-user:oxy-pass-0123456789' },
      { auth: { in: 'body' as const, name: 'apiKey' }, key: KEY },
    ];
    const evidence: string[] = [];
    for (const c of cases) {
      const res = await client(c.auth).ok(ctx(c.key), {
        method: 'POST',
        path: path`/jobs/${'a b'}`,
        json: { url: 'https://t.example/' },
        phase: 'submit',
      });
      evidence.push(JSON.stringify(res.evidence));
    }
    expect(seen.map((s) => s.url.split('?')[0])).toEqual(Array(6).fill('/prefix/jobs/a%20b'));
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen[1]!.headers['x-api-key']).toBe(KEY);
    expect(new URL(seen[2]!.url, base).searchParams.get('token')).toBe(KEY);
    expect(new URL(seen[3]!.url, base).searchParams.get('apikey')).toBe(KEY);
    expect(seen[4]!.headers.authorization).toBe(
      `Basic ${Buffer.from('oxy-user:oxy-pass-0123456789').toString('base64')}`,
    );
    expect(JSON.parse(seen[5]!.body)).toEqual({ url: 'https://t.example/', apiKey: KEY });
    for (const e of evidence) {
      expect(e).not.toContain(KEY);
      expect(e).not.toContain('oxy-pass-0123456789');
      expect(e).not.toContain(Buffer.from('oxy-user:oxy-pass-0123456789').toString('base64'));
    }
    expect(evidence[2]).toContain('token=%5BREDACTED%5D');
    await expect(
      client({ in: 'basic' }).call(ctx('no-colon-key'), { method: 'GET', path: '/x', phase: 'read' }),
    ).rejects.toMatchObject({
      kind: 'permanent',
      details: { code: 'BAD_CREDENTIALS' },
    });
  });

  it('sends form-encoded bodies with repeated keys (Zyte run.json) and records them redacted', async () => {
    seen = [];
    const res = await client({ in: 'body', name: 'apikey' }).ok(ctx(), {
      method: 'POST',
      path: '/api/run.json',
      form: { project: 123, spider: 'books', add_tag: ['ref:abc', 'team:x'], job_settings: undefined },
      phase: 'submit',
    });
    expect(seen[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const sent = new URLSearchParams(seen[0]!.body);
    expect(sent.getAll('add_tag')).toEqual(['ref:abc', 'team:x']);
    expect(sent.get('project')).toBe('123');
    expect(sent.get('apikey')).toBe(KEY);
    expect(res.evidence.request).toEqual({
      project: '123',
      spider: 'books',
      add_tag: ['ref:abc', 'team:x'],
      apikey: '[REDACTED]',
    });
  });

  it('classifies plain-text and JSON errors, with the wait from Retry-After or the message, secrets redacted by value', async () => {
    answers['/prefix/plain'] = { status: 400, type: 'text/plain', body: `Snapshot is empty (key ${KEY})` };
    answers['/prefix/limited'] = {
      status: 429,
      body: JSON.stringify({ error: 'Rate limit exceeded. Please retry after 7 seconds.' }),
    };
    answers['/prefix/busy'] = {
      status: 402,
      body: JSON.stringify({ error: { type: 'concurrent-runs-limit-exceeded', message: 'wait' } }),
      headers: { 'retry-after': '3' },
    };
    answers['/prefix/gone'] = { status: 404, body: '{"error":{"code":"NOT_FOUND","message":"no such job"}}' };
    answers['/prefix/down'] = { status: 503, type: 'text/html', body: '<html>bad gateway</html>' };
    const h = client({ in: 'query', name: 'token' });
    const err = async (p: string, phase: 'submit' | 'read') =>
      h.ok(ctx(), { method: 'GET', path: p, phase }).then(
        () => undefined,
        (e: ProviderError) => e,
      );
    const plain = (await err('/plain', 'read'))!;
    expect(plain).toMatchObject({ kind: 'permanent', details: { httpStatus: 400 } });
    expect(plain.message).toContain('Snapshot is empty');
    expect(plain.message).not.toContain(KEY);
    expect(JSON.stringify(plain.details.evidence)).not.toContain(KEY);
    expect(await err('/limited', 'read')).toMatchObject({ kind: 'cooldown', details: { retryAfterMs: 7_000 } });
    expect(await err('/busy', 'submit')).toMatchObject({
      kind: 'cooldown',
      details: { code: 'concurrent-runs-limit-exceeded', retryAfterMs: 3_000 },
    });
    expect(await err('/gone', 'read')).toMatchObject({ kind: 'not_found', details: { code: 'NOT_FOUND' } });
    expect(await err('/down', 'submit')).toMatchObject({ kind: 'ambiguous' });
    expect(await err('/down', 'read')).toMatchObject({ kind: 'transient' });
  });

  it('follows an absolute next link only on the provider’s origin', async () => {
    const h = client({ in: 'header' });
    await expect(h.ok(ctx(), { method: 'GET', url: `${base}/page2?skip=10`, phase: 'read' })).resolves.toMatchObject({
      status: 200,
    });
    await expect(
      h.call(ctx(), { method: 'GET', url: 'https://evil.example/steal', phase: 'read' }),
    ).rejects.toMatchObject({
      kind: 'permanent',
      details: { code: 'FOREIGN_URL' },
    });
  });
});

describe('pagination', () => {
  const limits = { maxDocuments: 1_000, maxBytes: 1_000_000, pageSize: 10 };
  const items = Array.from({ length: 35 }, (_, i) => ({ i }));

  it('offset/limit, cursor and next-link styles read every item in order, heartbeating between pages', async () => {
    const beats: { documents: number; pages: number }[] = [];
    const common = {
      provider: 'p',
      taskId: 't',
      limits,
      heartbeat: (b: { documents: number; pages: number }) => beats.push(b),
    };
    const byOffset = await paginateOffset({
      ...common,
      fetch: async (offset, limit) => ({ items: items.slice(offset, offset + limit) }),
    });
    expect(byOffset).toEqual(items);
    expect(beats).toEqual([
      { documents: 10, pages: 1 },
      { documents: 20, pages: 2 },
      { documents: 30, pages: 3 },
      { documents: 35, pages: 4 },
    ]);
    const byCursor = await paginateCursor({
      ...common,
      fetch: async (cursor, limit) => {
        const at = cursor ? Number(cursor) : 0;
        return { items: items.slice(at, at + limit), cursor: at + limit < items.length ? String(at + limit) : null };
      },
    });
    expect(byCursor).toEqual(items);
    const byLink = await paginateNextLink({
      ...common,
      firstUrl: 'https://p.example/crawl/1',
      fetch: async (url) => {
        const skip = Number(new URL(url).searchParams.get('skip') ?? 0);
        return {
          items: items.slice(skip, skip + 10),
          next: skip + 10 < items.length ? `https://p.example/crawl/1?skip=${skip + 10}` : undefined,
        };
      },
    });
    expect(byLink).toEqual(items);
    // Apify-style: short pages (hidden items skipped) do not end the read when asked.
    const short = await paginateOffset({
      ...common,
      shortPagesContinue: true,
      fetch: async (offset) => ({ items: offset < 30 ? items.slice(offset, offset + 7) : [] }),
    });
    expect(short).toHaveLength(21);
  });

  it('a result over its limits fails permanently, saying which limit and how to raise it', async () => {
    const big = paginateOffset({
      provider: 'fc-prod',
      taskId: 'crawl-1',
      limits: { ...limits, maxDocuments: 25 },
      fetch: async (offset, limit) => ({ items: items.slice(offset, offset + limit) }),
    });
    await expect(big).rejects.toMatchObject({ kind: 'permanent', details: { code: 'RESULT_TOO_LARGE' } });
    await expect(big).rejects.toThrow(
      /more than 25 documents \(limit results.maxDocuments = 25\); raise "providers.fc-prod.results.maxDocuments"/,
    );
    const heavy = paginateCursor({
      provider: 'p',
      taskId: 't',
      limits: { ...limits, maxBytes: 50 },
      fetch: async () => ({ items: items.slice(0, 10), cursor: null }),
    });
    await expect(heavy).rejects.toThrow(/more than 50 bytes .*results.maxBytes/);
    const docs = items.map((it) => ({ url: `https://x/${it.i}`, markdown: 'x'.repeat(10) }));
    expect(() =>
      enforceResultLimits(resultFromDocuments(docs, 'https://x/'), { ...limits, maxDocuments: 30 }, 'p', 't'),
    ).toThrow(/RESULT_TOO_LARGE|more than 30 documents/);
    expect(enforceResultLimits(resultFromDocuments(docs, 'https://x/'), limits, 'p', 't').documents).toHaveLength(35);
  });

  it('a provider that repeats a page position is stopped instead of looping', async () => {
    const loop = paginateCursor({
      provider: 'p',
      taskId: 't',
      limits,
      fetch: async () => ({ items: [{ i: 1 }], cursor: 'same' }),
    });
    await expect(loop).rejects.toMatchObject({ details: { code: 'PAGINATION_LOOP' } });
  });
});
