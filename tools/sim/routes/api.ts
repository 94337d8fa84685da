/**
 * The reference provider's API routes (each through the request pipeline of `../pipeline.ts`):
 * `POST /api/scrape`, `GET /api/jobs/:id`, `GET /api/jobs/:id/logs`, `GET /api/jobs/:id/tree`,
 * `DELETE /api/jobs/:id/cancel` and `GET /api/jobs` (the contract is in `../server.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  errorBody,
  NOT_FOUND,
  NOT_SUPPORTED,
  outcome,
  proxyErrorPage,
  retryAfter,
  validationError,
  zodIssues,
  type Outcome,
} from '../answers.js';
import type { FaultRegistry } from '../faults.js';
import { isActive, type JobRecord } from '../jobRecord.js';
import type { JobManager } from '../jobs.js';
import type { RequestPipeline } from '../pipeline.js';
import {
  IdempotencyKeySchema,
  ListQuerySchema,
  SubmitBodySchema,
  type FaultRule,
  type Profile,
  type SubmitResponse,
} from '../schemas.js';
import type { Counters } from '../stats.js';
import { iso } from '../util.js';

/** A remembered submit of (account, `Idempotency-Key`): the request it was for and the answer it got. */
export interface IdempotencyEntry {
  /** The canonical JSON of the submitted request (URL, format, client reference, timeout). */
  canonical: string;
  response: SubmitResponse;
  /** epoch ms */
  expiresAt: number;
}

/** What the API routes work with (the sim's own state, shared with it). */
export interface ApiRouteDeps {
  pipeline: RequestPipeline;
  jobs: JobManager;
  faults: FaultRegistry;
  counters: Counters;
  /** Account → its current profile. */
  profiles: ReadonlyMap<string, Profile>;
  /** The first API key of each account (what an `echoKey` profile copies into its answers). */
  accountKey: ReadonlyMap<string, string>;
  /** Remembered submits by `<account>\0<key>` (cleared by the sim's reset). */
  idempotency: Map<string, IdempotencyEntry>;
}

/** Adds the API routes to `app`. */
export function registerApiRoutes(app: FastifyInstance, deps: ApiRouteDeps): void {
  const { pipeline, jobs } = deps;
  const profileOf = (account: string): Profile => {
    const p = deps.profiles.get(account);
    if (!p) throw new Error(`unknown account "${account}"`);
    return p;
  };

  // POST /api/scrape
  app.post('/api/scrape', { ...pipeline.hooks('submit') }, async (req, reply) => {
    const rawBody = req.body as { url?: unknown } | undefined;
    const targetUrl =
      rawBody && typeof rawBody === 'object' && typeof rawBody.url === 'string' ? rawBody.url : undefined;
    return pipeline.run(req, reply, {
      targetUrl,
      core: (account, profile, _fault, headerRule) => submit(deps, req, account, profile, headerRule),
    });
  });

  // GET /api/jobs/:id
  app.get('/api/jobs/:id', { ...pipeline.hooks('status') }, async (req, reply) => {
    const job = pipeline.ownedJob(req);
    job?.statusRequestTimes.push(pipeline.receivedAt(req));
    return pipeline.run(req, reply, {
      targetUrl: job?.url,
      core: (account) => {
        const current = pipeline.ownedJob(req);
        if (!current || current.account !== account) return NOT_FOUND();
        return outcome(200, statusObject(deps, current, true));
      },
    });
  });

  // GET /api/jobs/:id/logs
  app.get('/api/jobs/:id/logs', { ...pipeline.hooks('logs') }, async (req, reply) => {
    const job = pipeline.ownedJob(req);
    return pipeline.run(req, reply, {
      targetUrl: job?.url,
      core: () => {
        const current = pipeline.ownedJob(req);
        if (!current) return NOT_FOUND();
        return outcome(200, { job_id: current.id, logs: current.logs.map((l) => ({ ...l })) });
      },
    });
  });

  // GET /api/jobs/:id/tree (a progress read the seeds name without its shape: this one is the sim's own)
  app.get('/api/jobs/:id/tree', { ...pipeline.hooks('logs') }, async (req, reply) => {
    const job = pipeline.ownedJob(req);
    return pipeline.run(req, reply, {
      targetUrl: job?.url,
      core: () => {
        const current = pipeline.ownedJob(req);
        if (!current) return NOT_FOUND();
        const node = {
          url: current.url,
          final_url: current.result?.final_url ?? null,
          status: current.status,
          pages_fetched: current.pagesFetched,
          children: [] as unknown[],
        };
        return outcome(200, { job_id: current.id, status: current.status, tree: node });
      },
    });
  });

  // DELETE /api/jobs/:id/cancel
  app.delete('/api/jobs/:id/cancel', { ...pipeline.hooks('cancel') }, async (req, reply) => {
    const job = pipeline.ownedJob(req);
    const profile = job ? deps.profiles.get(job.account) : undefined;
    if (job && profile?.cancel) job.cancelRequestTimes.push(pipeline.receivedAt(req));
    return pipeline.run(req, reply, {
      targetUrl: job?.url,
      unsupported: (p) => (p.cancel ? undefined : NOT_SUPPORTED('cancel')),
      core: (_account, _profile, fault) => {
        const current = pipeline.ownedJob(req);
        if (!current) return NOT_FOUND();
        if (!isActive(current.status)) {
          return outcome(
            409,
            errorBody('JOB_FINISHED', `job is already ${current.status}`, { status: current.status }),
          );
        }
        const effects = { progress: { pages_fetched: current.pagesFetched }, credits_used: current.creditsUsed };
        if (fault?.action === 'cancel_pending') {
          jobs.cancelLater(current, fault.delayMs ?? 1000);
          return outcome(202, { job_id: current.id, status: current.status, ...effects });
        }
        jobs.cancel(current);
        return outcome(200, { job_id: current.id, status: 'cancelled', ...effects });
      },
    });
  });

  // GET /api/jobs
  app.get('/api/jobs', { ...pipeline.hooks('list') }, async (req, reply) => {
    return pipeline.run(req, reply, {
      unsupported: (p) => (p.list ? undefined : NOT_SUPPORTED('listing jobs')),
      core: (account) => {
        const q = ListQuerySchema.safeParse(req.query ?? {});
        if (!q.success) return validationError('invalid query', zodIssues(q.error));
        const lagMs = profileOf(account).listLagMs;
        const now = Date.now();
        const found = jobs
          .visibleFor(account)
          .filter((j) => now - j.createdAt >= lagMs) // a lagging (search-backed) list
          .filter((j) => q.data.client_ref === undefined || j.clientRef === q.data.client_ref)
          .filter((j) => q.data.status === undefined || j.status === q.data.status)
          .slice(0, q.data.limit)
          .map((j) => statusObject(deps, j, false));
        return outcome(200, { jobs: found });
      },
    });
  });
}

function hostBlocked(url: string, blocked: readonly string[]): boolean {
  const host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return blocked.some((b) => {
    const h = b.toLowerCase().replace(/^\[|\]$/g, '');
    return host === h || host.endsWith(`.${h}`);
  });
}

/** Core of `POST /api/scrape` (runs after pre-commit faults; no await inside: no races). */
function submit(
  deps: ApiRouteDeps,
  req: FastifyRequest,
  account: string,
  profile: Profile,
  headerRule: FaultRule | undefined,
): Outcome {
  const parsed = SubmitBodySchema.safeParse(req.body);
  if (!parsed.success) return validationError('invalid scrape request', zodIssues(parsed.error));
  const body = parsed.data;
  const url = new URL(body.url).href;

  if (hostBlocked(url, profile.blockedHosts)) {
    return outcome(
      403,
      errorBody('TARGET_DISALLOWED', `scraping ${new URL(url).hostname} is not allowed for this account`),
    );
  }

  const rawKey = req.headers['idempotency-key'];
  // `key` is honoured (dedupe); `recordedKey` is only recorded for stats. With `idempotency:
  // false` the header is ignored entirely (not even validated).
  let key: string | null = null;
  let recordedKey: string | null = null;
  if (profile.idempotency && rawKey !== undefined) {
    const k = IdempotencyKeySchema.safeParse(rawKey);
    if (!k.success) return validationError('invalid Idempotency-Key header (1..255 characters)', zodIssues(k.error));
    key = k.data;
    recordedKey = k.data;
  } else if (rawKey !== undefined) {
    const k = IdempotencyKeySchema.safeParse(rawKey);
    recordedKey = k.success ? k.data : null;
  }

  const canonical = JSON.stringify({
    url,
    format: body.format,
    client_ref: body.client_ref ?? null,
    timeout_ms: body.timeout_ms,
  });
  const now = Date.now();
  const storeKey = key === null ? null : `${account}\u0000${key}`;
  if (storeKey !== null) {
    const entry = deps.idempotency.get(storeKey);
    if (entry && entry.expiresAt > now) {
      if (entry.canonical !== canonical) {
        return outcome(
          409,
          errorBody('IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was already used with a different request body'),
        );
      }
      if (profile.idempotencyReplay === 'conflict') {
        return outcome(409, errorBody('IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was already used'));
      }
      return outcome(202, { ...entry.response }, { 'idempotent-replayed': 'true' });
    }
    if (entry) deps.idempotency.delete(storeKey);
  }

  const active = deps.jobs.activeCount(account);
  if (active >= profile.concurrency) {
    const plain = `Concurrency limit reached: at most ${profile.concurrency} active job(s) per account.`;
    const ra = retryAfter(profile, profile.retryAfterSeconds, plain);
    if (profile.concurrencyErrorStyle === '400') {
      return outcome(
        400,
        errorBody('concurrent-runs-limit-exceeded', ra.message, { limit: profile.concurrency }),
        ra.headers,
      );
    }
    return outcome(429, errorBody('CONCURRENCY_LIMIT', ra.message, { limit: profile.concurrency }), ra.headers);
  }

  const jobFaults = deps.faults.pickJobFaults({ account, endpoint: 'submit', url }, headerRule);
  const job = deps.jobs.create({
    account,
    profile,
    url,
    format: body.format,
    clientRef: body.client_ref ?? null,
    idempotencyKey: recordedKey,
    timeoutMs: body.timeout_ms,
    jobFaults,
    webhook: body.webhook ?? null,
  });
  deps.counters.jobCreated(account);
  const response: SubmitResponse = { job_id: job.id, status: 'queued', created_at: iso(job.createdAt) };
  if (storeKey !== null) {
    pruneIdempotency(deps.idempotency, now);
    deps.idempotency.set(storeKey, { canonical, response, expiresAt: now + profile.idempotencyTtlMs });
  }
  return outcome(202, response);
}

function pruneIdempotency(entries: Map<string, IdempotencyEntry>, now: number): void {
  if (entries.size < 10_000) return;
  for (const [k, v] of entries) if (v.expiresAt <= now) entries.delete(k);
}

/** The status object of `GET /api/jobs/:id` (with result) or of a list item (without). */
function statusObject(deps: ApiRouteDeps, job: JobRecord, withResult: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    job_id: job.id,
    status: job.status,
    url: job.url,
    client_ref: job.clientRef,
    format: job.format,
    created_at: iso(job.createdAt),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
    progress: { pages_fetched: job.pagesFetched },
    credits_used: job.creditsUsed,
  };
  if (withResult && job.status === 'completed' && job.result) {
    if (!job.faults.includes('bad_result')) out.result = { ...job.result, links: [...job.result.links] };
    // `bad_result`: the first answer since the job finished says `completed` without the page (this
    // request's time is already counted), every later one has a proxy's error page in its place.
    else if (job.statusRequestTimes.filter((t) => t >= job.finishedAt!).length > 1) out.result = proxyErrorPage(502);
  }
  if (job.status === 'failed' && job.error) out.error = { ...job.error };
  const profile = deps.profiles.get(job.account);
  if (!profile) throw new Error(`unknown account "${job.account}"`);
  const key = profile.echoKey ? deps.accountKey.get(job.account) : undefined;
  if (key) {
    // A careless provider: the caller's key copied into the answer (a fault the secret-handling tests use).
    if (out.error)
      out.error = {
        ...(out.error as Record<string, unknown>),
        message: `invalid key ${key}: ${(out.error as { message?: string }).message ?? ''}`,
      };
    if (out.result && typeof out.result === 'object') {
      const r = out.result as { final_url?: string };
      out.result = {
        ...r,
        final_url: `${r.final_url ?? job.url}${(r.final_url ?? job.url).includes('?') ? '&' : '?'}api_key=${key}`,
      };
    }
    out.debug = { note: `served for key ${key}` };
  }
  return out;
}
