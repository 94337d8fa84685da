/**
 * The routes of the `scrapes` resource, for API key holders (`auth: 'account'`; every operation
 * is scoped to the key's account through {@link ScrapeClient}, and another account's job answers
 * the same `404` as a missing one). Each route's `summary` and `description` (the OpenAPI
 * document) say what it answers.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ScrapeClient } from '../../client/index.js';
import { decodeCursor, encodeCursor } from '../../client/ids.js';
import type { Config } from '../../config.js';
import type { Store } from '../../store/index.js';
import { startScrapeOnce } from '../idempotencyKey.js';
import { json, problemResponses, RETRY } from '../openapi.js';
import { ApiProblem } from '../problems.js';
import {
  CancelResponseSchema,
  ResultDocumentsSchema,
  ResultSchema,
  ScrapeListSchema,
  ScrapeSchema,
} from '../schemas.js';
import {
  CancelBodySchema,
  createScrapeBodySchema,
  CreateScrapeHeadersSchema,
  DocumentsQuerySchema,
  JobIdParamsSchema,
  ListQuerySchema,
  fromApiCursor,
  toApiCursor,
} from '../requestSchemas.js';
import { toCancelOut, toDocumentsOut, toResultOut, toScrapeOut } from '../views.js';

/** What the scrape routes need: the account-scoped client, the store (idempotency records) and the configuration (providers, cancel wait). */
export interface ScrapeRouteDeps {
  client: ScrapeClient;
  store: Store;
  config: Config;
}

/** The problems of the result and documents routes. */
const RESULT_PROBLEMS = [
  'invalid-request',
  'unauthorized',
  'not-found',
  'result-not-ready',
  'result-expired',
  'rate-limited',
  'service-unavailable',
] as const;

/** `Retry-After` of a `409 result-not-ready` while the job runs. */
const NOT_READY_HEADERS = {
  409: { 'Retry-After': { ...RETRY, description: 'While the job runs: seconds before asking again.' } },
};

/** Registers the routes. */
export const scrapeRoutes: FastifyPluginAsyncZod<ScrapeRouteDeps> = async (app, { client, store, config }) => {
  app.post(
    '/v1/scrapes',
    {
      config: {
        docHeaders: {
          202: { Location: { description: 'The job (`status_url`).', type: 'string' }, 'Retry-After': RETRY },
          200: {
            Location: { description: 'The job (`status_url`).', type: 'string' },
            'Idempotent-Replayed': {
              description: '`true`: this key was seen before; this is the same job.',
              type: 'string',
            },
          },
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
          200: json(
            'A repeat of an earlier request with the same key and body: the same job, in its current state.',
            ScrapeSchema,
          ),
          ...problemResponses(
            'invalid-request',
            'unauthorized',
            'payload-too-large',
            'unsupported-media-type',
            'idempotency-key-reused',
            'budget-exceeded',
            'rate-limited',
            'service-unavailable',
          ),
        },
      },
    },
    async (req, reply) => {
      const account = req.account!;
      const provider = req.body.provider ?? config.defaultProvider;
      if (!config.providers[provider]) {
        const message = `unknown provider "${provider}"; configured: ${Object.keys(config.providers).join(', ') || 'none'}`;
        throw new ApiProblem('invalid-request', message, { errors: [{ in: 'body', path: 'provider', message }] });
      }
      const started = await startScrapeOnce(
        { client, store },
        { account, idempotencyKey: req.headers['idempotency-key'], body: req.body, provider },
      );
      const out = toScrapeOut(await client.getScrape(account, started.jobId));
      reply.header('location', out.status_url);
      if (started.replayed) {
        reply.code(200).header('idempotent-replayed', 'true');
      } else {
        reply.code(202);
        if (out.poll_after_s !== null) reply.header('retry-after', String(out.poll_after_s));
      }
      return out;
    },
  );

  app.get(
    '/v1/scrapes/:id',
    {
      config: {
        docHeaders: {
          200: {
            'Retry-After': {
              ...RETRY,
              description: 'While the job runs: seconds before polling again (same as `poll_after_s`).',
            },
          },
        },
      },
      schema: {
        tags: ['scrapes'],
        summary: 'Read a job: state, provider status, times, progress.',
        description:
          'While the job is not final the answer carries `Retry-After` (seconds; 2 s in the first minute, 10 s to 10 min, then 30 s). Another account’s job answers `404` exactly like a missing one.',
        params: JobIdParamsSchema,
        response: {
          200: json('The job.', ScrapeSchema),
          ...problemResponses('invalid-request', 'unauthorized', 'not-found', 'rate-limited', 'service-unavailable'),
        },
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
      config: { docHeaders: NOT_READY_HEADERS },
      schema: {
        tags: ['scrapes'],
        summary: 'Read the result of a completed job.',
        description:
          '`200` with the page; `409` `result-not-ready` with `state` (and `Retry-After` while it runs); `410` `result-expired` when retention purged it, with the evidence that the job ran.',
        params: JobIdParamsSchema,
        response: {
          200: json('The extracted page.', ResultSchema),
          ...problemResponses(...RESULT_PROBLEMS),
        },
      },
    },
    async (req) => toResultOut(await client.getResult(req.account!, req.params.id)),
  );

  app.get(
    '/v1/scrapes/:id/documents',
    {
      config: { docHeaders: NOT_READY_HEADERS },
      schema: {
        tags: ['scrapes'],
        summary: 'Read the documents of a multi-document result (crawl pages, dataset items, batch entries), paged.',
        description:
          '`200` with one page (`offset`, `limit`; `next_offset` until the last page; `total` is 0 for a single-page result, whose page is at `result_url`); `409` `result-not-ready`; `410` `result-expired`. Another account’s job answers `404` like a missing one.',
        params: JobIdParamsSchema,
        querystring: DocumentsQuerySchema,
        response: {
          200: json('One page of documents.', ResultDocumentsSchema),
          ...problemResponses(...RESULT_PROBLEMS),
        },
      },
    },
    async (req) =>
      toDocumentsOut(
        await client.getResultDocuments(req.account!, req.params.id, {
          offset: req.query.offset,
          limit: req.query.limit,
        }),
      ),
  );

  app.post(
    '/v1/scrapes/:id/cancel',
    {
      schema: {
        tags: ['scrapes'],
        summary: 'Cancel a job; answers with the outcome observed at the provider.',
        description: `Cancellation is a request, not an erasure: the answer says what the provider did (\`cancel.outcome\`: cancelled, completed first, failed, or cancel_unconfirmed) and which effects remain. The API waits up to ${config.api.cancelWaitMs} ms for that outcome; if it takes longer the answer is \`202\` with \`result: requested\` and \`status_url\` to follow. A finished job answers \`200\` \`already_final\`; repeating a cancel is harmless. A final job whose task may still run (\`tracking_interrupted\`, or \`cancel_unconfirmed\` with no final answer from the provider) is cancelled in a new run, as a running one; \`409\` \`conflict\` while the run that made it final has not closed (nothing was sent).`,
        params: JobIdParamsSchema,
        body: CancelBodySchema,
        response: {
          202: json('Cancel observed (`result: observed`) or under way (`result: requested`).', CancelResponseSchema),
          200: json('The job was already final; nothing changed.', CancelResponseSchema),
          ...problemResponses(
            'invalid-request',
            'unauthorized',
            'not-found',
            'conflict',
            'unsupported-media-type',
            'rate-limited',
            'service-unavailable',
          ),
        },
      },
    },
    async (req, reply) => {
      const account = req.account!;
      const id = req.params.id;
      const base = { reason: req.body?.reason ?? 'requested through the HTTP API', requestedBy: `api:${account}` };
      const waitMs = config.api.cancelWaitMs;
      // Past waitMs the client records the request as a signal and answers `requested`.
      const result = await client.cancelScrape(
        account,
        id,
        waitMs === 0 ? { ...base, wait: false } : { ...base, wait: true, timeoutMs: waitMs },
      );
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
        response: {
          200: json('One page of jobs.', ScrapeListSchema),
          ...problemResponses('invalid-request', 'unauthorized', 'rate-limited', 'service-unavailable'),
        },
      },
    },
    async (req) => {
      const q = req.query;
      // The API's cursor is `<ms>.<base64url id>` (every string of that shape is a position); the client's is its own.
      const cursor = q.cursor ? encodeCursor(fromApiCursor(q.cursor)) : undefined;
      const page = await client.listPage(req.account!, {
        states: q.state ? q.state.split(',') : undefined,
        batchId: q.batch_id,
        limit: q.limit,
        cursor,
      });
      const now = Date.now();
      return {
        jobs: page.jobs.map((j) => toScrapeOut(j, now)),
        next_cursor: page.nextCursor ? toApiCursor(decodeCursor(page.nextCursor)) : null,
      };
    },
  );
};
