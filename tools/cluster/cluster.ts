/**
 * Starts the production topology on this machine, without containers: PostgreSQL (Debian
 * binaries), Temporal's schema (main + advanced visibility) applied with the server's SQL tool,
 * the Temporal server as separate processes — frontend, matching, worker and two history services
 * — all reading `deploy/temporal/config/cluster.yaml` with their own ports, the namespace and our
 * search attributes, the standalone Web UI (`deploy/temporal-ui/config/cluster.yaml`) and the
 * codec server the UI calls to show decrypted payloads. Binaries are built from the Go module
 * proxy on first use and cached (see `binaries.ts`).
 *
 * `stop()` stops every process started here (and nothing else); a watchdog does the same if this
 * process dies (see `processes.ts`). Data (PostgreSQL) persists in `dataDir` unless `ephemeral`.
 * The waits for each process to serve are `readiness.ts`'s.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import type { CodecConfig } from '../../src/codec/config.js';
import { startCodecServer, type RunningCodecServer } from '../../src/codec/server.js';
import type { LineLogger } from '../devserver/process.js';
import { ensureSearchAttributes } from '../../src/namespace.js';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';
import {
  ensureGoBinary,
  serverModuleDir,
  SERVER_BINARY,
  SQL_TOOL_BINARY,
  TEMPORAL_SERVER_VERSION,
  TEMPORAL_UI_VERSION,
  UI_BINARY,
} from './binaries.js';
import { startClusterPostgres, type ClusterPostgres } from './postgres.js';
import { ProcessGroup } from './processes.js';
import { ensureNamespace, waitForFrontend, waitForHttp, waitForPort, waitUntilStartable } from './readiness.js';
import { setupTemporalSchema } from './schema.js';
import { fixedTopology, freeTopology, frontendAddress, serviceEnv, type Topology } from './topology.js';

/** The repository root (config files live in `deploy/`). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** `--root` of the server processes (`config/cluster.yaml` under it). */
export const SERVER_CONFIG_ROOT = path.join(REPO_ROOT, 'deploy', 'temporal');
/** `--root` of the Web UI (`config/cluster.yaml` under it). */
export const UI_CONFIG_ROOT = path.join(REPO_ROOT, 'deploy', 'temporal-ui');

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Where PostgreSQL's data, the logs and `cluster.env` go (default `.data/cluster`). */
  dataDir?: string;
  /** Fixed default ports (7233 …) or free ones (default `fixed`). */
  ports?: 'fixed' | 'free';
  /** Number of history processes (default 2). */
  historyProcesses?: number;
  namespace?: string;
  /** Start the Web UI (default true). */
  ui?: boolean;
  /**
   * The codec server (default: on, with `SCRAPE_CODEC_KEYS` / `SCRAPE_CODEC_TOKEN` from `env`, or
   * keys and token generated once into `<dataDir>/codec.env`). `false`: no codec server, and the
   * Web UI shows payloads as stored.
   */
  codec?: false | { config: CodecConfig; env: NodeJS.ProcessEnv };
  /** Remove the data directory on stop (tests). */
  ephemeral?: boolean;
  log?: LineLogger;
  env?: NodeJS.ProcessEnv;
}

/** A running cluster. */
export interface Cluster {
  /** Frontend gRPC address (`TEMPORAL_ADDRESS`). */
  address: string;
  namespace: string;
  topology: Topology;
  postgres: ClusterPostgres;
  /** `postgres://…/scrapes`: a database for the result store on the same server. */
  storeUrl: string;
  /** Web UI URL, when started. */
  uiUrl?: string;
  /** Codec server base URL (the UI's endpoint is `${codecUrl}/codec`), when started. */
  codecUrl?: string;
  processes: ProcessGroup;
  dataDir: string;
  /** Versions in use. */
  versions: { server: string; ui: string };
  /** SIGKILLs one server process (e.g. `history-1`) and waits for it to exit. */
  kill(name: string): Promise<void>;
  /** Starts a server process again after {@link kill}. */
  restart(name: string): Promise<void>;
  /** Stops the codec server, the UI, every server process and PostgreSQL. Never throws. */
  stop(): Promise<void>;
}

/**
 * Starts the whole topology and resolves once a workflow can start on the namespace.
 * Progress goes to `log`, one line per step.
 *
 * @throws Error naming the step that failed (with the tail of the failing process's log);
 *   everything started before is stopped first.
 */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`[cluster] ${l}\n`));
  const env = opts.env ?? process.env;
  const dataDir = path.resolve(opts.dataDir ?? path.join('.data', 'cluster'));
  const namespace = opts.namespace ?? 'default';
  fs.mkdirSync(dataDir, { recursive: true });
  const topology =
    opts.ports === 'free' ? await freeTopology(opts.historyProcesses ?? 2) : fixedTopology(opts.historyProcesses ?? 2);

  log(
    `binaries: Temporal server ${TEMPORAL_SERVER_VERSION}${opts.ui === false ? '' : `, Web UI ${TEMPORAL_UI_VERSION}`} (cached by version; built with go install when missing)`,
  );
  const server = await ensureGoBinary(SERVER_BINARY, { log, env });
  const sqlTool = await ensureGoBinary(SQL_TOOL_BINARY, { log, env });
  const uiBin = opts.ui === false ? undefined : await ensureGoBinary(UI_BINARY, { log, env });
  const moduleDir = await serverModuleDir({ env });

  const processes = new ProcessGroup(path.join(dataDir, 'logs'), log);
  let postgres: ClusterPostgres;
  try {
    postgres = await startClusterPostgres({
      dataDir: path.join(dataDir, 'pg', 'data'),
      port: topology.postgresPort,
      log,
    });
  } catch (e) {
    await processes.stopAll();
    throw e;
  }
  processes.adopt(postgres.pid);
  let codec: RunningCodecServer | undefined;
  const stopAll = async () => {
    await codec?.close().catch(() => undefined);
    await processes.stopAll(['ui', 'frontend']);
    await postgres.stop();
    if (opts.ephemeral) fs.rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    await setupTemporalSchema(
      { sqlTool, moduleDir, host: postgres.host, port: postgres.port, user: postgres.user },
      log,
    );
    const storeUrl = `postgres://${postgres.user}@${postgres.host}:${postgres.port}/scrapes`;
    await ensureDatabase(postgres, 'scrapes', log);

    const db = { host: postgres.host, port: postgres.port, user: postgres.user };
    const specs = new Map(
      topology.services.map((s) => [
        s.name,
        {
          name: s.name,
          command: server,
          args: [
            '--root',
            SERVER_CONFIG_ROOT,
            '--config',
            'config',
            '--env',
            'cluster',
            '--allow-no-auth',
            'start',
            '--service',
            s.service,
          ],
          env: {
            ...env,
            ...serviceEnv(topology, s, db),
            TEMPORAL_DYNAMIC_CONFIG_FILE: path.join(SERVER_CONFIG_ROOT, 'config', 'dynamicconfig', 'cluster.yaml'),
          },
          cwd: SERVER_CONFIG_ROOT,
        },
      ]),
    );
    // One at a time (the first one initialises the cluster metadata; concurrent first starts race
    // on it): history first (it owns the shards), then matching, the frontend, and the worker
    // service (it calls the frontend). Each is up when its membership port accepts connections.
    for (const name of [
      ...topology.services.filter((s) => s.service === 'history').map((s) => s.name),
      'matching',
      'frontend',
      'worker',
    ]) {
      const svc = topology.services.find((s) => s.name === name)!;
      processes.start(specs.get(name)!);
      await waitForPort(topology.host, svc.membershipPort, name, processes); // every service listens there (the worker service has no gRPC listener)
    }
    const address = frontendAddress(topology);
    await waitForFrontend(address, processes, log);
    await ensureNamespace(address, namespace, log);
    const connection = await Connection.connect({ address });
    try {
      await ensureSearchAttributes(connection, namespace, SEARCH_ATTRIBUTES, { logger: log, visibleTimeoutMs: 60_000 });
      await waitUntilStartable(connection, namespace, log);
    } finally {
      await connection.close();
    }

    let codecUrl: string | undefined;
    let uiUrl: string | undefined;
    const uiOrigin = `http://${topology.host}:${topology.uiPort}`;
    if (opts.codec !== false) {
      const c = opts.codec ?? (await defaultCodec(dataDir, env, log));
      codec = await startCodecServer(c.config, {
        env: c.env,
        host: topology.host,
        port: topology.codecPort,
        corsOrigins: [uiOrigin, ...c.config.server.corsOrigins],
      });
      codecUrl = codec.url;
      log(`codec server: ${codecUrl}/codec (operators sign in at ${codecUrl}/codec/login)`);
    }
    if (uiBin) {
      processes.start({
        name: 'ui',
        command: uiBin,
        args: ['--root', UI_CONFIG_ROOT, '--config', 'config', '--env', 'cluster', 'start'],
        env: {
          ...env,
          TEMPORAL_ADDRESS: address,
          TEMPORAL_UI_IP: topology.host,
          TEMPORAL_UI_PORT: String(topology.uiPort),
          TEMPORAL_CORS_ORIGINS: uiOrigin,
          TEMPORAL_CSRF_COOKIE_INSECURE: 'true',
          TEMPORAL_DEFAULT_NAMESPACE: namespace,
          TEMPORAL_CODEC_ENDPOINT: codecUrl ? `${codecUrl}/codec` : '',
          TEMPORAL_CODEC_INCLUDE_CREDENTIALS: 'true',
        },
        cwd: UI_CONFIG_ROOT,
      });
      uiUrl = uiOrigin;
      await waitForHttp(`${uiUrl}/`, 'ui', processes, 60_000);
      log(`web UI: ${uiUrl}`);
    }

    const cluster: Cluster = {
      address,
      namespace,
      topology,
      postgres,
      storeUrl,
      uiUrl,
      codecUrl,
      processes,
      dataDir,
      versions: { server: TEMPORAL_SERVER_VERSION, ui: TEMPORAL_UI_VERSION },
      kill: (name) => processes.kill(name, 'SIGKILL'),
      async restart(name) {
        const spec = specs.get(name);
        if (!spec) throw new Error(`no server process called ${name}`);
        processes.start(spec);
      },
      stop: stopAll,
    };
    return cluster;
  } catch (e) {
    await stopAll();
    throw e;
  }
}

async function ensureDatabase(pgs: ClusterPostgres, name: string, log: LineLogger): Promise<void> {
  const client = new pg.Client({ host: pgs.host, port: pgs.port, user: pgs.user, database: 'postgres' });
  await client.connect();
  try {
    const r = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (r.rowCount === 0) {
      await client.query(`create database ${name}`);
      log(`postgres: created database ${name} (result store)`);
    }
  } finally {
    await client.end();
  }
}

/**
 * The codec of the topology: keys and token from the environment when set, else generated once
 * into `<dataDir>/codec.env` (mode 0600) and reused on later starts.
 */
async function defaultCodec(
  dataDir: string,
  env: NodeJS.ProcessEnv,
  log: LineLogger,
): Promise<{ config: CodecConfig; env: NodeJS.ProcessEnv }> {
  const { CodecConfigSchema } = await import('../../src/codec/config.js');
  const { newKeyEntry } = await import('../../src/codec/keys.js');
  const config = CodecConfigSchema.parse({ enabled: true });
  if (env[config.keysEnv] && env[config.server.tokenEnv]) return { config, env };
  const file = path.join(dataDir, 'codec.env');
  const saved: Record<string, string> = {};
  if (fs.existsSync(file)) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (m) saved[m[1]!] = m[2]!;
    }
  } else {
    const { randomBytes } = await import('node:crypto');
    saved[config.keysEnv] = newKeyEntry(`k${new Date().toISOString().slice(0, 10).replace(/-/g, '')}`);
    saved[config.server.tokenEnv] = randomBytes(24).toString('base64url');
    fs.writeFileSync(
      file,
      Object.entries(saved)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n') + '\n',
      { mode: 0o600 },
    );
    log(
      `codec: generated a key and an operator token into ${file} (keep it secret; workers and the API need the same ${config.keysEnv})`,
    );
  }
  return { config, env: { ...env, ...saved } };
}
