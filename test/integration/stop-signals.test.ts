/**
 * Every long-running command stops on the first SIGINT and on the first SIGTERM sent to npm alone
 * (as a process manager does; a Ctrl-C on a terminal reaches the same handlers): `npm run worker`,
 * `npm run api` and `npm run devserver` each exit within 10 s, with exit code 0, leaving nothing
 * of their process group behind (the dev server's `temporal` process and its watchdog included)
 * and without the report of a process kept alive by something left open; so does
 * `npm run codec-server`. The demo's are in
 * `demo-signals.test.ts`, the cluster's in `cluster-signals.test.ts`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintenanceScheduleIds } from '../../src/client/schedules.js';
import { newKeyEntry } from '../../src/codec/keys.js';
import { freePort } from '../../src/lib/ports.js';
import { groupMembers, isAlive, startNpm, stopWith, type RunningCommand } from '../helpers/commands.js';
import { recordSecrets } from '../helpers/evidence.js';
import { startStack, waitFor, type Stack } from '../helpers/stack.js';

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const API_KEY = 'sk-stop-signals-0123456789abcdef';
const CODEC_KEYS = newKeyEntry('stop1');
const CODEC_TOKEN = 'codec-token-stop-signals-0123456789';

let stack: Stack;
const started: RunningCommand[] = [];

beforeAll(async () => {
  stack = await startStack({ worker: false });
  recordSecrets('stop-signals', [API_KEY, CODEC_KEYS.split(':')[1], CODEC_TOKEN]);
});
afterAll(async () => {
  for (const c of started) c.kill();
  for (const id of Object.values(maintenanceScheduleIds(stack.config.temporal.taskQueue)))
    await stack.temporal.schedule
      .getHandle(id)
      .delete()
      .catch(() => undefined);
  await stack?.stop();
});

function run(script: string, args: string[], env: NodeJS.ProcessEnv = {}): RunningCommand {
  const c = startNpm(script, args, { SCRAPE_CONFIG: '', ...env });
  started.push(c);
  return c;
}

/** Stops `c` with `signal` and checks the exit (0, within 10 s) and that its process group is gone. */
async function stopsCleanly(c: RunningCommand, signal: NodeJS.Signals, what: string): Promise<void> {
  const exit = await stopWith(c, signal, 10_000);
  console.log(`${what}: exit ${JSON.stringify(exit)} after ${signal}`);
  expect(exit.ms).toBeLessThan(10_000);
  expect(exit.code, c.output().slice(-2000)).toBe(0);
  await waitFor(
    () => groupMembers(c.child.pid!).length === 0,
    10_000,
    `the processes of ${what} to end: ${groupMembers(c.child.pid!).join(', ')}`,
  );
  expect(c.output()).not.toMatch(/still running \d+ ms after everything was stopped/);
}

describe('long-running commands stop on the first signal', () => {
  for (const signal of SIGNALS) {
    it(`npm run worker: ${signal}`, async () => {
      const w = run('worker', ['--config', stack.configFile]);
      await w.waitForOutput(/"worker polling"/, 120_000);
      await stopsCleanly(w, signal, 'npm run worker');
    }, 180_000);

    it(`npm run api: ${signal}`, async () => {
      const port = await freePort();
      const keys = JSON.stringify({
        keys: [{ account: 'acme', sha256: createHash('sha256').update(API_KEY).digest('hex') }],
      });
      const a = run('api', ['--config', stack.configFile, '--port', String(port)], {
        SCRAPE_API_KEYS: keys,
        SCRAPE_API_KEYS_WATCH: 'false',
      });
      await a.waitForOutput(/HTTP API listening on/, 120_000);
      const health = await fetch(`http://127.0.0.1:${port}/v1/scrapes?limit=1`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      });
      expect(health.status).toBe(200); // it really serves
      await stopsCleanly(a, signal, 'npm run api');
    }, 180_000);

    it(`npm run devserver: ${signal} stops the Temporal server too`, async () => {
      const d = run('devserver', ['--headless']);
      const serverPid = Number((await d.waitForOutput(/pid:\s+(\d+)/, 120_000))[1]);
      expect(isAlive(serverPid)).toBe(true);
      await stopsCleanly(d, signal, 'npm run devserver');
      expect(isAlive(serverPid)).toBe(false);
    }, 180_000);

    it(`npm run codec-server: ${signal}`, async () => {
      const port = await freePort();
      const configFile = path.join(stack.dir, `codec-${signal}.json`);
      fs.writeFileSync(
        configFile,
        JSON.stringify({
          ...stack.config,
          codec: { ...stack.config.codec, server: { ...stack.config.codec.server, port } },
        }),
      );
      const c = run('codec-server', ['--config', configFile], {
        SCRAPE_CODEC_KEYS: CODEC_KEYS,
        SCRAPE_CODEC_TOKEN: CODEC_TOKEN,
      });
      await c.waitForOutput(/codec server on http/, 120_000);
      await stopsCleanly(c, signal, 'npm run codec-server');
    }, 180_000);
  }
});
