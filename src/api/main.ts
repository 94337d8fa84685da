/**
 * Starting the HTTP API: `npm run api` (this file) or `npm run cli -- api`.
 *
 * Configuration: `--config <file>` / `$SCRAPE_CONFIG` / the running demo's
 * `.data/demo/config.json` (see `findConfigFile`), its `api` section (listen address, key file,
 * rate limits, webhook secrets) and the environment overrides `SCRAPE_API_HOST`,
 * `SCRAPE_API_PORT`, `SCRAPE_API_KEYS_FILE`. API keys: `api.keysFile`, else `api-keys.json`
 * next to the configuration file, plus the JSON in `$SCRAPE_API_KEYS` (see `auth.ts`); the key
 * file is reloaded when it changes (`SCRAPE_API_KEYS_WATCH=false` turns that off) and on `SIGHUP`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { loadConfigFile, type Config } from '../config.js';
import { findConfigFile, openRuntime, type Runtime } from '../runtime.js';
import { countJobsFrom, startMetricsServer, type MetricsServer } from '../observability/metricsServer.js';
import { installTracing } from '../observability/tracing.js';
import { buildApi } from './app.js';
import { addKeyToFile, ApiKeyring, generateApiKey, hashApiKey, loadApiKeys, watchApiKeys } from './auth.js';
import { abortable, FORCED_EXIT_CODE, ShutdownRequested, watchShutdownSignals } from '../lib/shutdown.js';

/** Options of {@link startApi}. */
export interface StartApiOptions {
  /** Configuration file (default: see {@link findConfigFile}). */
  configFile?: string;
  /** Listen address / port overrides (default `config.api.host` / `config.api.port`). */
  host?: string;
  port?: number;
  /** Fastify logger (default `true`: JSON lines on stdout, credentials redacted). */
  logger?: boolean | { stream: NodeJS.WritableStream; level?: string };
}

/** A running API; `close()` stops listening and closes the runtime. */
export interface RunningApi {
  app: FastifyInstance;
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  config: Config;
  runtime: Runtime;
  /** The `/metrics` listener's base URL (`observability.metrics.apiPort`), when on. */
  metricsUrl?: string;
  /** Reads the API keys again (what `SIGHUP` does); returns how many are in force, or why the old ones stay. */
  reloadKeys(): { ok: true; keys: number } | { ok: false; error: string };
  close(): Promise<void>;
}

/**
 * The key file of a configuration: `config.api.keysFile`, else `api-keys.json` in the directory
 * of `configFile` (the demo's: `.data/demo/api-keys.json`).
 */
function keysFileOf(config: Config, configFile: string): string {
  return config.api.keysFile ?? path.join(path.dirname(path.resolve(configFile)), 'api-keys.json');
}

/**
 * Loads the configuration and keys, connects to Temporal and the store, and listens. Throws when
 * no API key is configured (with how to create one), when Temporal is unreachable, or when the
 * port is taken.
 */
export async function startApi(opts: StartApiOptions = {}): Promise<RunningApi> {
  const configFile = findConfigFile(opts.configFile);
  const config = loadConfigFile(configFile);
  const keysFile = keysFileOf(config, configFile);
  const keys = loadApiKeys({
    keysFile: fs.existsSync(keysFile) || config.api.keysFile ? keysFile : undefined,
    keysEnv: config.api.keysEnv,
  });
  if (keys.length === 0) {
    throw new Error(
      `no API keys: create one with \`npm run cli -- api --new-key <account>${opts.configFile ? ` --config ${opts.configFile}` : ''}\` (it writes ${keysFile}), or set ${config.api.keysEnv} (see docs/http-api.md, "API keys")`,
    );
  }
  const tracing = installTracing(config.observability.traces, 'api');
  const runtime = await openRuntime(config);
  const keyring = new ApiKeyring(keys);
  let app: FastifyInstance;
  let metrics: MetricsServer | undefined;
  try {
    app = await buildApi({
      client: runtime.client,
      store: runtime.store,
      config,
      keys: keyring,
      logger: opts.logger ?? true,
    });
    await app.listen({ host: opts.host ?? config.api.host, port: opts.port ?? config.api.port });
    const m = config.observability.metrics;
    if (m.apiPort !== null) {
      countJobsFrom(runtime.store.jobs, runtime.store.budgets);
      metrics = await startMetricsServer({ host: m.host, port: m.apiPort });
      app.log.info({ metrics: `${metrics.url}/metrics` }, 'metrics endpoint listening');
    }
  } catch (e) {
    await runtime.close();
    throw e;
  }
  const log = app.log;
  const watch = watchApiKeys({
    keyring,
    keysFile,
    keysEnv: config.api.keysEnv,
    watch: !/^(0|false|no|off)$/i.test(process.env.SCRAPE_API_KEYS_WATCH ?? ''),
    onReload: (r) =>
      r.ok
        ? log.info({ keys: r.keys, file: keysFile }, 'API keys reloaded')
        : log.error({ file: keysFile, reason: r.error }, 'API keys not reloaded; the keys in force stay'),
  });
  const addr = app.server.address();
  const url =
    typeof addr === 'object' && addr
      ? `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
      : String(addr);
  return {
    app,
    url,
    config,
    runtime,
    metricsUrl: metrics?.url,
    reloadKeys: () => watch.reload(),
    async close() {
      watch.close();
      await app.close();
      await metrics?.close();
      await tracing?.shutdown();
      await runtime.close();
    },
  };
}

/**
 * Makes a new API key for `account`, appends its SHA-256 to the key file of the configuration and
 * returns the key (shown once; it is stored nowhere in clear).
 */
export function createApiKey(opts: { account: string; name?: string; configFile?: string }): {
  key: string;
  file: string;
} {
  const configFile = findConfigFile(opts.configFile);
  const config = loadConfigFile(configFile);
  const file = keysFileOf(config, configFile);
  const key = generateApiKey();
  addKeyToFile(file, { account: opts.account, sha256: hashApiKey(key), ...(opts.name ? { name: opts.name } : {}) });
  return { key, file };
}

/**
 * Runs the API until SIGINT/SIGTERM (used by `npm run api` and `npm run cli -- api`); `SIGHUP`
 * reloads the API keys. The first SIGINT or SIGTERM, also one that arrives while it starts, closes
 * the listener and the runtime and returns.
 */
export async function runApiMain(opts: StartApiOptions = {}): Promise<void> {
  const shutdown = watchShutdownSignals({ name: 'api' });
  try {
    const api = await abortable(startApi(opts), shutdown.signal, (late) => late.close());
    const hup = () => {
      const r = api.reloadKeys();
      console.error(
        r.ok
          ? `SIGHUP: ${r.keys} API key(s) in force`
          : `SIGHUP: API keys not reloaded (${r.error}); the keys in force stay`,
      );
    };
    process.on('SIGHUP', hup);
    console.error(`HTTP API listening on ${api.url} (OpenAPI: ${api.url}/openapi.json; SIGHUP reloads the API keys)`);
    const signal = await shutdown.received;
    console.error(`api: ${signal}, stopping`);
    process.off('SIGHUP', hup);
    await api.close();
  } catch (e) {
    if (!(e instanceof ShutdownRequested)) throw e;
    console.error(`api: ${e.signalName} while starting: exiting`);
    shutdown.stopped({ exitNow: FORCED_EXIT_CODE });
    return;
  }
  shutdown.stopped();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  runApiMain().catch((e: unknown) => {
    console.error(`api: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
