/**
 * The reference asynchronous scraping provider ("the sim"): a real Fastify HTTP server that
 * accepts scrape jobs, really fetches and extracts the target pages, and injects faults on demand.
 *
 * Source of the contract: the asynchronous provider of the design brief's source documents:
 * `POST` a job → `202 {job_id}`; poll `GET /api/jobs/:id`; progress at `GET /api/jobs/:id/logs`;
 * cancel with `DELETE /api/jobs/:id/cancel`; too many active jobs → `429 CONCURRENCY_LIMIT`.
 * Optional behaviours of real providers (their published documents, see each kind's fixture
 * `CONTRACT.md`) are switched by account profiles.
 *
 * API (all JSON; errors are `{"error": {"code", "message", ...extra}}`; auth `Authorization:
 * Bearer <apiKey>`, 401 `UNAUTHORIZED`; another account's job is `404 NOT_FOUND`):
 * - `POST /api/scrape` `{url, format?, client_ref?, timeout_ms?, webhook?}` (+ `Idempotency-Key`) →
 *   `202 {job_id, status: "queued", created_at}`; 400 `VALIDATION_ERROR`, 403 `TARGET_DISALLOWED`,
 *   409 `IDEMPOTENCY_CONFLICT`, 429 `CONCURRENCY_LIMIT` (or 400 `concurrent-runs-limit-exceeded`).
 * - `GET /api/jobs/:id` → `200` status object (see `JobStatusResponseSchema`).
 * - `GET /api/jobs/:id/logs` → `200 {job_id, logs}`.
 * - `GET /api/jobs/:id/tree` → `200 {job_id, status, tree: {url, final_url, status, pages_fetched,
 *   children}}` (the source names `/tree` as a progress read without its shape; this one is the
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
 *
 * This file builds the server and holds its state (accounts, profiles, jobs, fault rules,
 * counters); every API request runs through `pipeline.ts` (authentication, faults, counting), the
 * routes are `routes/api.ts` and `routes/admin.ts` (on the Fastify instance of `httpApp.ts`:
 * logging, body parsing, error answers), the jobs `jobs.ts` (lifecycle) and
 * `fetchPage.ts` (the real fetch and extraction), the answers' shapes `answers.ts`.
 */
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { SimEventMap, SimEvents } from './events.js';
import { FaultRegistry } from './faults.js';
import { createSimFastify } from './httpApp.js';
import type { JobTransition } from './jobRecord.js';
import { JobManager } from './jobs.js';
import { RequestPipeline } from './pipeline.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerApiRoutes, type IdempotencyEntry } from './routes/api.js';
import {
  PartialProfileSchema,
  ProfileSchema,
  SimOptionsSchema,
  type JobStatus,
  type Profile,
  type ProfileInput,
  type ResolvedSimOptions,
  type SimOptions,
} from './schemas.js';
import { Counters, jobSnapshot, type SimJobSnapshot, type SimStats } from './stats.js';
import { WebhookDispatcher } from './webhooks.js';

export type { SimEventMap, SimEvents, SimResponseEvent } from './events.js';

// ---------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------

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
  injectJob(
    account: string,
    job: { url: string; clientRef?: string | null; format?: 'markdown' | 'text'; timeoutMs?: number },
  ): SimJobSnapshot;
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

const FINAL: JobStatus[] = ['completed', 'failed', 'cancelled'];

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
  private readonly pipeline: RequestPipeline;

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
    this.pipeline = new RequestPipeline({
      opts,
      events: this.events,
      counters: this.counters,
      faults: this.faults,
      jobs: this.jobs,
      keyToAccount: this.keyToAccount,
      profiles: this.profiles,
      closeSignal: this.closeController.signal,
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

  injectJob(
    account: string,
    input: { url: string; clientRef?: string | null; format?: 'markdown' | 'text'; timeoutMs?: number },
  ): SimJobSnapshot {
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
        reject(
          new Error(
            `job ${jobId} did not reach ${[...wanted].join('|')} within ${timeoutMs} ms (status ${job?.status ?? 'gone'})`,
          ),
        );
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
    const app = createSimFastify(this.opts);

    registerApiRoutes(app, {
      pipeline: this.pipeline,
      jobs: this.jobs,
      faults: this.faults,
      counters: this.counters,
      profiles: this.profiles,
      accountKey: this.accountKey,
      idempotency: this.idempotency,
    });
    registerAdminRoutes(app, { adminToken: this.opts.adminToken, faults: this.faults, jobs: this.jobs, sim: this });
    return app;
  }
}
