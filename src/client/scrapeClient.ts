/**
 * The typed scrape client used by backend services, the HTTP API and the CLI. Nothing else talks
 * to Temporal about jobs.
 *
 * Every call is scoped to an account: another account's job is {@link JobNotFoundError}, exactly
 * like a missing one (authorisation is by account, not by ID secrecy). Reads that the store can answer (`getScrape` without
 * `execution`, `getResult`, `list`, `timeline`, …) never contact Temporal, so they work, and
 * answer at once, while Temporal is unreachable.
 */
import { Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { StartScrapeInput } from '../model/schemas.js';
import type { JobView, ScrapeWorkflowInput } from '../model/types.js';
import type { BinaryBody } from '../store/index.js';
import { stateQuery, wakeSignal, type Resolution, type WakeHint } from '../model/messages.js';
import { ScrapeAccount } from '../workflows/searchAttributes.js';
import { BudgetsClient } from './budgets.js';
import { cancelBatch, type BatchCancelOutcome, type CancelResult } from './cancel.js';
import { cancelReopening, resumeJob } from './reopen.js';
import { InvalidInputError, JobNotFoundError } from './errors.js';
import { authorize } from './ids.js';
import { listJobs, listJobsPage } from './lists.js';
import { executionSummary, overlayPolling } from './live.js';
import { resolveJob } from './resolve.js';
import { readResult } from './results.js';
import { startScrape, type JobRef, type StartContext, type StartExtras } from './start.js';
import { readResultDocuments, type ResultDocumentsPage } from './documents.js';
import {
  incidentView,
  orphanView,
  ownedRow,
  summarize,
  withResultFacts,
  timelineView,
  type JobResult,
  type JobSummary,
} from './views.js';

/** The longest wait a Node timer keeps, in ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Options of {@link ScrapeClient} (see {@link StartContext} for `pollDefaults` and `workflowType`).
 * `temporal` may use a lazy connection (`Connection.lazy`): store-only reads never use it.
 * `webhookProviders`: providers configured to send webhooks (`webhookProviderNames` in
 * `config.ts`): jobs on them start with `webhooks: true`, so the workflow polls `webhookSlowdown`
 * times slower and relies on the `wake` signal ({@link ScrapeClient.wake}) for early completion.
 * `providers`: the configured provider names; a request naming another is refused with
 * {@link InvalidInputError} before anything starts.
 */
export type ScrapeClientOptions = StartContext;

/** The typed scrape client. */
export class ScrapeClient {
  private budgetsClient?: BudgetsClient;

  constructor(private readonly opts: ScrapeClientOptions) {}

  /** The accounts' budgets, policies and job costs (docs/budgets.md). */
  get budgets(): BudgetsClient {
    return (this.budgetsClient ??= new BudgetsClient(this.opts));
  }

  /** The underlying Temporal client (for tools such as the demo). */
  get temporal(): Client {
    return this.opts.temporal;
  }

  /**
   * Starts a scrape, or returns the existing job for the same (account, key); returns at once.
   * See `start.ts` ({@link startScrape}) for the key, the URL normalisation and the errors
   * ({@link InvalidInputError}, {@link IdempotencyConflictError}).
   */
  async startScrape(input: StartScrapeInput, extras: StartExtras = {}): Promise<JobRef & { created: boolean }> {
    return startScrape(this.opts, input, extras);
  }

  /**
   * The job as stored. With `execution` (default true) also the execution status of its workflow
   * (one Temporal call), and a job whose row is missing is looked up in Temporal; with
   * `execution: false` only the store is read. Throws {@link JobNotFoundError} for a missing job
   * or another account's job.
   */
  async getScrape(account: string, jobId: string, opts: { execution?: boolean } = {}): Promise<JobSummary> {
    const ids = authorize(account, jobId);
    const row = await this.opts.store.jobs.get(jobId);
    if (opts.execution === false) {
      if (!row || row.account !== account) throw new JobNotFoundError(jobId);
      return this.withContentNote(summarize(row));
    }
    let execution: string | undefined;
    try {
      const d = await this.opts.temporal.workflow.getHandle(jobId).describe();
      execution = d.status.name;
      if (!row) {
        if (d.typedSearchAttributes.get(ScrapeAccount) !== account) throw new JobNotFoundError(jobId);
        return executionSummary(d, jobId, account, ids.key, execution);
      }
    } catch (e) {
      if (!(e instanceof WorkflowNotFoundError)) throw e;
    }
    if (!row || row.account !== account) throw new JobNotFoundError(jobId);
    return this.withContentNote({ ...summarize(row), execution });
  }

  /** `job` with the note of its stored result (when the job completed with empty or partial content) and the provider's count of its documents. */
  private async withContentNote(job: JobSummary): Promise<JobSummary> {
    if (job.state !== 'completed' && job.state !== 'expired') return job;
    return withResultFacts(job, await this.opts.store.results.forJob(job.jobId));
  }

  /**
   * The live workflow view (query `state`; needs a running worker), with what the polling activity
   * recorded since it last reported ({@link overlayPolling}).
   */
  async getLiveView(account: string, jobId: string): Promise<JobView> {
    authorize(account, jobId);
    let view: JobView;
    try {
      view = await this.opts.temporal.workflow.getHandle(jobId).query(stateQuery);
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
      throw e;
    }
    return overlayPolling(view, await this.opts.store.jobs.get(jobId));
  }

  /**
   * One page of the documents of the job's result (crawl pages, dataset items, batch entries):
   * `offset` ≥ 0 (default 0), `limit` 1..1000 (default 100). Throws {@link JobNotFoundError} (missing
   * or another account's job), {@link ResultNotReadyError}, {@link ResultExpiredError}.
   */
  async getResultDocuments(
    account: string,
    jobId: string,
    page: { offset?: number; limit?: number } = {},
  ): Promise<ResultDocumentsPage> {
    return readResultDocuments(this.opts.store, await ownedRow(this.opts.store, account, jobId), page);
  }

  /**
   * The stored result. Throws {@link ResultNotReadyError} (with the state) when there is none,
   * {@link ResultExpiredError} (with evidence that the job ran) after retention purged it. Never
   * restarts anything.
   */
  async getResult(account: string, jobId: string): Promise<JobResult> {
    return readResult(this.opts.store, account, jobId);
  }

  /**
   * The binary body of the job's stored result (a PDF, an image): bytes, media type, size (bytes)
   * and hex SHA-256; of document `seq` (0-based) of a multi-document result when given. Null when
   * the result (or document) is a text page. Throws {@link JobNotFoundError} (missing or another
   * account's job), {@link ResultNotReadyError}, {@link ResultExpiredError} as {@link getResult}.
   */
  async getResultBody(account: string, jobId: string, opts: { seq?: number } = {}): Promise<BinaryBody | null> {
    await this.getResult(account, jobId);
    return (await this.opts.store.results.body(jobId, opts.seq)) ?? null;
  }

  /**
   * Waits up to `timeoutMs` for the job to end (its workflow to close, however it closed). A
   * client-side timeout is reported as `still_running` with the current summary, never as a
   * failure of the job; the wait's long poll is then aborted, so nothing of it outlives the call
   * (closing the connection afterwards is safe). Throws {@link JobNotFoundError} when no workflow
   * has that ID.
   */
  async awaitResult(
    account: string,
    jobId: string,
    opts: { timeoutMs: number },
  ): Promise<{ status: 'done'; job: JobSummary } | { status: 'still_running'; job: JobSummary }> {
    authorize(account, jobId);
    const handle = this.opts.temporal.workflow.getHandle(jobId);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), opts.timeoutMs);
    let done: boolean;
    try {
      await this.opts.temporal.withAbortSignal(abort.signal, () => handle.result());
      done = true;
    } catch (e) {
      if (abort.signal.aborted) done = false;
      else if (e instanceof WorkflowNotFoundError) throw new JobNotFoundError(jobId);
      // Failed, cancelled, terminated or timed out: the workflow ended; the store says how.
      else if (e instanceof WorkflowFailedError) done = true;
      else throw e;
    } finally {
      clearTimeout(timer);
    }
    const job = await this.getScrape(account, jobId);
    return done ? { status: 'done', job } : { status: 'still_running', job };
  }

  /**
   * Requests cancellation. With `wait` (default) it uses the `cancel` Update and returns the
   * outcome observed at the provider; without, it sends the `cancel` signal and returns at once.
   * `timeoutMs` (default 120000 ms) bounds the whole call, every wait included: past it (e.g. no
   * worker is running) the request is also sent as a signal, which is durable, and the answer is
   * `requested` with a note.
   * Cancelling a finished job (final in the store, even while its workflow is still closing)
   * changes nothing and says so (`already_final`), except one whose task may still run
   * (`tracking_interrupted`, or `cancel_unconfirmed`, with no final answer from the provider): it is
   * resumed to ask the provider to stop that task (a {@link ScrapeError} `conflict` when the run that
   * made it final has not closed within the timeout); cancelling a cancelled job twice returns the same
   * outcome; a non-final job whose workflow no longer runs is `not_running`.
   * Throws {@link JobNotFoundError} for a job of another account or none, and
   * {@link InvalidInputError} for a `timeoutMs` that is not a finite number of ms up to 2^31 − 1.
   */
  async cancelScrape(
    account: string,
    jobId: string,
    opts: { reason?: string; requestedBy?: string; wait?: boolean; timeoutMs?: number } = {},
  ): Promise<CancelResult> {
    // A timer cannot wait past 2^31 − 1 ms (it would fire at once), nor for NaN.
    const t = opts.timeoutMs;
    if (t !== undefined && !(Number.isFinite(t) && t <= MAX_TIMER_MS))
      throw new InvalidInputError(`timeoutMs must be a number of ms up to ${MAX_TIMER_MS}, not ${t}`, [
        { path: ['timeoutMs'], message: 'not a finite number of ms within the timer range' },
      ]);
    // Authorisation: the job must be this account's (a job started but not yet registered by the
    // worker has no store row yet: its workflow answers for it).
    const row = await ownedRow(this.opts.store, account, jobId).catch(async (e) => {
      if (e instanceof JobNotFoundError) {
        await this.getScrape(account, jobId);
        return undefined;
      }
      throw e;
    });
    return cancelReopening(this.opts, account, jobId, row, opts);
  }

  /**
   * Cancels every non-final job of a batch through the same per-job path (the `cancel` Update,
   * or the signal with `wait: false`), `concurrency` at a time (default 16), and returns each
   * job's outcome. Safe to repeat: a finished job answers `already_final`, except one whose task may
   * still run (`tracking_interrupted`, `cancel_unconfirmed`), whose provider is asked again.
   */
  async cancelBatch(
    account: string,
    batchId: string,
    opts: { reason?: string; requestedBy?: string; wait?: boolean; timeoutMs?: number; concurrency?: number } = {},
  ): Promise<BatchCancelOutcome[]> {
    return cancelBatch(
      this.opts.store,
      account,
      batchId,
      (jobId) =>
        this.cancelScrape(account, jobId, {
          reason: opts.reason ?? `batch ${batchId} cancelled`,
          requestedBy: opts.requestedBy,
          wait: opts.wait,
          timeoutMs: opts.timeoutMs,
        }),
      opts.concurrency,
    );
  }

  /**
   * Resumes tracking of a `tracking_interrupted` job: a new run of the same workflow ID that
   * polls the same provider task and never submits (also an orphan: a non-final job whose
   * workflow no longer runs). Throws {@link ScrapeError} `conflict` when the job is not resumable.
   */
  async resume(account: string, jobId: string, opts: { policy?: ScrapeWorkflowInput['policy'] } = {}): Promise<JobRef> {
    return resumeJob(this.opts, await ownedRow(this.opts.store, account, jobId), opts);
  }

  /**
   * Resolves a job waiting in `unknown` (provider without idempotency or list): adopt a task ID
   * the operator found, or resubmit under the same key. Returns the workflow's view afterwards.
   * Throws {@link JobNotFoundError} (missing or another account's job) and {@link ScrapeError}
   * `conflict` when the job is not in `unknown` or the task ID already belongs to another job.
   */
  async resolve(account: string, jobId: string, resolution: Resolution): Promise<JobView> {
    return resolveJob(this.opts, account, jobId, resolution);
  }

  /** The job's incident records (sanitised provider exchanges that ended or explain it), oldest first. */
  async incidents(account: string, jobId: string) {
    await ownedRow(this.opts.store, account, jobId);
    return (await this.opts.store.findings.incidents(jobId)).map(incidentView);
  }

  /** Open orphan findings of the account (from the maintenance schedule), newest first. */
  async orphans(account: string) {
    return (await this.opts.store.findings.orphans(account)).map(orphanView);
  }

  /** The job's timeline (store events), oldest first. */
  async timeline(account: string, jobId: string) {
    await ownedRow(this.opts.store, account, jobId);
    return (await this.opts.store.findings.timeline(jobId)).map(timelineView);
  }

  /** The account's jobs, newest first, filtered by state and batch (limit default 100, max 1000). */
  async list(
    account: string,
    filter: { states?: string[]; batchId?: string; limit?: number } = {},
  ): Promise<JobSummary[]> {
    return listJobs(this.opts.store, account, filter);
  }

  /**
   * One page of the account's jobs, newest first, filtered by state and batch. `limit` 1..1000
   * (default 100); `cursor` is the opaque `nextCursor` of the previous page. Throws
   * {@link InvalidInputError} for a malformed cursor.
   */
  async listPage(
    account: string,
    filter: { states?: string[]; batchId?: string; limit?: number; cursor?: string } = {},
  ): Promise<{ jobs: JobSummary[]; nextCursor: string | null }> {
    return listJobsPage(this.opts.store, account, filter);
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
   * Reachability of the two services the client needs: Temporal (`GetSystemInfo`) and the store
   * ({@link Store.ping}), each bounded by `timeoutMs` (default 2000 ms). Never throws: a failure or
   * a timeout is reported as `unreachable` (no error text: it could name internal hosts).
   */
  async health(timeoutMs = 2_000): Promise<{ temporal: 'ok' | 'unreachable'; store: 'ok' | 'unreachable' }> {
    const bounded = async (fn: () => Promise<unknown>): Promise<'ok' | 'unreachable'> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          fn(),
          new Promise((_r, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
        ]);
        return 'ok';
      } catch {
        return 'unreachable';
      } finally {
        clearTimeout(timer);
      }
    };
    const [temporal, store] = await Promise.all([
      bounded(() => this.opts.temporal.workflowService.getSystemInfo({})),
      bounded(() => this.opts.store.ping()),
    ]);
    return { temporal, store };
  }
}
