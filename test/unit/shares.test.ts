/**
 * The fair-share helpers' listener of slot releases (`src/activities/shares.ts`): a kit that gave
 * a contended key's slots away listens to the process's slot releases until its worker stops
 * (`deps.stopped`), which removes the listener, so kits made and dropped (tests, a worker started
 * again in the same process) leave none behind; and a `ScrapeWorker` ends its activities'
 * lifetime once `run()` has ended.
 */
import { NativeConnection } from '@temporalio/worker';
import { afterAll, describe, expect, it } from 'vitest';
import type { ActivityKit } from '../../src/activities/context.js';
import { sharesOf } from '../../src/activities/shares.js';
import { announceSlotReleased, slotReleaseListenerCount } from '../../src/activities/slots.js';
import { createScrapeWorker } from '../../src/worker.js';
import { startStack, waitFor, type Stack } from '../helpers/stack.js';

/** A kit whose store counts the free-slot grants asked of it, its worker's lifetime `stopped`. */
function fakeKit(stopped?: AbortSignal): { kit: ActivityKit; grants: string[] } {
  const grants: string[] = [];
  const kit = {
    deps: { stopped },
    store: {
      slots: {
        grantFree: async (label: string) => {
          grants.push(label);
          return [];
        },
      },
    },
  } as unknown as ActivityKit;
  return { kit, grants };
}

describe('the slot-release listener of a kit', () => {
  it('is removed when its worker stops: the count returns to what it was and later releases reach no stopped kit', async () => {
    const before = slotReleaseListenerCount();
    const workers = Array.from({ length: 20 }, () => new AbortController());
    const kits = workers.map((w) => fakeKit(w.signal));
    for (const { kit } of kits) {
      sharesOf(kit).contended('key-a');
      sharesOf(kit).contended('key-a'); // one listener per kit, however often its keys are contended
    }
    expect(slotReleaseListenerCount()).toBe(before + 20);
    announceSlotReleased('key-a');
    await waitFor(() => kits.every((k) => k.grants.length === 1), 10_000, 'every kit to give the slot away');

    for (const w of workers) w.abort();
    expect(slotReleaseListenerCount()).toBe(before);
    announceSlotReleased('key-a');
    await new Promise((r) => setImmediate(r));
    expect(kits.map((k) => k.grants.length)).toEqual(kits.map(() => 1));
  });

  it('a kit whose worker has already stopped registers none', () => {
    const before = slotReleaseListenerCount();
    const { kit } = fakeKit(AbortSignal.abort());
    sharesOf(kit).contended('key-b');
    expect(slotReleaseListenerCount()).toBe(before);
  });
});

describe('a ScrapeWorker', () => {
  let stack: Stack | undefined;
  let native: NativeConnection | undefined;
  afterAll(async () => {
    await native?.close();
    await stack?.stop();
  });

  it("ends its activities' lifetime once run() has ended, not before", async () => {
    stack = await startStack({ worker: false });
    native = await NativeConnection.connect({ address: stack.config.temporal.address });
    const worker = await createScrapeWorker({
      connection: native,
      config: stack.config,
      store: stack.store,
      shutdownGraceTimeMs: 2_000,
    });
    const lifetime = worker.lifetime!.signal;
    const running = worker.run();
    await waitFor(() => worker.getState() === 'RUNNING', 30_000, 'the worker to run');
    expect(lifetime.aborted).toBe(false);
    worker.shutdown();
    await running;
    expect(lifetime.aborted).toBe(true);
  });
});
