/**
 * The provider adapter contract: {@link ProviderAdapter}, the contexts each call gets and the
 * answers it returns. One adapter per provider API, in `src/providers/<kind>/`, registered through
 * its kind's descriptor (`descriptor.ts`, listed in `kinds.ts`); the helpers every adapter builds
 * on (the HTTP exchange, pagination, documents, webhooks, credentials, keys, errors) are in
 * `shared/`. Adapters call the provider's HTTP API directly with their own timeouts and never
 * retry a submit themselves: the workflow owns retries and reconciliation.
 *
 * What every adapter must do:
 * 1. Acceptance and "not ready". Any 2xx answer to a submit that carries an ID is an acceptance
 *    (2xx is tested with `ProviderHttp.ok()` / `isOk()` only). A `202`/`204` (or a "building"
 *    body) on a status or result read means the work is not done: report `running`/`queued`,
 *    never a failure.
 * 2. Terminal refusals. A 4xx on a read whose code means that nothing will ever come (an empty
 *    snapshot, input found invalid late) throws kind `task_failed` with the provider's code and
 *    the sanitised exchange as evidence.
 * 3. Unknown words. A status word the adapter does not know is reported as state `unrecognised`
 *    with the raw word, never as `failed` or `completed` on its own (the declarative `http` kind
 *    maps words by configuration).
 * 4. Many documents. Multi-document results (crawl pages, dataset items, batch entries) are read
 *    page by page, calling {@link ResultContext.heartbeat} between pages and honouring
 *    {@link ResultLimits}.
 * 5. Gone tasks. A `404` (or the provider's "expired" answer) for a task we know throws kind
 *    `expired` where the provider documents expiry, else `not_found` (the caller counts those
 *    before it concludes `expired`).
 * 6. Secrets. Credentials go where the provider wants them (a header, the query string, Basic
 *    auth, the body), and every recorded URL, header and body is sanitised with
 *    {@link CallContext.secrets}.
 * 7. Rate limits. A `429`, a `Retry-After` or a concurrency answer throws kind `cooldown` with
 *    `retryAfterMs` when the provider says how long.
 * 8. Evidence after a lost submit. {@link ProviderAdapter.evidence} declares what the entry's
 *    replays and lookups can prove (`src/model/evidence.ts`), and
 *    {@link ProviderAdapter.findSubmitted} reports what each lookup showed without deciding.
 *
 * Every method throws a `ProviderError` (`shared/errors.ts`) on failure.
 */
import type { Candidate, LookupReading, ReconcileEvidence } from '../model/evidence.js';
import type { ProviderState } from '../model/states.js';
import type { ProviderResult } from '../model/results.js';
import type { ScrapeRequest } from '../model/types.js';
import type { ProviderEvidence } from './shared/errors.js';

/**
 * What a provider can do, from its documentation. `idempotency` and `list` summarise the entry's
 * {@link ReconcileEvidence} (a replay that answers, a lookup at all); what they can prove is in
 * the evidence, never here.
 */
export interface ProviderCapabilities {
  /** Takes an idempotency key on submit whose replay answers (the same task, or a 409 that proves a job exists). */
  idempotency: boolean;
  /** Has at least one lookup (list, search, stored input) that can show a job after a lost submit. */
  list: boolean;
  /** Has a cancel endpoint. */
  cancel: boolean;
  /** Can call us back (webhook) on completion. */
  webhooks: boolean;
}

/** Per-call context. `apiKey` comes from worker configuration, never from workflow input. */
export interface CallContext {
  /**
   * The credential for this (provider, account), as configured. Its shape is the adapter's to
   * interpret: a bearer token, a query-string token, or `user:password` for Basic auth.
   */
  apiKey: string;
  /** Every secret value known to the worker (keys, webhook secrets): scrub them from anything recorded. */
  secrets: readonly string[];
  /** Aborts the HTTP call (activity cancellation). */
  signal?: AbortSignal;
  /** What the job of the task knows, for calls about a task (status, result, cancel); absent where no job row is at hand. */
  task?: TaskContext;
}

/**
 * What a call about a task may need besides its ID (the declarative `http` kind's templates name
 * them): the job's request, our client reference, and the fields of the submit's answer that the
 * adapter asked to keep ({@link Accepted.submitAnswer}), stored with the task ID.
 */
export interface TaskContext {
  request: ScrapeRequest;
  clientRef: string;
  /** Undefined when nothing was kept: the task was found by a lookup or given by an operator, or the adapter keeps nothing. */
  submitAnswer?: Record<string, unknown>;
}

/** Context of a status read. */
export interface StatusContext extends CallContext {
  /**
   * The URL the job was submitted for, when the caller knows it: an inline multi-document result
   * (a status answer that carries every document) describes that page on its result row, and a
   * message about the task names it.
   */
  url?: string;
  /**
   * The entry's result limits: a status answer that carries the result inline is read under the
   * result's byte cap (`limits.maxBytes`), not the cap of an ordinary answer.
   */
  limits?: ResultLimits;
}

/** Extra context of a submit: the idempotency key and our client reference. */
export interface SubmitContext extends CallContext {
  /** Sent on every attempt of the same logical request (UUID-shaped; see `deterministicUuid`). */
  idempotencyKey: string;
  /** Our reference, put where the provider echoes it (input field, tag, metadata) so that a lost submit can be found by listing. */
  clientRef: string;
  /**
   * Where the provider should call us back for this job, when the provider entry configures a
   * webhook: our receiver URL, carrying an unguessable per-job token for providers that do not
   * sign their deliveries. Absent: no callback.
   */
  callbackUrl?: string;
  /** HMAC secret to register with a provider that signs deliveries (read from the worker's environment at call time). */
  webhookSecret?: string;
}

/** A submit the provider accepted. */
export interface Accepted {
  taskId: string;
  /** Provider's raw status string at submit (e.g. `queued`, `READY`). */
  providerStatus: string;
  /** True when the provider said this was a replay of an earlier submit with the same key (or the task was found by listing). */
  replayed: boolean;
  /**
   * Fields of the submit's answer that later calls of the task need (a returned URL, a server's
   * own job key): stored with the task ID (no secrets: values pass the worker's redaction) and
   * handed back as {@link TaskContext.submitAnswer}. Keep it small: only what the calls name.
   */
  submitAnswer?: Record<string, unknown>;
}

/**
 * The normalised state of one observation: a {@link ProviderState}, or `unrecognised` for a status
 * word the adapter does not know (polled on the normal schedule, shown as "unrecognised status X").
 */
export type ObservedState = ProviderState | 'unrecognised';

/** One status observation. */
export interface StatusObservation {
  state: ObservedState;
  /** Provider's raw status string (as sent, any case). */
  providerStatus: string;
  /** Provider-reported progress and cost so far. */
  progress?: { pagesFetched?: number; creditsUsed?: number; documents?: number };
  /**
   * What the provider reports the task has cost so far, in the kind's unit (its descriptor's
   * `cost.reported` names the field and the document): what a budgeted job settles at. Absent when
   * the answer carries no such figure.
   */
  cost?: number;
  /** Terminal failure reported by the provider (code + message), when `state` is `failed`. */
  error?: { code?: string; message: string };
  /** Provider's polling guidance in ms (Retry-After on a status response), if any. */
  retryAfterMs?: number;
  /** What the provider's record says the task is for, when the answer shows it. */
  subject?: TaskSubject;
  /** The sanitised exchange, kept when the provider reports a terminal failure (incident evidence). */
  evidence?: ProviderEvidence;
  /**
   * The complete result, when the final status answer already carries it (single-page scrapes whose
   * status body embeds the page, Firecrawl's inline `data[]` when no `next` remains): the caller
   * then writes it without a separate result read. Set only with `state: 'completed'`.
   */
  result?: ProviderResult;
}

/** Result of a cancel call as the provider answered it. */
export interface CancelAnswer {
  /** Provider accepted the request (it may still take time to stop). */
  accepted: boolean;
  /** Provider's status right after the call, when it said. */
  state?: ProviderState;
  providerStatus?: string;
  /** Provider said the job was already final (e.g. 409 JOB_FINISHED, Bright Data's 400 "not running"). */
  alreadyFinal?: boolean;
  /** Effects the task produced so far, when the cancel answer reports them (pages fetched, credits used). */
  progress?: { pagesFetched?: number; creditsUsed?: number };
  /** What the provider reports the task cost, in the kind's unit, when the cancel answer says (see {@link StatusObservation.cost}). */
  cost?: number;
}

/** Bounds of one result read (configuration `results` of the provider entry). */
export interface ResultLimits {
  /** Most documents accepted for one task (count). */
  maxDocuments: number;
  /** Most bytes of result text (JSON-serialised documents) accepted for one task. */
  maxBytes: number;
  /** Documents asked per page where the provider takes a page size (count). */
  pageSize: number;
}

/** Context of a result read. */
export interface ResultContext extends CallContext {
  /** The URL the job was submitted for (a fallback for the page's `url`). */
  url: string;
  request: ScrapeRequest;
  limits: ResultLimits;
  /**
   * Called between pages of a paginated read (documents and pages read so far): the activity
   * heartbeats, so a long read shows progress and learns of cancellation.
   */
  heartbeat?: (progress: { documents: number; pages: number }) => void;
}

/** Context of a lookup after a lost submit. */
export interface FindContext extends CallContext {
  /** Our client reference sent with every submit of this job. */
  clientRef: string;
  /** The request as submitted (for providers whose list can only be matched on inputs). */
  request: ScrapeRequest;
  /** UTC ISO-8601 time of the first submit intent: lists can be bounded to jobs created since (minus a margin). */
  submittedAfter: string;
}

/**
 * The reading of a lookup the provider answered is not offered (a `404` route, a `501`): it proves
 * nothing, and waiting does not help. `at`: UTC ISO-8601 time of the read (now by default).
 */
export function lookupNotOffered(
  lookup: string,
  note: string,
  candidates: Candidate[] = [],
  at = new Date().toISOString(),
): LookupReading {
  return { lookup, available: false, complete: false, candidates, at, note };
}

/** What a status read says the task is for, where the provider's record shows it (used to verify an operator's task ID). */
interface TaskSubject {
  /** The URL the task was submitted for. */
  url?: string | null;
  /** Our client reference as the provider echoes it. */
  clientRef?: string | null;
}

/** A provider API adapter. Every method throws {@link ProviderError} on failure. */
export interface ProviderAdapter {
  /** Configured provider name (e.g. `reference`, `fc-prod`). */
  readonly name: string;
  /** Adapter kind (e.g. `reference`, `firecrawl`). */
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  /** What this entry's replays and lookups can prove after a lost submit (see `src/model/evidence.ts`). */
  readonly evidence: ReconcileEvidence;
  /**
   * What a `completed` answer proves once the provider accepted our cancel: `completed` (default:
   * the provider reports a stopped task as cancelled, so a completed one ran to its end) or
   * `stopped_or_completed` (its final word is the same whether the work stopped early or finished,
   * as Scrapyd's `finished`): the cancel's outcome then says exactly that, never "too late".
   */
  readonly completedAfterCancel?: 'completed' | 'stopped_or_completed';
  /** Submits a scrape. Ambiguous outcomes throw kind `ambiguous`. */
  submit(request: ScrapeRequest, ctx: SubmitContext): Promise<Accepted>;
  /** Reads the task's status (with the inline result when the final answer carries it). */
  status(taskId: string, ctx: StatusContext): Promise<StatusObservation>;
  /** Reads the authoritative result of a completed task, every page of it. */
  result(taskId: string, ctx: ResultContext): Promise<ProviderResult>;
  /** Requests cancellation. Throws kind `unsupported` when the provider has no cancel endpoint. */
  cancel(taskId: string, ctx: CallContext): Promise<CancelAnswer>;
  /**
   * Reads every lookup of {@link evidence} once and reports what each showed: the jobs that could
   * be ours, each matched `strong` (our reference read back), `weak` (URL and time only),
   * `foreign` (read, and not ours) or `unreadable` (its reference could not be read), whether the
   * lookup is offered at all and whether the read was complete. It decides nothing: the caller
   * does, from the evidence model. Returns `[]` when the entry has no lookup. Throws a
   * {@link ProviderError} for a refused or failed read (retried by the caller).
   */
  findSubmitted(ctx: FindContext): Promise<LookupReading[]>;
}

/** Result limits when the provider entry sets none: 10,000 documents, 256 MiB, pages of 100. */
export const DEFAULT_RESULT_LIMITS: ResultLimits = { maxDocuments: 10_000, maxBytes: 256 * 1024 * 1024, pageSize: 100 };
