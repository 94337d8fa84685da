/**
 * How every part reaches Temporal (client, worker, API, CLI, demo): connection options from the
 * environment (address, TLS, API key). Production wiring (`runtime.ts`, `worker.ts`) imports this
 * module, never the dev-server spawner in `tools/devserver`.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';

/**
 * Builds `Connection.connect` options from the environment: `TEMPORAL_ADDRESS` (required),
 * TLS from `TEMPORAL_TLS_CERT` + `TEMPORAL_TLS_KEY` (file paths or PEM text) and optionally
 * `TEMPORAL_TLS_CA`, `TEMPORAL_TLS_SERVER_NAME`, `TEMPORAL_TLS=true|false` (the Temporal CLI's names
 * `TEMPORAL_TLS_CLIENT_CERT_PATH`/`_DATA`, `TEMPORAL_TLS_CLIENT_KEY_PATH`/`_DATA`,
 * `TEMPORAL_TLS_SERVER_CA_CERT_PATH`/`_DATA` are accepted too), and `TEMPORAL_API_KEY` (Temporal
 * Cloud). Reads certificate files synchronously.
 *
 * @throws Error when only one of client cert / key is set, or a file cannot be read.
 */
export function connectionOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ConnectionOptions {
  const address = env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set');
  const pem = (label: string, ...names: string[]): Buffer | undefined => {
    for (const n of names) {
      const v = env[n];
      if (!v) continue;
      if (v.trimStart().startsWith('-----BEGIN') || n.endsWith('_DATA')) return Buffer.from(v);
      try {
        return readFileSync(v);
      } catch (err) {
        throw new Error(`cannot read ${label} from ${n}=${v}: ${(err as Error).message}`);
      }
    }
    return undefined;
  };
  const crt = pem(
    'TLS client certificate',
    'TEMPORAL_TLS_CERT',
    'TEMPORAL_TLS_CLIENT_CERT_PATH',
    'TEMPORAL_TLS_CLIENT_CERT_DATA',
  );
  const key = pem('TLS client key', 'TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_CLIENT_KEY_DATA');
  const ca = pem(
    'TLS server CA',
    'TEMPORAL_TLS_CA',
    'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  );
  if (!!crt !== !!key)
    throw new Error('TLS needs both a client certificate (TEMPORAL_TLS_CERT) and its key (TEMPORAL_TLS_KEY)');
  const serverName = env.TEMPORAL_TLS_SERVER_NAME || undefined;
  const tlsFlag = env.TEMPORAL_TLS?.toLowerCase();
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  let tls: ConnectionOptions['tls'];
  if (tlsFlag === 'false' || tlsFlag === '0') tls = false;
  else if (crt || ca || serverName) {
    tls = {
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(serverName ? { serverNameOverride: serverName } : {}),
    };
  } else if (tlsFlag === 'true' || tlsFlag === '1') tls = true;
  return { address, ...(tls !== undefined ? { tls } : {}), ...(apiKey ? { apiKey } : {}) };
}
