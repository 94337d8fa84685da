/**
 * Stopping cleanly: a Ctrl-C (SIGINT) or SIGTERM that reaches only the npm wrapper stops the node
 * process behind `npm run worker` and `npm run devserver` (npm forwards the signal and the scripts
 * `exec` node, so no shell stands in between), and the dev server's `temporal` process with it;
 * the demo refuses a port that is taken, naming its flag, before it starts anything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintenanceScheduleIds } from '../../src/client/schedules.js';
import { recordCli } from '../helpers/evidence.js';
import { REPO, startStack, waitFor, type Stack } from '../helpers/stack.js';

let stack: Stack;
const started: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const id of Object.values(maintenanceScheduleIds(stack.config.temporal.taskQueue)))
    await stack.temporal.schedule
      .getHandle(id)
      .delete()
      .catch(() => undefined);
  await stack?.stop();
});

/** True while `pid` exists and is not a zombie. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The PIDs of `pid`'s direct children (Linux `/proc`). */
function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Starts `npm run <script> -- <args>` in its own process group and collects its output. */
function npmRun(script: string, args: string[]) {
  const child = spawn('npm', ['run', '--silent', script, '--', ...args], {
    cwd: REPO,
    env: { ...process.env, SCRAPE_CONFIG: '', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      recordCli(['npm', 'run', script, '--', ...args], { code, out }); // kept for the secrets scan
      resolve({ code, signal });
    }),
  );
  return { child, output: () => out, exited };
}

describe('signals through the npm wrapper', () => {
  it('SIGINT to `npm run worker` stops the worker’s node process', async () => {
    const w = npmRun('worker', ['--config', stack.configFile]);
    // The worker logs JSON lines: {"message":"worker polling","pid":…,"taskQueue":…}.
    const pid = Number(
      await waitFor(
        () => /"worker polling"[^\n]*?"pid":(\d+)/.exec(w.output())?.[1],
        90_000,
        `the worker to poll:\n${w.output()}`,
      ),
    );
    expect(childrenOf(w.child.pid!)).toEqual([pid]); // npm → node, no shell in between
    expect(isAlive(pid)).toBe(true);
    process.kill(w.child.pid!, 'SIGINT'); // only npm gets it, as from a process manager
    const exit = await w.exited;
    expect(await waitFor(() => !isAlive(pid), 30_000, 'the worker process to end')).toBe(true);
    expect(exit.code === 0 || exit.signal === 'SIGINT' || exit.code === 130, JSON.stringify(exit)).toBe(true);
  }, 180_000);

  it('SIGTERM to `npm run devserver` stops its node process and the Temporal server', async () => {
    const d = npmRun('devserver', ['--headless']);
    const serverPid = Number(
      await waitFor(() => /pid:\s+(\d+)/.exec(d.output())?.[1], 90_000, `the dev server:\n${d.output()}`),
    );
    const [nodePid] = childrenOf(d.child.pid!);
    expect(nodePid).toBeGreaterThan(0);
    expect(childrenOf(nodePid!)).toContain(serverPid);
    process.kill(d.child.pid!, 'SIGTERM');
    await d.exited;
    expect(await waitFor(() => !isAlive(nodePid!) && !isAlive(serverPid), 30_000, 'node and temporal to end')).toBe(
      true,
    );
  }, 180_000);
});

describe('demo ports', () => {
  it('refuses a taken port, naming its flag or variable, before starting anything', async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as net.AddressInfo).port;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-ports-'));
    try {
      const flag = npmRun('demo', ['--exit', '--data-dir', dataDir, '--site-port', String(port)]);
      expect((await flag.exited).code).toBe(2);
      expect(flag.output()).toContain(`port ${port} (--site-port / SCRAPE_DEMO_SITE_PORT) is in use on 127.0.0.1`);
      expect(fs.existsSync(path.join(dataDir, 'temporal.db'))).toBe(false); // nothing started
      const env = spawn('npm', ['run', '--silent', 'demo', '--', '--exit', '--data-dir', dataDir], {
        cwd: REPO,
        env: { ...process.env, SCRAPE_DEMO_PROVIDER_PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      env.stdout.on('data', (b: Buffer) => (out += b.toString()));
      env.stderr.on('data', (b: Buffer) => (out += b.toString()));
      expect(await new Promise((r) => env.once('exit', r))).toBe(2);
      recordCli(['npm', 'run', 'demo', '--', '--exit'], { code: 2, out });
      expect(out).toContain(`port ${port} (--provider-port / SCRAPE_DEMO_PROVIDER_PORT) is in use`);
    } finally {
      busy.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
