/**
 * The reference asynchronous scraping provider ("the sim"): a real Fastify HTTP server that
 * accepts scrape jobs, really fetches and extracts the target pages, and injects faults on demand.
 *
 * Source of the contract: the seeds' provider (`/work/shared/seeds/002_*.txt`): `POST` a job →
 * `202 {job_id}`; poll `GET /api/jobs/:id`; progress at `GET /api/jobs/:id/logs`; cancel with
 * `DELETE /api/jobs/:id/cancel`; too many active jobs → `429 CONCURRENCY_LIMIT`. Optional
 * behaviours of real providers (`/work/shared/providers.md`) are switched by account profiles.
 *
 * API (all JSON; errors are `{"error": {"code", "message", ...extra}}`; auth `Authorization:
 * Bearer <apiKey>`, 401 `UNAUTHORIZED`; another account's job is `404 NOT_FOUND`):
 * - `POST /api/scrape` `{url, format?, client_ref?, timeout_ms?, webhook?}` (+ `Idempotency-Key`) →
 *   `202 {job_id, status: "queued", created_at}`; 400 `VALIDATION_ERROR`, 403 `TARGET_DISALLOWED`,
 *   409 `IDEMPOTENCY_CONFLICT`, 429 `CONCURRENCY_LIMIT` (or 400 `concurrent-runs-limit-exceeded`).
 * - `GET /api/jobs/:id` → `200` status object (see `JobStatusResponseSchema`).
 * - `GET /api/jobs/:id/logs` → `200 {job_id, logs}`.
 * - `GET /api/jobs/:id/tree` → `200 {job_id, status, tree: {url, final_url, status, pages_fetched,
 *   children}}` (seeds/002 names `/tree` as a progress read without its shape; this one is the
 *   sim's own; counted and faulted as the `logs` endpoint).
 * - `DELETE /api/jobs/:id/cancel` → `200 {job_id, status: "cancelled"}`; 409 `JOB_FINISHED`;
 *   404 `NOT_SUPPORTED` when the profile has `cancel: false`.
 * - `GET /api/jobs?client_ref&status&limit` → `200 {jobs}` newest first; 404 `NOT_SUPPORTED` when
 *   the profile has `list: false`.
 * - Webhooks: a submit with `webhook {url, secret?, events?}` gets a signed POST per announced
 *   status (see `webhooks.ts`), retried with backoff; faults `drop_webhook`, `duplicate_webhook`.
 * Admin (header `X-Sim-Admin: <adminToken>`, else 404): `GET /_sim/stats`, `GET|POST|DELETE
 * /_sim/faults`, `DELETE /_sim/faults/:id`, `GET /_sim/jobs/:id`, `POST /_sim/jobs/:id/release`,
 * `POST /_sim/reset`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { FaultRegistry } from './faults.js';
import { JobManager, isActive, type JobRecord, type JobTransition } from './jobs.js';
import {
  FaultRuleSchema,
  HeaderFaultSchema,
  IdempotencyKeySchema,
  ListQuerySchema,
  ProfileSchema,
  SimOptionsSchema,
  SubmitBodySchema,
  type Endpoint,
  type FaultRule,
  type JobStatus,
  type Profile,
  type ProfileInput,
  PartialProfileSchema,
  type ResolvedSimOptions,
  type SimOptions,
  type SimRequestEvent,
  type SubmitResponse,
} from './schemas.js';
import { Counters, jobSnapshot, type SimJobSnapshot, type SimStats } from './stats.js';
import { isAbortError, iso, sleep } from './util.js';
import { WebhookDispatcher } from './webhooks.js';

// ---------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------

/** Event emitted when the sim answered (or dropped) an API request. */
export interface SimResponseEvent {
  /** epoch ms when the answer was sent or the socket destroyed. */
  at: number;
  method: string;
  path: string;
  endpoint: Endpoint;
  account: string | null;
  jobId: string | null;
  /** HTTP status, or `"dropped"` when a fault destroyed the connection. */
  status: number | 'dropped';
  /** ms between receipt and answer. */
  durationMs: number;
}

/** Events of `sim.events`: `request` and `response` per API request, `job` per state change. */
export interface SimEventMap {
  request: [SimRequestEvent];
  response: [SimResponseEvent];
  job: [JobTransition];
}

/** Typed event emitter of the sim (Node `EventEmitter`). */
export type SimEvents = EventEmitter<SimEventMap>;

/** Options of {@link Sim.waitForJob}. */
export interface WaitForJobOptions {
  /** Statuses to wait for (default: any final status). */
  status?: JobStatus | JobStatus[];
  /** Give up after this many ms (default 10000). */
  timeoutMs?: number;
}

/** A running (or ready to run) reference provider. */
export interface Sim {
  /** Base URL like `http://127.0.0.1:PORT`. @throws Error before `listen()` resolved. */
  readonly url: string;
  /** The Fastify instance (for `inject` in unit tests). */
  readonly app: FastifyInstance;
  /** Fault rules; see {@link FaultRegistry}. */
  readonly faults: FaultRegistry;
  /** `request`, `response` and `job` events. */
  readonly events: SimEvents;
  /** The resolved profile of an account. @throws Error for an unknown account. */
  profileOf(account: string): Profile;
  /**
   * Change an account's profile from now on (merged over its current one): request-time checks
   * (idempotency, list, cancel, concurrency, lag, …) at once, run timings for jobs created after.
   * @throws Error for an unknown account; ZodError for an invalid field.
   */
  setProfile(account: string, patch: ProfileInput): Profile;
  /**
   * Create a job for `account` as another client of the same credential would (no HTTP request,
   * no fault rule consumed, no concurrency check, no idempotency key): it then runs like any job
   * and counts as active. @returns its snapshot.
   */
  injectJob(account: string, job: { url: string; clientRef?: string | null; format?: 'markdown' | 'text'; timeoutMs?: number }): SimJobSnapshot;
  /** Start listening. @returns the base URL. */
  listen(): Promise<string>;
  /** Counters and every job since start / last reset (deep copy). */
  stats(): SimStats;
  /** Every job of an account since start / last reset, oldest first, including deleted ones. */
  jobsFor(account: string): SimJobSnapshot[];
  /** One job (including a deleted one, then without result), or undefined. */
  getJob(jobId: string): SimJobSnapshot | undefined;
  /** Release a job held by a `hold` fault. @returns true when it had an unreleased hold. */
  release(jobId: string): boolean;
  /**
   * Resolve when the job reaches one of the statuses (default: a final one).
   * @throws Error on timeout (default 10000 ms) or when the job does not exist.
   */
  waitForJob(jobId: string, opts?: WaitForJobOptions): Promise<SimJobSnapshot>;
  /** Forget every job, idempotency key, counter and fault rule (runners are stopped). */
  reset(): void;
  /** Stop listening, stop every job, timer and delayed request. Idempotent. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------------------------

interface RequestCtx {
  endpoint: Endpoint;
  account: string | null;
  at: number;
  jobId: string | null;
  settled: boolean;
}

interface Outcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface IdempotencyEntry {
  canonical: string;
  response: SubmitResponse;
  /** epoch ms */
  expiresAt: number;
}

class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

const AuthHeaderSchema = z.string().regex(/^Bearer\s+\S+\s*$/i);
const JobIdParamSchema = z.object({ id: z.string().min(1).max(200) });
const FINAL: JobStatus[] = ['completed', 'failed', 'cancelled'];

function errorBody(code: string, message: string, extra: Record<string, unknown> = {}): { error: Record<string, unknown> } {
  return { error: { code, message, ...extra } };
}

function outcome(status: number, body: unknown, headers?: Record<string, string>): Outcome {
  return headers ? { status, body, headers } : { status, body };
}

function validationError(message: string, issues: unknown[]): Outcome {
  return outcome(400, errorBody('VALIDATION_ERROR', message, { issues }));
}

function zodIssues(err: z.ZodError): Array<{ path: string; message: string; code: string }> {
  return err.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message, code: i.code }));
}

const NOT_FOUND = (): Outcome => outcome(404, errorBody('NOT_FOUND', 'job not found'));
const NOT_SUPPORTED = (what: string): Outcome =>
  outcome(404, errorBody('NOT_SUPPORTED', `${what} is not supported by this provider`));

function hostBlocked(url: string, blocked: readonly string[]): boolean {
  const host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return blocked.some((b) => {
    const h = b.toLowerCase().replace(/^\[|\]$/g, '');
    return host === h || host.endsWith(`.${h}`);
  });
}

function sameSecret(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

/**
 * The wait announcement per `retryAfterStyle`: the `Retry-After` header (seconds), or the wait in
 * the message (`"Rate limit exceeded. Please retry after 7 seconds."`), or nothing.
 */
function retryAfter(profile: Profile, seconds: number, plainMessage: string): { headers: Record<string, string>; message: string } {
  switch (profile.retryAfterStyle) {
    case 'header':
      return { headers: { 'retry-after': String(seconds) }, message: plainMessage };
    case 'message':
      return { headers: {}, message: `Rate limit exceeded. Please retry after ${seconds} seconds.` };
    case 'none':
      return { headers: {}, message: plainMessage };
  }
}

// ---------------------------------------------------------------------------------------------
// createSim / startSim
// ---------------------------------------------------------------------------------------------

/**
 * Build a sim (not listening yet; call `listen()`, or use {@link startSim}).
 * @param options see `SimOptionsSchema` (accounts required; everything else defaults).
 * @throws ZodError when the options are invalid (messages never contain API keys).
 */
export function createSim(options: SimOptions): Sim {
  const opts: ResolvedSimOptions = SimOptionsSchema.parse(options);
  return new SimServer(opts);
}

/**
 * Build and start a sim on `options.host` (default 127.0.0.1) and `options.port` (default random).
 * @returns the listening sim; `sim.url` is its base URL.
 * @throws ZodError on invalid options; the listen error when the port is taken.
 */
export async function startSim(options: SimOptions): Promise<Sim> {
  const sim = createSim(options);
  try {
    await sim.listen();
  } catch (err) {
    await sim.close();
    throw err;
  }
  return sim;
}

class SimServer implements Sim {
  readonly app: FastifyInstance;
  readonly faults: FaultRegistry;
  readonly events: SimEvents = new EventEmitter<SimEventMap>();

  private baseUrl: string | null = null;
  private closed = false;
  private readonly closeController = new AbortController();
  private readonly profiles = new Map<string, Profile>();
  private readonly keyToAccount = new Map<string, string>();
  /** The first API key of each account (what an `echoKey` profile copies into its answers). */
  private readonly accountKey = new Map<string, string>();
  private readonly idempotency = new Map<string, IdempotencyEntry>();
  private readonly counters: Counters;
  private readonly jobs: JobManager;
  private readonly webhooks: WebhookDispatcher;
  private readonly ctx = new WeakMap<FastifyRequest, RequestCtx>();

  constructor(private readonly opts: ResolvedSimOptions) {
    for (const acct of opts.accounts) {
      this.profiles.set(acct.name, ProfileSchema.parse({ ...opts.defaults, ...acct.profile }));
      for (const key of acct.apiKeys) this.keyToAccount.set(key, acct.name);
      if (acct.apiKeys[0]) this.accountKey.set(acct.name, acct.apiKeys[0]);
    }
    this.faults = new FaultRegistry(opts.random ?? Math.random);
    for (const rule of opts.faults) this.faults.add(rule);
    this.counters = new Counters(opts.accounts.map((a) => a.name));
    this.webhooks = new WebhookDispatcher({
      closeSignal: this.closeController.signal,
      retryDelaysMs: opts.webhookRetryDelaysMs,
      timeoutMs: opts.webhookTimeoutMs,
      userAgent: opts.userAgent,
      counters: this.counters,
    });
    this.jobs = new JobManager({
      closeSignal: this.closeController.signal,
      maxBodyBytes: opts.maxBodyBytes,
      userAgent: opts.userAgent,
      onTransition: (t) => {
        this.events.emit('job', t);
        this.webhooks.onTransition(this.jobs.find(t.job_id), t);
      },
    });
    // Tests may attach many waiters.
    this.events.setMaxListeners(0);
    this.app = this.buildApp();
  }

  get url(): string {
    if (!this.baseUrl) throw new Error('sim is not listening; call listen() or use startSim()');
    return this.baseUrl;
  }

  profileOf(account: string): Profile {
    const p = this.profiles.get(account);
    if (!p) throw new Error(`unknown account "${account}"`);
    return { ...p, blockedHosts: [...p.blockedHosts] };
  }

  setProfile(account: string, patch: ProfileInput): Profile {
    const current = this.profiles.get(account);
    if (!current) throw new Error(`unknown account "${account}"`);
    const next = ProfileSchema.parse({ ...current, ...PartialProfileSchema.parse(patch) });
    this.profiles.set(account, next);
    return this.profileOf(account);
  }

  injectJob(account: string, input: { url: string; clientRef?: string | null; format?: 'markdown' | 'text'; timeoutMs?: number }): SimJobSnapshot {
    const profile = this.profiles.get(account);
    if (!profile) throw new Error(`unknown account "${account}"`);
    const job = this.jobs.create({
      account,
      profile,
      url: new URL(input.url).href,
      format: input.format ?? 'markdown',
      clientRef: input.clientRef ?? null,
      idempotencyKey: null,
      timeoutMs: input.timeoutMs ?? 30_000,
      jobFaults: [],
      webhook: null,
    });
    this.counters.jobCreated(account);
    return jobSnapshot(job);
  }

  async listen(): Promise<string> {
    await this.app.listen({ host: this.opts.host, port: this.opts.port });
    const addr = this.app.server.address() as AddressInfo;
    const host = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
    this.baseUrl = `http://${host}:${addr.port}`;
    return this.baseUrl;
  }

  stats(): SimStats {
    return this.counters.snapshot(this.jobs.all());
  }

  jobsFor(account: string): SimJobSnapshot[] {
    return this.jobs
      .all()
      .filter((j) => j.account === account)
      .map(jobSnapshot);
  }

  getJob(jobId: string): SimJobSnapshot | undefined {
    const job = this.jobs.find(jobId);
    return job ? jobSnapshot(job) : undefined;
  }

  release(jobId: string): boolean {
    return this.jobs.release(jobId);
  }

  waitForJob(jobId: string, opts: WaitForJobOptions = {}): Promise<SimJobSnapshot> {
    const wanted = new Set<JobStatus>(
      opts.status === undefined ? FINAL : Array.isArray(opts.status) ? opts.status : [opts.status],
    );
    const timeoutMs = opts.timeoutMs ?? 10_000;
    return new Promise<SimJobSnapshot>((resolve, reject) => {
      const current = this.jobs.find(jobId);
      if (!current) {
        reject(new Error(`no job ${jobId}`));
        return;
      }
      if (wanted.has(current.status)) {
        resolve(jobSnapshot(current));
        return;
      }
      const onJob = (t: JobTransition): void => {
        if (t.job_id !== jobId || !wanted.has(t.to)) return;
        cleanup();
        const job = this.jobs.find(jobId);
        if (job) resolve(jobSnapshot(job));
        else reject(new Error(`job ${jobId} disappeared`));
      };
      const timer = setTimeout(() => {
        cleanup();
        const job = this.jobs.find(jobId);
        reject(new Error(`job ${jobId} did not reach ${[...wanted].join('|')} within ${timeoutMs} ms (status ${job?.status ?? 'gone'})`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.events.off('job', onJob);
      };
      this.events.on('job', onJob);
    });
  }

  reset(): void {
    this.webhooks.reset();
    this.jobs.reset();
    this.idempotency.clear();
    this.counters.reset();
    this.faults.clear();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closeController.abort();
    this.jobs.close();
    await this.app.close();
  }

  // -------------------------------------------------------------------------------------------
  // Fastify app
  // -------------------------------------------------------------------------------------------

  private buildApp(): FastifyInstance {
    const app = Fastify({
      logger:
        this.opts.logger || this.opts.logStream
          ? {
              level: 'info',
              ...(this.opts.logStream ? { stream: this.opts.logStream } : {}),
              // Request logs include the headers (useful when debugging clients), with every
              // credential censored: API keys never reach the log.
              serializers: {
                req: (req: { method: string; url: string; headers: Record<string, unknown> }) => ({
                  method: req.method,
                  url: req.url,
                  headers: req.headers,
                }),
              },
              redact: {
                paths: [
                  'req.headers.authorization',
                  'req.headers["x-sim-admin"]',
                  'req.headers.cookie',
                  'headers.authorization',
                  'headers["x-sim-admin"]',
                ],
                censor: '[REDACTED]',
              },
            }
          : false,
      forceCloseConnections: true,
      bodyLimit: 1024 * 1024,
    });

    // JSON bodies; an empty body is accepted as "no body" (e.g. DELETE with a JSON content type).
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') {
        done(null, undefined);
        return;
      }
      try {
        done(null, JSON.parse(text) as unknown);
      } catch (err) {
        done(new HttpError(400, `request body is not valid JSON: ${(err as Error).message}`), undefined);
      }
    });

    app.setErrorHandler((error: unknown, request, reply) => {
      const statusCode =
        typeof (error as { statusCode?: unknown }).statusCode === 'number'
          ? (error as { statusCode: number }).statusCode
          : 500;
      const message = error instanceof Error ? error.message : String(error);
      if (statusCode >= 500) request.log.error({ err: error }, 'sim internal error');
      const status = statusCode >= 400 && statusCode <= 599 ? statusCode : 500;
      let body: unknown;
      if (status === 400) body = errorBody('VALIDATION_ERROR', message, { issues: [] });
      else if (status === 413) body = errorBody('PAYLOAD_TOO_LARGE', message);
      else if (status === 415) body = errorBody('UNSUPPORTED_MEDIA_TYPE', message);
      else if (status >= 500) body = errorBody('INTERNAL', 'internal error');
      else body = errorBody('BAD_REQUEST', message);
      return reply.code(status).send(body);
    });

    app.setNotFoundHandler((_request, reply) => reply.code(404).send(errorBody('NOT_FOUND', 'route not found')));

    this.registerApi(app);
    this.registerAdmin(app);
    return app;
  }

  /** onRequest + onResponse hooks of one API route: authenticate, count, emit. */
  private apiRoute(endpoint: Endpoint): {
    onRequest: (req: FastifyRequest, reply: FastifyReply, done: () => void) => void;
    onResponse: (req: FastifyRequest, reply: FastifyReply, done: () => void) => void;
  } {
    return {
      onRequest: (req, _reply, done) => {
        const at = Date.now();
        const account = this.authenticate(req.headers.authorization);
        const params = req.params as { id?: unknown } | undefined;
        const jobId = typeof params?.id === 'string' ? params.id : null;
        const ctx: RequestCtx = { endpoint, account, at, jobId, settled: false };
        this.ctx.set(req, ctx);
        this.counters.request(endpoint, account);
        const event: SimRequestEvent = { at, method: req.method, path: req.url.split('?')[0] ?? req.url, endpoint, account, jobId };
        this.safeEmit(() => this.events.emit('request', event));
        if (this.opts.onRequest) this.safeEmit(() => this.opts.onRequest?.(event));
        done();
      },
      onResponse: (req, reply, done) => {
        const ctx = this.ctx.get(req);
        if (ctx && !ctx.settled) this.settle(req, ctx, reply.statusCode);
        done();
      },
    };
  }

  private safeEmit(fn: () => void): void {
    try {
      fn();
    } catch {
      // a listener's error must not break request handling
    }
  }

  private settle(req: FastifyRequest, ctx: RequestCtx, status: number | 'dropped'): void {
    ctx.settled = true;
    this.counters.response(status, ctx.account);
    const at = Date.now();
    const event: SimResponseEvent = {
      at,
      method: req.method,
      path: req.url.split('?')[0] ?? req.url,
      endpoint: ctx.endpoint,
      account: ctx.account,
      jobId: ctx.jobId,
      status,
      durationMs: at - ctx.at,
    };
    this.safeEmit(() => this.events.emit('response', event));
  }

  private authenticate(header: string | undefined): string | null {
    const parsed = AuthHeaderSchema.safeParse(header);
    if (!parsed.success) return null;
    const key = parsed.data.replace(/^Bearer\s+/i, '').trim();
    return this.keyToAccount.get(key) ?? null;
  }

  private send(reply: FastifyReply, o: Outcome): FastifyReply {
    reply.code(o.status);
    if (o.headers) for (const [k, v] of Object.entries(o.headers)) reply.header(k, v);
    return reply.send(o.body);
  }

  /** Destroy the connection without answering; counted as `"dropped"`. */
  private drop(req: FastifyRequest, reply: FastifyReply): FastifyReply {
    const ctx = this.ctx.get(req);
    if (ctx && !ctx.settled) this.settle(req, ctx, 'dropped');
    reply.hijack();
    req.raw.socket?.destroy();
    return reply;
  }

  /** Parse the `X-Sim-Fault` header when allowed. */
  private headerFault(req: FastifyRequest): { rule?: FaultRule; error?: Outcome } {
    if (!this.opts.allowFaultHeader) return {};
    const raw = req.headers['x-sim-fault'];
    if (raw === undefined) return {};
    if (typeof raw !== 'string') return { error: validationError('X-Sim-Fault must be a single header', []) };
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      return { error: validationError(`X-Sim-Fault is not valid JSON: ${(err as Error).message}`, []) };
    }
    const parsed = HeaderFaultSchema.safeParse(json);
    if (!parsed.success) return { error: validationError('invalid X-Sim-Fault rule', zodIssues(parsed.error)) };
    return { rule: FaultRuleSchema.parse({ ...parsed.data, endpoint: 'any' }) };
  }

  /**
   * The request pipeline shared by every API endpoint: auth → (profile switch) → fault selection →
   * pre-commit faults → `core` → post-commit faults → answer.
   */
  private async pipeline(
    req: FastifyRequest,
    reply: FastifyReply,
    spec: {
      targetUrl?: string | undefined;
      unsupported?: (profile: Profile) => Outcome | undefined;
      core: (account: string, profile: Profile, fault: FaultRule | undefined, header: FaultRule | undefined) => Outcome;
    },
  ): Promise<FastifyReply> {
    const ctx = this.ctx.get(req);
    if (!ctx) throw new Error('request context missing');
    const account = ctx.account;
    if (account === null) {
      return this.send(reply, outcome(401, errorBody('UNAUTHORIZED', 'missing or unknown API key')));
    }
    const profile = this.profiles.get(account);
    if (!profile) throw new Error(`no profile for account ${account}`);
    const unsupported = spec.unsupported?.(profile);
    if (unsupported) return this.send(reply, unsupported);

    const header = this.headerFault(req);
    if (header.error) return this.send(reply, header.error);
    const fault = this.faults.pickRequestFault({ account, endpoint: ctx.endpoint, url: spec.targetUrl }, header.rule);

    if (fault) {
      switch (fault.action) {
        case 'drop_before_commit':
          return this.drop(req, reply);
        case 'delay':
          if (fault.commit) break; // handled first, answered late (below)
          try {
            await sleep(fault.delayMs ?? 0, this.closeController.signal);
          } catch (err) {
            if (isAbortError(err)) return this.drop(req, reply);
            throw err;
          }
          break;
        case 'rate_limit': {
          const seconds = fault.retryAfterSeconds ?? profile.retryAfterSeconds;
          const ra = retryAfter(profile, seconds, 'Rate limit exceeded.');
          return this.send(reply, outcome(429, errorBody('RATE_LIMITED', fault.message ?? ra.message), ra.headers));
        }
        case 'error_5xx':
          if (!fault.commit) return this.send(reply, this.serverError(fault));
          break;
        case 'not_found':
          return this.send(reply, NOT_FOUND());
        default:
          break;
      }
    }

    const result = spec.core(account, profile, fault, header.rule);

    if (fault?.action === 'drop_after_commit') return this.drop(req, reply);
    if (fault?.action === 'error_5xx' && fault.commit) return this.send(reply, this.serverError(fault));
    if (fault?.action === 'delay' && fault.commit) {
      try {
        await sleep(fault.delayMs ?? 0, this.closeController.signal);
      } catch (err) {
        if (isAbortError(err)) return this.drop(req, reply);
        throw err;
      }
    }
    return this.send(reply, result);
  }

  private serverError(fault: FaultRule): Outcome {
    if (fault.plain) {
      const status = fault.status ?? 502;
      const words = status === 502 ? 'Bad Gateway' : status === 504 ? 'Gateway Timeout' : 'Service Unavailable';
      return { status, body: `<html>\r\n<head><title>${status} ${words}</title></head>\r\n<body>\r\n<center><h1>${status} ${words}</h1></center>\r\n</body>\r\n</html>\r\n`, headers: { 'content-type': 'text/html' } };
    }
    return outcome(
      fault.status ?? 503,
      errorBody(fault.code ?? 'UPSTREAM_UNAVAILABLE', fault.message ?? 'The service is temporarily unavailable (simulated).'),
    );
  }

  /** The job named by `:id` when it exists and belongs to the request's account. */
  private ownedJob(req: FastifyRequest): JobRecord | undefined {
    const ctx = this.ctx.get(req);
    const params = JobIdParamSchema.safeParse(req.params);
    if (!ctx?.account || !params.success) return undefined;
    return this.jobs.getOwned(params.data.id, ctx.account);
  }

  private registerApi(app: FastifyInstance): void {
    // POST /api/scrape
    app.post('/api/scrape', { ...this.apiRoute('submit') }, async (req, reply) => {
      const rawBody = req.body as { url?: unknown } | undefined;
      const targetUrl = rawBody && typeof rawBody === 'object' && typeof rawBody.url === 'string' ? rawBody.url : undefined;
      return this.pipeline(req, reply, {
        targetUrl,
        core: (account, profile, _fault, headerRule) => this.submit(req, account, profile, headerRule),
      });
    });

    // GET /api/jobs/:id
    app.get('/api/jobs/:id', { ...this.apiRoute('status') }, async (req, reply) => {
      const job = this.ownedJob(req);
      job?.statusRequestTimes.push(this.ctx.get(req)?.at ?? Date.now());
      return this.pipeline(req, reply, {
        targetUrl: job?.url,
        core: (account) => {
          const current = this.ownedJob(req);
          if (!current || current.account !== account) return NOT_FOUND();
          return outcome(200, this.statusObject(current, true));
        },
      });
    });

    // GET /api/jobs/:id/logs
    app.get('/api/jobs/:id/logs', { ...this.apiRoute('logs') }, async (req, reply) => {
      const job = this.ownedJob(req);
      return this.pipeline(req, reply, {
        targetUrl: job?.url,
        core: () => {
          const current = this.ownedJob(req);
          if (!current) return NOT_FOUND();
          return outcome(200, { job_id: current.id, logs: current.logs.map((l) => ({ ...l })) });
        },
      });
    });

    // GET /api/jobs/:id/tree (seeds/002: a progress read; shape not documented, the sim's own)
    app.get('/api/jobs/:id/tree', { ...this.apiRoute('logs') }, async (req, reply) => {
      const job = this.ownedJob(req);
      return this.pipeline(req, reply, {
        targetUrl: job?.url,
        core: () => {
          const current = this.ownedJob(req);
          if (!current) return NOT_FOUND();
          const node = { url: current.url, final_url: current.result?.final_url ?? null, status: current.status, pages_fetched: current.pagesFetched, children: [] as unknown[] };
          return outcome(200, { job_id: current.id, status: current.status, tree: node });
        },
      });
    });

    // DELETE /api/jobs/:id/cancel
    app.delete('/api/jobs/:id/cancel', { ...this.apiRoute('cancel') }, async (req, reply) => {
      const job = this.ownedJob(req);
      const profile = job ? this.profiles.get(job.account) : undefined;
      if (job && profile?.cancel) job.cancelRequestTimes.push(this.ctx.get(req)?.at ?? Date.now());
      return this.pipeline(req, reply, {
        targetUrl: job?.url,
        unsupported: (p) => (p.cancel ? undefined : NOT_SUPPORTED('cancel')),
        core: (_account, _profile, fault) => {
          const current = this.ownedJob(req);
          if (!current) return NOT_FOUND();
          if (!isActive(current.status)) {
            return outcome(409, errorBody('JOB_FINISHED', `job is already ${current.status}`, { status: current.status }));
          }
          const effects = { progress: { pages_fetched: current.pagesFetched }, credits_used: current.creditsUsed };
          if (fault?.action === 'cancel_pending') {
            this.jobs.cancelLater(current, fault.delayMs ?? 1000);
            return outcome(202, { job_id: current.id, status: current.status, ...effects });
          }
          this.jobs.cancel(current);
          return outcome(200, { job_id: current.id, status: 'cancelled', ...effects });
        },
      });
    });

    // GET /api/jobs
    app.get('/api/jobs', { ...this.apiRoute('list') }, async (req, reply) => {
      return this.pipeline(req, reply, {
        unsupported: (p) => (p.list ? undefined : NOT_SUPPORTED('listing jobs')),
        core: (account) => {
          const q = ListQuerySchema.safeParse(req.query ?? {});
          if (!q.success) return validationError('invalid query', zodIssues(q.error));
          const lagMs = this.profileOf(account).listLagMs;
          const now = Date.now();
          const jobs = this.jobs
            .visibleFor(account)
            .filter((j) => now - j.createdAt >= lagMs) // a lagging (search-backed) list
            .filter((j) => (q.data.client_ref === undefined || j.clientRef === q.data.client_ref))
            .filter((j) => (q.data.status === undefined || j.status === q.data.status))
            .slice(0, q.data.limit)
            .map((j) => this.statusObject(j, false));
          return outcome(200, { jobs });
        },
      });
    });
  }

  /** Core of `POST /api/scrape` (runs after pre-commit faults; no await inside: no races). */
  private submit(req: FastifyRequest, account: string, profile: Profile, headerRule: FaultRule | undefined): Outcome {
    const parsed = SubmitBodySchema.safeParse(req.body);
    if (!parsed.success) return validationError('invalid scrape request', zodIssues(parsed.error));
    const body = parsed.data;
    const url = new URL(body.url).href;

    if (hostBlocked(url, profile.blockedHosts)) {
      return outcome(403, errorBody('TARGET_DISALLOWED', `scraping ${new URL(url).hostname} is not allowed for this account`));
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
      const entry = this.idempotency.get(storeKey);
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
      if (entry) this.idempotency.delete(storeKey);
    }

    const active = this.jobs.activeCount(account);
    if (active >= profile.concurrency) {
      const plain = `Concurrency limit reached: at most ${profile.concurrency} active job(s) per account.`;
      const ra = retryAfter(profile, profile.retryAfterSeconds, plain);
      if (profile.concurrencyErrorStyle === '400') {
        return outcome(400, errorBody('concurrent-runs-limit-exceeded', ra.message, { limit: profile.concurrency }), ra.headers);
      }
      return outcome(429, errorBody('CONCURRENCY_LIMIT', ra.message, { limit: profile.concurrency }), ra.headers);
    }

    const jobFaults = this.faults.pickJobFaults({ account, endpoint: 'submit', url }, headerRule);
    const job = this.jobs.create({
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
    this.counters.jobCreated(account);
    const response: SubmitResponse = { job_id: job.id, status: 'queued', created_at: iso(job.createdAt) };
    if (storeKey !== null) {
      this.pruneIdempotency(now);
      this.idempotency.set(storeKey, { canonical, response, expiresAt: now + profile.idempotencyTtlMs });
    }
    return outcome(202, response);
  }

  private pruneIdempotency(now: number): void {
    if (this.idempotency.size < 10_000) return;
    for (const [k, v] of this.idempotency) if (v.expiresAt <= now) this.idempotency.delete(k);
  }

  /** The status object of `GET /api/jobs/:id` (with result) or of a list item (without). */
  private statusObject(job: JobRecord, withResult: boolean): Record<string, unknown> {
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
    if (withResult && job.status === 'completed' && job.result) out.result = { ...job.result, links: [...job.result.links] };
    if (job.status === 'failed' && job.error) out.error = { ...job.error };
    const key = this.profileOf(job.account).echoKey ? this.accountKey.get(job.account) : undefined;
    if (key) {
      // A careless provider: the caller's key copied into the answer (issue 13's fault).
      if (out.error) out.error = { ...(out.error as Record<string, unknown>), message: `invalid key ${key}: ${(out.error as { message?: string }).message ?? ''}` };
      if (out.result) {
        const r = out.result as { final_url?: string };
        out.result = { ...r, final_url: `${r.final_url ?? job.url}${(r.final_url ?? job.url).includes('?') ? '&' : '?'}api_key=${key}` };
      }
      out.debug = { note: `served for key ${key}` };
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Admin routes
  // -------------------------------------------------------------------------------------------

  private registerAdmin(app: FastifyInstance): void {
    const token = this.opts.adminToken;
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

    app.get('/_sim/stats', { onRequest: guard }, async () => this.stats());
    app.get('/_sim/faults', { onRequest: guard }, async () => ({ faults: this.faults.list() }));
    app.post('/_sim/faults', { onRequest: guard }, async (req, reply) => {
      const parsed = FaultRuleSchema.safeParse(req.body);
      if (!parsed.success) return this.send(reply, validationError('invalid fault rule', zodIssues(parsed.error)));
      return reply.code(200).send({ id: this.faults.add(parsed.data) });
    });
    app.delete('/_sim/faults', { onRequest: guard }, async () => {
      const removed = this.faults.list().length;
      this.faults.clear();
      return { removed };
    });
    app.delete('/_sim/faults/:id', { onRequest: guard }, async (req, reply) => {
      const id = jobParam(req);
      if (id === undefined || !this.faults.remove(id)) {
        return this.send(reply, outcome(404, errorBody('NOT_FOUND', 'fault rule not found')));
      }
      return { removed: 1 };
    });
    app.get('/_sim/jobs/:id', { onRequest: guard }, async (req, reply) => {
      const id = jobParam(req);
      const job = id === undefined ? undefined : this.getJob(id);
      if (!job) return this.send(reply, NOT_FOUND());
      return job;
    });
    app.post('/_sim/jobs/:id/release', { onRequest: guard }, async (req, reply) => {
      const id = jobParam(req);
      if (id === undefined || !this.jobs.find(id)) return this.send(reply, NOT_FOUND());
      return { job_id: id, released: this.release(id) };
    });
    app.post('/_sim/reset', { onRequest: guard }, async () => {
      this.reset();
      return { reset: true };
    });
  }
}
