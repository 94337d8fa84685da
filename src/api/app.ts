/**
 * The HTTP API for backend services in any language, and the provider webhook receiver.
 *
 * Endpoints (see the OpenAPI document at `GET /openapi.json` for every schema, status and header):
 * - `POST /v1/scrapes` (`Idempotency-Key`): `202` + the job for a new key, `200` + the same job for
 *   a repeat of the same body, `422` for the key with another body;
 * - `GET /v1/scrapes/:id`: the job (state, provider status, times, progress; `Retry-After` while
 *   it runs); `GET /v1/scrapes/:id/result`: `200`, `409` not ready (with the state), `410` expired
 *   (with the evidence that it ran); `POST /v1/scrapes/:id/cancel`: `202` with the observed outcome
 *   (or `requested` and the status link), `200` when already final; `GET /v1/scrapes`: the
 *   caller's jobs, paged;
 * - `GET /v1/scrapes/:id/documents?offset&limit`: the documents of a multi-document result, paged;
 * - `POST /v1/webhooks/:provider` (signed) and `POST /v1/webhooks/:provider/:token` (per-job
 *   callback URL of providers that do not sign): provider events (see `webhooks.ts`);
 * - `GET /openapi.json`, `GET /healthz`, `GET /problems/:slug`.
 *
 * Every `/v1/scrapes` request needs `Authorization: Bearer <key>` (see `auth.ts`); every job
 * operation is scoped to the key's account through {@link ScrapeClient} (another account's job
 * is a `404` identical to a missing one). Errors are `application/problem+json` (`problems.ts`).
 * Limits: per-account rate limit (`429` + `Retry-After`), body size (`413`), JSON only (`415`),
 * strict schemas (`400` for unknown fields). The logger redacts `Authorization`, cookies and
 * signature headers.
 */
import { randomUUID } from 'node:crypto';
import fastifyRateLimit from '@fastify/rate-limit';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { IdempotencyConflictError, type ScrapeClient } from '../client/index.js';
import { decodeCursor, encodeCursor } from '../client/ids.js';
import type { Config } from '../config.js';
import { fingerprint } from '../lib/hash.js';
import { recordWebhookDelivery, setKnownProviders } from '../observability/metrics.js';
import { traceRequests } from '../observability/tracing.js';
import type { Store } from '../store/index.js';
import { getIdempotentRequest, rememberIdempotentRequest } from '../store/apiIdempotency.js';
import { ApiKeyring, type ApiKeyEntry } from './auth.js';
import { reusedKey, sendProblem, toProblem } from './errorMapping.js';
import { acceptStrictJson } from './jsonBody.js';
import { ApiProblem, PROBLEM_CONTENT_TYPE, PROBLEM_TYPES, ProblemSchema, problemType, type ProblemSlug } from './problems.js';
import {
  CancelBodySchema,
  CancelResponseSchema,
  createScrapeBodySchema,
  CreateScrapeHeadersSchema,
  DocumentsQuerySchema,
  HealthSchema,
  JobIdParamsSchema,
  ListQuerySchema,
  ProblemSlugParamsSchema,
  ProblemTypeSchema,
  ProviderParamsSchema,
  ResultDocumentsSchema,
  ResultSchema,
  ScrapeListSchema,
  ScrapeSchema,
  WebhookAckSchema,
  WebhookTokenParamsSchema,
  fromApiCursor,
  jobPath,
  pollAfterSeconds,
  toCancelOut,
  toDocumentsOut,
  toResultOut,
  toApiCursor,
  toScrapeOut,
} from './schemas.js';
import { requestLogger } from './requestLog.js';
import { receiveWebhook, webhookSecret, receivesWebhooks } from './webhooks.js';

/** Who may call a route: an API key's account, anyone (docs, health), or a provider (webhooks). */
export type RouteAuth = 'account' | 'public' | 'webhook';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account of the request's valid API key, or null. */
    account: string | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route (default `account`). */
    auth?: RouteAuth;
    /** Response headers to document in OpenAPI, by status code. */
    docHeaders?: Record<string, Record<string, { description: string; type: 'string' | 'integer' }>>;
  }
}

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

const RETRY = { description: 'Seconds to wait before asking again.', type: 'integer' as const };
const problemResponses = (...slugs: ProblemSlug[]) => {
  const out: Record<number, { description: string; content: Record<string, { schema: typeof ProblemSchema }> }> = {};
  for (const slug of slugs) {
    const t = PROBLEM_TYPES[slug];
    const prev = out[t.status];
    const line = `\`${problemType(slug)}\`: ${t.description}`;
    out[t.status] = { description: prev ? `${prev.description}\n\n${line}` : line, content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } } };
  }
  return out;
};
const json = <T extends z.ZodType>(description: string, schema: T) => ({ description, content: { 'application/json': { schema } } });

/**
 * Builds the API (not listening; call `listen`, or use `startApi` in `main.ts`). Throws when a
 * webhook secret named in the configuration is not set in the environment.
 */
export async function buildApi(opts: BuildApiOptions): Promise<FastifyInstance> {
  const { client, store, config } = opts;
  const env = opts.env ?? process.env;
  const keyring = opts.keys instanceof ApiKeyring ? opts.keys : new ApiKeyring(opts.keys);
  for (const name of Object.keys(config.providers)) if (receivesWebhooks(config, name)) webhookSecret(config, name, env); // fail fast on a missing secret

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
  app.decorateRequest('account', null);

  acceptStrictJson(app);

  app.setErrorHandler((error, request, reply) => sendProblem(request, reply, toProblem(error, request)));
  app.setNotFoundHandler((request, reply) => sendProblem(request, reply, new ApiProblem('route-not-found', `no route ${request.method} ${request.url.split('?')[0]}`)));

  // A request that matches no route is answered before anything reads its body: `405` with
  // `Allow` when the path exists with other methods (RFC 9110 §15.5.6), else `404`.
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(`^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`);
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
      throw new ApiProblem('method-not-allowed', `${req.method} is not allowed on this path; allowed: ${allow}`, {}, { allow });
    }
    throw new ApiProblem('route-not-found', `no route ${req.method} ${pathOnly}`);
  });

  // ---- authentication and rate limits (in this order, before the body is read) ---------------
  app.addHook('onRequest', async (req) => {
    const auth = req.routeOptions.config.auth ?? 'account';
    if (auth === 'account') req.account = keyring.authenticate(req.headers.authorization)?.account ?? null;
  });
  await app.register(fastifyRateLimit, {
    global: false,
    errorResponseBuilder: (_req, ctx) => new ApiProblem('rate-limited', `rate limit of ${ctx.max} requests exceeded; retry in ${ctx.after}`, {}, {}),
  });
  const limits = config.api.rateLimit;
  const limitOf = (req: FastifyRequest) => {
    const auth = req.routeOptions.config.auth ?? 'account';
    if (auth === 'webhook') return limits.webhooks;
    if (req.account) return limits.accounts[req.account] ?? limits.default;
    return limits.unauthenticated;
  };
  app.addHook(
    'onRequest',
    app.rateLimit({
      keyGenerator: (req) => {
        const auth = req.routeOptions.config.auth ?? 'account';
        if (auth === 'webhook') return `webhook:${(req.params as { provider?: string }).provider ?? ''}:${req.ip}`; // never the token
        return req.account ? `account:${req.account}` : `ip:${req.ip}`;
      },
      max: (req) => limitOf(req).max,
      timeWindow: (req) => limitOf(req).timeWindowMs,
      allowList: (req) => req.routeOptions.url === '/healthz',
    }),
  );
  app.addHook('onRequest', async (req) => {
    const auth = req.routeOptions.config.auth ?? 'account';
    if (auth === 'account' && req.routeOptions.url !== undefined && !req.account) {
      throw new ApiProblem('unauthorized', 'send Authorization: Bearer <api key>; the key is missing, malformed or unknown', {}, { 'www-authenticate': 'Bearer realm="scrape-orchestrator"' });
    }
  });

  // ---- OpenAPI ---------------------------------------------------------------------------------
  const baseTransform = createJsonSchemaTransform({ skipList: ['/openapi.json'] });
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'scrape-orchestrator HTTP API',
        version: '1.0.0',
        description: API_DESCRIPTION,
      },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key from the key file (see README, "HTTP API").' } } },
      security: [{ apiKey: [] }],
      tags: [
        { name: 'scrapes', description: 'Start, read, cancel and list scrapes of your account.' },
        { name: 'webhooks', description: 'Provider callbacks (not for API clients).' },
        { name: 'meta', description: 'Health, this document, problem types.' },
      ],
    },
    transform: (doc) => {
      const out = baseTransform(doc);
      const headers = doc.route.config?.docHeaders;
      const response = (out.schema as { response?: Record<string, Record<string, unknown>> }).response;
      if (headers && response) for (const [code, h] of Object.entries(headers)) if (response[code]) response[code].headers = h;
      // Headers every route's error answers carry.
      if (response?.['429']) response['429'].headers = { 'Retry-After': { ...RETRY, description: 'Seconds until the caller’s window resets.' } };
      if (response?.['503']) response['503'].headers = { 'Retry-After': RETRY };
      if (response?.['401'] && (doc.route.config?.auth ?? 'account') === 'account') response['401'].headers = { 'WWW-Authenticate': { description: '`Bearer realm="scrape-orchestrator"`.', type: 'string' } };
      return out;
    },
    transformObject: createJsonSchemaTransformObject({}),
  });

  // ---- routes ------------------------------------------------------------------------------------
  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());

  app.get(
    '/healthz',
    {
      config: { auth: 'public' },
      schema: { tags: ['meta'], summary: 'Health: can the API reach Temporal and the store?', security: [], response: { 200: json('Both reachable.', HealthSchema), 503: json('One is unreachable.', HealthSchema) } },
    },
    async (_req, reply) => {
      const h = await client.health();
      const ok = h.temporal === 'ok' && h.store === 'ok';
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', ...h });
    },
  );

  app.get(
    '/problems/:slug',
    {
      config: { auth: 'public' },
      schema: { tags: ['meta'], summary: 'Describes a problem type (the `type` of an error answer).', security: [], params: ProblemSlugParamsSchema, response: { 200: json('The problem type.', ProblemTypeSchema), ...problemResponses('invalid-request', 'route-not-found', 'rate-limited') } },
    },
    async (req) => {
      const t = (PROBLEM_TYPES as Record<string, { status: number; title: string; description: string }>)[req.params.slug];
      if (!t) throw new ApiProblem('route-not-found', `no problem type ${req.params.slug}`);
      return { type: problemType(req.params.slug as ProblemSlug), ...t };
    },
  );

  app.post(
    '/v1/scrapes',
    {
      config: {
        docHeaders: {
          202: { Location: { description: 'The job (`status_url`).', type: 'string' }, 'Retry-After': RETRY },
          200: { Location: { description: 'The job (`status_url`).', type: 'string' }, 'Idempotent-Replayed': { description: '`true`: this key was seen before; this is the same job.', type: 'string' } },
        },
      },
      schema: {
        tags: ['scrapes'],
        summary: 'Start a scrape (returns at once).',
        description:
          'Starts one scrape for the caller’s account and answers at once. **Repeats**: a request with an `Idempotency-Key` already used by this account answers `200` with the same job when the body is the same (canonical JSON, defaults applied), and `422` `idempotency-key-reused` when the body differs; a new key answers `202`. So a client that lost the answer (timeout, reset) repeats the request with the same key and gets its job, never a second one. **Polling**: poll `status_url` no more often than `Retry-After` / `poll_after_s` (seconds); the workflow does the provider polling, so reading the job is cheap.',
        headers: CreateScrapeHeadersSchema,
        body: createScrapeBodySchema(Object.keys(config.providers)),
        response: {
          202: json('Accepted: a new job for this key. `Location` and `status_url` name it.', ScrapeSchema),
          200: json('A repeat of an earlier request with the same key and body: the same job, in its current state.', ScrapeSchema),
          ...problemResponses('invalid-request', 'unauthorized', 'payload-too-large', 'unsupported-media-type', 'idempotency-key-reused', 'rate-limited', 'service-unavailable'),
        },
      },
    },
    async (req, reply) => {
      const account = req.account!;
      const body = req.body;
      const provider = body.provider ?? config.defaultProvider;
      if (!config.providers[provider]) {
        const message = `unknown provider "${provider}"; configured: ${Object.keys(config.providers).join(', ') || 'none'}`;
        throw new ApiProblem('invalid-request', message, { errors: [{ in: 'body', path: 'provider', message }] });
      }
      const headerKey = req.headers['idempotency-key'];
      const bodyHash = fingerprint({ ...body, provider });
      if (headerKey) {
        const seen = await getIdempotentRequest(store, account, headerKey);
        if (seen && seen.body_hash !== bodyHash) throw reusedKey(seen.job_id);
      }
      let ref;
      try {
        ref = await client.startScrape({ account, key: headerKey, url: body.url, provider, format: body.format, options: body.options, row: body.row, batchId: body.batch_id, policy: body.policy });
      } catch (e) {
        if (e instanceof IdempotencyConflictError) throw reusedKey(String(e.details.jobId));
        throw e;
      }
      const remembered = await rememberIdempotentRequest(store, { account, key: ref.key, bodyHash, jobId: ref.jobId });
      if (!remembered.inserted && headerKey && remembered.row.body_hash !== bodyHash) throw reusedKey(ref.jobId);
      const out = toScrapeOut(await client.getScrape(account, ref.jobId));
      reply.header('location', out.status_url);
      if (remembered.inserted) {
        reply.code(202);
        if (out.poll_after_s !== null) reply.header('retry-after', String(out.poll_after_s));
      } else {
        reply.code(200).header('idempotent-replayed', 'true');
      }
      return out;
    },
  );

  app.get(
    '/v1/scrapes/:id',
    {
      config: { docHeaders: { 200: { 'Retry-After': { ...RETRY, description: 'While the job runs: seconds before polling again (same as `poll_after_s`).' } } } },
      schema: {
        tags: ['scrapes'],
        summary: 'Read a job: state, provider status, times, progress.',
        description: 'While the job is not final the answer carries `Retry-After` (seconds; 2 s in the first minute, 10 s to 10 min, then 30 s). Another account’s job answers `404` exactly like a missing one.',
        params: JobIdParamsSchema,
        response: { 200: json('The job.', ScrapeSchema), ...problemResponses('invalid-request', 'unauthorized', 'not-found', 'rate-limited', 'service-unavailable') },
      },
    },
    async (req, reply) => {
      const out = toScrapeOut(await client.getScrape(req.account!, req.params.id));
      if (out.poll_after_s !== null) reply.header('retry-after', String(out.poll_after_s));
      return out;
    },
  );

  app.get(
    '/v1/scrapes/:id/result',
    {
      config: { docHeaders: { 409: { 'Retry-After': { ...RETRY, description: 'While the job runs: seconds before asking again.' } } } },
      schema: {
        tags: ['scrapes'],
        summary: 'Read the result of a completed job.',
        description: '`200` with the page; `409` `result-not-ready` with `state` (and `Retry-After` while it runs); `410` `result-expired` when retention purged it, with the evidence that the job ran.',
        params: JobIdParamsSchema,
        response: { 200: json('The extracted page.', ResultSchema), ...problemResponses('invalid-request', 'unauthorized', 'not-found', 'result-not-ready', 'result-expired', 'rate-limited', 'service-unavailable') },
      },
    },
    async (req) => toResultOut(await client.getResult(req.account!, req.params.id)),
  );

  app.get(
    '/v1/scrapes/:id/documents',
    {
      config: { docHeaders: { 409: { 'Retry-After': { ...RETRY, description: 'While the job runs: seconds before asking again.' } } } },
      schema: {
        tags: ['scrapes'],
        summary: 'Read the documents of a multi-document result (crawl pages, dataset items, batch entries), paged.',
        description: '`200` with one page (`offset`, `limit`; `next_offset` until the last page; `total` is 0 for a single-page result, whose page is at `result_url`); `409` `result-not-ready`; `410` `result-expired`. Another account’s job answers `404` like a missing one.',
        params: JobIdParamsSchema,
        querystring: DocumentsQuerySchema,
        response: { 200: json('One page of documents.', ResultDocumentsSchema), ...problemResponses('invalid-request', 'unauthorized', 'not-found', 'result-not-ready', 'result-expired', 'rate-limited', 'service-unavailable') },
      },
    },
    async (req) => toDocumentsOut(await client.getResultDocuments(req.account!, req.params.id, { offset: req.query.offset, limit: req.query.limit })),
  );

  app.post(
    '/v1/scrapes/:id/cancel',
    {
      schema: {
        tags: ['scrapes'],
        summary: 'Cancel a job; answers with the outcome observed at the provider.',
        description: `Cancellation is a request, not an erasure: the answer says what the provider did (\`cancel.outcome\`: cancelled, completed first, failed, or cancel_unconfirmed) and which effects remain. The API waits up to ${config.api.cancelWaitMs} ms for that outcome; if it takes longer the answer is \`202\` with \`result: requested\` and \`status_url\` to follow. A finished job answers \`200\` \`already_final\`; repeating a cancel is harmless.`,
        params: JobIdParamsSchema,
        body: CancelBodySchema,
        response: {
          202: json('Cancel observed (`result: observed`) or under way (`result: requested`).', CancelResponseSchema),
          200: json('The job was already final; nothing changed.', CancelResponseSchema),
          ...problemResponses('invalid-request', 'unauthorized', 'not-found', 'unsupported-media-type', 'rate-limited', 'service-unavailable'),
        },
      },
    },
    async (req, reply) => {
      const account = req.account!;
      const id = req.params.id;
      const base = { reason: req.body?.reason ?? 'requested through the HTTP API', requestedBy: `api:${account}` };
      const waitMs = config.api.cancelWaitMs;
      let result;
      if (waitMs === 0) {
        result = await client.cancelScrape(account, id, { ...base, wait: false });
      } else {
        // Past waitMs the client records the request as a signal and answers `requested`.
        result = await client.cancelScrape(account, id, { ...base, wait: true, timeoutMs: waitMs });
      }
      reply.code(result.kind === 'already_final' || result.kind === 'not_running' ? 200 : 202);
      return toCancelOut(id, result);
    },
  );

  app.get(
    '/v1/scrapes',
    {
      schema: {
        tags: ['scrapes'],
        summary: "List the caller's jobs, newest first.",
        querystring: ListQuerySchema,
        response: { 200: json('One page of jobs.', ScrapeListSchema), ...problemResponses('invalid-request', 'unauthorized', 'rate-limited', 'service-unavailable') },
      },
    },
    async (req) => {
      const q = req.query;
      // The API's cursor is `<ms>.<base64url id>` (every string of that shape is a position); the client's is its own.
      const cursor = q.cursor ? encodeCursor(fromApiCursor(q.cursor)) : undefined;
      const page = await client.listPage(req.account!, { states: q.state ? q.state.split(',') : undefined, batchId: q.batch_id, limit: q.limit, cursor });
      const now = Date.now();
      return { jobs: page.jobs.map((j) => toScrapeOut(j, now)), next_cursor: page.nextCursor ? toApiCursor(decodeCursor(page.nextCursor)) : null };
    },
  );

  // Webhooks: their own plugin so that the body stays raw bytes (the signature covers them).
  await app.register(async (hooks) => {
    hooks.removeAllContentTypeParsers();
    hooks.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    hooks.withTypeProvider<ZodTypeProvider>().post(
      '/v1/webhooks/:provider',
      {
        config: { auth: 'webhook' },
        schema: {
          tags: ['webhooks'],
          summary: 'Receive a provider event (a hint that wakes the job).',
          description:
            'For providers that sign their webhooks. The signature over the raw body is verified with the provider kind’s scheme (reference provider: `X-Sim-Signature: sha256=<hex HMAC-SHA256 of the raw body>`; Firecrawl: `X-Firecrawl-Signature`), the event deduplicated by event ID, matched to the job by task ID or client reference and turned into a `wake` signal: the job checks the provider at once and reads the result from it (the payload is never trusted for the result). Unmatched, unverifiable and invalid events are kept in quarantine. Providers that do not sign must use their per-job callback URL (`401 invalid-webhook-token` here).',
          security: [],
          params: ProviderParamsSchema,
          response: {
            200: json('Handled (`woken`, `duplicate`, `job_final`, `not_running`).', WebhookAckSchema),
            202: json('Accepted but not applied: kept in quarantine (`quarantined`).', WebhookAckSchema),
            ...problemResponses('invalid-request', 'invalid-signature', 'invalid-webhook-token', 'unknown-provider', 'payload-too-large', 'unsupported-media-type', 'rate-limited', 'service-unavailable'),
          },
        },
      },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        let answer;
        try {
          answer = await receiveWebhook({ client, store, config, env }, req.params.provider, raw, req.headers);
        } catch (e) {
          recordWebhookDelivery(req.params.provider, e instanceof ApiProblem ? e.slug.replace(/-/g, '_') : 'error');
          throw e;
        }
        recordWebhookDelivery(req.params.provider, answer.body.outcome);
        return reply.code(answer.status).send(answer.body);
      },
    );
    hooks.withTypeProvider<ZodTypeProvider>().post(
      '/v1/webhooks/:provider/:token',
      {
        config: { auth: 'webhook' },
        schema: {
          tags: ['webhooks'],
          summary: 'Receive an event of a provider that does not sign its webhooks (per-job callback URL).',
          description:
            'For providers only. Each job is submitted with its own callback URL ending in an unguessable token (HMAC-SHA256 of the job under the configured secret). The event is parsed, matched to the job by task ID or client reference, and the token checked against that job in constant time (missing or wrong: `401`, kept in quarantine by hash and size); an event that names no known job answers the same `401`, so the answer never tells whether a job exists. Then it is deduplicated by event ID and turned into a `wake` signal, exactly like a signed event. Unmatched and invalid events are kept in quarantine.',
          security: [],
          params: WebhookTokenParamsSchema,
          response: {
            200: json('Handled (`woken`, `duplicate`, `job_final`, `not_running`).', WebhookAckSchema),
            202: json('Accepted but not applied: kept in quarantine (`quarantined`).', WebhookAckSchema),
            ...problemResponses('invalid-request', 'invalid-webhook-token', 'unknown-provider', 'payload-too-large', 'unsupported-media-type', 'rate-limited', 'service-unavailable'),
          },
        },
      },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const answer = await receiveWebhook({ client, store, config, env }, req.params.provider, raw, req.headers, req.params.token);
        return reply.code(answer.status).send(answer.body);
      },
    );
  });

  return app;
}

const API_DESCRIPTION = `Durable scraping jobs for backend services in any language. Each job is a Temporal workflow that submits to a provider once (idempotently), polls it politely, writes the result once and can be cancelled with an observed outcome.

**Authentication**: \`Authorization: Bearer <api key>\`; a key acts as one account. Every job operation is scoped to that account; another account's job answers \`404\` exactly like a missing one.

**Idempotency**: send \`Idempotency-Key\` with \`POST /v1/scrapes\`. First use: \`202\`; a repeat with the same body: \`200\` with the same job (header \`Idempotent-Replayed: true\`); the same key with another body: \`422\`.

**Polling**: poll \`status_url\` no faster than \`Retry-After\`; read \`result_url\` once \`state\` is \`completed\` (\`409\` before, \`410\` after retention).

**Errors**: \`application/problem+json\` (RFC 9457) with a stable \`type\` (\`/problems/<slug>\`, described at that path); no stack traces, no secrets.

**Limits**: per-account rate limit (\`429\` + \`Retry-After\`), request bodies of at most the configured size (\`413\`), \`application/json\` only (\`415\`), unknown fields rejected (\`400\`).`;
