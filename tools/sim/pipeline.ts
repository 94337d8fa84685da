/**
 * The request pipeline every endpoint of the reference provider's API runs through:
 *
 * 1. on arrival (`onRequest`): the API key's account (`Authorization: Bearer <key>`), counted and
 *    announced as a `request` event;
 * 2. `401 UNAUTHORIZED` without a known key; the profile's switch for the endpoint (`404
 *    NOT_SUPPORTED`);
 * 3. the fault that applies (a registered rule, or the `X-Sim-Fault` header when the sim allows
 *    it): before the request is committed it may drop the connection, delay, answer `429`, a
 *    `5xx` or `404`;
 * 4. the endpoint's own work (`core`, synchronous: nothing interleaves with it);
 * 5. after the commit a fault may still drop the connection, answer a `5xx` or delay the answer;
 * 6. on the answer (`onResponse`) or the drop: counted and announced as a `response` event.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  errorBody,
  NOT_FOUND,
  outcome,
  retryAfter,
  send,
  serverError,
  validationError,
  zodIssues,
  type Outcome,
} from './answers.js';
import type { SimEvents, SimResponseEvent } from './events.js';
import type { FaultRegistry } from './faults.js';
import type { JobRecord } from './jobRecord.js';
import type { JobManager } from './jobs.js';
import {
  FaultRuleSchema,
  HeaderFaultSchema,
  type Endpoint,
  type FaultRule,
  type Profile,
  type ResolvedSimOptions,
  type SimRequestEvent,
} from './schemas.js';
import type { Counters } from './stats.js';
import { isAbortError, sleep } from './util.js';

/** What the pipeline works with: the sim's options, accounts, fault rules, jobs, counters and events. */
export interface PipelineDeps {
  opts: Pick<ResolvedSimOptions, 'allowFaultHeader' | 'onRequest'>;
  events: SimEvents;
  counters: Counters;
  faults: FaultRegistry;
  jobs: JobManager;
  /** API key → account. */
  keyToAccount: ReadonlyMap<string, string>;
  /** Account → its current profile. */
  profiles: ReadonlyMap<string, Profile>;
  /** Aborted when the sim closes: a delayed answer is dropped instead. */
  closeSignal: AbortSignal;
}

/** What an endpoint gives the pipeline: the target URL (for URL-scoped faults), its profile switch, and its own work. */
export interface EndpointSpec {
  targetUrl?: string | undefined;
  /** The answer when the account's profile switched the endpoint off, else undefined. */
  unsupported?: (profile: Profile) => Outcome | undefined;
  /** The endpoint's work once no fault answered first (`fault`: the request's fault rule; `header`: the `X-Sim-Fault` one). */
  core: (account: string, profile: Profile, fault: FaultRule | undefined, header: FaultRule | undefined) => Outcome;
}

interface RequestCtx {
  endpoint: Endpoint;
  account: string | null;
  at: number;
  jobId: string | null;
  settled: boolean;
}

const AuthHeaderSchema = z.string().regex(/^Bearer\s+\S+\s*$/i);
/** Path parameter `:id` of the job and admin routes. */
export const JobIdParamSchema = z.object({ id: z.string().min(1).max(200) });

/** The pipeline of one sim (see the module comment). */
export class RequestPipeline {
  private readonly ctx = new WeakMap<FastifyRequest, RequestCtx>();

  constructor(private readonly deps: PipelineDeps) {}

  /** The `onRequest` and `onResponse` hooks of one API route: authenticate, count, emit. */
  hooks(endpoint: Endpoint): {
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
        this.deps.counters.request(endpoint, account);
        const event: SimRequestEvent = {
          at,
          method: req.method,
          path: req.url.split('?')[0] ?? req.url,
          endpoint,
          account,
          jobId,
        };
        this.safeEmit(() => this.deps.events.emit('request', event));
        if (this.deps.opts.onRequest) this.safeEmit(() => this.deps.opts.onRequest?.(event));
        done();
      },
      onResponse: (req, reply, done) => {
        const ctx = this.ctx.get(req);
        if (ctx && !ctx.settled) this.settle(req, ctx, reply.statusCode);
        done();
      },
    };
  }

  /** When the request arrived (epoch ms), or now for a request the hooks did not see. */
  receivedAt(req: FastifyRequest): number {
    return this.ctx.get(req)?.at ?? Date.now();
  }

  /** The job named by `:id` when it exists and belongs to the request's account. */
  ownedJob(req: FastifyRequest): JobRecord | undefined {
    const ctx = this.ctx.get(req);
    const params = JobIdParamSchema.safeParse(req.params);
    if (!ctx?.account || !params.success) return undefined;
    return this.deps.jobs.getOwned(params.data.id, ctx.account);
  }

  /** Runs steps 2-5 of the module comment for one request and answers it (or drops it). */
  async run(req: FastifyRequest, reply: FastifyReply, spec: EndpointSpec): Promise<FastifyReply> {
    const ctx = this.ctx.get(req);
    if (!ctx) throw new Error('request context missing');
    const account = ctx.account;
    if (account === null) {
      return send(reply, outcome(401, errorBody('UNAUTHORIZED', 'missing or unknown API key')));
    }
    const profile = this.deps.profiles.get(account);
    if (!profile) throw new Error(`no profile for account ${account}`);
    const unsupported = spec.unsupported?.(profile);
    if (unsupported) return send(reply, unsupported);

    const header = this.headerFault(req);
    if (header.error) return send(reply, header.error);
    const fault = this.deps.faults.pickRequestFault(
      { account, endpoint: ctx.endpoint, url: spec.targetUrl },
      header.rule,
    );

    if (fault) {
      switch (fault.action) {
        case 'drop_before_commit':
          return this.drop(req, reply);
        case 'delay':
          if (fault.commit) break; // handled first, answered late (below)
          try {
            await sleep(fault.delayMs ?? 0, this.deps.closeSignal);
          } catch (err) {
            if (isAbortError(err)) return this.drop(req, reply);
            throw err;
          }
          break;
        case 'rate_limit': {
          const seconds = fault.retryAfterSeconds ?? profile.retryAfterSeconds;
          const ra = retryAfter(profile, seconds, 'Rate limit exceeded.');
          return send(reply, outcome(429, errorBody('RATE_LIMITED', fault.message ?? ra.message), ra.headers));
        }
        case 'error_5xx':
          if (!fault.commit) return send(reply, serverError(fault));
          break;
        case 'not_found':
          return send(reply, NOT_FOUND());
        default:
          break;
      }
    }

    const result = spec.core(account, profile, fault, header.rule);

    if (fault?.action === 'drop_after_commit') return this.drop(req, reply);
    if (fault?.action === 'error_5xx' && fault.commit) return send(reply, serverError(fault));
    if (fault?.action === 'delay' && fault.commit) {
      try {
        await sleep(fault.delayMs ?? 0, this.deps.closeSignal);
      } catch (err) {
        if (isAbortError(err)) return this.drop(req, reply);
        throw err;
      }
    }
    return send(reply, result);
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
    this.deps.counters.response(status, ctx.account);
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
    this.safeEmit(() => this.deps.events.emit('response', event));
  }

  private authenticate(header: string | undefined): string | null {
    const parsed = AuthHeaderSchema.safeParse(header);
    if (!parsed.success) return null;
    const key = parsed.data.replace(/^Bearer\s+/i, '').trim();
    return this.deps.keyToAccount.get(key) ?? null;
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
    if (!this.deps.opts.allowFaultHeader) return {};
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
}
