/**
 * The codec server: lets an authorised operator's Web UI (or `temporal … --codec-endpoint`) read
 * encrypted payloads. Contract (Temporal's remote codec, as the Web UI and the CLI call it): `POST
 * <endpoint>/decode` and `POST <endpoint>/encode` with `{"payloads": [{"metadata": {k: base64},
 * "data": base64}]}` (proto3 JSON of `temporal.api.common.v1.Payloads`), header `X-Namespace`;
 * the answer has the same shape. Our endpoint is `<base>/codec`.
 *
 * Authentication, either:
 * - `Authorization: Bearer <token>` (`codec.server.tokenEnv`), for the CLI and scripts;
 * - a session cookie set by the login page `GET /codec/login` (the operator enters the same token
 *   once); the Web UI sends it with `codec.includeCredentials: true` (the Web UI can pass a bearer
 *   token only from an OIDC login). The cookie is `HttpOnly`, `SameSite=Lax`, `Path=/codec`, 8 h.
 * CORS: only the configured Web UI origins, with credentials; preflights need no authentication.
 * Bodies must be JSON (so that a cross-site form cannot post without a CORS preflight).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import fastifyCors from '@fastify/cors';
import fastifyFormbody from '@fastify/formbody';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { EncryptionCodec } from './codec.js';
import type { CodecConfig } from './config.js';
import { keyringFromEnv } from './keys.js';

/** Name of the session cookie. */
export const CODEC_SESSION_COOKIE = 'scrape_codec_session';
const SESSION_MAX_AGE_S = 8 * 3600;

const PayloadJson = z.object({ metadata: z.record(z.string(), z.string()).optional(), data: z.string().optional() });
const PayloadsBody = z.object({ payloads: z.array(PayloadJson).max(10_000) });
const ProtoPayload = temporal.api.common.v1.Payload;

/** Options of {@link buildCodecServer}. */
export interface CodecServerOptions {
  codec: PayloadCodec;
  /** The operators' token (compared in constant time). */
  token: string;
  /** Allowed Web UI origins (exact). */
  corsOrigins: readonly string[];
  secureCookie?: boolean;
  /** Fastify logger: false (default), true (JSON lines on stdout) or a stream. */
  logger?: boolean | { stream: NodeJS.WritableStream };
}

function sessionValue(token: string): string {
  return createHmac('sha256', token).update('scrape-orchestrator codec session v1').digest('base64url');
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function toPayloads(body: z.infer<typeof PayloadsBody>): Payload[] {
  return body.payloads.map((p) => ProtoPayload.fromObject(p) as unknown as Payload);
}

function fromPayloads(payloads: Payload[]): { payloads: { metadata?: Record<string, string>; data?: string }[] } {
  return {
    payloads: payloads.map(
      (p) =>
        ProtoPayload.toObject(ProtoPayload.fromObject(p as never), { bytes: String }) as {
          metadata?: Record<string, string>;
          data?: string;
        },
    ),
  };
}

const LOGIN_PAGE = (
  message: string,
) => `<!doctype html><html><head><meta charset="utf-8"><title>Codec server sign-in</title></head>
<body style="font-family:sans-serif;max-width:30em;margin:4em auto">
<h1>scrape-orchestrator codec server</h1><p>${message}</p>
<form method="post" action="/codec/login"><label>Operator token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button></form>
<p>Once signed in, the Temporal Web UI on this site shows decoded inputs, results and details.</p></body></html>`;

/**
 * Builds the codec server (not listening). Throws when `token` is shorter than 16 characters.
 */
export async function buildCodecServer(opts: CodecServerOptions): Promise<FastifyInstance> {
  if (opts.token.length < 16) throw new Error('the codec server token must be at least 16 characters');
  const session = sessionValue(opts.token);
  const app = Fastify({
    logger:
      opts.logger === undefined || opts.logger === false
        ? false
        : {
            level: 'info',
            ...(opts.logger === true ? {} : { stream: opts.logger.stream }),
            redact: {
              paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
              censor: '[REDACTED]',
            },
          },
    bodyLimit: 32 * 1024 * 1024,
  });
  await app.register(fastifyCors, {
    origin: [...opts.corsOrigins],
    credentials: true,
    methods: ['POST', 'GET', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'X-Namespace', 'Authorization', 'Authorization-Extras'],
    maxAge: 600,
  });
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody);

  const authorised = (req: FastifyRequest): boolean => {
    const h = req.headers.authorization;
    if (h?.startsWith('Bearer ') && sameSecret(h.slice(7).trim(), opts.token)) return true;
    const c = req.cookies[CODEC_SESSION_COOKIE];
    return c !== undefined && sameSecret(c, session);
  };

  for (const op of ['encode', 'decode'] as const) {
    app.post(`/codec/${op}`, async (req, reply) => {
      if (!authorised(req))
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="codec"')
          .send({ message: 'sign in at /codec/login or send Authorization: Bearer <token>' });
      if (!String(req.headers['content-type'] ?? '').startsWith('application/json'))
        return reply.code(415).send({ message: 'send application/json' });
      const parsed = PayloadsBody.safeParse(req.body);
      if (!parsed.success)
        return reply.code(400).send({
          message: `expected {"payloads": [{"metadata": {…}, "data": "…"}]}: ${z.prettifyError(parsed.error)}`,
        });
      try {
        const payloads = toPayloads(parsed.data);
        return fromPayloads(op === 'encode' ? await opts.codec.encode(payloads) : await opts.codec.decode(payloads));
      } catch (e) {
        return reply.code(400).send({ message: (e as Error).message });
      }
    });
  }

  app.get('/codec/login', async (_req, reply) =>
    reply.type('text/html').send(LOGIN_PAGE('Enter the operator token to read encrypted payloads.')),
  );
  app.post('/codec/login', async (req, reply) => {
    const token = (req.body as { token?: unknown } | undefined)?.token;
    if (typeof token !== 'string' || !sameSecret(token, opts.token))
      return reply.code(401).type('text/html').send(LOGIN_PAGE('Wrong token.'));
    reply.setCookie(CODEC_SESSION_COOKIE, session, {
      path: '/codec',
      httpOnly: true,
      sameSite: 'lax',
      secure: opts.secureCookie ?? false,
      maxAge: SESSION_MAX_AGE_S,
    });
    return reply
      .type('text/html')
      .send('<!doctype html><p>Signed in: the Web UI now shows decoded payloads for 8 hours.</p>');
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  return app;
}

/** A listening codec server. */
export interface RunningCodecServer {
  app: FastifyInstance;
  /** Base URL, e.g. `http://127.0.0.1:8089`; the Web UI's codec endpoint is `${url}/codec`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the codec server of `config` with keys and token from `env`.
 * @throws Error when the keys or the token are missing or invalid, or the port is taken.
 */
export async function startCodecServer(
  config: CodecConfig,
  opts: {
    env?: NodeJS.ProcessEnv;
    host?: string;
    port?: number;
    corsOrigins?: string[];
    logger?: CodecServerOptions['logger'];
  } = {},
): Promise<RunningCodecServer> {
  const env = opts.env ?? process.env;
  const token = env[config.server.tokenEnv];
  if (!token) throw new Error(`the codec server needs an operator token in ${config.server.tokenEnv}`);
  const app = await buildCodecServer({
    codec: new EncryptionCodec(keyringFromEnv(env, config.keysEnv, config.currentKeyEnv)),
    token,
    corsOrigins: opts.corsOrigins ?? config.server.corsOrigins,
    secureCookie: config.server.secureCookie,
    logger: opts.logger,
  });
  await app.listen({ host: opts.host ?? config.server.host, port: opts.port ?? config.server.port });
  const a = app.server.address() as { address: string; port: number };
  return { app, url: `http://${a.address}:${a.port}`, close: () => app.close() };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const { findConfigFile } = await import('../runtime.js');
  const { loadConfigFile } = await import('../config.js');
  const { watchShutdownSignals } = await import('../lib/shutdown.js');
  const config = loadConfigFile(findConfigFile(process.argv[2] === '--config' ? process.argv[3] : undefined));
  // Listening for the signals before the server starts: a signal that arrives as soon as the
  // "codec server on" line is out (a supervisor's, a test's) is a stop, never a kill.
  const shutdown = watchShutdownSignals({ name: 'codec server' });
  const server = await startCodecServer(config.codec, { logger: true }).catch((e: Error) => {
    console.error(`codec server: ${e.message}`);
    process.exit(1);
  });
  console.error(`codec server on ${server.url}/codec (sign in at ${server.url}/codec/login)`);
  await shutdown.received;
  await server.close();
  shutdown.stopped();
}
