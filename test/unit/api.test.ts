/**
 * The HTTP API's parts without Temporal: API keys (hashing, file/env formats, constant-
 * time matching), webhook signatures, problem mapping, polling guidance, and the request limits
 * and webhook receiver through `app.inject` on an in-memory store. The Temporal connection is
 * lazy and never used by these requests.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHmac } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/app.js';
import { toProblem } from '../../src/api/errorMapping.js';
import { ApiKeyring, addKeyToFile, generateApiKey, hashApiKey, loadApiKeys } from '../../src/api/auth.js';
import { PROBLEM_TYPES } from '../../src/api/problems.js';
import { pollAfterSeconds, toScrapeOut } from '../../src/api/views.js';
import { verifySha256Signature, webhookSecret } from '../../src/api/webhooks.js';
import {
  IdempotencyConflictError,
  JobNotFoundError,
  ResultExpiredError,
  ResultNotReadyError,
  ScrapeClient,
} from '../../src/client/index.js';
import { parseConfig, webhookProviderNames, type Config } from '../../src/config.js';
import { simWebhookSignature } from '../../tools/sim/webhooks.js';
import { openStore, type Store } from '../../src/store/index.js';
import { listQuarantine } from '../helpers/storeQueries.js';

describe('API keys', () => {
  it('generates 256-bit keys and stores only their SHA-256', () => {
    const k = generateApiKey();
    expect(k).toMatch(/^sk_scrape_[A-Za-z0-9_-]{43}$/);
    expect(generateApiKey()).not.toBe(k);
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('authenticates a Bearer key to its account, and nothing else', () => {
    const ring = new ApiKeyring([
      { account: 'acme', sha256: hashApiKey('key-acme'), name: 'svc' },
      { account: 'globex', sha256: hashApiKey('key-globex') },
    ]);
    expect(ring.size).toBe(2);
    expect(ring.authenticate('Bearer key-acme')).toEqual({ account: 'acme', keyName: 'svc' });
    expect(ring.authenticate('bearer key-globex')).toEqual({ account: 'globex' });
    for (const bad of [
      undefined,
      '',
      'key-acme',
      'Bearer',
      'Bearer ',
      'Bearer key-acm',
      'Bearer key-acmee',
      'Basic key-acme',
      `Bearer ${hashApiKey('key-acme')}`,
      'Bearer key acme',
    ]) {
      expect(ring.authenticate(bad), String(bad)).toBeUndefined();
    }
    expect(new ApiKeyring([]).authenticate('Bearer anything')).toBeUndefined();
  });

  it('loads keys from a file and from the environment; refuses bad files without echoing keys', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-keys-'));
    try {
      const file = path.join(dir, 'keys.json');
      addKeyToFile(file, { account: 'acme', sha256: hashApiKey('k1'), name: 'one' });
      addKeyToFile(file, { account: 'globex', sha256: hashApiKey('k2') });
      expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');
      const env = { KEYS: JSON.stringify({ keys: [{ account: 'initech', sha256: hashApiKey('k3') }] }) };
      const keys = loadApiKeys({ keysFile: file, keysEnv: 'KEYS' }, env);
      expect(keys.map((k) => k.account)).toEqual(['acme', 'globex', 'initech']);
      expect(fs.readFileSync(file, 'utf8')).not.toContain('k1"');

      fs.writeFileSync(file, JSON.stringify({ keys: [{ account: 'acme', sha256: 'plaintext-secret-key' }] }));
      expect(() => loadApiKeys({ keysFile: file, keysEnv: 'KEYS' }, {})).toThrow(/sha256 must be 64 lowercase hex/);
      fs.writeFileSync(file, JSON.stringify({ keys: [{ account: 'acme', sha256: hashApiKey('x'), role: 'admin' }] }));
      expect(() => loadApiKeys({ keysFile: file, keysEnv: 'KEYS' }, {})).toThrow(/role/);
      expect(() => loadApiKeys({ keysFile: path.join(dir, 'missing.json'), keysEnv: 'KEYS' }, {})).toThrow(/ENOENT/);
      expect(() => loadApiKeys({ keysEnv: 'KEYS' }, { KEYS: '{not json' })).toThrow(/KEYS is not valid JSON/);
      // A key pasted where its hash or the JSON belongs: the parser's excerpt of the text never reaches the message.
      const key = generateApiKey();
      for (const text of [key, key.slice('sk_scrape_'.length), `{"keys":[{"account":"acme","sha256":${key}}]}`]) {
        let message = '';
        try {
          loadApiKeys({ keysEnv: 'KEYS' }, { KEYS: text });
        } catch (e) {
          message = (e as Error).message;
        }
        expect(message).toMatch(/KEYS is not valid JSON/);
        const secret = key.slice('sk_scrape_'.length);
        for (let i = 0; i + 6 <= secret.length; i++) expect(message).not.toContain(secret.slice(i, i + 6));
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('webhook signatures', () => {
  const body = Buffer.from('{"event_id":"evt_1","type":"job.completed"}');
  it('verifies the sim’s sha256=<hex HMAC> over the raw body, and rejects every variation', () => {
    const sig = simWebhookSignature(body, 's3cret');
    expect(sig).toBe(`sha256=${createHmac('sha256', 's3cret').update(body).digest('hex')}`);
    expect(verifySha256Signature(body, sig, 's3cret')).toBe(true);
    expect(verifySha256Signature(body, sig.toUpperCase().replace('SHA256', 'sha256'), 's3cret')).toBe(true);
    expect(verifySha256Signature(body, sig, 'other')).toBe(false);
    expect(verifySha256Signature(Buffer.from(`${body.toString()} `), sig, 's3cret')).toBe(false);
    expect(verifySha256Signature(body, undefined, 's3cret')).toBe(false);
    expect(verifySha256Signature(body, sig.slice(0, -2), 's3cret')).toBe(false);
    expect(verifySha256Signature(body, sig.replace('sha256=', 'sha1='), 's3cret')).toBe(false);
  });

  it('takes the secret from api.webhookSecrets, else the provider entry; an unset variable is an error', () => {
    const config = parseConfig(
      {
        providers: {
          reference: {
            kind: 'reference',
            baseUrl: 'http://127.0.0.1:1',
            webhook: { url: 'http://127.0.0.1:2/v1/webhooks/reference', secretEnv: 'A' },
            credentials: {},
          },
        },
      },
      {},
    );
    expect(webhookProviderNames(config)).toEqual(['reference']);
    expect(webhookSecret(config, 'reference', { A: 'from-entry' })).toBe('from-entry');
    config.api.webhookSecrets.reference = { secretEnv: 'B' };
    expect(webhookSecret(config, 'reference', { A: 'from-entry', B: 'from-api' })).toBe('from-api');
    expect(() => webhookSecret(config, 'reference', { A: 'x' })).toThrow(/B/);
  });
});

describe('polling guidance and shapes', () => {
  it('Retry-After grows with the job’s age and disappears once final', () => {
    const now = Date.parse('2026-01-01T00:30:00Z');
    expect(pollAfterSeconds({ state: 'pending', createdAt: '2026-01-01T00:29:30Z' }, now)).toBe(2);
    expect(pollAfterSeconds({ state: 'pending', createdAt: '2026-01-01T00:25:00Z' }, now)).toBe(10);
    expect(pollAfterSeconds({ state: 'unknown', createdAt: '2026-01-01T00:00:00Z' }, now)).toBe(30);
    expect(pollAfterSeconds({ state: 'completed', createdAt: '2026-01-01T00:29:30Z' }, now)).toBeNull();
    expect(pollAfterSeconds({ state: 'tracking_interrupted', createdAt: '2026-01-01T00:29:30Z' }, now)).toBeNull();
  });

  it('a job is shown with URL-encoded links and without the sanitised provider endpoint', () => {
    const out = toScrapeOut({
      jobId: 'scrape:acme:k:1',
      account: 'acme',
      key: 'k:1',
      provider: 'reference',
      url: 'https://example.com/',
      state: 'pending',
      providerStatus: 'running',
      taskId: 'job_1',
      batchId: null,
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
      submittedAt: null,
      finishedAt: null,
      deadlineAt: null,
      statusChecks: 3,
      failingChecks: 2,
      lastCheckedAt: '2026-01-01T00:00:00Z',
      lastError: {
        kind: 'transient',
        message: 'HTTP 503',
        endpoint: 'GET http://10.0.0.5:8790/api/jobs/job_1',
        httpStatus: 503,
        at: '2026-01-01T00:00:00Z',
      },
      waiting: null,
    });
    expect(out.status_url).toBe('/v1/scrapes/scrape%3Aacme%3Ak%3A1');
    expect(out.result_url).toBe('/v1/scrapes/scrape%3Aacme%3Ak%3A1/result');
    expect(out.progress).toEqual({ status_checks: 3, failing_checks: 2, last_checked_at: '2026-01-01T00:00:00Z' });
    expect(out.last_error).toEqual({
      kind: 'transient',
      code: null,
      message: 'HTTP 503',
      http_status: 503,
      at: '2026-01-01T00:00:00Z',
    });
    expect(JSON.stringify(out)).not.toContain('10.0.0.5');
  });
});

describe('problem mapping', () => {
  const req = { log: { error() {}, warn() {} }, routeOptions: {}, headers: {} } as never;
  it('maps client errors to stable types; a missing and a foreign job answer the same', () => {
    const a = toProblem(new JobNotFoundError('scrape:acme:x'), req).toBody();
    const b = toProblem(new JobNotFoundError('scrape:other:y'), req).toBody();
    expect(a).toEqual(b);
    expect(JSON.stringify(a)).not.toContain('acme');
    const notReady = toProblem(new ResultNotReadyError('scrape:acme:x', 'pending'), req);
    expect(notReady.status).toBe(409);
    expect(notReady.headers['retry-after']).toBe('2');
    expect(notReady.toBody()).toMatchObject({ type: '/problems/result-not-ready', state: 'pending', final: false });
    const failed = toProblem(new ResultNotReadyError('scrape:acme:x', 'failed'), req);
    expect(failed.headers['retry-after']).toBeUndefined();
    const expired = toProblem(
      new ResultExpiredError('scrape:acme:x', {
        state: 'expired',
        taskId: 't1',
        provider: 'reference',
        finishedAt: 'f',
        resultWrittenAt: 'w',
        purgedAt: 'p',
        title: 'T',
      }),
      req,
    );
    expect(expired.status).toBe(410);
    expect(expired.toBody()).toMatchObject({ task_id: 't1', purged_at: 'p', result_written_at: 'w', title: 'T' });
    expect(toProblem(new IdempotencyConflictError('scrape:acme:x'), req).status).toBe(409);
  });

  it('Temporal unreachable is 503 with Retry-After; anything unexpected is a bare 500', () => {
    const grpc = Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED'), {
      code: 14,
      details: 'connect ECONNREFUSED',
      metadata: {},
    });
    const wrapped = Object.assign(new Error('Failed to start Workflow'), { cause: grpc });
    for (const e of [grpc, wrapped]) {
      const p = toProblem(e, req);
      expect(p.status).toBe(503);
      expect(p.headers['retry-after']).toBe('5');
    }
    const invalid = Object.assign(new Error('Failed'), {
      cause: Object.assign(new Error('3 INVALID_ARGUMENT'), { code: 3, details: 'x', metadata: {} }),
    });
    expect(toProblem(invalid, req).status).toBe(500);
    const internal = toProblem(new TypeError('secret-ish internal detail'), req).toBody('req-1');
    expect(internal).toEqual({
      type: '/problems/internal',
      title: 'Internal error',
      status: 500,
      detail: 'an unexpected error happened; it was logged under the instance ID',
      instance: 'req-1',
    });
  });
});

describe('the app without Temporal', () => {
  let store: Store;
  let app: FastifyInstance;
  let config: Config;
  const SECRET = 'unit-webhook-secret';
  const auth = { authorization: 'Bearer unit-key' };

  beforeAll(async () => {
    store = await openStore('sqlite::memory:');
    config = parseConfig(
      {
        providers: {
          reference: {
            kind: 'reference',
            baseUrl: 'http://127.0.0.1:1',
            webhook: { url: 'http://127.0.0.1:2/v1/webhooks/reference', secretEnv: 'UNIT_SECRET' },
            credentials: {},
          },
          unsigned: {
            kind: 'reference',
            baseUrl: 'http://127.0.0.1:1',
            webhook: { url: 'http://127.0.0.1:2/v1/webhooks/unsigned', secretEnv: 'UNIT_SECRET' },
            webhookSignature: false,
            credentials: {},
          },
        },
        api: { bodyLimitBytes: 4096, rateLimit: { unauthenticated: { max: 1000 } } },
      },
      {},
    );
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const client = new ScrapeClient({ temporal, store, taskQueue: 'unit', defaultProvider: 'reference' });
    app = await buildApi({
      client,
      store,
      config,
      keys: [{ account: 'acme', sha256: hashApiKey('unit-key') }],
      env: { UNIT_SECRET: SECRET },
    });
  });

  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  it('refuses to build when a webhook secret variable is not set', async () => {
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const client = new ScrapeClient({ temporal, store, taskQueue: 'unit', defaultProvider: 'reference' });
    await expect(buildApi({ client, store, config, keys: [], env: {} })).rejects.toThrow(/UNIT_SECRET/);
  });

  it('request limits answer problem documents with the reason', async () => {
    const cases = [
      { payload: 'x'.repeat(5000), type: 'application/json', status: 413, slug: 'payload-too-large' },
      {
        payload: '<url>https://example.com</url>',
        type: 'application/xml',
        status: 415,
        slug: 'unsupported-media-type',
      },
      {
        payload: JSON.stringify({ url: 'https://example.com', extra: 1 }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
      },
      {
        payload: JSON.stringify({ url: 'https://user:pw@example.com/' }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
      },
      {
        payload: JSON.stringify({ url: 'https://example.com/?token=sk-live-0123456789abcdef' }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
      },
      {
        payload: JSON.stringify({ url: 'https://example.com/', policy: { initialDelayMs: 1 } }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
      },
      {
        payload: '{"url":"https://example.com/","__proto__":{"admin":true}}',
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /forbidden "__proto__"/,
      },
      // A duplicate key is refused (JSON.parse would keep the last one silently): at the top level and nested.
      {
        payload: '{"url":"https://example.com/a","url":"https://example.com/b"}',
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /duplicate key "url" in the object at \/ /,
      },
      {
        payload: '{"url":"https://example.com/","policy":{"deadlineMs":5000,"deadlineMs":60000}}',
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /duplicate key "deadlineMs" in the object at \/policy/,
      },
      {
        payload: JSON.stringify({
          url: 'https://example.com/',
          options: { headers: { Authorization: 'Bearer abcdefgh12345678' } },
        }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
      },
      {
        payload: JSON.stringify({ url: 'https://example.com/', options: { headers: { 'X-Api-Key': 'abc123def456' } } }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /X-Api-Key looks like a credential/,
      },
      // Nesting past 64 levels is a 400 with the reason (thousands of levels overflowed the stack: a 500).
      {
        payload: `{"url":"https://example.com/","row":{"x":${'['.repeat(1_500)}${']'.repeat(1_500)}}}`,
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /nested 1502 deep; at most 64/,
      },
      {
        payload: JSON.stringify({
          url: 'https://example.com/',
          options: { a: JSON.parse(`${'['.repeat(70)}${']'.repeat(70)}`) },
        }),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /deep/,
      },
      // UTF-8 only: another charset is a 415, bytes that are not UTF-8 a 400 (never U+FFFD "repairs").
      {
        payload: Buffer.from('{"url":"https://example.com/","row":{"name":"Caf\u00e9"}}', 'latin1'),
        type: 'application/json; charset=iso-8859-1',
        status: 415,
        slug: 'unsupported-media-type',
      },
      {
        payload: '{"url":"https://example.com/"}',
        type: 'application/json; charset=utf-8; charset=latin1',
        status: 415,
        slug: 'unsupported-media-type',
      },
      {
        payload: '{"url":"https://example.com/"}',
        type: 'application/json; charset="utf-8"latin1',
        status: 415,
        slug: 'unsupported-media-type',
      },
      {
        payload: Buffer.concat([
          Buffer.from('{"url":"https://example.com/","row":{"name":"Caf'),
          Buffer.from([0xe9]),
          Buffer.from('"}}'),
        ]),
        type: 'application/json',
        status: 400,
        slug: 'invalid-request',
        detail: /not valid UTF-8/,
      },
    ];
    for (const c of cases) {
      const r = await app.inject({
        method: 'POST',
        url: '/v1/scrapes',
        headers: { ...auth, 'content-type': c.type },
        payload: c.payload,
      });
      expect(r.statusCode, c.slug).toBe(c.status);
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
      const body = r.json() as { type: string; title: string; status: number; detail: string };
      expect(body).toMatchObject({
        type: `/problems/${c.slug}`,
        title: PROBLEM_TYPES[c.slug as keyof typeof PROBLEM_TYPES].title,
        status: c.status,
      });
      expect(body.detail.length).toBeGreaterThan(5);
      if (c.detail) expect(body.detail).toMatch(c.detail);
      expect(r.body).not.toMatch(/at .*\.ts:\d+/);
    }
    expect(await store.jobs.list({})).toEqual([]);
    // An over-long ID (past the schema's 300 characters, or the router's 400) is an invalid parameter: 400, as the document says.
    for (const n of [301, 500]) {
      const long = await app.inject({ url: `/v1/scrapes/${'a'.repeat(n)}`, headers: auth });
      expect(long.statusCode).toBe(400);
      expect(long.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(long.json()).toMatchObject({ type: '/problems/invalid-request', status: 400 });
    }
  });

  it('a method the path does not answer is 405 with Allow, before the body is read; an unknown path is 404', async () => {
    for (const [method, url, allow] of [
      ['DELETE', '/v1/scrapes/scrape%3Aacme%3Ak', 'GET, HEAD'],
      ['PUT', '/v1/scrapes', 'GET, HEAD, POST'],
      ['QUERY', '/v1/scrapes/x/result', 'GET, HEAD'],
      ['GET', '/v1/scrapes/x/cancel', 'POST'],
      ['TRACE', '/healthz', 'GET, HEAD'],
      ['GET', '/v1/webhooks/reference', 'POST'],
    ] as const) {
      const r = await app.inject({
        method: method as never,
        url,
        headers: { ...auth, 'content-type': 'text/plain' },
        payload: method === 'GET' || method === 'TRACE' ? undefined : 'not json',
      });
      expect(r.statusCode, `${method} ${url}`).toBe(405);
      expect(r.headers.allow).toBe(allow);
      expect(r.json()).toMatchObject({ type: '/problems/method-not-allowed', status: 405 });
    }
    const missing = await app.inject({
      method: 'PATCH',
      url: '/v2/nothing',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ type: '/problems/route-not-found' });
  });

  it('a path with bad percent-encoding is 400 and the answer never quotes the query string (where a caller may have put a key)', async () => {
    for (const url of [
      '/v1/scrapes/%zz?api_key=sk-live-QUERY-1',
      '/v1/scrapes/%E0%A4%A/result?token=sk-live-QUERY-2',
    ]) {
      const r = await app.inject({ method: 'GET', url, headers: auth });
      expect(r.statusCode, url).toBe(400);
      expect(r.json()).toMatchObject({
        type: '/problems/invalid-request',
        detail: expect.stringMatching(/is not valid percent-encoding/),
      });
      expect(r.body).not.toMatch(/sk-live-QUERY|api_key|token=/);
    }
  });

  it('an unauthenticated request is 401 before its body is even read', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/v1/scrapes',
      headers: { 'content-type': 'application/json' },
      payload: 'x'.repeat(5000),
    });
    expect(r.statusCode).toBe(401);
  });

  it('every problem type is described at its type URI', async () => {
    for (const [slug, t] of Object.entries(PROBLEM_TYPES)) {
      const r = await app.inject({ url: `/problems/${slug}` });
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({
        type: `/problems/${slug}`,
        status: t.status,
        title: t.title,
        description: t.description,
      });
    }
    expect((await app.inject({ url: '/problems/nope' })).statusCode).toBe(404);
  });

  it('webhook deliveries to names that are not configured providers share one bucket per IP; a provider keeps its own', async () => {
    const own = await openStore('sqlite::memory:'); // its quarantine rows stay out of the other tests' store
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const client = new ScrapeClient({ temporal, store: own, taskQueue: 'unit', defaultProvider: 'reference' });
    const limited = await buildApi({
      client,
      store: own,
      config: {
        ...config,
        api: { ...config.api, rateLimit: { ...config.api.rateLimit, webhooks: { max: 3, timeWindowMs: 60_000 } } },
      },
      keys: [],
      env: { UNIT_SECRET: SECRET },
    });
    try {
      const post = async (name: string) =>
        (await limited.inject({ method: 'POST', url: `/v1/webhooks/${name}`, payload: {} })).statusCode;
      const madeUp = [];
      for (let i = 0; i < 5; i++) madeUp.push(await post(`made-up-${i}`));
      expect(madeUp).toEqual([404, 404, 404, 429, 429]);
      expect(await post('reference')).not.toBe(429);
    } finally {
      await limited.close();
      await own.close();
    }
  });

  it('webhooks: of an unverified body that is not JSON, only its hash and size are kept, never an excerpt', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/v1/webhooks/unsigned/not-a-real-token',
      headers: { 'content-type': 'application/json' },
      payload: 'PRIVATEpayloadXYZ and more',
    });
    expect(r.statusCode).toBe(400);
    const kept = await listQuarantine(store, { provider: 'unsigned' });
    expect(kept.map((q) => q.reason)).toEqual(['invalid_payload']);
    expect(kept[0]!.body).toBe('');
    expect(kept[0]!.detail).toMatch(/not valid JSON/);
    expect(kept[0]!.detail).not.toMatch(/PRIVATE|payload/);
  });

  it('webhooks: a bad signature is 401 and quarantined; a valid unmatched event is quarantined once', async () => {
    const event = {
      event_id: 'evt_unit_1',
      type: 'job.completed',
      job_id: 'job_x',
      client_ref: null,
      status: 'completed',
    };
    const body = JSON.stringify(event);
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/webhooks/reference',
      headers: { 'content-type': 'application/json', 'x-sim-signature': 'sha256=00' },
      payload: body,
    });
    expect(bad.statusCode).toBe(401);
    expect(await store.webhooks.listDeliveries()).toEqual([]);
    const signed = { 'content-type': 'application/json', 'x-sim-signature': simWebhookSignature(body, SECRET) };
    const ok = await app.inject({ method: 'POST', url: '/v1/webhooks/reference', headers: signed, payload: body });
    expect(ok.statusCode).toBe(202);
    expect(ok.json()).toEqual({ received: true, event_id: 'evt_unit_1', outcome: 'quarantined' });
    const dup = await app.inject({ method: 'POST', url: '/v1/webhooks/reference', headers: signed, payload: body });
    expect(dup.json()).toMatchObject({ outcome: 'duplicate' });
    const q = await listQuarantine(store, { provider: 'reference' });
    expect(q.map((r) => r.reason).sort()).toEqual(['invalid_signature', 'unmatched']);
    expect(q.every((r) => !r.headers.includes(SECRET) && !r.body.includes(SECRET))).toBe(true);
    const wrongType = await app.inject({
      method: 'POST',
      url: '/v1/webhooks/reference',
      headers: { 'content-type': 'text/plain' },
      payload: body,
    });
    expect(wrongType.statusCode).toBe(415);
  });
});
