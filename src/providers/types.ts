/**
 * The shared provider adapter interface. One adapter per provider API; each maps the provider's
 * statuses into {@link ProviderState} (keeping the raw status) and its failures into
 * {@link ProviderError} kinds. Adapters call the provider's HTTP API directly with their own
 * timeouts and never retry a POST themselves (the workflow owns retries and reconciliation).
 */
import type { ProviderState } from '../model/states.js';
import type { ScrapeRequest } from '../model/types.js';
import type { ResultPayload } from '../store/index.js';
import type { ProviderEvidence } from './errors.js';

/** What a provider can do, from its documentation (../shared/providers.md). */
export interface ProviderCapabilities {
  /** Honours an idempotency key on submit: replaying the same key returns the same job. */
  idempotency: boolean;
  /** Has a list endpoint that can find a job by our client reference. */
  list: boolean;
  /** Has a cancel endpoint. */
  cancel: boolean;
  /** Can call us back (webhook) on completion. */
  webhooks: boolean;
}

/** Per-call context. `apiKey` comes from worker configuration, never from workflow input. */
export interface CallContext {
  apiKey: string;
  /** Aborts the HTTP call (activity cancellation). */
  signal?: AbortSignal;
}

/** Extra context of a submit: the idempotency key and our client reference. */
export interface SubmitContext extends CallContext {
  /** Sent on every attempt of the same logical request (UUID-shaped; see `deterministicUuid`). */
  idempotencyKey: string;
  /** Our reference echoed back by the provider so that a lost submit can be found by listing. */
  clientRef: string;
}

/** A submit the provider accepted. */
export interface Accepted {
  taskId: string;
  /** Provider's raw status string at submit (e.g. `queued`). */
  providerStatus: string;
  /** True when the provider said this was a replay of an earlier submit with the same key. */
  replayed: boolean;
}

/** One status observation. */
export interface StatusObservation {
  state: ProviderState;
  /** Provider's raw status string. */
  providerStatus: string;
  /** Provider-reported progress and cost so far. */
  progress?: { pagesFetched?: number; creditsUsed?: number };
  /** Terminal failure reported by the provider (code + message), when `state` is `failed`. */
  error?: { code?: string; message: string };
  /** Provider's polling guidance in ms (Retry-After on a status response), if any. */
  retryAfterMs?: number;
  /** The sanitised exchange, kept when the provider reports a terminal failure (incident evidence). */
  evidence?: ProviderEvidence;
}

/** Result of a cancel call as the provider answered it. */
export interface CancelAnswer {
  /** Provider accepted the request (it may still take time to stop). */
  accepted: boolean;
  /** Provider's status right after the call, when it said. */
  state?: ProviderState;
  providerStatus?: string;
  /** Provider said the job was already final (e.g. 409 JOB_FINISHED). */
  alreadyFinal?: boolean;
}

/** A provider API adapter. Every method throws {@link ProviderError} on failure. */
export interface ProviderAdapter {
  /** Configured provider name (e.g. `reference`). */
  readonly name: string;
  /** Adapter kind (e.g. `reference`, `firecrawl`). */
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  /** Submits a scrape. Ambiguous outcomes throw kind `ambiguous`. */
  submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted>;
  /** Reads the task's status. */
  status(taskId: string, ctx: CallContext): Promise<StatusObservation>;
  /** Reads the authoritative result of a completed task. */
  result(taskId: string, url: string, ctx: CallContext): Promise<ResultPayload>;
  /** Requests cancellation. Throws kind `unsupported` when the provider has no cancel endpoint. */
  cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer>;
  /**
   * Looks a job up by our client reference. Returns the task or `null` when the provider's list
   * proves it absent. Throws kind `unsupported` when the provider cannot list.
   */
  findByClientRef(clientRef: string, ctx: CallContext): Promise<Accepted | null>;
}
