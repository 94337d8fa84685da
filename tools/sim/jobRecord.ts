/**
 * The state of one job of the reference provider, as the job manager (`jobs.ts`) keeps it, the
 * parameters of a new job and the transition notice sent on every status change; statuses follow
 * the lifecycle described in `jobs.ts` (queued → running → completed | failed | cancelled).
 */
import type {
  FaultAction,
  FaultRule,
  JobError,
  JobLog,
  JobResult,
  JobStatus,
  Profile,
  WebhookRequest,
} from './schemas.js';

/** Internal, mutable state of one job. Read it through snapshots outside this module. */
export interface JobRecord {
  id: string;
  seq: number;
  account: string;
  profile: Profile;
  url: string;
  format: 'markdown' | 'text';
  clientRef: string | null;
  idempotencyKey: string | null;
  /** ms */
  timeoutMs: number;
  status: JobStatus;
  /** epoch ms */
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  pagesFetched: number;
  creditsUsed: number;
  result: JobResult | undefined;
  error: JobError | undefined;
  logs: JobLog[];
  /** epoch ms of every owner `GET /api/jobs/:id` / cancel call for this job */
  statusRequestTimes: number[];
  cancelRequestTimes: number[];
  /** Job-level fault actions applied to this job. */
  faults: FaultAction[];
  /** epoch ms when the job becomes invisible (set when it finishes). */
  deleteAt: number | null;
  /** epoch ms when it was found deleted (null while visible). */
  deletedAt: number | null;
  // behaviour from faults
  hold: 'queued' | 'running' | null;
  released: boolean;
  failWith: JobError | null;
  neverFinish: boolean;
  forgetAfterMs: number | null;
  /** The submit's webhook (its secret stays here and in the signatures; never in snapshots). */
  webhook: WebhookRequest | null;
  // runtime
  abort: AbortController;
  releaseWaiters: Array<() => void>;
}

/** Transition notification. */
export interface JobTransition {
  job_id: string;
  account: string;
  from: JobStatus | null;
  to: JobStatus;
  /** epoch ms */
  at: number;
}

/** Parameters of a new job. */
export interface NewJob {
  account: string;
  profile: Profile;
  url: string;
  format: 'markdown' | 'text';
  clientRef: string | null;
  idempotencyKey: string | null;
  /** ms */
  timeoutMs: number;
  jobFaults: FaultRule[];
  /** Callback for status events (see `WebhookRequestSchema`); absent = none. */
  webhook?: WebhookRequest | null;
}

const ACTIVE: ReadonlySet<JobStatus> = new Set<JobStatus>(['queued', 'running']);

/** Whether a status is active (`queued` or `running`). */
export function isActive(status: JobStatus): boolean {
  return ACTIVE.has(status);
}
