/**
 * `npm run cluster`: starts the production topology on this machine (see `cluster.ts`) and keeps
 * it running until Ctrl-C / SIGTERM, then stops every process it started.
 *
 *   npm run cluster                     fixed ports (frontend 127.0.0.1:7233, Web UI :8088, codec :8089)
 *   npm run cluster -- --free-ports     any free ports (printed)
 *   npm run cluster -- --data-dir DIR   default .data/cluster (PostgreSQL data, logs, cluster.env)
 *   npm run cluster -- --no-ui          without the Web UI (and its build)
 *   npm run cluster -- stop             stops a cluster running from the same data directory
 *   npm run cluster -- build            only obtains the binaries (go install into the cache; CI)
 *
 * It writes `<data-dir>/cluster.env` (TEMPORAL_ADDRESS, SCRAPE_STORE_URL, SCRAPE_CODEC=on and the
 * codec keys) for workers and the API: `set -a; . .data/cluster/cluster.env; set +a`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { startCluster } from './cluster.js';
import { abortable, FORCED_EXIT_CODE, ShutdownRequested, watchShutdownSignals } from '../../src/lib/shutdown.js';

const program = new Command('cluster')
  .description(
    'start the production topology: PostgreSQL, Temporal (frontend, matching, worker, 2 × history as separate processes), Web UI, codec server',
  )
  .option('--data-dir <dir>', 'PostgreSQL data, logs and cluster.env', path.join('.data', 'cluster'))
  .option('--free-ports', 'use free ports instead of the fixed defaults')
  .option('--history <n>', 'number of history processes', (v) => Number(v), 2)
  .option('--no-ui', 'do not start (or build) the Web UI');

program
  .command('build')
  .description(
    'obtain the Temporal server, SQL tool and Web UI binaries (go install into the cache when missing) and exit',
  )
  .action(async () => {
    const { ensureGoBinary, SERVER_BINARY, SQL_TOOL_BINARY, UI_BINARY, serverModuleDir } =
      await import('./binaries.js');
    const log = (l: string) => process.stderr.write(`[cluster] ${l}\n`);
    const t0 = Date.now();
    for (const b of [SERVER_BINARY, SQL_TOOL_BINARY, ...(program.opts().ui === false ? [] : [UI_BINARY])])
      log(`${b.label}: ${await ensureGoBinary(b, { log })}`);
    log(`server module: ${await serverModuleDir()}`);
    log(`binaries ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });

program
  .command('stop')
  .description('stop the cluster running from --data-dir')
  .action(() => {
    const pidFile = path.join(path.resolve(program.opts().dataDir as string), 'cluster.pid');
    if (!fs.existsSync(pidFile)) {
      console.error(`no cluster running from ${path.dirname(pidFile)} (no cluster.pid)`);
      process.exit(1);
    }
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    try {
      process.kill(pid, 'SIGTERM');
      console.error(`sent SIGTERM to the cluster (pid ${pid}); it stops every process it started`);
    } catch (e) {
      console.error(`cluster pid ${pid} is not running (${(e as Error).message}); removing ${pidFile}`);
      fs.rmSync(pidFile, { force: true });
    }
  });

program.action(async (opts: { dataDir: string; freePorts?: boolean; history: number; ui: boolean }) => {
  const started = Date.now();
  const dataDir = path.resolve(opts.dataDir);
  // Listening from the start: a Ctrl-C while the cluster starts stops what has started so far.
  const shutdown = watchShutdownSignals({ name: 'cluster' });
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await abortable(
      startCluster({ dataDir, ports: opts.freePorts ? 'free' : 'fixed', historyProcesses: opts.history, ui: opts.ui }),
      shutdown.signal,
    );
  } catch (e) {
    if (!(e instanceof ShutdownRequested)) throw e;
    // Starting can take minutes (binaries, schema, five servers): rather than wait for it, exit now;
    // the processes' watchdog (see processes.ts) stops every server and PostgreSQL started so far.
    console.error(`cluster: ${e.signalName} while starting: exiting; what had started is stopped by its watchdog`);
    process.exit(FORCED_EXIT_CODE);
  }
  const pidFile = path.join(dataDir, 'cluster.pid');
  fs.writeFileSync(pidFile, String(process.pid));
  const codecEnv = fs.existsSync(path.join(dataDir, 'codec.env'))
    ? fs.readFileSync(path.join(dataDir, 'codec.env'), 'utf8').trim()
    : '';
  const envFile = path.join(dataDir, 'cluster.env');
  fs.writeFileSync(
    envFile,
    [
      `TEMPORAL_ADDRESS=${cluster.address}`,
      `TEMPORAL_NAMESPACE=${cluster.namespace}`,
      `SCRAPE_STORE_URL=${cluster.storeUrl}`,
      `SCRAPE_CODEC=${cluster.codecUrl ? 'on' : 'off'}`,
      codecEnv,
    ]
      .filter(Boolean)
      .join('\n') + '\n',
    { mode: 0o600 },
  );
  const lines = [
    `cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s (Temporal ${cluster.versions.server}, Web UI ${cluster.versions.ui})`,
    `  frontend      ${cluster.address} (namespace ${cluster.namespace})`,
    ...cluster.topology.services.map(
      (s) =>
        `  ${s.name.padEnd(13)} pid ${cluster.processes.get(s.name)?.pid ?? '?'}  gRPC :${s.grpcPort}  membership :${s.membershipPort}  metrics http://${cluster.topology.host}:${s.metricsPort}/metrics`,
    ),
    `  postgres      ${cluster.postgres.host}:${cluster.postgres.port} (databases temporal, temporal_visibility, scrapes)`,
    cluster.uiUrl ? `  web UI        ${cluster.uiUrl}` : '  web UI        off',
    cluster.codecUrl
      ? `  codec server  ${cluster.codecUrl}/codec (sign in: ${cluster.codecUrl}/codec/login with SCRAPE_CODEC_TOKEN from ${envFile})`
      : '  codec server  off',
    `  logs          ${path.join(dataDir, 'logs')}`,
    `environment for workers and the API: set -a; . ${envFile}; set +a`,
    `stop: Ctrl-C here, or npm run cluster -- stop${opts.dataDir !== path.join('.data', 'cluster') ? ` --data-dir ${opts.dataDir}` : ''}`,
  ];
  console.log(lines.join('\n'));
  const signal = await shutdown.received;
  console.error(`${signal}: stopping the cluster…`);
  await cluster.stop();
  fs.rmSync(pidFile, { force: true });
  console.error('cluster stopped');
  shutdown.stopped();
});

program.parseAsync(process.argv).catch((e: unknown) => {
  console.error(`cluster: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
