/**
 * The HTTP API for backend services in any language, and the provider webhook receiver: the
 * Fastify instance, its error handling, and the registration of its parts (access, the OpenAPI
 * document, the routes: one file per resource; docs/layout.md maps them).
 *
 * Every error, whoever throws it (router, body parser, hook, handler), is answered as
 * `application/problem+json` (`errorMapping.ts`, `problems.ts`). Bodies are strict JSON only
 * (`jsonBody.ts`: `415` otherwise) of at most `api.bodyLimitBytes` (`413`); schemas are strict
 * (`400` for unknown fields). The request log redacts credentials (`requestLog.ts`).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ScrapeClient } from '../client/index.js';
import type { Config } from '../config.js';
import { setKnownProviders } from '../observability/metrics.js';
import { traceRequests } from '../observability/tracing.js';
import type { Store } from '../store/index.js';
import { registerAccess } from './access.js';
import { ApiKeyring, type ApiKeyEntry } from './auth.js';
import { sendProblem, toProblem } from './errorMapping.js';
import { acceptStrictJson } from './jsonBody.js';
import { registerOpenApi } from './openapi.js';
import { ApiProblem } from './problems.js';
import { requestLogger } from './requestLog.js';
import { budgetRoutes } from './routes/budgets.js';
import { metaRoutes } from './routes/meta.js';
import { scrapeRoutes } from './routes/scrapes.js';
import { webhookRoutes } from './routes/webhooks.js';
import { receivesWebhooks, webhookSecret } from './webhooks.js';

export type { RouteAuth } from './access.js';

/** Options of {@link buildApi}. */
export interface BuildApiOptions {
  client: ScrapeClient;
  store: Store;
  config: Config;
  /** API keys (see `loadApiKeys`), or a keyring that the caller reloads (`watchApiKeys`). */
  keys: readonly ApiKeyEntry[] | ApiKeyring;
  /**
   * Fastify logger: `false` (default), `true` (JSON to stdout), or a destination stream. Request
   * logs show method, URL, status and the headers with `Authorization`, cookies, signature and
   * key-like headers redacted.
   */
  logger?: boolean | { stream: NodeJS.WritableStream; level?: string };
  /** Environment for webhook secrets (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Builds the API (not listening; call `listen`, or use `startApi` in `main.ts`). Throws when a
 * webhook secret named in the configuration is not set in the environment.
 */
export async function buildApi(opts: BuildApiOptions): Promise<FastifyInstance> {
  const { client, store, config } = opts;
  const env = opts.env ?? process.env;
  for (const name of Object.keys(config.providers))
    if (receivesWebhooks(config, name)) webhookSecret(config, name, env); // fail fast on a missing secret

  const app = Fastify({
    logger: requestLogger(opts.logger),
    bodyLimit: config.api.bodyLimitBytes,
    genReqId: () => randomUUID(),
    forceCloseConnections: true,
    routerOptions: { maxParamLength: 400 },
    // Router-level errors (bad URL encoding, over-long path segment) as problem+json too.
    frameworkErrors: (error, request, reply) => sendProblem(request, reply, toProblem(error, request)),
  }).withTypeProvider<ZodTypeProvider>();
  setKnownProviders(Object.keys(config.providers)); // metric labels: configured names only
  traceRequests(app); // a server span per request when tracing is installed (src/observability/tracing.ts)
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  acceptStrictJson(app);
  app.setErrorHandler((error, request, reply) => sendProblem(request, reply, toProblem(error, request)));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      request,
      reply,
      new ApiProblem('route-not-found', `no route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
  refuseUnroutedRequests(app);

  // Before any route: both hook into every route registered after them.
  await registerAccess(app, {
    keyring: opts.keys instanceof ApiKeyring ? opts.keys : new ApiKeyring(opts.keys),
    limits: config.api.rateLimit,
    providers: Object.keys(config.providers),
  });
  await registerOpenApi(app);

  await app.register(metaRoutes, { client });
  await app.register(scrapeRoutes, { client, store, config });
  await app.register(budgetRoutes, { client, config });
  await app.register(webhookRoutes, { client, store, config, env });
  return app;
}

/**
 * Answers a request that matches no route before anything reads its body or its key: `405` with
 * `Allow` when the path exists with other methods (RFC 9110 §15.5.6), else `404`. Register it
 * before the routes (it learns their paths as they are added) and before the access hooks.
 */
function refuseUnroutedRequests(app: FastifyInstance): void {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(
      `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`,
    );
    let entry = routes.find((r) => r.pattern.source === pattern.source);
    if (!entry) routes.push((entry = { pattern, methods: new Set() }));
    for (const m of [route.method].flat()) entry.methods.add(m);
  });
  app.addHook('onRequest', async (req) => {
    if (req.routeOptions.url !== undefined) return;
    const pathOnly = req.url.split('?')[0]!;
    const allowed = new Set(routes.filter((r) => r.pattern.test(pathOnly)).flatMap((r) => [...r.methods]));
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(', ');
      throw new ApiProblem(
        'method-not-allowed',
        `${req.method} is not allowed on this path; allowed: ${allow}`,
        {},
        { allow },
      );
    }
    throw new ApiProblem('route-not-found', `no route ${req.method} ${pathOnly}`);
  });
}
