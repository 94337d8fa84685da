/**
 * The typed client used by backend services, the HTTP API and the CLI. Nothing else talks to
 * Temporal directly.
 *
 * - `startScrape` returns the job reference at once, also for a repeat of the same request
 *   (same account + key: the same workflow, started with `USE_EXISTING` / `REJECT_DUPLICATE`);
 *   the same key with other parameters throws {@link IdempotencyConflictError}.
 * - `getScrape`, `getResult`, `awaitResult`, `cancelScrape`, `resume`, `resolve`, `list`.
 * Every call is scoped to an account: another account's job is {@link JobNotFoundError}, exactly
 * like a missing one (DESIGN.md rule 9).
 */
import { Client, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { CancelledFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { z } from 'zod';
import { fingerprint } from '../lib/hash.js';
import { isFinalState, type JobState } from '../model/states.js';
import { AccountSchema, StartScrapeInputSchema, type StartScrapeInput } from '../model/schemas.js';
import type { CancelReport, JobError, JobView, ScrapeWorkflowInput } from '../model/types.js';
import { IdempotencyConflictStoreError, type JobRow, type ResultPayload, type ResultRow, Store } from '../store/index.js';
import { sanitizeBody } from '../lib/sanitize.js';
import { ScrapeAccount, ScrapeBatchId, ScrapeHost, ScrapeProvider, ScrapeState } from '../workflows/searchAttributes.js';
import type { scrapeWorkflowV2 } from '../workflows/scrape/workflow.js';
import { SCRAPE_WORKFLOW_TYPE, cancelSignal, cancelUpdate, resolveUpdate, stateQuery, wakeSignal, type Resolution, type WakeHint } from '../workflows/scrape/messages.js';
import { listJobsPage, type JobCursor } from '../store/webhooks.js';
import { sql } from 'kysely';
import { IdempotencyConflictError, InvalidInputError, JobNotFoundError, ResultExpiredError, ResultNotReadyError, ScrapeError } from './errors.js';
import { effectivePolicy } from '../providers/policy.js';
import type { Config } from '../config.js';
import { readResultDocuments, type ResultDocumentsPage } from './documents.js';

export * from './errors.js';
export type { StartScrapeInput } from '../model/schemas.js';
export { MAX_DOCUMENTS_PAGE, type ResultDocumentsPage } from './documents.js';

/** Reference to a job: its ID (`scrape:<account>:<key>`) plus the account that owns it. */
export interface JobRef {
  jobId: string;
  account: string;
  key: string;
}

/** A job as a caller sees it (store record + Temporal execution status). Times are UTC ISO-8601. */
export interface JobSummary {
  jobId: string;
  account: string;
  key: string;
  provider: string;
  url: string;
  state: JobState;
  providerStatus: string | null;
  taskId: string | null;
  batchId: string | null;
  createdAt: string;
  updatedAt: string;
  submittedAt: string | null;
  finishedAt: string | null;
  deadlineAt: string | null;
  statusChecks: number;
  lastError: JobError | null;
  /** Temporal execution status of the latest run (`RUNNING`, `COMPLETED`, …), when known. */
  execution?: string;
}

/** The stored result of a completed job: the extracted page plus where and when it was written. */
export interface JobResult extends ResultPayload {
  jobId: string;
  resultId: string;
  provider: string;
  taskId: string;
  /** UTC ISO-8601. */
  writtenAt: string;
  /** End of our retention (UTC ISO-8601), or null for no limit. */
  expiresAt: string | null;
}

/** Outcome of {@link ScrapeClient.cancelScrape}. */
export type CancelResult =
  | { kind: 'observed'; state: JobState; report: CancelReport }
  | { kind: 'requested'; state: JobState; note?: string }
  | { kind: 'already_final'; state: JobState; report?: CancelReport }
  /** The workflow no longer runs but the job never reached a final state (an orphan): resume it or see `orphans`. */
  | { kind: 'not_running'; state: JobState };

/** Options of {@link ScrapeClient}. */
export interface ScrapeClientOptions {
  temporal: Client;
  store: Store;
  taskQueue: string;
  /** Provider used when a request names none. */
  defaultProvider: string;
  /**
   * Providers configured to send webhooks (see `webhookProviderNames` in `config.ts`): jobs on
   * them start with `webhooks: true`, so the workflow polls `webhookSlowdown` times slower and
   * relies on the `wake` signal ({@link ScrapeClient.wake}) for early completion.
   */
  webhookProviders?: readonly string[];
  /**
   * Names of the configured providers (the `providers` of `config.ts`). When given, a request
   * naming another provider is refused with {@link InvalidInputError} before anything starts.
   */
  providers?: readonly string[];
  /** Provider entries whose `poll` defaults (and their kinds') apply to new and resumed jobs (`effectivePolicy`). */
  config?: Pick<Config, 'providers'>;
  /**
   * Workflow type started for new jobs (default `scrapeWorkflowV2`). The benchmarks start the frozen
   * v1 type (`scrapeWorkflow`) to measure before/after figures side by side; nothing else should.
   */
  workflowType?: string;
}

const CursorSchema = z.object({ createdAt: z.string().min(1).max(64), id: z.string().min(1).max(300) }).strict();

function decodeCursor(cursor: string): unknown {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Builds the job ID for (account, key). */
export function jobIdFor(account: string, key: string): string {
  return `scrape:${account}:${key}`;
}

/** Splits a job ID into account and key; undefined when it is not one of ours. */
export function parseJobId(jobId: string): { account: string; key: string } | undefined {
  const m = /^scrape:([A-Za-z0-9._-]{1,64}):([A-Za-z0-9._:-]{1,200})$/.exec(jobId);
  return m ? { account: m[1]!, key: m[2]! } : undefined;
}

/** The typed scrape client. */
export class ScrapeClient {
  constructor(private readonly opts: ScrapeClientOptions) {}

  /** The underlying Temporal client (for tools such as the demo). */
  get temporal(): Client {
    return this.opts.temporal;
  }

  /**
   * Starts a scrape, or returns the existing job for the same (account, key). Returns at once
   * (does not wait for the scrape). Throws {@link InvalidInputError} for bad input and
   * {@link IdempotencyConflictError} when the key was used with other parameters.
   */
  async startScrape(input: StartScrapeInput): Promise<JobRef & { created: boolean }> {
    const parsed = StartScrapeInputSchema.safeParse(input);
    if (!parsed.success) throw new InvalidInputError(`invalid scrape request: ${z.prettifyError(parsed.error)}`, parsed.error.issues);
    const p = parsed.data;
    const provider = p.provider ?? this.opts.defaultProvider;
    if (this.opts.providers && !this.opts.providers.includes(provider)) {
      throw new InvalidInputError(`unknown provider "${provider}"; configured: ${this.opts.providers.join(', ') || 'none'}`, [
        { code: 'custom', path: ['provider'], message: `unknown provider "${provider}"`, input: provider },
      ]);
    }
    const request = { url: p.url, format: p.format, options: p.options };
    const requestHash = fingerprint({ provider, request });
    const key = p.key ?? `r-${requestHash.slice(0, 32)}`;
    const jobId = jobIdFor(p.account, key);
    // The row is evidence only: its secret-named columns and credentials are redacted before it
    // enters the store and workflow input (and so history).
    const row = p.row === undefined ? undefined : (sanitizeBody(p.row) as Record<string, unknown>);
    // Persist the reference before anything else (rule 1). The store is also the key's
    // long-lived record (Temporal forgets closed workflows after the namespace retention): a
    // known key answers from it, and the same key with other parameters is a conflict.
    let created: boolean;
    let existing: JobRow;
    try {
      const r = await this.opts.store.insertJob(
        Store.jobRow({ jobId, account: p.account, key, provider, requestHash, request, row, policy: p.policy, batchId: p.batchId, workflowId: jobId }),
      );
      created = r.inserted;
      existing = r.row;
    } catch (e) {
      if (e instanceof IdempotencyConflictStoreError) throw new IdempotencyConflictError(jobId);
      throw e;
    }
    if (!created && isFinalState(existing.state)) return { jobId, account: p.account, key, created: false };
    const wfInput: ScrapeWorkflowInput = { jobId, account: p.account, key, provider, requestHash, request, row, batchId: p.batchId, policy: effectivePolicy(this.opts.config, provider, p.policy) };
    if (this.opts.webhookProviders?.includes(provider)) wfInput.webhooks = true;
    try {
      await this.opts.temporal.workflow.start<typeof scrapeWorkflowV2>(this.opts.workflowType ?? SCRAPE_WORKFLOW_TYPE, {
        taskQueue: this.opts.taskQueue,
        workflowId: jobId,
        args: [wfInput],
        workflowIdConflictPolicy: 'USE_EXISTING',
        // The store is the registry of keys: a key it did not know is a new job even if Temporal
        // still holds a closed run under this ID from before the store was reset; a key it knows
        // never gets a second run from a start (only `resume` does that).
        workflowIdReusePolicy: created ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
        memo: { requestHash, url: p.url },
        typedSearchAttributes: [
          { key: ScrapeState, value: 'submitting' },
          { key: ScrapeAccount, value: p.account },
          { key: ScrapeProvider, value: provider },
          { key: ScrapeHost, value: new URL(p.url).hostname },
          ...(p.batchId ? [{ key: ScrapeBatchId, value: p.batchId }] : []),
        ],
        staticSummary: `Scrape ${p.url}`,
        staticDetails: `**Account:** ${p.account}\n\n**Key:** ${key}\n\n**Provider:** ${provider}\n\n**Format:** ${p.format}`,
      });
    } catch (e) {
      // A closed run with this key exists (REJECT_DUPLICATE): the repeat returns it, never restarts it.
      if (e instanceof WorkflowExecutionAlreadyStartedError) return { jobId, account: p.account, key, created };
      // Temporal refused the start: leave no row behind that no workflow will ever drive.
      if (created) await this.opts.store.forgetUnstartedJob(jobId);
      const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
      const reason = `${e instanceof Error ? e.message : String(e)}${cause ? `: ${cause.message}` : ''}`;
      if ((cause as { code?: number } | undefined)?.code === 3 /* INVALID_ARGUMENT */) {
        throw new InvalidInputError(`Temporal refused to start job ${jobId} (nothing was started or kept): ${reason}`, []);
      }
      throw new Error(`could not start job ${jobId} (nothing was kept; repeat the request): ${reason}`, { cause: e });
    }
    return { jobId, account: p.account, key, created };
  }

  /** Checks that `jobId` belongs to `account`; throws {@link JobNotFoundError} otherwise. */
  private authorize(account: string, jobId: string): { account: string; key: string } {
    const ok = AccountSchema.safeParse(account).success ? parseJobId(jobId) : undefined;
    if (!ok || ok.account !== account) throw new JobNotFoundError(jobId);
    return ok;
  }

  private async row(account: string, jobId: string): Promise<JobRow> {
    this.authorize(account, jobId);
    const row = await this.opts.store.getJob(jobId);
    if (!row || row.account !== account) throw new JobNotFoundError(jobId);
    return row;
  }

  /**
   * The job as stored, plus the execution status of its workflow. Throws {@link JobNotFoundError}
   * for a missing job or another account's job. A job started but not yet registered by the
   * worker is reported from Temporal alone (state `submitting`).
   */
  async getScrape(account: string, jobId: string): Promise<JobSummary> {
    const ids = this.authorize(account, jobId);
    const row = await this.opts.store.getJob(jobId);
    let execution: string | undefined;
    try {
      const d = await this.opts.temporal.workflow.getHandle(jobId).describe();
      execution = d.status.name;
      if (!row) {
        if (d.typedSearchAttributes.get(ScrapeAccount) !== account) throw new JobNotFoundError(jobId);
        return {
          jobId,
          account,
          key: ids.key,
          provider: d.typedSearchAttributes.get(ScrapeProvider) ?? 'unknown',
          url: String(d.memo?.url ?? ''),
          state: (d.typedSearchAttributes.get(ScrapeState) as JobState | undefined) ?? 'submitting',
          providerStatus: null,
          taskId: null,
          batchId: d.typedSearchAttributes.get(ScrapeBatchId) ?? null,
          createdAt: d.startTime.toISOString(),
          updatedAt: d.startTime.toISOString(),
          submittedAt: null,
          finishedAt: null,
          deadlineAt: null,
          statusChecks: 0,
          lastError: null,
          execution,
        };
      }
    } catch (e) {
      if (!(e instanceof WorkflowNotFoundError)) throw e;
    }
    if (!row || row.account !== account) throw new JobNotFoundError(jobId);
    return { ...summarize(row), execution };
  }

  /** The live workflow view (query `state`); needs a running worker. */
  async getLiveView(account: string, jobId: string): Promise<JobView> {
    this.authorize(account, jobId);
    let view: JobView;
    try {
      view = await this.opts.temporal.workflow.getHandle(jobId).query(stateQuery);
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
      throw e;
    }
    return overlayPolling(view, await this.opts.store.getJob(jobId));
  }

  /**
   * The stored result. Throws {@link ResultNotReadyError} (with the state) when there is none,
   * {@link ResultExpiredError} (with evidence that the job ran) after retention purged it. Never
   * restarts anything.
   */
  async getResult(account: string, jobId: string): Promise<JobResult> {
    const row = await this.row(account, jobId);
    const res = await this.opts.store.getResultForJob(jobId);
    if (row.state === 'expired' || res?.purged_at) {
      throw new ResultExpiredError(jobId, {
        state: row.state,
        taskId: row.task_id,
        provider: row.provider,
        finishedAt: row.finished_at,
        resultWrittenAt: res?.written_at ?? null,
        purgedAt: res?.purged_at ?? null,
        title: res?.title ?? null,
      });
    }
    if (!res) throw new ResultNotReadyError(jobId, row.state);
    return toResult(res);
  }

  /**
   * One page of the documents of the job's result (crawl pages, dataset items, batch entries):
   * `offset` ≥ 0 (default 0), `limit` 1..1000 (default 100). Throws {@link JobNotFoundError} (missing
   * or another account's job), {@link ResultNotReadyError}, {@link ResultExpiredError}.
   */
  async getResultDocuments(account: string, jobId: string, page: { offset?: number; limit?: number } = {}): Promise<ResultDocumentsPage> {
    return readResultDocuments(this.opts.store, await this.row(account, jobId), page);
  }

  /**
   * Waits up to `timeoutMs` for the job to end. A client-side timeout is reported as
   * `still_running` with the current summary, never as a failure of the job.
   */
  async awaitResult(account: string, jobId: string, opts: { timeoutMs: number }): Promise<{ status: 'done'; job: JobSummary } | { status: 'still_running'; job: JobSummary }> {
    this.authorize(account, jobId);
    const handle = this.opts.temporal.workflow.getHandle(jobId);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), opts.timeoutMs);
    });
    try {
      const r = await Promise.race([
        handle.result().then(
          () => 'done' as const,
          (e) => {
            if (e instanceof WorkflowFailedError && e.cause instanceof CancelledFailure) return 'done' as const;
            if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
            throw e;
          },
        ),
        timeout,
      ]);
      const job = await this.getScrape(account, jobId);
      return r === 'done' ? { status: 'done', job } : { status: 'still_running', job };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Requests cancellation. With `wait` (default) it uses the `cancel` Update and returns the
   * outcome observed at the provider; without, it sends the `cancel` signal and returns at once.
   * `timeoutMs` (default 120000 ms) bounds the wait: past it (e.g. no worker is running) the
   * request is also sent as a signal, which is durable, and the answer is `requested` with a note.
   * Cancelling a finished job changes nothing and says so (`already_final`); cancelling twice
   * returns the same outcome; a non-final job whose workflow no longer runs is `not_running`.
   * Throws {@link JobNotFoundError} for a job of another account or none.
   */
  async cancelScrape(account: string, jobId: string, opts: { reason?: string; requestedBy?: string; wait?: boolean; timeoutMs?: number } = {}): Promise<CancelResult> {
    // Authorisation: the job must be this account's (a job started but not yet registered by the
    // worker has no store row yet: its workflow answers for it).
    await this.row(account, jobId).catch(async (e) => {
      if (e instanceof JobNotFoundError) {
        await this.getScrape(account, jobId);
        return undefined;
      }
      throw e;
    });
    const handle = this.opts.temporal.workflow.getHandle(jobId);
    const req = { reason: opts.reason ?? 'requested by client', requestedBy: opts.requestedBy ?? account };
    let desc;
    try {
      desc = await handle.describe();
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
      throw e;
    }
    if (desc.status.name !== 'RUNNING') return this.settledCancel(jobId);
    if (opts.wait === false) {
      await handle.signal(cancelSignal, req);
      return { kind: 'requested', state: 'cancelling' };
    }
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      const report = await this.opts.temporal.withAbortSignal(abort.signal, () => handle.executeUpdate(cancelUpdate, { args: [req] }));
      const after = await this.opts.store.getJob(jobId);
      return { kind: 'observed', state: (after?.state ?? 'cancelling') as JobState, report };
    } catch (e) {
      if (e instanceof WorkflowUpdateFailedError || e instanceof WorkflowNotFoundError) return this.settledCancel(jobId);
      if (!abort.signal.aborted) throw e;
      // No outcome in time: the provider may still be confirming (up to the job's
      // cancelConfirmDeadlineMs), or no worker polls the task queue. An Update not yet accepted by
      // a worker is not durable, so the request is also sent as a signal, which is.
      try {
        await handle.signal(cancelSignal, req);
      } catch (se) {
        if (se instanceof WorkflowNotFoundError) return this.settledCancel(jobId); // it ended meanwhile
        throw se;
      }
      const now = await this.opts.store.getJob(jobId);
      return {
        kind: 'requested',
        state: (now?.state ?? 'cancelling') as JobState,
        note: `no observed outcome within ${Math.round(timeoutMs / 1000)} s: the provider may still be confirming, or no worker polls task queue "${this.opts.taskQueue}"; the request is recorded (also as a signal) and the outcome will show in the job's state`,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The answer for a job whose workflow closed before or while a cancel was asked for. */
  private async settledCancel(jobId: string): Promise<CancelResult> {
    const after = await this.opts.store.getJob(jobId);
    const state = (after?.state ?? 'submitting') as JobState;
    if (!isFinalState(state)) return { kind: 'not_running', state };
    return { kind: 'already_final', state, report: await this.lastCancel(jobId, true) };
  }

  /** The most recent cancel recorded in the job's timeline (only one with an outcome when `withOutcome`). */
  private async lastCancel(jobId: string, withOutcome: boolean): Promise<CancelReport | undefined> {
    const events = await this.opts.store.timeline(jobId);
    for (const ev of events.reverse()) {
      const d = ev.detail ? (JSON.parse(ev.detail) as { cancel?: CancelReport }) : undefined;
      if (d?.cancel && (!withOutcome || d.cancel.outcome)) return d.cancel;
    }
    return undefined;
  }

  /**
   * Resumes tracking of a `tracking_interrupted` job: a new run of the same workflow ID that
   * polls the same provider task and never submits. Throws {@link ResultNotReadyError}-style
   * {@link ScrapeError} `conflict` when the job is not resumable.
   */
  async resume(account: string, jobId: string, opts: { policy?: ScrapeWorkflowInput['policy'] } = {}): Promise<JobRef> {
    const row = await this.row(account, jobId);
    const orphan = !isFinalState(row.state) && !(await this.isRunning(jobId));
    if (!orphan && (row.state !== 'tracking_interrupted' || !row.task_id)) {
      throw new ScrapeError('conflict', `job ${jobId} is ${row.state}${row.task_id ? '' : ' without a task ID'}; only tracking_interrupted jobs with a task ID, or non-final jobs whose workflow no longer runs, can be resumed`, { state: row.state });
    }
    const request = JSON.parse(row.options) as { format: 'markdown' | 'text'; options: Record<string, unknown>; policy: ScrapeWorkflowInput['policy'] };
    const wfInput: ScrapeWorkflowInput = {
      jobId,
      account,
      key: row.idem_key,
      provider: row.provider,
      requestHash: row.request_hash,
      request: { url: row.url, format: request.format, options: request.options },
      row: JSON.parse(row.input) as Record<string, unknown>,
      batchId: row.batch_id ?? undefined,
      policy: effectivePolicy(this.opts.config, row.provider, { ...(request.policy ?? {}), ...(opts.policy ?? {}) }),
      // With a task ID: poll it, never submit. Without (an orphan that never got one): the run
      // finds the unanswered submit intent and reconciles before any new submission.
      resume: row.task_id ? { taskId: row.task_id } : undefined,
    };
    if (row.state === 'cancelling') {
      // The previous run stopped mid-cancel: the new run finishes that cancel, never forgets it.
      const requested = await this.lastCancel(jobId, false);
      wfInput.pendingCancel = { reason: requested?.reason ?? 'cancel under way before resume', requestedBy: requested?.requestedBy ?? 'unknown' };
    }
    if (this.opts.webhookProviders?.includes(row.provider)) wfInput.webhooks = true;
    // The interrupted run records `tracking_interrupted` just before it closes: if it is still
    // running, let it close (a resumed run already under way is left alone).
    const handle = this.opts.temporal.workflow.getHandle(jobId);
    if (!orphan && (await this.isRunning(jobId))) {
      const d = await handle.describe();
      if (d.memo?.resumedTaskId === row.task_id) return { jobId, account, key: row.idem_key };
      await Promise.race([handle.result().catch(() => undefined), new Promise((r) => setTimeout(r, 30_000))]);
    }
    try {
      await this.opts.temporal.workflow.start<typeof scrapeWorkflowV2>(this.opts.workflowType ?? SCRAPE_WORKFLOW_TYPE, {
        taskQueue: this.opts.taskQueue,
        workflowId: jobId,
        args: [wfInput],
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        memo: { requestHash: row.request_hash, url: row.url, resumedTaskId: row.task_id ?? undefined },
        typedSearchAttributes: [
          { key: ScrapeState, value: row.task_id ? 'pending' : 'submitting' },
          { key: ScrapeAccount, value: account },
          { key: ScrapeProvider, value: row.provider },
          { key: ScrapeHost, value: new URL(row.url).hostname },
          ...(row.batch_id ? [{ key: ScrapeBatchId, value: row.batch_id }] : []),
        ],
        staticSummary: `Scrape ${row.url} (resumed${row.task_id ? `, task ${row.task_id}` : ''})`,
        staticDetails: `**Account:** ${account}\n\n**Key:** ${row.idem_key}\n\n**Provider:** ${row.provider}\n\n**Resumed task:** ${row.task_id}`,
      });
    } catch (e) {
      if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e; // already being tracked again
    }
    return { jobId, account, key: row.idem_key };
  }

  /**
   * Resolves a job waiting in `unknown` (provider without idempotency or list): adopt a task ID
   * the operator found, or resubmit under the same key. Returns the workflow's view afterwards.
   * Throws {@link JobNotFoundError} (missing or another account's job) and {@link ScrapeError}
   * `conflict` when the job is not in `unknown` or the task ID already belongs to another job.
   */
  async resolve(account: string, jobId: string, resolution: Resolution): Promise<JobView> {
    const row = await this.row(account, jobId);
    if (row.state !== 'unknown') {
      throw new ScrapeError('conflict', `cannot resolve job ${jobId}: it is ${row.state}; only a job waiting in unknown can be resolved`, { state: row.state });
    }
    if ('taskId' in resolution) {
      const owner = await this.opts.store.getJobByTask(row.provider, resolution.taskId);
      if (owner && owner.id !== jobId) {
        throw new ScrapeError('conflict', `cannot resolve job ${jobId}: task ${resolution.taskId} already belongs to another job`, { state: row.state });
      }
    }
    try {
      return await this.opts.temporal.workflow.getHandle(jobId).executeUpdate(resolveUpdate, { args: [resolution] });
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
      if (e instanceof WorkflowUpdateFailedError) throw new ScrapeError('conflict', `cannot resolve job ${jobId}: ${e.cause?.message ?? e.message}`);
      throw e;
    }
  }

  private async isRunning(jobId: string): Promise<boolean> {
    try {
      return (await this.opts.temporal.workflow.getHandle(jobId).describe()).status.name === 'RUNNING';
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return false;
      throw e;
    }
  }

  /** The job's incident records (sanitised provider exchanges that ended or explain it), oldest first. */
  async incidents(account: string, jobId: string) {
    await this.row(account, jobId);
    const parse = (v: string | null) => (v === null ? null : (JSON.parse(v) as unknown));
    return (await this.opts.store.incidents(jobId)).map((i) => ({
      at: i.at,
      phase: i.phase,
      kind: i.kind,
      endpoint: i.endpoint,
      httpStatus: i.http_status,
      code: i.code,
      message: i.message,
      request: parse(i.request),
      response: parse(i.response),
      headers: parse(i.headers),
    }));
  }

  /** Open orphan findings of the account (from the maintenance schedule), newest first. */
  async orphans(account: string) {
    return (await this.opts.store.listOrphans(account)).map((o) => ({
      jobId: o.job_id,
      kind: o.kind,
      state: o.state,
      url: o.url,
      detail: o.detail,
      suggestion: o.suggestion,
      firstSeenAt: o.first_seen_at,
      lastSeenAt: o.last_seen_at,
    }));
  }

  /**
   * Cancels every non-final job of a batch through the same per-job path (the `cancel` Update,
   * or the signal with `wait: false`), `concurrency` at a time (default 16), and returns each
   * job's outcome. Safe to repeat: a finished job answers `already_final`.
   */
  async cancelBatch(account: string, batchId: string, opts: { reason?: string; requestedBy?: string; wait?: boolean; timeoutMs?: number; concurrency?: number } = {}): Promise<{ jobId: string; result: CancelResult | { kind: 'error'; message: string } }[]> {
    const jobs = await this.opts.store.listJobs({ account, batchId, limit: 100_000 });
    const out: { jobId: string; result: CancelResult | { kind: 'error'; message: string } }[] = [];
    let next = 0;
    const worker = async () => {
      for (;;) {
        const job = jobs[next++];
        if (!job) return;
        try {
          out.push({ jobId: job.id, result: await this.cancelScrape(account, job.id, { reason: opts.reason ?? `batch ${batchId} cancelled`, requestedBy: opts.requestedBy, wait: opts.wait, timeoutMs: opts.timeoutMs }) });
        } catch (e) {
          out.push({ jobId: job.id, result: { kind: 'error', message: (e as Error).message } });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 16, Math.max(jobs.length, 1)) }, worker));
    return out.sort((a, b) => a.jobId.localeCompare(b.jobId));
  }

  /** The account's jobs, newest first, filtered by state and batch (limit default 100, max 1000). */
  async list(account: string, filter: { states?: string[]; batchId?: string; limit?: number } = {}): Promise<JobSummary[]> {
    if (!AccountSchema.safeParse(account).success) return [];
    const rows = await this.opts.store.listJobs({ account, states: filter.states, batchId: filter.batchId, limit: Math.min(filter.limit ?? 100, 1000) });
    return rows.map(summarize);
  }

  /**
   * Wakes the job's workflow with a provider hint (a verified webhook event): it checks the
   * provider's status at once instead of at its next timer, and reads the result from the
   * provider itself (the hint is never trusted for the result). Not scoped to an account: the
   * caller (the webhook receiver) has matched the event to the job by the provider's task ID.
   * Returns `signalled`, or `not_running` when the workflow is closed or absent.
   */
  async wake(jobId: string, hint: WakeHint): Promise<'signalled' | 'not_running'> {
    try {
      await this.opts.temporal.workflow.getHandle(jobId).signal(wakeSignal, hint);
      return 'signalled';
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return 'not_running';
      throw e;
    }
  }

  /**
   * One page of the account's jobs, newest first, filtered by state and batch. `limit` 1..1000
   * (default 100); `cursor` is the opaque `nextCursor` of the previous page. Throws
   * {@link InvalidInputError} for a malformed cursor.
   */
  async listPage(account: string, filter: { states?: string[]; batchId?: string; limit?: number; cursor?: string } = {}): Promise<{ jobs: JobSummary[]; nextCursor: string | null }> {
    if (!AccountSchema.safeParse(account).success) return { jobs: [], nextCursor: null };
    const limit = Math.max(1, Math.min(filter.limit ?? 100, 1000));
    let after: JobCursor | undefined;
    if (filter.cursor) {
      const parsed = CursorSchema.safeParse(decodeCursor(filter.cursor));
      if (!parsed.success) throw new InvalidInputError('invalid cursor: pass the next_cursor of the previous page unchanged', parsed.error.issues);
      after = parsed.data;
    }
    const page = await listJobsPage(this.opts.store, { account, states: filter.states, batchId: filter.batchId, limit, after });
    const last = page.rows[page.rows.length - 1];
    const nextCursor = page.more && last ? Buffer.from(JSON.stringify({ createdAt: last.created_at, id: last.id })).toString('base64url') : null;
    return { jobs: page.rows.map(summarize), nextCursor };
  }

  /**
   * Reachability of the two services the client needs: Temporal (`GetSystemInfo`) and the store
   * (`select 1`), each bounded by `timeoutMs` (default 2000 ms). Never throws: a failure or a
   * timeout is reported as `unreachable` (no error text: it could name internal hosts).
   */
  async health(timeoutMs = 2_000): Promise<{ temporal: 'ok' | 'unreachable'; store: 'ok' | 'unreachable' }> {
    const bounded = async (fn: () => Promise<unknown>): Promise<'ok' | 'unreachable'> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([fn(), new Promise((_r, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)))]);
        return 'ok';
      } catch {
        return 'unreachable';
      } finally {
        clearTimeout(timer);
      }
    };
    const [temporal, store] = await Promise.all([
      bounded(() => this.opts.temporal.workflowService.getSystemInfo({})),
      bounded(() => sql`select 1`.execute(this.opts.store.db)),
    ]);
    return { temporal, store };
  }

  /** The job's timeline (store events), oldest first. */
  async timeline(account: string, jobId: string) {
    await this.row(account, jobId);
    return (await this.opts.store.timeline(jobId)).map((e) => ({ at: e.at, type: e.type, state: e.state, detail: e.detail ? (JSON.parse(e.detail) as unknown) : null }));
  }
}

/** Maps a store row to a {@link JobSummary}. */
export function summarize(row: JobRow): JobSummary {
  return {
    jobId: row.id,
    account: row.account,
    key: row.idem_key,
    provider: row.provider,
    url: row.url,
    state: row.state as JobState,
    providerStatus: row.provider_status,
    taskId: row.task_id,
    batchId: row.batch_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    submittedAt: row.submitted_at,
    finishedAt: row.finished_at,
    deadlineAt: row.deadline_at,
    statusChecks: Number(row.status_checks),
    lastError: row.last_error ? (JSON.parse(row.last_error) as JobError) : null,
  };
}

function toResult(r: ResultRow): JobResult {
  return {
    jobId: r.job_id,
    resultId: r.id,
    provider: r.provider,
    taskId: r.task_id,
    url: r.url,
    finalUrl: r.final_url,
    httpStatus: r.http_status,
    title: r.title,
    byline: r.byline,
    excerpt: r.excerpt,
    lang: r.lang,
    siteName: r.site_name,
    publishedTime: r.published_time,
    text: r.text,
    markdown: r.markdown,
    links: r.links ? (JSON.parse(r.links) as string[]) : [],
    contentLength: r.content_length,
    writtenAt: r.written_at,
    expiresAt: r.expires_at,
  };
}

export { isFinalState };

/**
 * The workflow's view with what its polling activity recorded since it last reported (workflow v2
 * checks inside one retried activity and tells the workflow only the outcome): the provider's
 * latest status (raw and normalised), the checks made so far and a failing check's error. Only
 * for a job still being tracked; a final view is the workflow's own.
 */
function overlayPolling(view: JobView, row: JobRow | undefined): JobView {
  if (!row || isFinalState(view.state) || isFinalState(row.state)) return view;
  const checks = Number(row.status_checks);
  if (checks <= view.statusChecks && !row.status_errors) return view;
  const out: JobView = { ...view, statusChecks: Math.max(view.statusChecks, checks) };
  if (row.provider_status) out.providerStatus = row.provider_status;
  if (row.provider_state) out.providerState = row.provider_state as JobView['providerState'];
  if (row.status_errors && row.last_error) out.lastError = JSON.parse(row.last_error) as JobView['lastError'];
  return out;
}
