/**
 * The plain loop (`baseline.ts`) in its own process, so that its CPU is read from the OS like the
 * worker's. Reads its parameters from a JSON file (`--params`: `BaselineParamsSchema` of
 * `loopProcess.ts`), runs every job, reports `written` {jobId, at} per job and `done` over IPC, then
 * waits for `exit` (so the parent can read its final CPU time from `/proc` while it still exists).
 */
import PQueue from 'p-queue';
import { startBaselineJob } from './baseline.js';
import {
  BaselineParamsSchema,
  driverMessages,
  sendToDriver,
  startLoopProcess,
  type LoopMessage,
} from './loopProcess.js';

/** Messages to the parent (see {@link LoopMessage}). */
export type BaselineMessage = LoopMessage;

const send = sendToDriver;

async function main(): Promise<void> {
  const { params: p, config, store, providers } = await startLoopProcess('baseline', BaselineParamsSchema);
  const deps = {
    store,
    providers,
    config,
    provider: p.provider,
    policy: p.policy,
    onWritten: (jobId: string, at: number) => send({ t: 'written', jobId, at }),
  };
  const message = driverMessages();
  // Warm the provider client and the store before the clock starts.
  providers.resolve(p.provider, p.jobs[0]?.account ?? '');
  send({ t: 'ready' });
  await message('go');
  const queue = new PQueue({ concurrency: p.startConcurrency });
  const runs: Promise<string>[] = [];
  await Promise.all(p.jobs.map((j) => queue.add(async () => runs.push((await startBaselineJob(deps, j)).done))));
  send({ t: 'started', at: Date.now() });
  const states: Record<string, number> = {};
  for (const r of await Promise.allSettled(runs)) {
    const k = r.status === 'fulfilled' ? r.value : `error: ${String(r.reason).slice(0, 200)}`;
    states[k] = (states[k] ?? 0) + 1;
  }
  send({ t: 'done', at: Date.now(), states });
  await message('exit');
  await store.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    send({ t: 'error', message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    process.exit(1);
  },
);
