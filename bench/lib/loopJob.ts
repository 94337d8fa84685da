/**
 * The steps of one scrape without Temporal, shared by the two hand-written orchestrations the
 * throughput benchmark compares the product with — the plain in-process loop (`baseline.ts`) and
 * BullMQ on Redis (`bullmqMain.ts`) — so that both make exactly the same provider and store calls
 * and differ only in what drives them (`setTimeout` versus delayed queue jobs):
 *
 * | product (client, workflow activities)                        | here                                     |
 * |---------------------------------------------------------------|------------------------------------------|
 * | `ScrapeClient.startScrape`: `store.jobs.insert`                 | {@link LoopJob.insert}: the same row       |
 * | `submitJob`: register the job, its submit intent, the submit, its task ID | {@link LoopJob.submit}: the same calls |
 * | one status check (`checkOnce`, in the submit's fast path or `trackStatus`): status GET, `recordCheck` | {@link LoopJob.check}: the same calls |
 * | the final check: `results.writeOnce` from the status answer     | the same (a result GET only when the answer carries no result) |
 *
 * The provider is the real `ReferenceAdapter` behind the real shared `KeyLimiter`, from the same
 * `ProviderRegistry` the worker builds; the wait between checks is the product's
 * `scheduleDelay` (`src/model/schedule.ts`) on the same policy. What these loops do not have is
 * what Temporal adds: durability of the loop itself, history, visibility, cancellation, retries of
 * failed calls with a budget.
 */
import { providerKeys } from '../../src/activities/index.js';
import { jobIdFor } from '../../src/client/index.js';
import type { Config } from '../../src/config.js';
import { fingerprint } from '../../src/lib/hash.js';
import { scheduleDelay, type PollSchedule } from '../../src/model/schedule.js';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../../src/model/types.js';
import type { ProviderRegistry } from '../../src/providers/registry.js';
import { DEFAULT_RESULT_LIMITS } from '../../src/providers/adapter.js';
import { Store } from '../../src/store/index.js';
import { sql } from 'kysely';

/** One job: our account, its key, the page to scrape. */
export interface LoopJobInput {
  account: string;
  key: string;
  url: string;
}

/** What the steps use: the store and providers of the process, the provider entry, the policy overrides. */
export interface LoopDeps {
  store: Store;
  providers: ProviderRegistry;
  config: Config;
  provider: string;
  policy: Partial<PollPolicy>;
}

/** What a status check decided: the job is final (its state), or the next check is due after `delayMs`. */
export type CheckOutcome =
  { kind: 'final'; state: 'completed' | 'failed' | 'cancelled' } | { kind: 'wait'; delayMs: number };

/** The steps of one job (see the module comment). */
export interface LoopJob {
  jobId: string;
  /** The client's part: inserts the job row. */
  insert(): Promise<void>;
  /** Registers the job, submits it and records the task ID; returns the task ID and the wait before check 1 (ms). */
  submit(): Promise<{ taskId: string; delayMs: number }>;
  /**
   * Status check number `n + 1` (after `n` made) of `taskId`: records it; on `completed` writes the
   * result once (from the answer, or one result read); on `failed`/`cancelled` moves the job there.
   */
  check(taskId: string, n: number): Promise<CheckOutcome>;
}

/** The product's poll schedule of `policy` (no webhooks: slowdown 1). */
export function loopSchedule(policy: Partial<PollPolicy>): PollSchedule {
  const p: PollPolicy = { ...DEFAULT_POLL_POLICY, ...policy };
  return {
    initialDelayMs: p.initialDelayMs,
    maxDelayMs: p.maxDelayMs,
    multiplier: p.multiplier,
    jitter: p.jitter,
    slowdown: 1,
  };
}

/** The steps of `job` over `deps`. */
export function loopJob(deps: LoopDeps, job: LoopJobInput): LoopJob {
  const { store, providers, provider } = deps;
  // The hand-written loop's own bookkeeping: an intent before the submit, a count per check.
  const nowIso = () => new Date().toISOString();
  const rows = {
    recordSubmitIntent: (id: string) =>
      store.db
        .updateTable('jobs')
        .set({ submit_intent_at: nowIso(), submit_attempts: sql`submit_attempts + 1`, updated_at: nowIso() })
        .where('id', '=', id)
        .where('task_id', 'is', null)
        .execute(),
    recordStatusCheck: (id: string, providerStatus: string) =>
      store.db
        .updateTable('jobs')
        .set({
          provider_status: providerStatus,
          last_checked_at: nowIso(),
          status_checks: sql`status_checks + 1`,
          status_errors: 0,
          updated_at: nowIso(),
        })
        .where('id', '=', id)
        .execute(),
  };
  const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, ...deps.policy };
  const schedule = loopSchedule(deps.policy);
  const request = { url: job.url, format: 'markdown' as const, options: {} };
  const requestHash = fingerprint({ provider, request });
  const jobId = jobIdFor(job.account, job.key);
  const row = (extra: { deadlineAt?: string } = {}, secrets: readonly string[] = []) =>
    Store.jobRow(
      {
        jobId,
        account: job.account,
        key: job.key,
        provider,
        requestHash,
        request,
        policy: deps.policy,
        workflowId: jobId,
        ...extra,
      },
      secrets,
    );
  const resolved = () => providers.resolve(provider, job.account);
  return {
    jobId,
    async insert() {
      await store.jobs.insert(row());
    },
    async submit() {
      const secrets = providers.allSecrets();
      const registered = await store.jobs.register(
        row({ deadlineAt: new Date(Date.now() + policy.deadlineMs).toISOString() }, secrets),
      );
      await store.findings.appendEvent(jobId, 'registered', registered.state, { workflowId: jobId, url: job.url });
      const r = resolved();
      await rows.recordSubmitIntent(jobId);
      const accepted = await r.limiter.run(
        () => r.adapter.submit(request, { apiKey: r.apiKey, secrets, ...providerKeys(job.account, job.key) }),
        5_000,
        0,
      );
      const taskId = await store.jobs.recordTaskId(jobId, accepted.taskId, accepted.providerStatus, 'submit');
      return { taskId, delayMs: scheduleDelay(schedule, 0, Math.random()) };
    },
    async check(taskId, n) {
      const secrets = providers.allSecrets();
      const r = resolved();
      const obs = await r.limiter.run(() => r.adapter.status(taskId, { apiKey: r.apiKey, secrets }), 5_000, 0);
      await rows.recordStatusCheck(jobId, obs.providerStatus);
      if (obs.state === 'completed') {
        const payload =
          obs.result ??
          (await r.limiter.run(
            () =>
              r.adapter.result(taskId, {
                apiKey: r.apiKey,
                secrets,
                url: job.url,
                request,
                limits: DEFAULT_RESULT_LIMITS,
              }),
            5_000,
            0,
          ));
        await store.results.writeOnce(jobId, provider, taskId, payload, deps.config.resultRetentionMs);
        return { kind: 'final', state: 'completed' };
      }
      if (obs.state === 'failed' || obs.state === 'cancelled') {
        await store.jobs.transition(jobId, obs.state);
        return { kind: 'final', state: obs.state };
      }
      return { kind: 'wait', delayMs: scheduleDelay(schedule, n + 1, Math.random()) };
    },
  };
}
