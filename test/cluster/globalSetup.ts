/**
 * Global setup of `npm run test:cluster`: starts the production topology once (free ports, a
 * throw-away data directory): PostgreSQL, the Temporal server as separate frontend, matching,
 * worker and two history processes, the Web UI and the codec server, with payload encryption keys
 * made for the run. The first run on a machine builds the server and UI binaries (cached).
 * Test files read it with `inject('temporal')` (the same key as the dev-server suite, so the
 * shared stack helpers work unchanged) and `inject('cluster')`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startCluster, type Cluster } from '../../tools/cluster/cluster.js';
import { CodecConfigSchema } from '../../src/codec/config.js';
import { newKeyEntry } from '../../src/codec/keys.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporal: { address: string; namespace: string; dbDir: string };
    cluster: {
      /** PostgreSQL of the cluster (superuser URL without a database name). */
      postgresUrl: string;
      uiUrl: string;
      codecUrl: string;
      /** `SCRAPE_CODEC_KEYS` of the run: the old key second, to test decryption after rotation. */
      codecKeys: string;
      codecToken: string;
      /** PIDs of the server processes by name (`history-1`, …). */
      pids: Record<string, number>;
      dataDir: string;
      metricsPorts: Record<string, number>;
      moduleLogs: string;
    };
  }
}

let cluster: Cluster | undefined;
let controlTimer: NodeJS.Timeout | undefined;

export async function setup(project: TestProject): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-cluster-'));
  fs.chmodSync(dataDir, 0o755); // PostgreSQL runs as the postgres OS user under it
  const codecKeys = `${newKeyEntry('k-test-current')},${newKeyEntry('k-test-old')}`;
  const codecToken = `codec-token-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const t0 = Date.now();
  cluster = await startCluster({
    dataDir,
    ports: 'free',
    ephemeral: true,
    codec: {
      config: CodecConfigSchema.parse({ enabled: true }),
      env: { ...process.env, SCRAPE_CODEC_KEYS: codecKeys, SCRAPE_CODEC_TOKEN: codecToken },
    },
    log: (l) => process.stderr.write(`[cluster] ${l}\n`),
  });
  process.stderr.write(`[cluster] ready in ${Date.now() - t0} ms at ${cluster.address}\n`);
  const pids: Record<string, number> = {};
  for (const n of cluster.processes.names()) pids[n] = cluster.processes.get(n)!.pid;
  project.provide('temporal', { address: cluster.address, namespace: cluster.namespace, dbDir: dataDir });
  project.provide('cluster', {
    postgresUrl: `postgres://${cluster.postgres.user}@${cluster.postgres.host}:${cluster.postgres.port}`,
    uiUrl: cluster.uiUrl!,
    codecUrl: cluster.codecUrl!,
    codecKeys,
    codecToken,
    pids,
    dataDir,
    metricsPorts: Object.fromEntries(cluster.topology.services.map((s) => [s.name, s.metricsPort])),
    moduleLogs: path.join(dataDir, 'logs'),
  });
  // Test files ask for server-process kills through a control file (they run in other processes).
  watchControl(dataDir);
}

/**
 * Test files run in forked processes; they ask the setup process (the parent of the server
 * processes) to SIGKILL or restart one through `<dataDir>/control/<n>.json` requests, answered by
 * `<n>.done`.
 */
function watchControl(dataDir: string): void {
  const dir = path.join(dataDir, 'control');
  fs.mkdirSync(dir, { recursive: true });
  controlTimer = setInterval(() => {
    if (!fs.existsSync(dir)) return;
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.json'))) {
      const file = path.join(dir, f);
      const req = JSON.parse(fs.readFileSync(file, 'utf8')) as { action: 'kill' | 'restart'; name: string };
      fs.rmSync(file);
      const act = req.action === 'kill' ? cluster!.kill(req.name) : cluster!.restart(req.name);
      void act.then(
        () =>
          fs.writeFileSync(
            file.replace(/\.json$/, '.done'),
            JSON.stringify({ ok: true, pid: cluster!.processes.get(req.name)?.pid ?? null }),
          ),
        (e: Error) =>
          fs.writeFileSync(file.replace(/\.json$/, '.done'), JSON.stringify({ ok: false, error: e.message })),
      );
    }
  }, 100);
  controlTimer.unref();
}

export async function teardown(): Promise<void> {
  clearInterval(controlTimer);
  await cluster?.stop();
}
