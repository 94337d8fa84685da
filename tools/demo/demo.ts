/**
 * `npm run demo`: every part on embedded defaults, then one batch through the whole stack.
 *
 * Starts (or reuses, with `TEMPORAL_ADDRESS`) a Temporal dev server with a SQLite file and the Web
 * UI, the reference provider (`tools/sim`, a real HTTP server that really fetches and extracts), the
 * shipped sample site (`sample-site/`) and a worker; writes `.data/demo/config.json` so that the
 * other CLI commands reach the same services; runs `sample-site/demo-batch.csv` with a progress
 * bar; prints the table, the summary, the SQLite path and the Web UI address. With `--keep` (the
 * default on a terminal) it keeps everything running until Ctrl-C so that the jobs can be read in
 * the Web UI and with the CLI.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { NativeConnection } from '@temporalio/worker';
import cliProgress from 'cli-progress';
import Fastify from 'fastify';
import { readBatchFile } from '../../src/batch/input.js';
import { runBatch, type BatchRowOutcome } from '../../src/batch/run.js';
import { outcomeTable } from '../../src/cli/print.js';
import { InvalidInputError } from '../../src/client/errors.js';
import { ensureMaintenanceSchedules, JOBS_VIEW_QUERY, maintenanceTaskQueue } from '../../src/client/schedules.js';
import { parseConfig } from '../../src/config.js';
import { connectOrStartTemporal } from '../devserver/connectOrStart.js';
import { openRuntime } from '../../src/runtime.js';
import { startSim } from '../sim/index.js';
import {
  createMaintenanceWorker,
  createScrapeWorker,
  installWorkerLogging,
  nativeConnectionOptions,
  workflowBundle,
} from '../../src/worker.js';
import { portIsFree } from '../../src/lib/ports.js';
import { abortable, FORCED_EXIT_CODE, ShutdownRequested, watchShutdownSignals } from '../../src/lib/shutdown.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SAMPLE_SITE = path.join(REPO, 'sample-site');

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Keep every service running after the batch until SIGINT/SIGTERM. */
  keep: boolean;
  /** Directory for the SQLite files and the generated config (default `.data/demo`). */
  dataDir: string;
  /** Where progress and the summary go (default stdout/stderr). */
  out?: (line: string) => void;
  /**
   * Ports (`--temporal-port`, `--ui-port`, `--site-port`, `--provider-port`, or
   * `SCRAPE_DEMO_TEMPORAL_PORT`, `…_UI_PORT`, `…_SITE_PORT`, `…_PROVIDER_PORT`). Absent: the
   * default (7233, 8233, 8780, 8790) when free, else any free port; 0: any free port; another
   * number: that port, or an error when it is taken.
   */
  ports?: { temporal?: number; ui?: number; site?: number; provider?: number };
  /** Receives the batch's outcome once it is known (`demo --json` prints it). */
  onSummary?: (summary: DemoSummary) => void;
}

/** What the demo's batch did: every line's outcome and where to look next. */
export interface DemoSummary {
  batchId: string;
  /** Every line of the sample file: a job's outcome, or `rejected` with the reason. */
  rows: BatchRowOutcome[];
  completed: number;
  jobs: number;
  rejected: number;
  /** The Web UI's list of this batch, when there is a Web UI. */
  webUi: string | null;
  configFile: string;
  storeFile: string;
}

/** The demo's default ports. */
export const DEMO_PORTS = { temporal: 7233, ui: 8233, site: 8780, provider: 8790 } as const;

const PORT_FLAGS = {
  temporal: '--temporal-port / SCRAPE_DEMO_TEMPORAL_PORT',
  ui: '--ui-port / SCRAPE_DEMO_UI_PORT',
  site: '--site-port / SCRAPE_DEMO_SITE_PORT',
  provider: '--provider-port / SCRAPE_DEMO_PROVIDER_PORT',
} as const;

/**
 * The port to bind for `which`: the one asked for (0: any), which must be free (else
 * {@link InvalidInputError} naming the flag), or the default when free, else 0 (the OS picks).
 */
async function choosePort(which: keyof typeof DEMO_PORTS, asked: number | undefined): Promise<number> {
  if (asked === undefined) return (await portIsFree('127.0.0.1', DEMO_PORTS[which])) ? DEMO_PORTS[which] : 0;
  if (asked !== 0 && !(await portIsFree('127.0.0.1', asked))) {
    throw new InvalidInputError(
      `port ${asked} (${PORT_FLAGS[which]}) is in use on 127.0.0.1; choose another, or 0 for any free port`,
      [],
    );
  }
  return asked;
}

/**
 * Runs the demo. Returns the process exit code: 0 when every valid row completed (the sample's
 * intentionally invalid row is expected and reported), 1 otherwise; 130 when SIGINT or SIGTERM
 * stopped it before the batch was done. The first SIGINT or SIGTERM, at any moment, stops
 * everything the demo started (workers first, the dev server last) and returns.
 */
export async function runDemo(opts: DemoOptions): Promise<number> {
  const say = opts.out ?? ((line: string) => console.log(line));
  const step = (line: string) => say(`» ${line}`);
  const dir = path.resolve(opts.dataDir);
  fs.mkdirSync(dir, { recursive: true });
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async () => {
    // A part that fails to stop is reported: a silent failure here once left the process running.
    for (const c of cleanups.reverse())
      await c().catch((e: unknown) => say(`  while stopping: ${e instanceof Error ? e.message : String(e)}`));
    cleanups.length = 0;
  };
  const shutdown = watchShutdownSignals({ name: 'demo', log: say });
  const { signal } = shutdown;
  void shutdown.received.then(() => say('stopping…'));
  /** Ends the run when a signal arrived while a step that cannot be interrupted was running. */
  const stopIfAsked = () => {
    if (signal.aborted) throw new ShutdownRequested(String(signal.reason));
  };
  let interrupted = false;
  const workerLog = path.join(dir, 'worker.log');
  installWorkerLogging({ level: 'INFO', file: workerLog });
  try {
    const ports = {
      temporal: await choosePort('temporal', opts.ports?.temporal),
      ui: await choosePort('ui', opts.ports?.ui),
      site: await choosePort('site', opts.ports?.site),
      provider: await choosePort('provider', opts.ports?.provider),
    };
    const t0 = Date.now();
    step('Temporal: finding or starting a server (first run may download the Temporal CLI, ~50 MB)…');
    const temporal = await abortable(
      connectOrStartTemporal({
        devServer: { dbFile: path.join(dir, 'temporal.db'), port: ports.temporal, uiPort: ports.ui },
        logger: (l) => say(`  ${l}`),
      }),
      signal,
      (late) => late.stop(),
    );
    cleanups.push(() => temporal.stop());
    step(
      `Temporal ${temporal.external ? 'cluster' : 'dev server'} at ${temporal.address} (namespace ${temporal.namespace}), ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );

    const site = Fastify({ logger: false });
    await site.register(fastifyStatic, { root: SAMPLE_SITE, index: ['index.html'] });
    cleanups.push(() => site.close());
    const siteUrl = await site.listen({ host: '127.0.0.1', port: ports.site });
    stopIfAsked();
    step(`sample site at ${siteUrl}`);

    const apiKey = `demo_${randomBytes(18).toString('base64url')}`;
    const sim = await startSim({
      host: '127.0.0.1',
      port: ports.provider,
      adminToken: randomBytes(12).toString('hex'),
      // One active scrape per account is the seeds' default; the demo allows 2 and keeps each job
      // running 1.5 s so that `pending` jobs and the wait for a free slot can be seen.
      accounts: [{ name: 'demo', apiKeys: [apiKey], profile: { concurrency: 2, minRunMs: 1_500 } }],
      logger: false,
    });
    cleanups.push(() => sim.close());
    stopIfAsked();
    step(`reference provider at ${sim.url} (account "demo", concurrency 2)`);
    let refusedSubmits = 0;
    sim.events.on('response', (e) => {
      if (e.endpoint === 'submit' && e.status === 429) refusedSubmits++;
    });

    const storeFile = path.join(dir, 'scrapes.db');
    const config = parseConfig(
      {
        temporal: { address: temporal.address, namespace: temporal.namespace, taskQueue: 'scrapes' },
        storeUrl: `sqlite:${storeFile}`,
        defaultAccount: 'demo',
        defaultProvider: 'reference',
        // The account's documented limit (2 active jobs) as the ceiling of the adaptive active-jobs
        // limit: submits wait for a free slot instead of bouncing off `429 CONCURRENCY_LIMIT`.
        providers: {
          reference: {
            kind: 'reference',
            baseUrl: sim.url,
            credentials: { default: { apiKey } },
            limits: { activeJobs: { initial: 2, max: 2 } },
          },
        },
      },
      {},
    );
    const configFile = path.join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o600 });

    const rt = await openRuntime(config);
    cleanups.push(() => rt.close());
    // Bundling the workflow code is the slow part of creating a worker: it is done first, where a
    // signal can interrupt it; a worker once created must run and be shut down to release its connection.
    await abortable(workflowBundle(), signal);
    const nativeConnection = await NativeConnection.connect(nativeConnectionOptions(temporal.connectionOptions));
    cleanups.push(() => nativeConnection.close());
    // A short shutdown grace: Ctrl-C must end the demo within seconds; an activity cut short is
    // retried by the server when a worker runs again (the next demo attaches to the same jobs).
    const worker = await createScrapeWorker({
      connection: nativeConnection,
      config,
      store: rt.store,
      identity: `demo-worker@${process.pid}`,
      shutdownGraceTimeMs: 2_000,
    });
    const maintenance = await createMaintenanceWorker({
      connection: nativeConnection,
      config,
      store: rt.store,
      identity: `demo-maintenance@${process.pid}`,
    });
    const running = Promise.all([worker.run(), maintenance.run()]);
    cleanups.push(async () => {
      // The SDK's runtime shuts its workers down itself on SIGINT/SIGTERM, before this runs; a
      // second shutdown() would throw, skip the wait below, and the connection could then not be
      // closed while the workers still held it (the demo used to hang there after `stopping…`).
      for (const w of [worker, maintenance]) if (w.getState() === 'RUNNING') w.shutdown();
      await running;
    });
    stopIfAsked();
    await abortable(ensureMaintenanceSchedules(rt.client.temporal, { taskQueue: config.temporal.taskQueue }), signal);
    step(
      `worker polling task queue "${config.temporal.taskQueue}" (log: ${workerLog}); maintenance schedules in place on "${maintenanceTaskQueue(config.temporal.taskQueue)}"`,
    );

    const template = fs.readFileSync(path.join(SAMPLE_SITE, 'demo-batch.csv'), 'utf8');
    const batchFile = path.join(dir, 'batch.csv');
    fs.writeFileSync(batchFile, template.replaceAll('{{SITE}}', siteUrl.replace(/\/$/, '')));
    const input = readBatchFile(batchFile);
    step(`running ${batchFile}: ${input.items.length} rows, ${input.errors.length} rejected`);
    for (const e of input.errors) say(`  line ${e.line}: ${e.reason}`);

    const bar = new cliProgress.SingleBar(
      {
        format: '  {bar} {value}/{total} final | {states}',
        hideCursor: true,
        noTTYOutput: true,
        notTTYSchedule: 1000,
        stream: process.stderr,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(input.items.length, 0, { states: '' });
    const started = Date.now();
    const outcomes = await abortable(
      runBatch(rt.client, rt.store, input.items, {
        account: 'demo',
        batchId: input.batchId,
        policy: { initialDelayMs: 500, maxDelayMs: 5_000, deadlineMs: 5 * 60_000 },
        waitTimeoutMs: 5 * 60_000,
        onProgress: (p) =>
          bar.update(p.final, {
            states: Object.entries(p.byState)
              .map(([k, v]) => `${k} ${v}`)
              .join(', '),
          }),
      }),
      signal,
    ).finally(() => bar.stop());

    const rows: BatchRowOutcome[] = [
      ...outcomes,
      ...input.errors.map((e) => ({ line: e.line, url: e.raw, state: 'rejected' as const, error: e.reason })),
    ].sort((a, b) => a.line - b.line);
    say(await outcomeTable(rows, rows.length));

    const stats = sim.stats();
    const completed = outcomes.filter((o) => o.state === 'completed').length;
    const results = await rt.store.results.count();
    const uiQuery = (q: string) =>
      temporal.uiUrl
        ? `${temporal.uiUrl}/namespaces/${temporal.namespace}/workflows?query=${encodeURIComponent(q)}`
        : '(no Web UI: external cluster without TEMPORAL_UI_URL)';
    const uiList = uiQuery(`ScrapeBatchId="${input.batchId}"`);
    const example = outcomes.find((o) => o.jobId)?.jobId;
    say('');
    say(
      `Summary: ${completed}/${outcomes.length} jobs completed in ${((Date.now() - started) / 1000).toFixed(1)} s; ${input.errors.length} row(s) rejected with their line numbers.`,
    );
    say(
      `Provider: ${stats.jobsCreated.total} job(s) created this run, ${stats.requests.total} requests (${Object.entries(
        stats.requests.byEndpoint,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(
          ', ',
        )}); ${stats.requests.byEndpoint.submit} submit(s), ${refusedSubmits} refused (429); ${stats.requests.byStatus['429'] ?? 0} answers 429 in all.`,
    );
    say(`Result store (SQLite): ${storeFile} — ${results} result row(s) in total`);
    say(`Temporal Web UI: ${temporal.uiUrl ?? '—'}`);
    say(`  this batch: ${uiList}`);
    say(`  all jobs, without the maintenance runs: ${uiQuery(JOBS_VIEW_QUERY)}`);
    say(`Config for the CLI: ${configFile}`);
    if (example) {
      // The CLI and the Web UI need the dev server, which lives as long as the demo does.
      say(
        opts.keep
          ? 'In another terminal, try:'
          : 'The demo stops now (not kept: no terminal, or --exit). With `npm run demo -- --keep` running, try in another terminal:',
      );
      say(`     npm run cli -- status ${example}`);
      say(`     npm run cli -- result ${example}`);
      say(`     npm run cli -- timeline ${example}`);
    }
    say(`Re-running the demo attaches to the same jobs (same rows → same keys): nothing new is created.`);
    opts.onSummary?.({
      batchId: input.batchId,
      rows,
      completed,
      jobs: outcomes.length,
      rejected: input.errors.length,
      webUi: temporal.uiUrl ? uiList : null,
      configFile,
      storeFile,
    });

    if (opts.keep) {
      say('');
      say('Everything keeps running so you can explore the Web UI and the CLI. Press Ctrl-C to stop.');
      await shutdown.received;
    }
    return completed === outcomes.length ? 0 : 1;
  } catch (e) {
    if (e instanceof ShutdownRequested) {
      interrupted = true;
      return FORCED_EXIT_CODE;
    }
    throw e;
  } finally {
    await cleanup();
    // Cut short: what was still starting or running (a dev server's start, the batch's calls) is abandoned.
    shutdown.stopped(interrupted ? { exitNow: FORCED_EXIT_CODE } : {});
  }
}
