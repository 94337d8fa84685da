/**
 * The reference provider's admin routes, for tests and the demo: only with the header
 * `X-Sim-Admin: <adminToken>` (compared in constant time), else the same `404` as an unknown
 * route. `GET /_sim/stats`, `GET|POST|DELETE /_sim/faults`, `DELETE /_sim/faults/:id`,
 * `GET /_sim/jobs/:id`, `POST /_sim/jobs/:id/release`, `POST /_sim/reset`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, NOT_FOUND, outcome, send, validationError, zodIssues } from '../answers.js';
import type { FaultRegistry } from '../faults.js';
import type { JobManager } from '../jobs.js';
import { JobIdParamSchema } from '../pipeline.js';
import { FaultRuleSchema } from '../schemas.js';
import type { SimJobSnapshot, SimStats } from '../stats.js';

/** What the admin routes work with: the token, the fault rules, the jobs and the sim's own stats, job, release and reset. */
export interface AdminRouteDeps {
  /** The admin token; undefined: every admin route answers `404`. */
  adminToken: string | undefined;
  faults: FaultRegistry;
  jobs: JobManager;
  sim: {
    stats(): SimStats;
    getJob(jobId: string): SimJobSnapshot | undefined;
    release(jobId: string): boolean;
    reset(): void;
  };
}

function sameSecret(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

/** Adds the admin routes to `app`. */
export function registerAdminRoutes(app: FastifyInstance, deps: AdminRouteDeps): void {
  const { adminToken: token, faults, jobs, sim } = deps;
  const guard = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const given = req.headers['x-sim-admin'];
    if (token === undefined || typeof given !== 'string' || !sameSecret(given, token)) {
      await reply.code(404).send(errorBody('NOT_FOUND', 'route not found'));
    }
  };
  const jobParam = (req: FastifyRequest): string | undefined => {
    const p = JobIdParamSchema.safeParse(req.params);
    return p.success ? p.data.id : undefined;
  };

  app.get('/_sim/stats', { onRequest: guard }, async () => sim.stats());
  app.get('/_sim/faults', { onRequest: guard }, async () => ({ faults: faults.list() }));
  app.post('/_sim/faults', { onRequest: guard }, async (req, reply) => {
    const parsed = FaultRuleSchema.safeParse(req.body);
    if (!parsed.success) return send(reply, validationError('invalid fault rule', zodIssues(parsed.error)));
    return reply.code(200).send({ id: faults.add(parsed.data) });
  });
  app.delete('/_sim/faults', { onRequest: guard }, async () => {
    const removed = faults.list().length;
    faults.clear();
    return { removed };
  });
  app.delete('/_sim/faults/:id', { onRequest: guard }, async (req, reply) => {
    const id = jobParam(req);
    if (id === undefined || !faults.remove(id)) {
      return send(reply, outcome(404, errorBody('NOT_FOUND', 'fault rule not found')));
    }
    return { removed: 1 };
  });
  app.get('/_sim/jobs/:id', { onRequest: guard }, async (req, reply) => {
    const id = jobParam(req);
    const job = id === undefined ? undefined : sim.getJob(id);
    if (!job) return send(reply, NOT_FOUND());
    return job;
  });
  app.post('/_sim/jobs/:id/release', { onRequest: guard }, async (req, reply) => {
    const id = jobParam(req);
    if (id === undefined || !jobs.find(id)) return send(reply, NOT_FOUND());
    return { job_id: id, released: sim.release(id) };
  });
  app.post('/_sim/reset', { onRequest: guard }, async () => {
    sim.reset();
    return { reset: true };
  });
}
