/**
 * Who may call the API, and how often: the access rules every request passes before its body is
 * read, in this order.
 *
 * 1. **Who the route is for** ({@link RouteAuth}, a route's `config.auth`, default `account`) and,
 *    for an account route, **which account** the `Authorization: Bearer <key>` header names (the
 *    keyring of `auth.ts`; a missing, malformed or unknown key gives no account). Both are derived
 *    once per request and kept on it (`request.auth`, `request.account`).
 * 2. **Rate limits** (`@fastify/rate-limit`, `api.rateLimit` of the configuration): an account's
 *    own limit per account (`accounts[<name>]`, else `default`); requests without a valid key per
 *    client IP (`unauthenticated`); webhook deliveries per (provider, client IP) (`webhooks`; the
 *    per-job token of a callback URL is never part of the key, and every name that is not a
 *    configured provider shares one bucket per IP, so made-up names neither multiply a sender's
 *    allowance nor crowd the limiter's table). `GET /healthz` is never limited.
 *    Over the limit: `429 rate-limited` with `Retry-After`.
 * 3. **Authentication**: an account route without a valid key answers `401 unauthorized` with
 *    `WWW-Authenticate: Bearer`. It comes after the rate limit so that guessing keys is limited too.
 */
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { ApiKeyring } from './auth.js';
import { ApiProblem } from './problems.js';

/** Who may call a route: an API key's account, anyone (docs, health), or a provider (webhooks). */
export type RouteAuth = 'account' | 'public' | 'webhook';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the matched route is for (its `config.auth`, default `account`); `public` before a route matches. */
    auth: RouteAuth;
    /** The account of the request's valid API key, or null (always null on `public` and `webhook` routes). */
    account: string | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route (default `account`). */
    auth?: RouteAuth;
  }
}

/** A rate limit: at most `max` requests per `timeWindowMs` milliseconds. */
type Limit = Config['api']['rateLimit']['default'];

/**
 * Adds the access rules above to `app` as `onRequest` hooks (authentication, rate limit, then the
 * `401`). Register it before any route. `limits` is the configuration's `api.rateLimit`;
 * `providers` the configured provider names (the webhook routes' `:provider`).
 */
export async function registerAccess(
  app: FastifyInstance,
  opts: { keyring: ApiKeyring; limits: Config['api']['rateLimit']; providers: readonly string[] },
): Promise<void> {
  const { keyring, limits } = opts;
  const providers = new Set(opts.providers);
  app.decorateRequest('auth', 'public');
  app.decorateRequest('account', null);

  app.addHook('onRequest', async (req) => {
    req.auth = req.routeOptions.config.auth ?? 'account';
    if (req.auth === 'account') req.account = keyring.authenticate(req.headers.authorization)?.account ?? null;
  });

  await app.register(fastifyRateLimit, {
    global: false,
    errorResponseBuilder: (_req, ctx) =>
      new ApiProblem('rate-limited', `rate limit of ${ctx.max} requests exceeded; retry in ${ctx.after}`, {}, {}),
  });
  const limitOf = (req: FastifyRequest): Limit => {
    if (req.auth === 'webhook') return limits.webhooks;
    if (req.account) return limits.accounts[req.account] ?? limits.default;
    return limits.unauthenticated;
  };
  app.addHook(
    'onRequest',
    app.rateLimit({
      keyGenerator: (req) => {
        if (req.auth === 'webhook') {
          const provider = (req.params as { provider?: string }).provider ?? '';
          return `webhook:${providers.has(provider) ? provider : '?'}:${req.ip}`; // never the token
        }
        return req.account ? `account:${req.account}` : `ip:${req.ip}`;
      },
      max: (req) => limitOf(req).max,
      timeWindow: (req) => limitOf(req).timeWindowMs,
      allowList: (req) => req.routeOptions.url === '/healthz',
    }),
  );

  app.addHook('onRequest', async (req) => {
    if (req.auth === 'account' && req.routeOptions.url !== undefined && !req.account) {
      throw new ApiProblem(
        'unauthorized',
        'send Authorization: Bearer <api key>; the key is missing, malformed or unknown',
        {},
        { 'www-authenticate': 'Bearer realm="scrape-orchestrator"' },
      );
    }
  });
}
