/**
 * The parameters, IPC messages and process plumbing shared by the two loop processes of the
 * throughput benchmark — the plain loop (`baselineMain.ts`) and BullMQ (`bullmqMain.ts`) — and the
 * driver that runs them (`bench/throughput.ts`). Kept apart from the processes' entry points,
 * which run when imported.
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { z } from 'zod';
import { parseConfig, type Config } from '../../src/config.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { openStore, type Store } from '../../src/store/index.js';

/** Parameters of a loop run (the JSON file given with `--params`). */
export const BaselineParamsSchema = z.object({
  /** The configuration (the product's schema), with the loop's own `storeUrl`. */
  config: z.unknown(),
  /** Provider entry of every job. */
  provider: z.string(),
  /** Poll policy overrides (ms), merged over the product's default. */
  policy: z.record(z.string(), z.unknown()),
  /** Jobs inserted and started at once. */
  startConcurrency: z.number().int().positive(),
  jobs: z.array(z.object({ account: z.string(), key: z.string(), url: z.string() })),
});

/**
 * Messages from a loop process to the driver. Times are epoch ms: `ready` before the clock starts;
 * `started` when every job is inserted and started; `written` when a job's result transaction
 * committed; `done` with the count of each final state; `error` when the process fails.
 */
export type LoopMessage =
  | { t: 'ready' }
  | { t: 'written'; jobId: string; at: number }
  | { t: 'started'; at: number }
  | { t: 'done'; at: number; states: Record<string, number> }
  | { t: 'error'; message: string };

/** Sends `m` to the driver (no-op without an IPC channel). */
export function sendToDriver(m: LoopMessage): void {
  process.send?.(m);
}

/**
 * What a loop process starts from: its parameters (the JSON file named by `--params`, parsed with
 * `schema`; throws a ZodError on a bad file), the configuration, the store it opens and the
 * provider registry over it.
 */
export async function startLoopProcess<S extends typeof BaselineParamsSchema>(
  name: string,
  schema: S,
): Promise<{ params: z.infer<S>; config: Config; store: Store; providers: ProviderRegistry }> {
  const o = new Command(name).requiredOption('--params <file>', 'parameters (JSON)').parse().opts<{ params: string }>();
  const params = schema.parse(JSON.parse(fs.readFileSync(o.params, 'utf8'))) as z.infer<S>;
  const config = parseConfig(params.config, {});
  const store = await openStore(config.storeUrl);
  const providers = new ProviderRegistry(config, process.env, {}, store.providerKeys);
  return { params, config, store, providers };
}

/**
 * Listens for the driver's messages (`go`, `exit`); the process exits when the driver goes away.
 * Returns a function that resolves once message `t` has arrived (at once if it already has).
 */
export function driverMessages(): (t: string) => Promise<void> {
  const messages: string[] = [];
  const waiters: (() => void)[] = [];
  process.on('message', (m: unknown) => {
    const t = m && typeof m === 'object' ? (m as { t?: unknown }).t : undefined;
    if (typeof t === 'string') messages.push(t);
    for (const w of waiters.splice(0)) w();
  });
  process.on('disconnect', () => process.exit(0));
  return async (t: string) => {
    while (!messages.includes(t)) await new Promise<void>((r) => waiters.push(r));
  };
}
