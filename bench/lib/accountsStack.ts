/**
 * The stack of the accounts benchmarks (`bench:fairness`, `bench:budget-chaos`): a Temporal dev
 * server (or `TEMPORAL_ADDRESS`), the page site of `sample-site/`, the reference provider (`src/sim`)
 * with the accounts a run asks for, a SQLite store in a temporary directory, a runtime (the typed
 * client with the configuration's cost estimates, as the CLI and the API have it) and worker
 * processes started from a prebuilt workflow bundle (so a restarted worker polls within a second),
 * each of which can be SIGKILLed and restarted. Nothing is mocked.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import Fastify from 'fastify';
import { parseConfig, type Config } from '../../src/config.js';
import { connectOrStartTemporal } from '../../tools/devserver/connectOrStart.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { startSim, type Sim } from '../../tools/sim/index.js';
import type { AccountInput } from '../../tools/sim/schemas.js';
import { writeWorkflowBundle } from '../../src/worker.js';
import { REPO } from './report.js';

/** What a run configures: the sim's accounts, the product's providers and accounts (`accounts` section). */
export interface AccountsStackOptions {
  name: string;
  simAccounts: AccountInput[];
  /** Provider entries by name; `baseUrl` is filled with the sim's. */
  providers: (simUrl: string) => Record<string, unknown>;
  accounts?: Record<string, unknown>;
  workers: number;
  /** Seed of the sim's randomness. */
  random?: () => number;
  log: (line: string) => void;
}

/** A running stack. */
export interface AccountsStack {
  dir: string;
  config: Config;
  configFile: string;
  sim: Sim;
  runtime: Runtime;
  /** A page of the site, unique per `i`. */
  pageUrl(i: number): string;
  /** SIGKILLs worker `i` (if alive) and starts it again. */
  respawn(i: number): void;
  /** SIGKILLs worker `i`. */
  kill(i: number): void;
  /** Stops everything; deletes the directory unless `keep` (its path is logged then). */
  stop(keep?: boolean): Promise<void>;
}

/** Starts the stack; `stop()` tears it down and deletes its directory. */
export async function startAccountsStack(o: AccountsStackOptions): Promise<AccountsStack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `scrape-${o.name}-`));
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async (keep = false) => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    if (keep) o.log(`${o.name}: kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const temporal = await connectOrStartTemporal({
      devServer: { dbFile: path.join(dir, 'temporal.db'), headless: true },
      logger: () => undefined,
    });
    cleanups.push(() => temporal.stop());
    const site = Fastify({ logger: false });
    await site.register(fastifyStatic, { root: path.join(REPO, 'sample-site') });
    const siteUrl = (await site.listen({ host: '127.0.0.1', port: 0 })).replace(/\/$/, '');
    cleanups.push(() => site.close());
    const pages = [
      'index.html',
      ...fs.readdirSync(path.join(REPO, 'sample-site', 'articles')).map((f) => `articles/${f}`),
    ];
    const sim = await startSim({
      host: '127.0.0.1',
      port: 0,
      accounts: o.simAccounts,
      logger: false,
      random: o.random,
    });
    cleanups.push(() => sim.close());
    const config = parseConfig(
      {
        temporal: {
          address: temporal.address,
          namespace: temporal.namespace,
          taskQueue: `${o.name}-${process.pid}-${Date.now()}`,
        },
        storeUrl: `sqlite:${path.join(dir, 'store.db')}`,
        defaultProvider: 'reference',
        providers: o.providers(sim.url),
        accounts: o.accounts ?? {},
      },
      {},
    );
    const configFile = path.join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify(config));
    const bundle = path.join(dir, 'workflow-bundle.js');
    await writeWorkflowBundle(bundle);
    const runtime = await openRuntime(config);
    cleanups.push(() => runtime.close());
    const workers: (ChildProcess | undefined)[] = [];
    const alive = new Set<ChildProcess>();
    const kill = (i: number) => {
      const w = workers[i];
      if (w && w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    };
    const respawn = (i: number) => {
      kill(i);
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/worker.ts')], {
        cwd: REPO,
        env: { ...process.env, SCRAPE_CONFIG: configFile, SCRAPE_WORKFLOW_BUNDLE: bundle },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', () => undefined);
      alive.add(child);
      child.once('exit', () => alive.delete(child));
      workers[i] = child;
    };
    for (let i = 0; i < o.workers; i++) respawn(i);
    cleanups.push(async () => {
      const all = [...alive];
      for (const w of all) w.kill('SIGKILL');
      await Promise.all(
        all.map((w) =>
          w.exitCode !== null || w.signalCode !== null ? undefined : new Promise((r) => w.once('exit', r)),
        ),
      );
    });
    o.log(`${o.name}: stack ready in ${dir} (${o.workers} workers, Temporal ${temporal.address})`);
    return {
      dir,
      config,
      configFile,
      sim,
      runtime,
      pageUrl: (i) => `${siteUrl}/${pages[i % pages.length]}?i=${i}`,
      respawn,
      kill,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
