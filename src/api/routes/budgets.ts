/**
 * The routes of the `budgets` resource and a job's cost, for API key holders (`auth: 'account'`;
 * every operation is scoped to the key's account; docs/budgets.md). Each route's `summary` and
 * `description` (the OpenAPI document) say what it answers.
 *
 * A change made here outlives a restart: the configuration no longer overrides it.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { BudgetUsage } from '../../model/budgets.js';
import type { ScrapeClient } from '../../client/index.js';
import { json, problemResponses } from '../openapi.js';
import {
  BudgetIdParamsSchema,
  BudgetRemovedSchema,
  BudgetListSchema,
  BudgetPolicySchema,
  BudgetSchema,
  JobCostSchema,
  createSetBudgetBodySchema,
} from '../budgetSchemas.js';
import { ApiProblem } from '../problems.js';
import { InvalidInputError } from '../../client/errors.js';
import type { Config } from '../../config.js';
import { JobIdParamsSchema } from '../requestSchemas.js';
import { costOut } from '../views.js';

/** A budget as the API shows it. */
function budgetOut(b: BudgetUsage) {
  return {
    id: b.id,
    provider: b.provider,
    unit: b.unit,
    period: b.period,
    amount: b.amount,
    period_key: b.periodKey,
    reserved: b.reserved,
    spent: b.spent,
    remaining: b.remaining,
    renews_at: b.renewsAt,
  };
}

const COMMON = ['invalid-request', 'unauthorized', 'rate-limited', 'service-unavailable'] as const;

/** Registers the routes. */
export const budgetRoutes: FastifyPluginAsyncZod<{ client: ScrapeClient; config: Config }> = async (
  app,
  { client, config },
) => {
  const policyOut = async (account: string) => {
    const p = await client.budgets.policy(account);
    return { on_exceeded: p.onExceeded, cancel_running: p.cancelRunning };
  };

  app.get(
    '/v1/budgets',
    {
      schema: {
        tags: ['budgets'],
        summary: 'Your account’s budgets, their standing in the current period, and your policy.',
        response: { 200: json('Budgets and policy.', BudgetListSchema), ...problemResponses(...COMMON) },
      },
    },
    async (req) => ({
      budgets: (await client.budgets.list(req.account!)).map(budgetOut),
      policy: await policyOut(req.account!),
    }),
  );

  app.put(
    '/v1/budgets',
    {
      schema: {
        tags: ['budgets'],
        summary: 'Set a budget (created, or its amount changed).',
        description:
          'A budget per provider (in its kind’s unit: Firecrawl credits, Apify USD, …) or across your providers of one unit, per `day`, `month` (UTC) or in `total`. Jobs held by a budget try again at once. Takes effect for the next submit of every worker; a job already running is never cancelled by it unless your policy says so.',
        body: createSetBudgetBodySchema(Object.keys(config.providers)),
        response: {
          200: json('The budget and its standing.', BudgetSchema),
          ...problemResponses(...COMMON, 'budget-unit'),
        },
      },
    },
    async (req) => {
      try {
        return budgetOut(await client.budgets.set(req.account!, req.body));
      } catch (e) {
        // A unit the provider does not count in (or none, across providers): valid JSON the deployment cannot take.
        const onUnit =
          e instanceof InvalidInputError &&
          ((e.details.issues ?? []) as { path?: unknown[] }[]).some((i) => i.path?.[0] === 'unit');
        if (onUnit)
          throw new ApiProblem('budget-unit', e.message, {
            provider: req.body.provider ?? null,
            unit: req.body.unit ?? null,
          });
        throw e;
      }
    },
  );

  app.put(
    '/v1/budget-policy',
    {
      schema: {
        tags: ['budgets'],
        summary: 'Set what happens to a job a budget cannot take, and to a running job that goes past one.',
        body: BudgetPolicySchema,
        response: { 200: json('The policy now.', BudgetPolicySchema), ...problemResponses(...COMMON) },
      },
    },
    async (req) => {
      await client.budgets.setPolicy(req.account!, {
        onExceeded: req.body.on_exceeded,
        cancelRunning: req.body.cancel_running,
      });
      return policyOut(req.account!);
    },
  );

  app.delete(
    '/v1/budgets/:id',
    {
      schema: {
        tags: ['budgets'],
        summary: 'Remove a budget (jobs it held try again at once).',
        params: BudgetIdParamsSchema,
        response: {
          200: json('Removed.', BudgetRemovedSchema),
          ...problemResponses(...COMMON, 'budget-not-found'),
        },
      },
    },
    async (req) => {
      await client.budgets.remove(req.account!, req.params.id);
      return { id: req.params.id, removed: true as const };
    },
  );

  app.get(
    '/v1/scrapes/:id/cost',
    {
      schema: {
        tags: ['scrapes'],
        summary:
          'What a job cost: at its provider (estimated, reserved, settled, in its unit) and in Temporal Actions.',
        description:
          'The Temporal Actions are counted from the workflow’s history as Temporal Cloud bills them (queries and heartbeats are not in history, hence not counted). Another account’s job answers `404` like a missing one.',
        params: JobIdParamsSchema,
        response: { 200: json('The job’s cost.', JobCostSchema), ...problemResponses(...COMMON, 'not-found') },
      },
    },
    async (req) => {
      const r = await client.budgets.jobCost(req.account!, req.params.id);
      return {
        job_id: r.jobId,
        provider: r.provider,
        cost: costOut(r.cost),
        temporal: r.temporal ? { actions: r.temporal.actions, by_kind: r.temporal.byKind } : null,
      };
    },
  );
};
