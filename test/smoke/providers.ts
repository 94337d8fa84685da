/**
 * `npm run smoke:providers`: one real job per provider kind whose credentials are in the
 * environment (`FIRECRAWL_API_KEY`, `APIFY_TOKEN`, `SCRAPERAPI_KEY`, `BRIGHTDATA_API_TOKEN`,
 * `OXYLABS_USER` + `OXYLABS_PASS`, `ZYTE_API_KEY`…; the recipes are in `recipes.ts`), through the
 * whole product: a Temporal dev server (or `TEMPORAL_ADDRESS`), a worker, a SQLite store in a
 * temporary directory, the real workflow. Kinds without credentials (or without a recipe yet) are
 * skipped, and the output says which ran and which were skipped and why. With nothing to run it
 * starts nothing and exits 0. Exit 1 when a job that ran did not complete.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { ScrapeClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config.js';
import { providerPollDefaults } from '../../src/providers/shared/policy.js';
import { connectOrStartTemporal, type TemporalTarget } from '../../tools/devserver/connectOrStart.js';
import { isFinalState } from '../../src/model/states.js';
import { findDescriptor } from '../../src/providers/kinds.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { openStore } from '../../src/store/index.js';
import { createScrapeWorker, installWorkerLogging, nativeConnectionOptions } from '../../src/worker.js';
import { SMOKE_RECIPES, type SmokeEnv, type SmokeRecipe } from './recipes.js';

/** The decision for one kind. */
export type SmokePlan = { kind: string; run: true; recipe: SmokeRecipe } | { kind: string; run: false; reason: string };

/** Which kinds run with `env`, and why the others are skipped (pure: no I/O). */
export function planSmoke(env: SmokeEnv, recipes: readonly SmokeRecipe[] = SMOKE_RECIPES): SmokePlan[] {
  return recipes.map((recipe): SmokePlan => {
    const missing = recipe.env.filter((v) => !env[v]);
    if (missing.length > 0) return { kind: recipe.kind, run: false, reason: `missing ${missing.join(', ')}` };
    if (!findDescriptor(recipe.kind))
      return {
        kind: recipe.kind,
        run: false,
        reason: `kind "${recipe.kind}" is not shipped yet (src/providers/kinds.ts)`,
      };
    if (!recipe.entry || !recipe.job)
      return {
        kind: recipe.kind,
        run: false,
        reason: `no smoke recipe for "${recipe.kind}" yet (test/smoke/recipes.ts)`,
      };
    return { kind: recipe.kind, run: true, recipe };
  });
}

/** Outcome of one kind's job. */
export interface SmokeResult {
  kind: string;
  state: string;
  taskId: string | null;
  title: string | null;
  documents: number;
  /** Wall time from start to the final state, ms. */
  elapsedMs: number;
  error?: string;
}

/** Options of {@link runSmoke}. */
export interface RunSmokeOptions {
  env: SmokeEnv;
  /** Where lines go (default stdout). */
  log?: (line: string) => void;
  recipes?: readonly SmokeRecipe[];
}

/**
 * Plans, runs every planned kind's job (in parallel, each bounded by its `deadlineMs`) and prints
 * one line per kind. Returns the plan and the results; `ok` is false when a job that ran did not
 * complete.
 */
export async function runSmoke(
  opts: RunSmokeOptions,
): Promise<{ plan: SmokePlan[]; results: SmokeResult[]; ok: boolean }> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const plan = planSmoke(opts.env, opts.recipes);
  for (const p of plan) if (!p.run) log(`skip  ${p.kind.padEnd(11)} ${p.reason}`);
  const planned = plan.filter((p): p is Extract<SmokePlan, { run: true }> => p.run);
  if (planned.length === 0) {
    log(
      `ran 0 of ${plan.length} kinds: set a kind's variables to run it (see docs/providers.md, "Trying a provider with your own keys")`,
    );
    return { plan, results: [], ok: true };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smoke-providers-'));
  let target: TemporalTarget | undefined;
  try {
    installWorkerLogging({ level: 'WARN', file: path.join(os.tmpdir(), `smoke-providers-worker-${process.pid}.log`) });
    target = await connectOrStartTemporal({
      env: opts.env as NodeJS.ProcessEnv,
      devServer: { dbFile: path.join(dir, 'temporal.db'), headless: true },
      logger: () => undefined,
    });
    const config = parseConfig(
      {
        temporal: {
          address: target.address,
          namespace: target.namespace,
          taskQueue: `smoke-${process.pid}-${Date.now()}`,
        },
        storeUrl: `sqlite:${path.join(dir, 'store.db')}`,
        providers: Object.fromEntries(planned.map((p) => [p.kind, { kind: p.kind, ...p.recipe.entry!(opts.env) }])),
      },
      {},
    );
    const store = await openStore(config.storeUrl);
    const native = await NativeConnection.connect(nativeConnectionOptions(target.connectionOptions));
    const connection = await Connection.connect(target.connectionOptions);
    const providers = new ProviderRegistry(config, opts.env as NodeJS.ProcessEnv, {}, store.providerKeys);
    const worker = await createScrapeWorker({
      connection: native,
      config,
      store,
      providers,
      shutdownGraceTimeMs: 2_000,
    });
    const running = worker.run();
    const client = new ScrapeClient({
      temporal: new Client({ connection, namespace: target.namespace }),
      store,
      taskQueue: config.temporal.taskQueue,
      defaultProvider: planned[0]!.kind,
      providers: planned.map((p) => p.kind),
      pollDefaults: (provider) => providerPollDefaults(config, provider),
    });
    const results = await Promise.all(
      planned.map(async ({ kind, recipe }): Promise<SmokeResult> => {
        const t0 = Date.now();
        try {
          const job = recipe.job!(opts.env);
          const ref = await client.startScrape({
            account: 'smoke',
            provider: kind,
            url: job.url,
            options: job.options ?? {},
            key: `smoke-${kind}-${t0}`,
            policy: { deadlineMs: recipe.deadlineMs ?? 300_000 },
          });
          const until = t0 + (recipe.deadlineMs ?? 300_000) + 30_000;
          let row = await store.jobs.get(ref.jobId);
          while (!row || !isFinalState(row.state)) {
            if (Date.now() > until) break;
            await new Promise((r) => setTimeout(r, 500));
            row = await store.jobs.get(ref.jobId);
          }
          const result = await store.results.forJob(ref.jobId);
          const error = row?.last_error ? (JSON.parse(row.last_error) as { message?: string }).message : undefined;
          return {
            kind,
            state: row?.state ?? 'unknown',
            taskId: row?.task_id ?? null,
            title: result?.title ?? null,
            documents: Number(result?.document_count ?? 0),
            elapsedMs: Date.now() - t0,
            error,
          };
        } catch (e) {
          return {
            kind,
            state: 'error',
            taskId: null,
            title: null,
            documents: 0,
            elapsedMs: Date.now() - t0,
            error: (e as Error).message,
          };
        }
      }),
    );
    for (const r of results) {
      log(
        `ran   ${r.kind.padEnd(11)} ${r.state} in ${(r.elapsedMs / 1000).toFixed(1)} s; task ${r.taskId ?? '—'}; title ${JSON.stringify(r.title)}; ${r.documents} documents${r.error ? `; error: ${r.error}` : ''}`,
      );
    }
    log(
      `ran ${results.length} of ${plan.length} kinds (${results.filter((r) => r.state === 'completed').length} completed), skipped ${plan.length - results.length}`,
    );
    worker.shutdown();
    await running;
    await native.close();
    await connection.close();
    await store.close();
    return { plan, results, ok: results.every((r) => r.state === 'completed') };
  } finally {
    await target?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runSmoke({ env: process.env }).then(
    ({ ok }) => process.exit(ok ? 0 : 1),
    (e) => {
      console.error(`smoke:providers failed: ${(e as Error).message}`);
      process.exit(1);
    },
  );
}
