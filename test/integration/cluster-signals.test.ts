/**
 * `npm run cluster` stops on the first SIGINT or SIGTERM sent to npm alone, here while it starts,
 * without building anything: its cache is empty and the `go` on its PATH is a stub that only waits,
 * so the command sits in its first step (`go install` of the Temporal server) until the signal
 * comes. It must exit within 10 s with code 130, saying why. Once started, the cluster stops on
 * the same signal handler (`src/lib/shutdown.ts`, shared with the other commands, whose tests are in
 * `stop-signals.test.ts`); starting the real topology needs the binaries that `npm run test:cluster`
 * builds, so that path is exercised there, not here.
 *
 * A `go install` under way when the signal arrives is not stopped by the command: a Ctrl-C on a
 * terminal reaches it directly (the whole foreground process group gets it); here the stub is
 * ended by the test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isAlive, startNpm, stopWith, type RunningCommand } from '../helpers/commands.js';
import { waitFor } from '../helpers/stack.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-cluster-signals-'));
const stubBin = path.join(dir, 'bin');
const pidsFile = path.join(dir, 'go.pids');
fs.mkdirSync(stubBin);
// The stub notes its PID and waits (exec: the PID stays the same).
fs.writeFileSync(path.join(stubBin, 'go'), `#!/bin/sh\necho $$ >> "${pidsFile}"\nexec sleep 600\n`, { mode: 0o755 });
const started: RunningCommand[] = [];

function stubPids(): number[] {
  return fs.existsSync(pidsFile)
    ? fs.readFileSync(pidsFile, 'utf8').trim().split('\n').filter(Boolean).map(Number)
    : [];
}

afterAll(() => {
  for (const c of started) c.kill();
  for (const pid of stubPids()) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('npm run cluster stops on the first signal', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} while it starts: exits 130 within 10 s`, async () => {
      const before = stubPids().length;
      const c = startNpm('cluster', ['--free-ports', '--no-ui', '--data-dir', path.join(dir, `data-${signal}`)], {
        PATH: `${stubBin}${path.delimiter}${process.env.PATH ?? ''}`,
        SCRAPE_CACHE_DIR: path.join(dir, `cache-${signal}`),
      });
      started.push(c);
      await waitFor(() => stubPids().length > before, 120_000, `the cluster to start go install:\n${c.output()}`);
      await c.waitForOutput(/not cached: go install/, 10_000);
      const exit = await stopWith(c, signal, 10_000);
      console.log(`npm run cluster: exit ${JSON.stringify(exit)} after ${signal}`);
      expect(exit.ms).toBeLessThan(10_000);
      expect(exit.code, c.output()).toBe(130);
      expect(c.output()).toContain(`cluster: ${signal} while starting: exiting`);
      expect(fs.existsSync(path.join(dir, `data-${signal}`, 'cluster.pid'))).toBe(false);
    }, 180_000);
  }
});
