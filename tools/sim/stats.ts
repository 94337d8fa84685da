/**
 * Request and job counters of the reference provider, read by tests through `sim.stats()` and
 * `GET /_sim/stats` (e.g. to assert "exactly one provider job was created").
 */
import {
  type Endpoint,
  type FaultAction,
  type JobError,
  type JobLog,
  type JobResult,
  type JobStatus,
} from './schemas.js';
import { iso } from './util.js';
import type { JobRecord } from './jobRecord.js';

/** Requests per API endpoint. */
export type EndpointCounts = Record<Endpoint, number>;

/**
 * Requests of one account: the per-endpoint counts at top level (`submit`, `status`, ...) and the
 * same again under `byEndpoint`, plus `total` and `byStatus` (so both readings of the contract's
 * `byAccount: {[name]: {...same}}` work).
 */
export interface AccountRequestCounts extends EndpointCounts {
  total: number;
  byEndpoint: EndpointCounts;
  /** HTTP status → count; `"dropped"` for connections destroyed without an answer. */
  byStatus: Record<string, number>;
}

/** One job as seen by stats. Times: ISO strings for dates, epoch ms for request time lists. */
export interface SimStatsJob {
  job_id: string;
  account: string;
  url: string;
  status: JobStatus;
  client_ref: string | null;
  /** The `Idempotency-Key` sent with the submit that created it (null when none). */
  idempotency_key: string | null;
  format: 'markdown' | 'text';
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** When retention (or a `forget` fault) deleted it; null while visible through the API. */
  deleted_at: string | null;
  credits_used: number;
  pages_fetched: number;
  /** Job-level fault actions applied to it. */
  faults: FaultAction[];
  /** epoch ms of every `GET /api/jobs/:id` for this job by its account. */
  status_request_times: number[];
  /** epoch ms of every `DELETE /api/jobs/:id/cancel` for this job by its account. */
  cancel_request_times: number[];
  /** The submit's webhook URL (the secret is never shown), or null. */
  webhook_url: string | null;
  error?: JobError;
}

/** A job with its result and logs (`sim.getJob`, `sim.jobsFor`). */
export interface SimJobSnapshot extends SimStatsJob {
  /** Absent when not completed, or after deletion (the result is dropped then). */
  result?: JobResult;
  logs: JobLog[];
}

/** What `sim.stats()` and `GET /_sim/stats` return. All counts since start or the last reset. */
export interface SimStats {
  requests: {
    /** Every API request received (including 401s and requests dropped by a fault). */
    total: number;
    byEndpoint: EndpointCounts;
    /** Per configured account (requests with a valid key only). */
    byAccount: Record<string, AccountRequestCounts>;
    /** HTTP status → count; `"dropped"` for connections destroyed without an answer. */
    byStatus: Record<string, number>;
  };
  jobsCreated: { total: number; byAccount: Record<string, number> };
  /** Every `DELETE /api/jobs/:id/cancel` request received (same as `byEndpoint.cancel`). */
  cancelCalls: number;
  /** Every job created, oldest first, including deleted ones. */
  jobs: SimStatsJob[];
  webhooks: SimWebhookStats;
}

/** One webhook delivery attempt (or a dropped event). `at` is ISO-8601 UTC. */
export interface SimWebhookAttempt {
  event_id: string;
  job_id: string;
  type: string;
  /** 1-based attempt number within the delivery. */
  attempt: number;
  /** 2 for the second delivery of a `duplicate_webhook` event, else 1. */
  delivery: number;
  at: string;
  /** HTTP status of the answer, `"network_error"` (refused, reset, timeout) or `"dropped"` (fault). */
  outcome: number | 'network_error' | 'dropped';
}

/** Webhook counters since start or the last reset. */
export interface SimWebhookStats {
  /** Events produced (one per announced transition of a job with a webhook). */
  events: number;
  /** HTTP delivery attempts made (including retries and duplicates). */
  attempts: number;
  /** Attempts answered 2xx. */
  delivered: number;
  /** Attempts answered non-2xx or not answered. */
  failedAttempts: number;
  /** Deliveries given up after the last retry. */
  exhausted: number;
  /** Events lost by a `drop_webhook` fault. */
  dropped: number;
  /** Extra deliveries made by a `duplicate_webhook` fault. */
  duplicates: number;
  /** The last 1000 attempts, oldest first. */
  log: SimWebhookAttempt[];
}

function zeroEndpoints(): EndpointCounts {
  return { submit: 0, status: 0, logs: 0, cancel: 0, list: 0 };
}

function zeroWebhooks(): SimWebhookStats {
  return { events: 0, attempts: 0, delivered: 0, failedAttempts: 0, exhausted: 0, dropped: 0, duplicates: 0, log: [] };
}

function zeroAccount(): AccountRequestCounts {
  return { total: 0, ...zeroEndpoints(), byEndpoint: zeroEndpoints(), byStatus: {} };
}

/** Mutable counters; one per sim. */
export class Counters {
  private total = 0;
  private byEndpoint = zeroEndpoints();
  private byAccount: Record<string, AccountRequestCounts> = {};
  private byStatus: Record<string, number> = {};
  private jobsTotal = 0;
  private jobsByAccount: Record<string, number> = {};
  private cancelCalls = 0;
  private webhooks: SimWebhookStats = zeroWebhooks();

  constructor(private readonly accountNames: readonly string[]) {
    this.reset();
  }

  /** Zero everything (configured accounts are listed with zeros). */
  reset(): void {
    this.total = 0;
    this.byEndpoint = zeroEndpoints();
    this.byAccount = {};
    this.byStatus = {};
    this.jobsTotal = 0;
    this.jobsByAccount = {};
    this.cancelCalls = 0;
    this.webhooks = zeroWebhooks();
    for (const name of this.accountNames) {
      this.byAccount[name] = zeroAccount();
      this.jobsByAccount[name] = 0;
    }
  }

  /** Count a received request. */
  request(endpoint: Endpoint, account: string | null): void {
    this.total++;
    this.byEndpoint[endpoint]++;
    if (endpoint === 'cancel') this.cancelCalls++;
    if (account !== null) {
      const a = (this.byAccount[account] ??= zeroAccount());
      a.total++;
      a[endpoint]++;
      a.byEndpoint[endpoint]++;
    }
  }

  /** Count the outcome of a request: an HTTP status or `"dropped"`. */
  response(status: number | 'dropped', account: string | null): void {
    const key = String(status);
    this.byStatus[key] = (this.byStatus[key] ?? 0) + 1;
    if (account !== null) {
      const a = (this.byAccount[account] ??= zeroAccount());
      a.byStatus[key] = (a.byStatus[key] ?? 0) + 1;
    }
  }

  /** Count a created job. */
  jobCreated(account: string): void {
    this.jobsTotal++;
    this.jobsByAccount[account] = (this.jobsByAccount[account] ?? 0) + 1;
  }

  /** Count a webhook event produced for a job. */
  webhookEvent(): void {
    this.webhooks.events++;
  }

  /** Count a webhook attempt (or a dropped event) and keep it in the log. */
  webhookAttempt(a: SimWebhookAttempt): void {
    if (a.outcome === 'dropped') this.webhooks.dropped++;
    else {
      this.webhooks.attempts++;
      if (typeof a.outcome === 'number' && a.outcome >= 200 && a.outcome < 300) this.webhooks.delivered++;
      else this.webhooks.failedAttempts++;
    }
    this.webhooks.log.push(a);
    if (this.webhooks.log.length > 1000) this.webhooks.log.shift();
  }

  /** Count a delivery given up after its last retry. */
  webhookExhausted(): void {
    this.webhooks.exhausted++;
  }

  /** Count the extra delivery of a `duplicate_webhook` event. */
  webhookDuplicate(): void {
    this.webhooks.duplicates++;
  }

  /** Snapshot (deep copies) with the given jobs. */
  snapshot(jobs: readonly JobRecord[]): SimStats {
    const byAccount: Record<string, AccountRequestCounts> = {};
    for (const [name, a] of Object.entries(this.byAccount)) {
      byAccount[name] = { ...a, byEndpoint: { ...a.byEndpoint }, byStatus: { ...a.byStatus } };
    }
    return {
      requests: {
        total: this.total,
        byEndpoint: { ...this.byEndpoint },
        byAccount,
        byStatus: { ...this.byStatus },
      },
      jobsCreated: { total: this.jobsTotal, byAccount: { ...this.jobsByAccount } },
      cancelCalls: this.cancelCalls,
      jobs: jobs.map(statsJob),
      webhooks: { ...this.webhooks, log: this.webhooks.log.map((a) => ({ ...a })) },
    };
  }
}

/** Stats view of a job record. */
export function statsJob(job: JobRecord): SimStatsJob {
  const out: SimStatsJob = {
    job_id: job.id,
    account: job.account,
    url: job.url,
    status: job.status,
    client_ref: job.clientRef,
    idempotency_key: job.idempotencyKey,
    format: job.format,
    created_at: iso(job.createdAt),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
    deleted_at: iso(job.deletedAt),
    credits_used: job.creditsUsed,
    pages_fetched: job.pagesFetched,
    faults: [...job.faults],
    status_request_times: [...job.statusRequestTimes],
    cancel_request_times: [...job.cancelRequestTimes],
    webhook_url: job.webhook?.url ?? null,
  };
  if (job.error) out.error = { ...job.error };
  return out;
}

/** Full snapshot of a job record (with result and logs). */
export function jobSnapshot(job: JobRecord): SimJobSnapshot {
  const out: SimJobSnapshot = { ...statsJob(job), logs: job.logs.map((l) => ({ ...l })) };
  if (job.result) out.result = { ...job.result, links: [...job.result.links] };
  return out;
}
