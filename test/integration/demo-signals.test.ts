/**
 * `npm run demo` stops on the first SIGINT or SIGTERM sent to npm alone (as a process manager
 * does; Ctrl-C on a terminal reaches the same handler): with `--keep` after the batch, and in the
 * middle of the batch without it. Each time it must exit within 10 s, cleanly (exit 0 when kept,
 * 130 when the batch was interrupted), with its dev server, the server's watchdog and everything
 * else of its process group gone, and without the report of a process kept alive by a leftover.
 *
 * The demo used to print `stopping…` and hang: the Temporal SDK's runtime had already begun
 * shutting the workers down on the same signal, the demo's own `shutdown()` call threw, its wait
 * for the workers was skipped and the worker connection could not be closed while they still held
 * it, so the SDK's native runtime never shut down and kept the event loop alive.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/lib/ports.js';
import { groupMembers, isAlive, startNpm, stopWith, type RunningCommand } from '../helpers/commands.js';
import { keepLogFile, keepSqliteFile, recordConfigSecrets } from '../helpers/evidence.js';
import { waitFor } from '../helpers/stack.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-demo-signals-'));
const started: RunningCommand[] = [];

afterAll(() => {
  for (const c of started) c.kill();
  recordConfigSecrets('demo-signals', path.join(dataDir, 'config.json'));
  keepSqliteFile(path.join(dataDir, 'scrapes.db'), 'demo-signals-store');
  keepSqliteFile(path.join(dataDir, 'temporal.db'), 'demo-signals-temporal');
  keepLogFile('demo-signals-worker', path.join(dataDir, 'worker.log'));
  keepSqliteFile(path.join(dataDir, 'interrupted', 'scrapes.db'), 'demo-signals-interrupted-store');
  keepSqliteFile(path.join(dataDir, 'interrupted', 'temporal.db'), 'demo-signals-interrupted-temporal');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

let ports: Record<string, string> | undefined;
/** The same four ports for every run: the same site address, so later runs attach to the same jobs. */
async function demoPorts(): Promise<Record<string, string>> {
  ports ??= {
    SCRAPE_DEMO_TEMPORAL_PORT: String(await freePort()),
    SCRAPE_DEMO_UI_PORT: String(await freePort()),
    SCRAPE_DEMO_SITE_PORT: String(await freePort()),
    SCRAPE_DEMO_PROVIDER_PORT: String(await freePort()),
  };
  return ports;
}

async function demo(args: string[], dir = dataDir): Promise<RunningCommand> {
  const env = { ...(await demoPorts()), TEMPORAL_ADDRESS: '' }; // its own dev server, as on a fresh machine
  const d = startNpm('demo', ['--data-dir', dir, ...args], env);
  started.push(d);
  return d;
}

/** Checks that nothing of the demo's process group is left, the dev server included. */
async function nothingLeft(d: RunningCommand, serverPid: number): Promise<void> {
  await waitFor(
    () => groupMembers(d.child.pid!).length === 0,
    10_000,
    `the demo's processes to end: ${groupMembers(d.child.pid!).join(', ')}`,
  );
  expect(isAlive(serverPid)).toBe(false);
  expect(d.output()).not.toMatch(/still running \d+ ms after everything was stopped/);
}

describe('npm run demo stops on the first signal', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`--keep: ${signal} after the batch stops every part and exits 0 within 10 s`, async () => {
      const d = await demo(['--keep']);
      const serverPid = Number((await d.waitForOutput(/dev server: started pid (\d+)/, 120_000))[1]);
      await d.waitForOutput(/Press Ctrl-C to stop\./, 240_000);
      expect(d.output()).toMatch(/Summary: 8\/8 jobs completed/);
      const exit = await stopWith(d, signal, 10_000);
      console.log(`demo --keep: exit ${JSON.stringify(exit)} after ${signal}`);
      expect(exit.ms).toBeLessThan(10_000);
      expect(exit.code, d.output().slice(-2000)).toBe(0);
      expect(d.output()).toContain('stopping…');
      expect(d.output()).toMatch(/dev server: pid \d+ stopped/);
      await nothingLeft(d, serverPid);
    }, 300_000);
  }

  it('without --keep: SIGINT in the middle of the batch stops it and exits 130 within 10 s', async () => {
    // A data directory of its own: new jobs, so that the batch is still running when the signal comes.
    const d = await demo(['--exit'], path.join(dataDir, 'interrupted'));
    const serverPid = Number((await d.waitForOutput(/dev server: started pid (\d+)/, 120_000))[1]);
    await d.waitForOutput(/» running .*batch\.csv/, 240_000);
    const exit = await stopWith(d, 'SIGINT', 10_000);
    console.log(`demo during the batch: exit ${JSON.stringify(exit)} after SIGINT`);
    expect(exit.ms).toBeLessThan(10_000);
    expect(exit.code, d.output().slice(-2000)).toBe(130);
    expect(d.output()).toContain('stopping…');
    expect(d.output()).not.toMatch(/Summary:/);
    await nothingLeft(d, serverPid);
  }, 300_000);
});
