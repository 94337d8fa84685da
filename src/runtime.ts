/**
 * Wiring shared by the CLI and the HTTP API: configuration → store + Temporal client → the typed
 * {@link ScrapeClient}.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ScrapeClient, type ScrapeClientOptions } from './client/index.js';
import { dataConverterFor } from './codec/config.js';
import { providerPollDefaults } from './providers/shared/policy.js';
import { costOf, credentialConfigured } from './providers/kinds.js';
import { webhookProviderNames, type Config } from './config.js';
import { connectionOptionsFromEnv } from './client/connection.js';
import { storeMetrics } from './observability/metrics.js';
import { workflowClientInterceptors } from './observability/tracing.js';
import { openStore, type Store } from './store/index.js';

/** An open client runtime; call `close()` when done. */
export interface Runtime {
  config: Config;
  store: Store;
  connection: Connection;
  client: ScrapeClient;
  close(): Promise<void>;
}

/** Where the demo writes its configuration (so later CLI calls can reach the demo's services). */
const DEMO_DIR = path.resolve('.data', 'demo');
const DEMO_CONFIG = path.join(DEMO_DIR, 'config.json');

/**
 * Finds the configuration file: `explicit` (a `--config` flag), then `$SCRAPE_CONFIG`, then the
 * demo's `.data/demo/config.json`. Throws with what to do when there is none.
 */
export function findConfigFile(explicit?: string): string {
  const file = explicit ?? process.env.SCRAPE_CONFIG ?? (fs.existsSync(DEMO_CONFIG) ? DEMO_CONFIG : undefined);
  if (!file) {
    throw new Error(
      'no configuration: pass --config <file>, set SCRAPE_CONFIG, or run `npm run demo -- --keep` in another terminal (it writes .data/demo/config.json)',
    );
  }
  return file;
}

/**
 * Connection options for `config.temporal.address`, with TLS and API key from the environment
 * (`TEMPORAL_TLS_CERT`/`TEMPORAL_TLS_KEY`, `TEMPORAL_TLS_CA`, `TEMPORAL_API_KEY`; see
 * `connectionOptionsFromEnv`).
 */
export function temporalConnectionOptions(config: Config, env: NodeJS.ProcessEnv = process.env) {
  return connectionOptionsFromEnv({ ...env, TEMPORAL_ADDRESS: config.temporal.address });
}

/**
 * What a {@link ScrapeClient} learns of the deployment from `config`: its task queue and providers,
 * their poll defaults, credentials and costs (the runtime's client and a test's are built alike).
 */
export function clientOptionsFor(config: Config): Omit<ScrapeClientOptions, 'temporal' | 'store'> {
  return {
    taskQueue: config.temporal.taskQueue,
    defaultProvider: config.defaultProvider,
    webhookProviders: webhookProviderNames(config),
    providers: Object.keys(config.providers),
    pollDefaults: (provider) => providerPollDefaults(config, provider),
    hasCredential: (provider, account) => {
      const entry = config.providers[provider];
      return entry === undefined || credentialConfigured(entry, account);
    },
    estimateCost: (provider, request) => {
      const entry = config.providers[provider];
      if (!entry) return undefined;
      const cost = costOf(entry);
      return { unit: cost.unit, estimate: cost.estimate(request) };
    },
    unitOf: (provider) => {
      const entry = config.providers[provider];
      return entry ? costOf(entry).unit : undefined;
    },
  };
}

/**
 * Opens the store and the Temporal client for `config`. With `lazyTemporal` the connection to
 * Temporal is made on its first use (`Connection.lazy`), so commands that read only the store
 * never wait for, or fail on, an unreachable Temporal; otherwise it is made now and a failure
 * throws `cannot reach Temporal at <address>: …`. `connectTimeoutMs` (default 10000) bounds the
 * connection check (`Connection.ensureConnected`, which a lazy connection runs when asked).
 * Throws when encryption is on and its keys are missing.
 */
export async function openRuntime(
  config: Config,
  opts: { lazyTemporal?: boolean; connectTimeoutMs?: number } = {},
): Promise<Runtime> {
  const dataConverter = dataConverterFor(config.codec);
  const store = await openStore(config.storeUrl, { metrics: storeMetrics });
  let connection: Connection;
  try {
    const options = { ...temporalConnectionOptions(config), connectTimeout: opts.connectTimeoutMs ?? 10_000 };
    connection = opts.lazyTemporal ? Connection.lazy(options) : await Connection.connect(options);
  } catch (e) {
    await store.close();
    throw new Error(`cannot reach Temporal at ${config.temporal.address}: ${(e as Error).message}`);
  }
  // Payload encryption (when `codec.enabled`) and trace propagation, the same as the worker's.
  const temporal = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter,
    interceptors: { workflow: workflowClientInterceptors() },
  });
  const client = new ScrapeClient({ temporal, store, ...clientOptionsFor(config) });
  return {
    config,
    store,
    connection,
    client,
    async close() {
      await connection.close();
      await store.close();
    },
  };
}
