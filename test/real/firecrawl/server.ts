/**
 * Runs the built Firecrawl (see `build.ts`) the way `shared/firecrawl/README.md` did: Debian's
 * `redis-server` on a free loopback port without persistence, then two processes from the built
 * copy, `node dist/src/index.js` (the API) and `node dist/src/services/queue-worker.js` (the scrape
 * workers), configured by environment (the README's `.env` values) plus the loopback switch of the
 * test-only patch. Authentication is off: any bearer key is accepted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../../src/lib/ports.js';
import { answers, startServerProcess, type ServerProcess } from '../processes.js';
import { LOOPBACK_SWITCH, type FirecrawlBuild } from './build.js';

/** A running Firecrawl. */
export interface FirecrawlServer {
  /** The API's base URL (`http://127.0.0.1:<port>`). */
  url: string;
  redisUrl: string;
  /** Stops and starts the API and the queue worker again on the same ports (Redis, and so every crawl's state, stays). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts Redis on a free loopback port, no persistence. */
async function startRedis(dir: string, env: NodeJS.ProcessEnv): Promise<{ url: string; proc: ServerProcess }> {
  const port = await freePort('127.0.0.1');
  const url = `redis://127.0.0.1:${port}`;
  const proc = await startServerProcess({
    name: 'redis-server',
    command: 'redis-server',
    args: ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    cwd: dir,
    env,
    logFile: path.join(dir, 'redis.log'),
    ready: async () => {
      const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        await r.connect();
        return (await r.ping()) === 'PONG';
      } finally {
        r.disconnect();
      }
    },
    readyTimeoutMs: 30_000,
  });
  return { url, proc };
}

/**
 * Starts Redis, the API and the queue worker; `runDir` receives their logs.
 *
 * @throws Error naming the process that did not start, with its log's tail.
 */
export async function startFirecrawl(build: FirecrawlBuild, runDir: string): Promise<FirecrawlServer> {
  fs.mkdirSync(runDir, { recursive: true });
  const redis = await startRedis(runDir, build.env);
  const port = await freePort('127.0.0.1');
  const workerPort = await freePort('127.0.0.1', [port]);
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...build.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    WORKER_PORT: String(workerPort),
    ENV: 'local',
    USE_DB_AUTHENTICATION: 'false',
    REDIS_URL: redis.url,
    REDIS_RATE_LIMIT_URL: redis.url,
    NUM_WORKERS_PER_QUEUE: '8',
    BULL_AUTH_KEY: 'real-server-suite',
    // Firecrawl's workers take no job while the machine's CPU (or RAM) use is at or above these
    // fractions; a shared test machine is often fully busy, so above 1: always take jobs.
    MAX_CPU: '2.0',
    MAX_RAM: '2.0',
    LOGGING_LEVEL: 'INFO',
    [LOOPBACK_SWITCH]: 'true',
  };
  let api: ServerProcess | undefined;
  let worker: ServerProcess | undefined;
  const start = async () => {
    const started = await Promise.allSettled([
      startServerProcess({
        name: 'firecrawl-api',
        command: process.execPath,
        args: ['dist/src/index.js'],
        cwd: build.apiDir,
        env,
        logFile: path.join(runDir, 'api.log'),
        ready: () => answers(`${url}/`),
      }),
      startServerProcess({
        name: 'firecrawl-worker',
        command: process.execPath,
        args: ['dist/src/services/queue-worker.js'],
        cwd: build.apiDir,
        env,
        logFile: path.join(runDir, 'worker.log'),
        ready: () => answers(`http://127.0.0.1:${workerPort}/liveness`),
      }),
    ]);
    [api, worker] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  const stopBoth = async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    api = worker = undefined;
  };
  try {
    await start();
  } catch (e) {
    await stopBoth();
    await redis.proc.stop();
    throw e;
  }
  return {
    url,
    redisUrl: redis.url,
    async restart() {
      await stopBoth();
      await start();
    },
    async stop() {
      await stopBoth();
      await redis.proc.stop();
    },
  };
}
