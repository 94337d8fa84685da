/**
 * The HTTP API on top of a real test stack (`stack.ts`): the API listens on loopback, backed by
 * the stack's Temporal client and store, with API keys for a few accounts. With `webhooks`, the
 * reference provider entry is configured to send signed webhooks to the API (the in-process
 * worker sends them with each submit) and jobs start with `webhooks: true`.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../../src/api/app.js';
import { hashApiKey } from '../../src/api/auth.js';
import { ScrapeClient } from '../../src/client/index.js';
import type { ApiConfig } from '../../src/config.js';
import { clientOptionsFor } from '../../src/runtime.js';
import { keepLog, recordResponse, recordSecrets } from './evidence.js';
import { startStack, type Stack, type StackOptions } from './stack.js';

/** API keys of the test accounts (loopback only). */
export const API_KEYS = {
  acme: 'sk_scrape_test_acme_0123456789abcdef0123456789',
  globex: 'sk_scrape_test_globex_0123456789abcdef012345678',
  badin: 'sk_scrape_test_badin_0123456789abcdef0123456789',
  limited: 'sk_scrape_test_limited_0123456789abcdef01234567',
  lister: 'sk_scrape_test_lister_0123456789abcdef012345678',
} as const;

export interface ApiStack {
  stack: Stack;
  app: FastifyInstance;
  /** Base URL of the API, e.g. `http://127.0.0.1:PORT`. */
  url: string;
  /** The client the API uses (with `webhookProviders` when webhooks are on). */
  client: ScrapeClient;
  /** The webhook HMAC secret (when webhooks are on). */
  webhookSecret?: string;
  /** Everything the API logged (JSON lines). */
  logs(): string;
  /** `fetch` against the API as `account` (JSON body when `json` is given). */
  call(
    account: keyof typeof API_KEYS | null,
    method: string,
    path: string,
    init?: { json?: unknown; headers?: Record<string, string>; body?: string },
  ): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts a stack, then the API on it. */
export async function startApiStack(
  opts: StackOptions & { webhooks?: boolean; api?: Partial<ApiConfig> } = {},
): Promise<ApiStack> {
  const stack = await startStack({ ...opts, worker: false });
  let webhookSecret: string | undefined;
  const secretEnv = `TEST_WEBHOOK_SECRET_${randomBytes(4).toString('hex')}`;
  if (opts.webhooks) {
    webhookSecret = randomBytes(24).toString('hex');
    process.env[secretEnv] = webhookSecret;
    // Placeholder URL until the API listens; the worker (started below) reads the same object.
    stack.config.providers.reference!.webhook = { url: 'http://127.0.0.1:9/placeholder', secretEnv };
  }
  recordSecrets('api', [...Object.values(API_KEYS), webhookSecret]);
  Object.assign(stack.config.api, opts.api ?? {});
  const client = new ScrapeClient({
    temporal: stack.temporal,
    store: stack.store,
    ...clientOptionsFor(stack.config),
    defaultProvider: 'reference',
  });
  const logStream = new PassThrough();
  let logText = '';
  logStream.on('data', (b: Buffer) => (logText += b.toString()));
  const app = await buildApi({
    client,
    store: stack.store,
    config: stack.config,
    keys: Object.entries(API_KEYS).map(([account, key]) => ({
      account,
      sha256: hashApiKey(key),
      name: `${account}-test`,
    })),
    logger: { stream: logStream },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address() as { port: number };
  const url = `http://127.0.0.1:${addr.port}`;
  if (opts.webhooks) stack.config.providers.reference!.webhook!.url = `${url}/v1/webhooks/reference`;
  await stack.startWorker();
  return {
    stack,
    app,
    url,
    client,
    webhookSecret,
    logs: () => logText,
    async call(account, method, path, init = {}) {
      const headers: Record<string, string> = { ...(init.headers ?? {}) };
      if (account) headers.authorization = `Bearer ${API_KEYS[account]}`;
      let body: string | undefined = init.body;
      if (init.json !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = JSON.stringify(init.json);
      }
      // Every answer is kept for the secrets scan (test/helpers/evidence.ts).
      return recordResponse(`${method} ${path}`, await fetch(`${url}${path}`, { method, headers, body }));
    },
    async stop() {
      await app.close();
      keepLog('api', logText);
      await stack.stop();
      delete process.env[secretEnv];
    },
  };
}
