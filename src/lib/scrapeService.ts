/**
 * What a backend service imports: the entry of the client package (`@scrape-orchestrator/client`,
 * built from this file and what it imports: `packages/client`) and the full package's main entry
 * (`import … from 'scrape-orchestrator'`). It has the typed client and its errors
 * (`scrape-orchestrator/client` has the same without the helper below), the result store it reads,
 * and {@link connectScrapeClient}, which wires both to a Temporal cluster in one call, so that a
 * service needs no Temporal package of its own. Embedding a worker is `scrape-orchestrator/worker`.
 */
import { Client, Connection } from '@temporalio/client';
import { connectionOptionsFromEnv } from '../client/connection.js';
import { ScrapeClient } from '../client/index.js';
import { openStore, type Store } from '../store/index.js';

export * from '../client/index.js';
export { openStore, type Store } from '../store/index.js';

/** Options of {@link connectScrapeClient}; every field has an environment default. */
export interface ConnectScrapeClientOptions {
  /**
   * Temporal frontend, `host:port` (default `$TEMPORAL_ADDRESS`). TLS and an API key come from the
   * environment, as for the worker: `TEMPORAL_TLS_CERT`/`TEMPORAL_TLS_KEY`, `TEMPORAL_TLS_CA`,
   * `TEMPORAL_API_KEY` (see docs/operations.md, "Pointing it at a real Temporal cluster").
   */
  address?: string;
  /** Temporal namespace (default `$TEMPORAL_NAMESPACE`, else `default`). */
  namespace?: string;
  /** The result store the workers write: `sqlite:<file>` or `postgres://…` (default `$SCRAPE_STORE_URL`). */
  storeUrl?: string;
  /** The task queue the workers poll (default `$SCRAPE_TASK_QUEUE`, else `scrapes`). */
  taskQueue?: string;
  /** Provider of a request that names none (default `$SCRAPE_DEFAULT_PROVIDER`, else `reference`). */
  defaultProvider?: string;
  /** The provider names the workers are configured with; a request naming another is refused before anything starts (default: not checked here). */
  providers?: string[];
  /** Where the defaults are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** An open {@link ScrapeClient} with what it holds; `close()` releases both. */
export interface ScrapeService {
  client: ScrapeClient;
  store: Store;
  close(): Promise<void>;
}

/**
 * Connects to Temporal and opens the result store, and returns the typed client over both.
 * @throws Error when no address or store URL is given or set, when Temporal cannot be reached
 *   (10 s connect timeout) or when the store cannot be opened.
 */
export async function connectScrapeClient(opts: ConnectScrapeClientOptions = {}): Promise<ScrapeService> {
  const env = opts.env ?? process.env;
  const address = opts.address ?? env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('connectScrapeClient: no Temporal address (pass `address` or set TEMPORAL_ADDRESS)');
  const storeUrl = opts.storeUrl ?? env.SCRAPE_STORE_URL;
  if (!storeUrl)
    throw new Error(
      'connectScrapeClient: no result store (pass `storeUrl` or set SCRAPE_STORE_URL, e.g. sqlite:/var/lib/scrapes.db)',
    );
  const store = await openStore(storeUrl);
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...connectionOptionsFromEnv({ ...env, TEMPORAL_ADDRESS: address }),
      connectTimeout: '10s',
    });
  } catch (e) {
    await store.close();
    throw new Error(`connectScrapeClient: cannot reach Temporal at ${address}: ${(e as Error).message}`);
  }
  const temporal = new Client({ connection, namespace: opts.namespace ?? (env.TEMPORAL_NAMESPACE || 'default') });
  const client = new ScrapeClient({
    temporal,
    store,
    taskQueue: opts.taskQueue ?? (env.SCRAPE_TASK_QUEUE || 'scrapes'),
    defaultProvider: opts.defaultProvider ?? (env.SCRAPE_DEFAULT_PROVIDER || 'reference'),
    ...(opts.providers ? { providers: opts.providers } : {}),
  });
  return {
    client,
    store,
    async close() {
      await connection.close();
      await store.close();
    },
  };
}
