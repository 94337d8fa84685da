/**
 * The product against a real server: the provider scenario harness
 * (`test/fixtures/providers/harness.ts`: a SQLite store, the typed client, a worker on a task queue
 * of its own on the run's Temporal dev server, the HTTP API with `webhooks`) with the entry pointed
 * at a server of `inject('real')` instead of a fixture. Adds the configuration file and product
 * workers in child processes (`src/worker.ts`, what `npm run worker` runs), for tests that SIGKILL
 * a worker, and the restart of a real server through the global setup's control endpoint.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import type { PollPolicy } from '../../src/model/types.js';
import { startProviderScenario, type Fixture, type Scenario } from '../fixtures/providers/harness.js';
import { deleteMaintenanceSchedules, spawnProductWorker, type ProductWorker } from '../helpers/productWorker.js';

/** Polling for the real servers: quick first checks, a deadline long enough for a large crawl (ms). */
export const REAL_POLICY: Partial<PollPolicy> = {
  initialDelayMs: 500,
  maxDelayMs: 2_000,
  multiplier: 1.5,
  jitter: 0.1,
  deadlineMs: 10 * 60_000,
  cancelConfirmDeadlineMs: 60_000,
};

/** A real server seen as the harness's fixture: its address; nothing to close (the global setup owns it). */
export interface RealServerRef extends Fixture {
  name: 'firecrawl' | 'scrapyd';
}

/** A scenario against a real server. */
export interface RealScenario extends Scenario<RealServerRef> {
  /** The scenario's configuration, as a file a product worker reads (`SCRAPE_CONFIG`). */
  configFile: string;
  /** Starts a product worker in a child process (resolves once it polls); stopped by `stop()`. */
  spawnWorker(): Promise<ProductWorker>;
}

/** Options of {@link startReal}. */
export interface RealOptions {
  server: 'firecrawl' | 'scrapyd';
  kind: 'firecrawl' | 'http';
  /** Configured provider name (default: the kind). */
  name?: string;
  /** The entry's fields (without `kind`; `baseUrl` is the server's unless given). */
  entry: Record<string, unknown>;
  /** More entries of the same kind on the same server, by name. */
  extraEntries?: Record<string, Record<string, unknown>>;
  webhooks?: boolean;
  /** Start an in-process worker now (default true). */
  worker?: boolean;
}

/** Starts a scenario against the real server; call `stop()` in `afterAll`. */
export async function startReal(opts: RealOptions): Promise<RealScenario> {
  const url = inject('real')[opts.server];
  const s = await startProviderScenario<RealServerRef>({
    kind: opts.kind,
    name: opts.name,
    fixture: async () => ({ name: opts.server, url, close: async () => undefined }),
    entry: () => ({ baseUrl: url, ...opts.entry }),
    extraEntries: opts.extraEntries
      ? () => Object.fromEntries(Object.entries(opts.extraEntries!).map(([n, e]) => [n, { baseUrl: url, ...e }]))
      : undefined,
    webhooks: opts.webhooks,
    worker: opts.worker,
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'real-config-'));
  const configFile = path.join(dir, 'config.json');
  // Written after the harness set the webhook receiver's address into the entry.
  fs.writeFileSync(configFile, JSON.stringify(s.config));
  const workers: ProductWorker[] = [];
  const stop = s.stop.bind(s);
  return Object.assign(s, {
    configFile,
    async spawnWorker() {
      const w = await spawnProductWorker({ configFile });
      workers.push(w);
      return w;
    },
    async stop() {
      for (const w of workers) {
        if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
        await w.exited;
      }
      if (workers.length > 0) await deleteMaintenanceSchedules(s);
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
}

/** SIGKILLs a product worker and waits until it is gone. */
export async function killWorker(w: ProductWorker): Promise<void> {
  w.child.kill('SIGKILL');
  const { signal } = await w.exited;
  if (signal !== 'SIGKILL') throw new Error(`the worker ended by ${signal ?? 'exit'}, not SIGKILL`);
}

/** Restarts a real server (its processes stop and start again on the same port); resolves once it serves. */
export async function restartServer(server: 'firecrawl' | 'scrapyd'): Promise<void> {
  const r = await fetch(`${inject('real').control}/restart/${server}`, { method: 'POST' });
  if (r.status !== 200) throw new Error(`restarting ${server} failed: ${r.status} ${await r.text()}`);
}

/**
 * Registers a scenario for the enclosing `describe` (started in `beforeAll`, stopped in
 * `afterAll`) and returns its getter. A scenario that cannot start (a configuration the product
 * refuses, say) fails each test that asks for it with that error, instead of the whole block at
 * once: every scenario is reported on its own.
 */
export function useReal(opts: RealOptions | (() => RealOptions)): () => RealScenario {
  let scenario: RealScenario | undefined;
  let failure: unknown;
  beforeAll(async () => {
    try {
      scenario = await startReal(typeof opts === 'function' ? opts() : opts);
    } catch (e) {
      failure = e;
    }
  });
  afterAll(async () => scenario?.stop());
  return () => {
    if (!scenario) throw failure ?? new Error('the scenario did not start');
    return scenario;
  };
}
