/**
 * The routes of provider webhook deliveries (`auth: 'webhook'`: no API key; each delivery is
 * verified by the receiver, `../webhooks.ts`): `POST /v1/webhooks/:provider` for providers that
 * sign their deliveries, and `POST /v1/webhooks/:provider/:token` (the per-job callback URL) for
 * those that do not. The answer is `200` (`woken`, `duplicate`, `job_final`, `not_running`),
 * `202` (`quarantined`), or a problem (`401` bad signature or token, `404` unknown provider).
 *
 * This plugin keeps the body as raw bytes (its own JSON parser, inside its own encapsulation
 * context): the signature covers the bytes as sent, not a re-serialisation.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { recordWebhookDelivery } from '../../observability/metrics.js';
import { json, problemResponses } from '../openapi.js';
import { ApiProblem } from '../problems.js';
import { WebhookAckSchema } from '../schemas.js';
import { ProviderParamsSchema, WebhookTokenParamsSchema } from '../requestSchemas.js';
import type { WebhookHeaders } from '../../providers/shared/webhook.js';
import { receiveWebhook, type WebhookDeps } from '../webhooks.js';

/** Registers the routes above; `deps` are the receiver's (client, store, configuration, environment for the secrets). */
export const webhookRoutes: FastifyPluginAsyncZod<WebhookDeps> = async (app, deps) => {
  /** Receives one delivery on either route and counts it by its outcome (or its refusal's slug). */
  const receiveCounted = async (provider: string, body: unknown, headers: WebhookHeaders, token?: string) => {
    const raw = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
    try {
      const answer = await receiveWebhook(deps, provider, raw, headers, token);
      recordWebhookDelivery(provider, answer.body.outcome);
      return answer;
    } catch (e) {
      recordWebhookDelivery(provider, e instanceof ApiProblem ? e.slug.replace(/-/g, '_') : 'error');
      throw e;
    }
  };
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.post(
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
          ...problemResponses(
            'invalid-request',
            'invalid-signature',
            'invalid-webhook-token',
            'unknown-provider',
            'payload-too-large',
            'unsupported-media-type',
            'rate-limited',
            'service-unavailable',
          ),
        },
      },
    },
    async (req, reply) => {
      const answer = await receiveCounted(req.params.provider, req.body, req.headers);
      return reply.code(answer.status).send(answer.body);
    },
  );

  app.post(
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
          ...problemResponses(
            'invalid-request',
            'invalid-webhook-token',
            'unknown-provider',
            'payload-too-large',
            'unsupported-media-type',
            'rate-limited',
            'service-unavailable',
          ),
        },
      },
    },
    async (req, reply) => {
      const answer = await receiveCounted(req.params.provider, req.body, req.headers, req.params.token);
      return reply.code(answer.status).send(answer.body);
    },
  );
};
