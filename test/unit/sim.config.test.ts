/**
 * Unit tests of the sim's configuration (schemas, CLI parsing) and of HTTP edge cases through
 * Fastify's `inject` (no socket).
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { createSim, ProfileSchema, SimOptionsSchema, startSim, type Sim } from '../../tools/sim/index.js';
import { HelpRequested, optionsFromCli, parseAccounts } from '../../tools/sim/main.js';

const sims: Sim[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});
function make(opts: Parameters<typeof createSim>[0]): Sim {
  const s = createSim(opts);
  sims.push(s);
  return s;
}

describe('options', () => {
  it('has the documented profile defaults', () => {
    expect(ProfileSchema.parse({})).toEqual({
      idempotency: true,
      list: true,
      cancel: true,
      concurrency: 1,
      concurrencyErrorStyle: '429',
      retryAfterStyle: 'header',
      retryAfterSeconds: 2,
      queueDelayMs: 0,
      minRunMs: 0,
      resultTtlMs: 3_600_000,
      idempotencyTtlMs: 86_400_000,
      blockedHosts: [],
      listLagMs: 0,
      echoKey: false,
    });
  });

  it('merges defaults, then the account profile', () => {
    const s = make({
      defaults: { concurrency: 3, list: false },
      accounts: [
        { name: 'a', apiKeys: ['ka'], profile: { concurrency: 5 } },
        { name: 'b', apiKeys: ['kb'] },
      ],
    });
    expect(s.profileOf('a')).toMatchObject({ concurrency: 5, list: false, cancel: true });
    expect(s.profileOf('b')).toMatchObject({ concurrency: 3, list: false });
    expect(() => s.profileOf('zzz')).toThrow(/unknown account/);
  });

  it('rejects invalid options with a ZodError that never echoes an API key', () => {
    const secret = 'super-secret-key-123';
    const dup = SimOptionsSchema.safeParse({
      accounts: [
        { name: 'a', apiKeys: [secret] },
        { name: 'b', apiKeys: [secret] },
      ],
    });
    expect(dup.success).toBe(false);
    expect(JSON.stringify(dup.error?.issues)).not.toContain(secret);
    expect(() => createSim({ accounts: [] })).toThrow(ZodError);
    expect(() => createSim({ accounts: [{ name: 'a', apiKeys: ['k'], profile: { concurrency: -1 } }] })).toThrow(
      ZodError,
    );
    expect(() => createSim({ accounts: [{ name: 'a', apiKeys: ['k'] }], bogus: 1 } as never)).toThrow(ZodError);
    expect(() =>
      createSim({
        accounts: [
          { name: 'a', apiKeys: ['k'] },
          { name: 'a', apiKeys: ['k2'] },
        ],
      }),
    ).toThrow(/duplicate account/);
  });

  it('has no URL before listening', () => {
    const s = make({ accounts: [{ name: 'a', apiKeys: ['k'] }] });
    expect(() => s.url).toThrow(/not listening/);
  });
});

describe('CLI options', () => {
  it('parses name:key lists, collecting several keys per name', () => {
    expect(parseAccounts('a:k1, a:k2,b:k3')).toEqual([
      { name: 'a', apiKeys: ['k1', 'k2'] },
      { name: 'b', apiKeys: ['k3'] },
    ]);
    expect(() => parseAccounts('nokey')).toThrow(/name:key/);
    expect(() => parseAccounts('a:')).toThrow(/name:key/);
  });

  it('reads env, then flags (flags win)', () => {
    const opts = optionsFromCli(
      [
        '--port',
        '4567',
        '--profile',
        '{"concurrency":2}',
        '--account-profile',
        'b={"list":false}',
        '--allow-fault-header',
      ],
      {
        SIM_ACCOUNTS: 'a:ka,b:kb',
        SIM_PORT: '1234',
        SIM_ADMIN_TOKEN: 'tok',
      },
    );
    expect(opts.port).toBe(4567);
    expect(opts.defaults).toEqual({ concurrency: 2 });
    expect(opts.accounts).toEqual([
      { name: 'a', apiKeys: ['ka'] },
      { name: 'b', apiKeys: ['kb'], profile: { list: false } },
    ]);
    expect(opts.adminToken).toBe('tok');
    expect(opts.allowFaultHeader).toBe(true);
    expect(SimOptionsSchema.safeParse(opts).success).toBe(true);
  });

  it('defaults to one demo account and rejects bad input', () => {
    expect(optionsFromCli([], {}).accounts).toEqual([{ name: 'demo', apiKeys: ['demo-key'] }]);
    expect(() => optionsFromCli(['--profile', '{"concurrency":"x"}'], {})).toThrow(ZodError);
    expect(() => optionsFromCli(['--profile', '{oops'], {})).toThrow(/not valid JSON/);
    expect(() => optionsFromCli(['--account-profile', 'ghost={}'], {})).toThrow(/unknown account/);
    expect(() => optionsFromCli(['--nope'], {})).toThrow();
    expect(() => optionsFromCli(['--help'], {})).toThrow(HelpRequested);
  });
});

describe('HTTP edge cases (inject)', () => {
  const opts = { accounts: [{ name: 'a', apiKeys: ['key-a'] }] };
  const auth = { authorization: 'Bearer key-a' };

  it('answers unknown routes with the error shape', async () => {
    const s = make(opts);
    const r = await s.app.inject({ method: 'GET', url: '/nope' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) } });
  });

  it('answers 415 UNSUPPORTED_MEDIA_TYPE for a non-JSON submit', async () => {
    const s = make(opts);
    const r = await s.app.inject({
      method: 'POST',
      url: '/api/scrape',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'url=x',
    });
    expect(r.statusCode).toBe(415);
    expect(r.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('accepts a JSON content type with an empty body on DELETE', async () => {
    const s = make(opts);
    const r = await s.app.inject({
      method: 'DELETE',
      url: '/api/jobs/job_x/cancel',
      headers: { ...auth, 'content-type': 'application/json' },
    });
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('NOT_FOUND');
  });

  it('accepts the Bearer scheme case-insensitively', async () => {
    const s = make(opts);
    const r = await s.app.inject({ method: 'GET', url: '/api/jobs', headers: { authorization: 'bearer key-a' } });
    expect(r.statusCode).toBe(200);
  });

  it('never writes an API key to the request log', async () => {
    const chunks: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        chunks.push(chunk.toString());
        cb();
      },
    });
    const s = await startSim({ ...opts, adminToken: 'admin-tok', logStream: stream });
    sims.push(s);
    await fetch(`${s.url}/api/jobs`, { headers: { authorization: 'Bearer key-a', 'x-sim-admin': 'admin-tok' } });
    await fetch(`${s.url}/api/jobs`, { headers: { authorization: 'Bearer wrong-key-zzz' } });
    const log = chunks.join('');
    expect(log).toContain('/api/jobs');
    expect(log).toContain('[REDACTED]');
    expect(log).not.toContain('key-a');
    expect(log).not.toContain('wrong-key-zzz');
    expect(log).not.toContain('admin-tok');
  });
});
