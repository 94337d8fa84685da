/**
 * The Temporal cluster a program uses: the one at `TEMPORAL_ADDRESS` when it is set (checked to
 * answer and given our search attributes), else a dev server started by `devServer.ts`.
 */
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { z } from 'zod';
import { connectionOptionsFromEnv } from '../../src/client/connection.js';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';
import { DevServerOptionsSchema, startDevServer, type DevServer } from './devServer.js';
import { stderrLogger, type LineLogger } from './process.js';
import { ensureSearchAttributes, SearchAttributeMapSchema, type SearchAttributeTypeName } from '../../src/namespace.js';

/**
 * Options of {@link connectOrStartTemporal}.
 *
 * - `env`: where to read `TEMPORAL_*` from (default `process.env`).
 * - `namespace`: overrides `TEMPORAL_NAMESPACE` (default `default`).
 * - `searchAttributes`: attributes to register (default `SEARCH_ATTRIBUTES` of
 *   `src/workflows/searchAttributes.ts`).
 * - `devServer`: options for {@link startDevServer} when no `TEMPORAL_ADDRESS` is set.
 * - `connectTimeoutMs`: connect timeout for an external server (default 10 000 ms).
 * - `logger`: one line per event (default: stderr).
 */
export const ConnectOrStartOptionsSchema = z
  .object({
    env: z.record(z.string(), z.string().optional()).optional(),
    namespace: z.string().min(1).optional(),
    searchAttributes: SearchAttributeMapSchema.optional(),
    devServer: DevServerOptionsSchema.omit({ namespace: true, searchAttributes: true, logger: true })
      .partial()
      .optional(),
    connectTimeoutMs: z.number().int().positive().default(10_000),
    logger: z.custom<LineLogger>((v) => typeof v === 'function', 'logger must be a function').optional(),
  })
  .strict();

/** Input type of {@link ConnectOrStartOptionsSchema}. */
export type ConnectOrStartOptions = z.input<typeof ConnectOrStartOptionsSchema>;

/** A Temporal cluster to use: an external one (`TEMPORAL_ADDRESS`) or a dev server we started. */
export interface TemporalTarget {
  /** Frontend gRPC address, `host:port`. */
  address: string;
  /** Namespace to use. */
  namespace: string;
  /** Web UI URL: the dev server's, or `TEMPORAL_UI_URL` for an external cluster if set. */
  uiUrl?: string;
  /** True when `TEMPORAL_ADDRESS` pointed at an existing cluster (nothing was started). */
  external: boolean;
  /** Options for `Connection.connect` (address, TLS, API key) that reach this cluster. */
  connectionOptions: ConnectionOptions;
  /** The dev server, when one was started. */
  devServer?: DevServer;
  /** Stops the dev server if we started one; a no-op for an external cluster. Never throws. */
  stop(): Promise<void>;
}

/**
 * Uses the cluster at `TEMPORAL_ADDRESS` if set (namespace `TEMPORAL_NAMESPACE`, default `default`;
 * TLS from `TEMPORAL_TLS_CERT` + `TEMPORAL_TLS_KEY` — file paths or PEM text — and optionally
 * `TEMPORAL_TLS_CA`, `TEMPORAL_TLS_SERVER_NAME`, `TEMPORAL_TLS=true|false`; the CLI's names
 * `TEMPORAL_TLS_CLIENT_CERT_PATH`/`_DATA`, `TEMPORAL_TLS_CLIENT_KEY_PATH`/`_DATA`,
 * `TEMPORAL_TLS_SERVER_CA_CERT_PATH`/`_DATA` are accepted too; `TEMPORAL_API_KEY`, which implies TLS)
 * and registers the missing search attributes there; otherwise obtains the CLI and starts a dev
 * server with them.
 *
 * @throws Error when the external cluster cannot be reached, the namespace does not exist, or the
 *   search attributes cannot be registered; when the TLS env is incomplete (cert without key); or
 *   whatever {@link startDevServer} throws.
 */
export async function connectOrStartTemporal(options: ConnectOrStartOptions = {}): Promise<TemporalTarget> {
  const opts = ConnectOrStartOptionsSchema.parse(options);
  const env: NodeJS.ProcessEnv = opts.env ?? process.env;
  const log = opts.logger ?? stderrLogger;
  const namespace = opts.namespace ?? (env.TEMPORAL_NAMESPACE || 'default');
  const searchAttributes: Record<string, SearchAttributeTypeName> = opts.searchAttributes ?? SEARCH_ATTRIBUTES;

  if (env.TEMPORAL_ADDRESS) {
    const connectionOptions = connectionOptionsFromEnv(env);
    log(
      `temporal: using existing cluster ${connectionOptions.address} (namespace ${namespace}${connectionOptions.tls ? ', TLS' : ''}${connectionOptions.apiKey ? ', API key' : ''})`,
    );
    let conn: Connection;
    try {
      conn = await Connection.connect({ ...connectionOptions, connectTimeout: opts.connectTimeoutMs });
    } catch (err) {
      throw new Error(`cannot reach Temporal at TEMPORAL_ADDRESS=${env.TEMPORAL_ADDRESS}: ${(err as Error).message}`);
    }
    try {
      try {
        await conn.workflowService.describeNamespace({ namespace });
      } catch (err) {
        throw new Error(
          `namespace ${namespace} is not usable on ${connectionOptions.address}: ${(err as Error).message}`,
        );
      }
      await ensureSearchAttributes(conn, namespace, searchAttributes, { logger: log });
    } finally {
      await conn.close().catch(() => undefined);
    }
    return {
      address: connectionOptions.address!,
      namespace,
      uiUrl: env.TEMPORAL_UI_URL || undefined,
      external: true,
      connectionOptions,
      stop: async () => undefined,
    };
  }

  const server = await startDevServer({ ...opts.devServer, namespace, searchAttributes, logger: log });
  return {
    address: server.address,
    namespace,
    uiUrl: server.uiUrl,
    external: false,
    connectionOptions: { address: server.address },
    devServer: server,
    stop: () => server.stop(),
  };
}
