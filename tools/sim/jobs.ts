/**
 * Jobs of the reference provider: storage, lifecycle and the runner that moves each job through
 * it (the fetch and extraction of the target are `fetchPage.ts`'s).
 *
 * Lifecycle (source: seeds `002_*`: queued → running → completed | failed | cancelled):
 * created `queued`; after the profile's `queueDelayMs` (ms) → `running` (1 credit); the target is
 * fetched with the global `fetch` (redirects followed, per-job `timeout_ms`, a connection-level
 * failure retried twice with backoff), extracted with
 * {@link extractPage}; the job stays `running` at least `minRunMs` (ms); then `completed` (also
 * when the target answered 4xx/5xx) or `failed` (`FETCH_FAILED` on network error / timeout /
 * oversize body, `EXTRACTION_FAILED` when no document can be built, or a `fail_job` fault's code).
 * A final job is deleted `resultTtlMs` (ms) after `finished_at` (or earlier by a `forget` fault);
 * deletion is applied lazily on every access and by a periodic sweep. A job's record and the
 * transition notice are `jobRecord.ts`'s.
 */
import { randomUUID } from 'node:crypto';
import { fetchAndExtract } from './fetchPage.js';
import { isActive, type JobRecord, type JobTransition, type NewJob } from './jobRecord.js';
import type { JobError, JobLog, JobResult, JobStatus } from './schemas.js';
import { isAbortError, iso, runTimeMs, sleep, waitForAbort } from './util.js';

/** Dependencies of the {@link JobManager}. */
export interface JobManagerDeps {
  /** Aborted when the sim closes: every runner and timer stops. */
  closeSignal: AbortSignal;
  /** Largest target body read, in bytes. */
  maxBodyBytes: number;
  userAgent: string;
  onTransition: (t: JobTransition) => void;
}

/**
 * Owns every job of one sim: the visible set (what the API can see) and the ledger (every job
 * created since the last reset, for stats, including deleted ones).
 */
export class JobManager {
  private readonly visible = new Map<string, JobRecord>();
  private readonly ledger: JobRecord[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private seq = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly deps: JobManagerDeps) {
    this.sweeper = setInterval(() => this.sweep(), 30_000);
    this.sweeper.unref();
  }

  /** Create a job (status `queued`) and start its runner. */
  create(p: NewJob): JobRecord {
    const now = Date.now();
    const job: JobRecord = {
      id: `job_${randomUUID()}`,
      seq: ++this.seq,
      account: p.account,
      profile: p.profile,
      url: p.url,
      format: p.format,
      clientRef: p.clientRef,
      idempotencyKey: p.idempotencyKey,
      timeoutMs: p.timeoutMs,
      status: 'queued',
      createdAt: now,
      startedAt: null,
      finishedAt: null,
      pagesFetched: 0,
      creditsUsed: 0,
      result: undefined,
      error: undefined,
      logs: [],
      statusRequestTimes: [],
      cancelRequestTimes: [],
      faults: [],
      deleteAt: null,
      deletedAt: null,
      hold: null,
      released: false,
      failWith: null,
      neverFinish: false,
      forgetAfterMs: null,
      webhook: p.webhook ?? null,
      abort: new AbortController(),
      releaseWaiters: [],
    };
    for (const f of p.jobFaults) {
      job.faults.push(f.action);
      if (f.action === 'hold' && job.hold === null) job.hold = f.holdIn ?? 'queued';
      if (f.action === 'never_finish') job.neverFinish = true;
      if (f.action === 'fail_job' && job.failWith === null) {
        job.failWith = {
          code: f.code ?? 'TARGET_BLOCKED',
          message: f.message ?? 'The target refused the request (simulated failure).',
        };
      }
      if (f.action === 'forget') job.forgetAfterMs = Math.min(job.forgetAfterMs ?? Infinity, f.delayMs ?? 0);
    }
    this.visible.set(job.id, job);
    this.ledger.push(job);
    this.log(job, 'info', `job created for ${job.url}`);
    if (job.faults.length > 0) this.log(job, 'info', `simulated faults: ${job.faults.join(', ')}`);
    this.deps.onTransition({ job_id: job.id, account: job.account, from: null, to: 'queued', at: now });
    void this.run(job);
    return job;
  }

  /** A visible job by id (deleted / expired jobs are not returned). */
  get(id: string): JobRecord | undefined {
    const job = this.visible.get(id);
    if (!job) return undefined;
    if (this.expire(job, Date.now())) return undefined;
    return job;
  }

  /** A visible job by id, only when it belongs to `account`. */
  getOwned(id: string, account: string): JobRecord | undefined {
    const job = this.get(id);
    return job && job.account === account ? job : undefined;
  }

  /** Visible jobs of an account, newest first. */
  visibleFor(account: string): JobRecord[] {
    const now = Date.now();
    const out: JobRecord[] = [];
    for (const job of this.visible.values()) {
      if (job.account !== account) continue;
      if (this.expire(job, now)) continue;
      out.push(job);
    }
    return out.sort((a, b) => b.seq - a.seq);
  }

  /** Number of active (queued or running) jobs of an account. */
  activeCount(account: string): number {
    let n = 0;
    for (const job of this.visible.values()) if (job.account === account && isActive(job.status)) n++;
    return n;
  }

  /** Every job created since the last reset (including deleted ones), oldest first. */
  all(): JobRecord[] {
    this.sweep();
    return [...this.ledger];
  }

  /** Any job of the ledger by id (including deleted ones). */
  find(id: string): JobRecord | undefined {
    this.sweep();
    return this.ledger.find((j) => j.id === id);
  }

  /**
   * Cancel an active job now: status `cancelled`, its fetch and timers aborted.
   * @returns false when the job is already final.
   */
  cancel(job: JobRecord, reason = 'cancelled by the client'): boolean {
    if (!isActive(job.status)) return false;
    this.finish(job, 'cancelled', undefined, undefined, 'warn', `job cancelled: ${reason}`);
    job.abort.abort();
    return true;
  }

  /** Cancel `job` after `delayMs` ms unless it is final by then (`cancel_pending` fault). */
  cancelLater(job: JobRecord, delayMs: number): void {
    this.log(job, 'info', `cancel requested; will take effect in ${delayMs} ms`);
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.deps.closeSignal.aborted) return;
      this.cancel(job, 'cancelled by the client (delayed)');
    }, delayMs);
    this.timers.add(t);
  }

  /**
   * Release a held job (`hold` fault). Releasing before the hold is reached makes it pass.
   * @returns true when the job has a hold that was not yet released.
   */
  release(id: string): boolean {
    const job = this.ledger.find((j) => j.id === id);
    if (!job || job.hold === null || job.released) return false;
    job.released = true;
    this.log(job, 'info', 'job released');
    const waiters = job.releaseWaiters.splice(0);
    for (const w of waiters) w();
    return true;
  }

  /** Abort every runner and timer and forget every job. */
  reset(): void {
    for (const job of this.ledger) job.abort.abort();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.visible.clear();
    this.ledger.length = 0;
  }

  /** Stop everything (the sim is closing). */
  close(): void {
    clearInterval(this.sweeper);
    this.reset();
  }

  /** Append a log line to a job. */
  log(job: JobRecord, level: JobLog['level'], message: string): void {
    job.logs.push({ at: iso(Date.now()), level, message });
  }

  // -------------------------------------------------------------------------------------------

  private sweep(): void {
    const now = Date.now();
    for (const job of this.visible.values()) this.expire(job, now);
  }

  /** Apply retention: @returns true when the job is (now) deleted. */
  private expire(job: JobRecord, now: number): boolean {
    if (job.deletedAt !== null) return true;
    if (job.deleteAt === null || now < job.deleteAt) return false;
    job.deletedAt = job.deleteAt;
    job.result = undefined; // free the memory; the ledger keeps the metadata
    this.visible.delete(job.id);
    return true;
  }

  private transition(job: JobRecord, to: JobStatus): void {
    const from = job.status;
    job.status = to;
    this.deps.onTransition({ job_id: job.id, account: job.account, from, to, at: Date.now() });
  }

  private finish(
    job: JobRecord,
    to: 'completed' | 'failed' | 'cancelled',
    result: JobResult | undefined,
    error: JobError | undefined,
    level: JobLog['level'],
    message: string,
  ): void {
    const now = Date.now();
    job.finishedAt = now;
    job.result = result;
    job.error = error;
    job.deleteAt = now + job.profile.resultTtlMs;
    if (job.forgetAfterMs !== null) job.deleteAt = Math.min(job.deleteAt, now + job.forgetAfterMs);
    this.log(job, level, message);
    this.transition(job, to);
  }

  private waitRelease(job: JobRecord, signal: AbortSignal): Promise<void> {
    if (job.released) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(new DOMException('aborted', 'AbortError'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      job.releaseWaiters.push(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  private async run(job: JobRecord): Promise<void> {
    const signal = AbortSignal.any([job.abort.signal, this.deps.closeSignal]);
    try {
      if (job.hold === 'queued' && !job.released) {
        this.log(job, 'info', 'job held in queue');
        await this.waitRelease(job, signal);
      }
      await sleep(job.profile.queueDelayMs, signal);
      if (job.status !== 'queued') return;

      job.startedAt = Date.now();
      job.creditsUsed = 1;
      this.log(job, 'info', 'job started');
      this.transition(job, 'running');
      const minRunUntil = job.startedAt + runTimeMs(job.profile, job.url);

      if (job.neverFinish) {
        this.log(job, 'warn', 'job is stuck (simulated)');
        await waitForAbort(signal);
        return;
      }

      const outcome = await fetchAndExtract({
        url: job.url,
        timeoutMs: job.timeoutMs,
        userAgent: this.deps.userAgent,
        maxBodyBytes: this.deps.maxBodyBytes,
        signal,
        log: (level, message) => this.log(job, level, message),
        onFetched: () => {
          job.pagesFetched = 1;
        },
      });
      if (!stillRunning(job)) return;

      if (job.hold === 'running' && !job.released) {
        this.log(job, 'info', 'job held while running');
        await this.waitRelease(job, signal);
      }
      await sleep(minRunUntil - Date.now(), signal);
      if (!stillRunning(job)) return;

      if (job.failWith) {
        this.finish(
          job,
          'failed',
          undefined,
          job.failWith,
          'error',
          `job failed: ${job.failWith.code}: ${job.failWith.message}`,
        );
      } else if (outcome.ok) {
        this.finish(job, 'completed', outcome.result, undefined, 'info', 'job completed');
      } else {
        this.finish(
          job,
          'failed',
          undefined,
          outcome.error,
          'error',
          `job failed: ${outcome.error.code}: ${outcome.error.message}`,
        );
      }
    } catch (err) {
      if (isAbortError(err) || signal.aborted) return; // cancelled or sim closing
      if (isActive(job.status)) {
        const message = err instanceof Error ? err.message : String(err);
        this.finish(
          job,
          'failed',
          undefined,
          { code: 'INTERNAL', message },
          'error',
          `job failed: INTERNAL: ${message}`,
        );
      }
    }
  }
}

/** Re-read the (mutable) status after an await; a cancel may have changed it meanwhile. */
function stillRunning(job: JobRecord): boolean {
  return job.status === 'running';
}
