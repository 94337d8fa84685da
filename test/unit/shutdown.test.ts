/**
 * `src/lib/shutdown.ts`, the signal handling every long-running command shares, in a child process
 * (signals are per process): the first SIGINT or SIGTERM aborts the signal and the command stops;
 * a second one while a stop hangs exits 130 at once; a process that something left open keeps
 * alive after everything was stopped reports what is open and exits 1, unless the command says it
 * abandoned a start-up (then it exits with the code given, at once); `abortable` rejects at the
 * signal and hands a late result to its cleanup.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/stack.js';

const MODULE = pathToFileURL(path.resolve(import.meta.dirname, '..', '..', 'src', 'lib', 'shutdown.ts')).href;

/** Runs `body` (an ES module snippet with `watchShutdownSignals` and `abortable` in scope) in a child. */
function child(body: string) {
  const script = `import { watchShutdownSignals, abortable, ShutdownRequested } from ${JSON.stringify(MODULE)};\n${body}`;
  const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  c.stdout.on('data', (b: Buffer) => (out += b.toString()));
  c.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    c.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    c,
    output: () => out,
    exited,
    ready: () => waitFor(() => out.includes('ready'), 30_000, `the child to start:\n${out}`),
  };
}

describe('watchShutdownSignals', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`the first ${signal} aborts its signal; the command stops and the process ends by itself`, async () => {
      const p = child(`
        const s = watchShutdownSignals({ name: 'cmd' });
        const keep = setInterval(() => {}, 1000);
        console.log('ready');
        const got = await s.received;
        console.log('aborted', s.signal.aborted, s.signal.reason, got);
        clearInterval(keep);
        s.stopped();`);
      await p.ready();
      p.c.kill(signal);
      expect(await p.exited).toEqual({ code: 0, signal: null });
      expect(p.output()).toContain(`aborted true ${signal} ${signal}`);
    }, 60_000);
  }

  it('a second signal while the stop hangs exits 130 at once', async () => {
    const p = child(`
      const s = watchShutdownSignals({ name: 'cmd' });
      setInterval(() => {}, 1000); // a stop that never ends
      console.log('ready');
      await s.received;
      console.log('stopping');`);
    await p.ready();
    p.c.kill('SIGINT');
    await waitFor(() => p.output().includes('stopping'), 30_000, 'the first signal to be handled');
    p.c.kill('SIGINT');
    expect((await p.exited).code).toBe(130);
    expect(p.output()).toContain('cmd: SIGINT again while stopping: exiting now');
  }, 60_000);

  it('a process still kept alive after everything was stopped names what is open and exits 1', async () => {
    const p = child(`
      const s = watchShutdownSignals({ name: 'cmd', lingerMs: 300 });
      setInterval(() => {}, 1000); // a leftover nobody stops
      console.log('ready');
      await s.received;
      s.stopped();`);
    await p.ready();
    p.c.kill('SIGTERM');
    expect((await p.exited).code).toBe(1);
    expect(p.output()).toMatch(/cmd: still running 300 ms after everything was stopped; open: .*Timeout/);
  }, 60_000);

  it('stopped({ exitNow }) after a start-up cut short exits with that code at once, work in flight abandoned', async () => {
    const p = child(`
      const s = watchShutdownSignals({ name: 'cmd' });
      setInterval(() => {}, 1000); // the start-up still under way
      console.log('ready');
      await s.received;
      s.stopped({ exitNow: 130 });`);
    await p.ready();
    p.c.kill('SIGINT');
    expect((await p.exited).code).toBe(130);
    expect(p.output()).not.toContain('still running');
  }, 60_000);

  it('abortable rejects at the signal and gives a result that comes later to its cleanup', async () => {
    const p = child(`
      const s = watchShutdownSignals({ name: 'cmd' });
      let finish;
      const work = new Promise((r) => (finish = r));
      const keep = setInterval(() => {}, 1000);
      console.log('ready');
      try {
        await abortable(work, s.signal, (late) => console.log('late cleanup of', late));
      } catch (e) {
        console.log('rejected', e instanceof ShutdownRequested, e.signalName);
      }
      finish('server');
      await new Promise((r) => setImmediate(r));
      clearInterval(keep);
      s.stopped();`);
    await p.ready();
    p.c.kill('SIGINT');
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.output()).toContain('rejected true SIGINT');
    expect(p.output()).toContain('late cleanup of server');
  }, 60_000);
});
