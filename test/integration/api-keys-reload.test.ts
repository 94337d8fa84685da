/**
 * API keys reloaded: a key made with `api --new-key` while the API runs works at once (the key
 * file is watched), a key removed from the file stops working, and `SIGHUP` reloads the file when
 * watching is off (`SCRAPE_API_KEYS_WATCH=false`, as on a network mount). Real API processes
 * over loopback, the run's Temporal dev server, a real SQLite store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, startApi, type RunningApi } from '../../src/api/main.js';
import { keepLog, recordSecrets } from '../helpers/evidence.js';
import { REPO, startStack, waitFor, type Stack } from '../helpers/stack.js';

let stack: Stack;
let configFile: string;
let keysFile: string;
const children: ChildProcess[] = [];
let running: RunningApi | undefined;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  keysFile = path.join(stack.dir, 'keys', 'api-keys.json');
  configFile = path.join(stack.dir, 'api-config.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({ ...stack.config, api: { ...stack.config.api, host: '127.0.0.1', port: 0, keysFile } }),
  );
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await running?.close();
  await stack?.stop();
});

const listAs = async (base: string, key: string) =>
  (await fetch(`${base}/v1/scrapes`, { headers: { authorization: `Bearer ${key}` } })).status;

describe('API key reload', () => {
  it('a key made while the API runs works without a restart; a key taken out of the file stops working', async () => {
    const first = createApiKey({ account: 'acme', configFile }).key;
    recordSecrets('api-keys-reload', [first]);
    running = await startApi({ configFile, logger: false });
    expect(await listAs(running.url, first)).toBe(200);

    const second = createApiKey({ account: 'acme', name: 'made-while-running', configFile }).key; // what `api --new-key` does
    recordSecrets('api-keys-reload', [second]);
    expect(
      await waitFor(async () => (await listAs(running!.url, second)) === 200, 10_000, 'the new key to be accepted'),
    ).toBe(true);

    const kept = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as { keys: { name?: string }[] };
    fs.writeFileSync(keysFile, JSON.stringify({ keys: kept.keys.filter((k) => k.name === 'made-while-running') }));
    expect(
      await waitFor(async () => (await listAs(running!.url, first)) === 401, 10_000, 'the removed key to be refused'),
    ).toBe(true);
    expect(await listAs(running.url, second)).toBe(200);
    await running.close();
    running = undefined;
  });

  it('SIGHUP reloads the key file of a running `api` process (watching off)', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        import.meta.resolve('tsx'),
        path.join(REPO, 'src/cli.ts'),
        'api',
        '--config',
        configFile,
        '--port',
        '0',
      ],
      {
        cwd: REPO,
        env: { ...process.env, SCRAPE_CONFIG: '', SCRAPE_API_KEYS_WATCH: 'false' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    let err = '';
    let out = '';
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    child.stdout!.on('data', (b: Buffer) => (out += b.toString())); // the request log (JSON lines), kept for the secrets scan
    const base = await waitFor(
      () => /HTTP API listening on (http:\/\/\S+) /.exec(err)?.[1],
      60_000,
      `the API to listen:\n${err}`,
    );
    const third = createApiKey({ account: 'acme', name: 'after-start', configFile }).key;
    recordSecrets('api-keys-reload', [third]);
    expect(await listAs(base, third)).toBe(401); // not watched: the file change alone does nothing
    child.kill('SIGHUP');
    expect(
      await waitFor(async () => (await listAs(base, third)) === 200, 10_000, 'the key to be accepted after SIGHUP'),
    ).toBe(true);
    expect(err).toMatch(/SIGHUP: \d+ API key\(s\) in force/);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    keepLog('api-process', `${out}\n${err}`);
  });
});
