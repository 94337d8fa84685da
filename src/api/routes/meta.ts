/**
 * The routes anyone may call (`auth: 'public'`, outside every account): `GET /openapi.json` (the
 * document of `openapi.ts`), `GET /healthz` (can the API reach Temporal and the store: `200` or
 * `503`, never rate-limited) and `GET /problems/:slug` (the description of a problem type, the
 * `type` of every error answer).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ScrapeClient } from '../../client/index.js';
import { json, problemResponses } from '../openapi.js';
import { ApiProblem, PROBLEM_TYPES, problemType, type ProblemSlug } from '../problems.js';
import { HealthSchema, ProblemTypeSchema } from '../schemas.js';
import { ProblemSlugParamsSchema } from '../requestSchemas.js';

/** Registers the routes above; `client` answers the health check. */
export const metaRoutes: FastifyPluginAsyncZod<{ client: ScrapeClient }> = async (app, { client }) => {
  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());

  app.get(
    '/healthz',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['meta'],
        summary: 'Health: can the API reach Temporal and the store?',
        security: [],
        response: { 200: json('Both reachable.', HealthSchema), 503: json('One is unreachable.', HealthSchema) },
      },
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
      schema: {
        tags: ['meta'],
        summary: 'Describes a problem type (the `type` of an error answer).',
        security: [],
        params: ProblemSlugParamsSchema,
        response: {
          200: json('The problem type.', ProblemTypeSchema),
          ...problemResponses('invalid-request', 'route-not-found', 'rate-limited'),
        },
      },
    },
    async (req) => {
      const t = (PROBLEM_TYPES as Record<string, { status: number; title: string; description: string }>)[
        req.params.slug
      ];
      if (!t) throw new ApiProblem('route-not-found', `no problem type ${req.params.slug}`);
      return { type: problemType(req.params.slug as ProblemSlug), ...t };
    },
  );
};
