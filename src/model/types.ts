/**
 * Shapes that cross the workflow boundary (workflow input, query and outcome). Type-only module
 * plus pure defaults: safe to import from workflow code.
 */
import type { JobState, ProviderState } from './states.js';

/** Output format requested from the provider. */
export type ScrapeFormat = 'markdown' | 'text';

/** What to scrape. Never contains credentials (they come from worker configuration). */
export interface ScrapeRequest {
  /** Absolute http(s) URL of the page, already sanitised of credentials. */
  url: string;
  /** Output format requested from the provider (default `markdown`). */
  format: ScrapeFormat;
  /** Provider-specific options passed through to the adapter (JSON, no secrets). */
  options: Record<string, unknown>;
}

/**
 * Polling and deadline policy. All durations in ms.
 *
 * The delay before status check n (0-based) is `min(maxDelayMs, initialDelayMs * multiplier^n)`,
 * multiplied by a random factor in `[1 - jitter, 1 + jitter]`, never less than the provider's
 * requested wait (`Retry-After`) and never past the deadline.
 */
export interface PollPolicy {
  /** First delay between submit and the first status check (ms). */
  initialDelayMs: number;
  /** Ceiling of the delay between two status checks (ms). */
  maxDelayMs: number;
  /** Growth factor of the delay after each check that finds the task not final. */
  multiplier: number;
  /** Jitter as a fraction of the delay, 0..1. */
  jitter: number;
  /**
   * Overall tracking deadline (ms), counted from the moment the provider task is known. Past it:
   * `tracking_interrupted`. Submitting (including cool-downs) is bounded separately by
   * `max(deadlineMs, 10 × activityTimeoutMs)`.
   */
  deadlineMs: number;
  /**
   * The budget of failed provider reads (status, result pages, lookups, a cancel's confirmation
   * checks): a streak of failed reads ends the job `tracking_interrupted` (resumable, never
   * `failed`: a failed read is not a failed task) once it counts at least this many reads in a row
   * (count) and has lasted at least {@link failedReadBudgetMs}. Default 10.
   */
  failedReadLimit: number;
  /** The elapsed-time side of the failed-read budget (ms, from the streak's first failure; see {@link failedReadLimit}). Default 15 min. */
  failedReadBudgetMs: number;
  /**
   * Ceiling of the back-off between failed reads (ms): it starts at `initialDelayMs`, doubles with
   * each failure in a row (jittered by `jitter`) and is never shorter than the provider's
   * `Retry-After`. Default 5 min.
   */
  failedReadMaxDelayMs: number;
  /** Consecutive `404`s on a known task (status or result read) before it is declared `expired` (count). */
  notFoundLimit: number;
  /**
   * Submissions whose answer was lost and which reconciliation proved left no task behind, before
   * the job fails as `submit_unacknowledged` (count). Resubmits are backed off 2 s, 4 s, 8 s … ≤ 60 s.
   */
  submitRounds: number;
  /** After a cancel request, how long to wait for the provider to confirm (ms). */
  cancelConfirmDeadlineMs: number;
  /** When the deadline passes: stop tracking (`interrupt`) or cancel at the provider (`cancel`). */
  onDeadline: 'interrupt' | 'cancel';
  /**
   * Timeout of one activity attempt (ms): a submit attempt's start-to-close, and the heartbeat
   * timeout of a status check (a check silent for this long — a crashed worker — is retried
   * elsewhere; a slow check heartbeats). Must exceed the provider HTTP timeouts on the worker.
   */
  activityTimeoutMs: number;
  /**
   * When the provider sends webhooks for this job, poll delays are multiplied by this factor
   * (webhooks are hints that wake the workflow early; polling still drives the job to its end).
   */
  webhookSlowdown: number;
  /**
   * Heartbeat timeout of the polling activity (ms). The activity waits and checks in-process and
   * heartbeats; the SDK sends a heartbeat to the server at most every 0.8 × this (the worker's
   * throttle), and each one is a billable Action. So a longer timeout costs less, and a worker
   * that dies without warning is noticed later (a worker that shuts down hands its jobs over at
   * once). Default 10 min.
   */
  pollHeartbeatTimeoutMs: number;
  /**
   * How long the submit attempt goes on into the first status checks (ms): a job that finishes
   * within it lives its whole life in one activity. 0: submit only. Default 20 s.
   */
  fastPathMs: number;
  /**
   * Place the status checks where the provider key's recent jobs finished, instead of on the
   * geometric schedule (see `learnedPlan` in `src/model/schedule.ts`): fewer requests for the same
   * p95 lateness once 20 jobs of the key have completed. Default false.
   */
  learnSchedule: boolean;
}

/** Defaults for {@link PollPolicy}: 2 s growing ×1.5 to 60 s, ±20 % jitter, 30 min deadline, 30 s per activity attempt. */
export const DEFAULT_POLL_POLICY: PollPolicy = {
  initialDelayMs: 2_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0.2,
  deadlineMs: 30 * 60_000,
  failedReadLimit: 10,
  failedReadBudgetMs: 15 * 60_000,
  failedReadMaxDelayMs: 5 * 60_000,
  notFoundLimit: 3,
  submitRounds: 5,
  cancelConfirmDeadlineMs: 2 * 60_000,
  onDeadline: 'interrupt',
  activityTimeoutMs: 30_000,
  webhookSlowdown: 5,
  pollHeartbeatTimeoutMs: 10 * 60_000,
  fastPathMs: 20_000,
  learnSchedule: false,
};

/** Input of `scrapeWorkflow`. Built by the client; validated there with zod. */
export interface ScrapeWorkflowInput {
  /** Job ID, equal to the workflow ID: `scrape:<account>:<key>`. */
  jobId: string;
  /** Our account (tenant) that owns the job. */
  account: string;
  /** Idempotency key, unique within the account. */
  key: string;
  /** Provider name as configured on the worker (e.g. `reference`). */
  provider: string;
  /** Fingerprint of (provider, request): same key + other fingerprint is a conflict. */
  requestHash: string;
  request: ScrapeRequest;
  /** The caller's input row (sanitised), kept with the job for evidence. */
  row?: Record<string, unknown>;
  /** Batch the job belongs to, if any. */
  batchId?: string;
  /** Policy overrides; merged over {@link DEFAULT_POLL_POLICY}. */
  policy?: Partial<PollPolicy>;
  /** Resume tracking of an existing provider task instead of submitting (never resubmits). */
  resume?: { taskId: string };
  /**
   * A cancel that was under way when the previous run stopped (the job was `cancelling`), or the
   * cancel a run was resumed for (a final job whose task may still run): the resumed run carries it
   * through the cancellation path first thing. `via`: the door it came through (default `signal`).
   */
  pendingCancel?: { reason?: string; requestedBy?: string; via?: CancelReport['via'] };
  /** The provider will call our webhook for this job: poll slower (see `webhookSlowdown`). */
  webhooks?: boolean;
}

/** Error evidence kept with a job (sanitised: no credentials). */
export interface JobError {
  /** Our classification: permanent | cooldown | transient | ambiguous | not_found | conflict | internal. */
  kind: string;
  /** Provider's error code when it gave one (e.g. `CONCURRENCY_LIMIT`). */
  code?: string;
  message: string;
  /** HTTP status of the provider response, when there was one. */
  httpStatus?: number;
  /** Sanitised endpoint, e.g. `POST http://127.0.0.1:8790/api/scrape`. */
  endpoint?: string;
  /** UTC ISO-8601 time the error was observed. */
  at: string;
}

/** What the cancel path observed at the provider. */
export interface CancelReport {
  /** Who asked (free text from the signal/Update; `temporal` for native cancellation). */
  requestedBy: string;
  reason: string;
  /** Which door the request came through. */
  via: 'signal' | 'update' | 'native' | 'deadline';
  /** UTC ISO-8601 time of the first request. */
  requestedAt: string;
  /** Final observed outcome; undefined while the cancel is in progress. */
  outcome?: 'cancelled' | 'completed' | 'failed' | 'cancel_unconfirmed';
  /** Human explanation of the outcome, with evidence. */
  detail?: string;
  /** Number of provider cancel calls made. */
  providerCancelCalls: number;
  /** Effects that already happened and remain (pages fetched, documents produced, credits used), as the provider last reported them. */
  remainingEffects?: { pagesFetched?: number; documents?: number; creditsUsed?: number };
}

/** The workflow's view of the job, returned by the `state` query and as the workflow result. */
export interface JobView {
  jobId: string;
  account: string;
  provider: string;
  key: string;
  state: JobState;
  /** Provider's raw status string from the last successful check. */
  providerStatus?: string;
  /** Normalised provider state from the last successful check (`unrecognised`: a status word the adapter does not know). */
  providerState?: ProviderState | 'unrecognised';
  taskId?: string;
  url: string;
  /** Number of successful status checks so far. */
  statusChecks: number;
  /** UTC ISO-8601 times. */
  startedAt: string;
  submittedAt?: string;
  finishedAt?: string;
  /** UTC ISO-8601 time of the tracking deadline (set once the task ID is known). */
  deadlineAt?: string;
  /** UTC ISO-8601 time of the next scheduled status check, while pending. */
  nextCheckAt?: string;
  lastError?: JobError;
  result?: { resultId: string; title: string | null; httpStatus: number | null; finalUrl: string | null };
  cancel?: CancelReport;
  /** Human-readable reason for the current state (e.g. why `unknown`). */
  note?: string;
  /** Why the job waits, while it does (a slot, a cool-down, a credential, an operator). */
  waiting?: JobWait;
}

/** Every reason a job may wait for (see {@link JobWait}). */
export const WAIT_REASONS = ['slot', 'cooldown', 'credential', 'operator', 'budget', 'evidence', 'resubmit'] as const;

/**
 * Why a job that is not moving waits, shown by `status`, `status --live`, the HTTP API and the Web
 * UI's current details: for a free slot under the provider key's limit (`slot`, given by the key's
 * fair share between accounts), a cool-down or quota hold of the key (`cooldown`), a credential
 * the worker lacks (`credential`), an operator's decision (`operator`), or a budget of its account
 * that its estimate would take past its amount, under the account's `hold` policy (`budget`: until
 * the period renews or the budget is raised), the provider's lookups after their lag before a
 * lost submit's outcome is concluded (`evidence`), or the back-off before a submit proven never
 * to have created a task is sent again under the same key (`resubmit`). `until`: UTC ISO-8601
 * time of the next try, when known. (Failing reads of a task show as the job's failing checks and last error.)
 */
export interface JobWait {
  reason: (typeof WAIT_REASONS)[number];
  /** One line for a person: what the job waits for and what would end the wait. */
  message: string;
  until?: string;
  /** Figures behind the message (limit, active jobs, queue position, the credential's variable, …). */
  detail?: Record<string, string | number | boolean | null>;
}

/** A provider key's cool-down as shared by every worker. Times are epoch ms. */
export interface CooldownState {
  /** End of the cool-down (0 or past: none in force). */
  untilMs: number;
  /** Why (the provider's code, `quota exhausted …`). */
  reason: string;
  /** The next free release slot after it (0: none claimed): waiting calls leave one at a time. */
  releaseNextMs: number;
}
