/**
 * Starting a job's workflow: a new scrape ({@link startScrape}) and the resumption of an
 * interrupted or orphaned one ({@link resumeScrape}). Both go through {@link startOptions}, so a
 * workflow always starts with the same ID, memo, search attributes and summary.
 *
 * The reference is persisted before anything else: the job row is written before the
 * workflow starts. One logical request, one key: the key is the caller's or derived from
 * the request ({@link derivedKey}), the workflow ID is built from it and started with
 * `USE_EXISTING`, and the same key with other parameters is a conflict.
 */
import type { Client, WorkflowStartOptions } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { z } from 'zod';
import { fingerprint } from '../lib/hash.js';
import { sanitizeInput } from '../lib/sanitize.js';
import { StartScrapeInputSchema, type StartScrapeInput } from '../model/schemas.js';
import { isFinalState } from '../model/states.js';
import { pollPolicyOf } from '../model/policy.js';
import type { PollPolicy, ScrapeRequest, ScrapeWorkflowInput } from '../model/types.js';
import { IdempotencyConflictStoreError, Store, type JobRow } from '../store/index.js';
import { SCRAPE_WORKFLOW_TYPE, type ScrapeWorkflow } from '../model/messages.js';
import {
  ScrapeAccount,
  ScrapeBatchId,
  ScrapeHost,
  ScrapeProvider,
  ScrapeState,
} from '../workflows/searchAttributes.js';
import { checkAtDoor } from './door.js';
import { BudgetExceededError, IdempotencyConflictError, InvalidInputError } from './errors.js';
import { canonicalUrl, derivedKey, hostHashKey, jobIdFor, legacyClientKey } from './ids.js';

/** Reference to a job: its ID (`scrape:<account>:<key>`) plus the account that owns it. */
export interface JobRef {
  jobId: string;
  account: string;
  key: string;
}

/** What starting needs of the client (see `ScrapeClientOptions`). */
export interface StartContext {
  temporal: Client;
  store: Store;
  taskQueue: string;
  defaultProvider: string;
  webhookProviders?: readonly string[];
  providers?: readonly string[];
  /**
   * The poll defaults of a provider (its kind's, then its configuration entry's `poll`; durations
   * in ms), applied to new and resumed jobs over `DEFAULT_POLL_POLICY` and under the job's own
   * `policy` (`pollPolicyOf`). The worker's runtime passes `providerPollDefaults` over its
   * configuration; without it a job runs on the defaults under its own policy.
   */
  pollDefaults?: (provider: string) => Partial<PollPolicy> | undefined;
  /**
   * Whether the configuration names a credential of `provider` for `account` (its own or the
   * entry's default): a job without one is refused at the door. The worker's runtime passes it
   * over its configuration; without it every request is let through (the worker then says why the
   * job waits).
   */
  hasCredential?: (provider: string, account: string) => boolean;
  /**
   * Workflow type started for new jobs (default `scrapeWorkflowV6`, the only one a worker serves).
   */
  workflowType?: string;
  /**
   * What a job of `provider` costs under its kind: the unit and the estimate for `request`
   * (docs/budgets.md); the worker's runtime passes it over its configuration. Without it the door
   * reads only the provider's own budgets, with an estimate of 0, and the worker's reservation
   * decides.
   */
  estimateCost?: (provider: string, request: ScrapeRequest) => { unit: string; estimate: number } | undefined;
  /** The unit of `provider`'s kind (what a budget of that provider counts in), when the configuration knows it. */
  unitOf?: (provider: string) => string | undefined;
}

/** Extra options of {@link startScrape}. */
export interface StartExtras {
  /**
   * Keys this request may have had before (keys derived by an earlier version, e.g. a batch row's
   * `<host>-<hash>` or `row-<hash>`): when the account has a job under one of them, that job is the
   * answer (the first found, in this order). The client adds the former forms of a key it derives.
   */
  formerKeys?: readonly string[];
}

/**
 * The Temporal start options of a job's workflow, for a new start and for a resume alike: the
 * workflow ID is the job ID, the memo keeps the request hash and URL, the search attributes say
 * state, account, provider, host and batch, and the static summary names the URL (the Web UI's
 * list and a job's page show it).
 */
export function startOptions(
  input: ScrapeWorkflowInput,
  opts: {
    taskQueue: string;
    state: 'submitting' | 'pending' | 'cancelling';
    typedUrl?: string;
    resumed?: boolean;
    resumedTaskId?: string;
  },
): WorkflowStartOptions<ScrapeWorkflow> {
  const { jobId, account, key, provider, request } = input;
  const resumed = opts.resumed === true;
  return {
    taskQueue: opts.taskQueue,
    workflowId: jobId,
    args: [input],
    memo: {
      requestHash: input.requestHash,
      url: request.url,
      ...(opts.typedUrl && opts.typedUrl !== request.url ? { typedUrl: opts.typedUrl } : {}),
      ...(opts.resumedTaskId ? { resumedTaskId: opts.resumedTaskId } : {}),
    },
    typedSearchAttributes: [
      { key: ScrapeState, value: opts.state },
      { key: ScrapeAccount, value: account },
      { key: ScrapeProvider, value: provider },
      { key: ScrapeHost, value: new URL(request.url).hostname },
      ...(input.batchId ? [{ key: ScrapeBatchId, value: input.batchId }] : []),
    ],
    staticSummary: resumed
      ? `Scrape ${request.url} (resumed${opts.resumedTaskId ? `, task ${opts.resumedTaskId}` : ''})`
      : `Scrape ${request.url}`,
    staticDetails: [
      `**Account:** ${account}`,
      `**Key:** ${key}`,
      `**Provider:** ${provider}`,
      resumed ? `**Resumed task:** ${opts.resumedTaskId ?? '—'}` : `**Format:** ${request.format}`,
    ].join('\n\n'),
  };
}

/** The workflow input of a stored job (for a resume: same key, request, row, batch and policy). */
function workflowInputOf(
  row: JobRow,
  ctx: Pick<StartContext, 'webhookProviders' | 'pollDefaults'>,
  policy?: ScrapeWorkflowInput['policy'],
): ScrapeWorkflowInput {
  const j = Store.jobInput(row);
  return {
    jobId: j.jobId,
    account: j.account,
    key: j.key,
    provider: j.provider,
    requestHash: j.requestHash,
    request: {
      url: j.request.url,
      format: j.request.format as ScrapeWorkflowInput['request']['format'],
      options: j.request.options,
    },
    row: j.row,
    batchId: j.batchId,
    policy: pollPolicyOf(ctx.pollDefaults?.(j.provider), { ...(j.policy ?? {}), ...(policy ?? {}) }),
    ...(ctx.webhookProviders?.includes(j.provider) ? { webhooks: true } : {}),
  };
}

/**
 * Starts a scrape, or returns the existing job for the same (account, key). Returns at once.
 * The target URL is put in its WHATWG serialisation first (the typed form is kept on the job row
 * as evidence), so two spellings of one address are one job. Throws {@link InvalidInputError} for
 * bad input (and when Temporal refuses the start's arguments), {@link IdempotencyConflictError}
 * when the key was used with other parameters, {@link BudgetExceededError} when a budget of the
 * account cannot take the job's estimate and the account refuses such jobs, and an `Error` when
 * Temporal cannot be reached (no row is left behind then).
 */
export async function startScrape(
  ctx: StartContext,
  input: StartScrapeInput,
  extras: StartExtras = {},
): Promise<JobRef & { created: boolean }> {
  const parsed = StartScrapeInputSchema.safeParse(input);
  if (!parsed.success)
    throw new InvalidInputError(`invalid scrape request: ${z.prettifyError(parsed.error)}`, parsed.error.issues);
  const p = parsed.data;
  const provider = p.provider ?? ctx.defaultProvider;
  if (ctx.providers && !ctx.providers.includes(provider)) {
    throw new InvalidInputError(`unknown provider "${provider}"; configured: ${ctx.providers.join(', ') || 'none'}`, [
      { code: 'custom', path: ['provider'], message: `unknown provider "${provider}"`, input: provider },
    ]);
  }
  if (ctx.hasCredential && !ctx.hasCredential(provider, p.account)) {
    const message = `provider "${provider}" has no credential for account "${p.account}": add providers.${provider}.credentials.accounts.${p.account} (or credentials.default) to the configuration`;
    throw new InvalidInputError(message, [{ code: 'custom', path: ['account'], message, input: p.account }]);
  }
  const typedUrl = p.url;
  let request = { url: canonicalUrl(typedUrl), format: p.format, options: p.options };
  let requestHash = fingerprint({ provider, request });
  // Before canonical URLs the fingerprint hashed the URL as typed: a stored job with that
  // fingerprint is this same request.
  const typedHash =
    typedUrl === request.url ? requestHash : fingerprint({ provider, request: { ...request, url: typedUrl } });
  let key = p.key ?? derivedKey(request.url, requestHash);
  // Keys this request was derived to by earlier versions: `<host>-<hash>` (before path slugs; the
  // same as the key for a root path), then `r-<hash>` (before readable keys).
  const formerKeys = [
    ...(p.key ? [] : [hostHashKey(request.url, requestHash), legacyClientKey(provider, { ...request, url: typedUrl })]),
    ...(extras.formerKeys ?? []),
  ].filter((former) => former !== key);
  for (const former of formerKeys) {
    if (await ctx.store.jobs.get(jobIdFor(p.account, former))) {
      key = former;
      break;
    }
  }
  const jobId = jobIdFor(p.account, key);
  // The row is evidence only: its secret-named columns and credentials (of any column, by shape) are redacted before it
  // enters the store and workflow input (and so history).
  const row = p.row === undefined ? undefined : (sanitizeInput(p.row) as Record<string, unknown>);
  // Persist the reference before anything else. The store is also the key's long-lived
  // record (Temporal forgets closed workflows after the namespace retention): a known key answers
  // from it, and the same key with other parameters is a conflict.
  let created: boolean;
  let existing: JobRow;
  try {
    const r = await ctx.store.jobs.insert(
      Store.jobRow({
        jobId,
        account: p.account,
        key,
        provider,
        requestHash,
        request,
        row,
        policy: p.policy,
        batchId: p.batchId,
        workflowId: jobId,
        typedUrl,
        priority: p.priority,
      }),
    );
    created = r.inserted;
    existing = r.row;
    // A budget the job's estimate would take past its amount, under a `refuse` policy: refused at the door, nothing kept.
    const refusal = created ? await checkAtDoor(ctx, p.account, provider, request) : undefined;
    if (refusal?.policy.onExceeded === 'refuse') {
      await ctx.store.jobs.forgetUnstarted(jobId);
      throw new BudgetExceededError(refusal);
    }
  } catch (e) {
    if (!(e instanceof IdempotencyConflictStoreError)) throw e;
    const stored = e.existingHash === typedHash ? await ctx.store.jobs.get(jobId) : undefined;
    if (!stored) throw new IdempotencyConflictError(jobId);
    // A job stored before canonical URLs, for this same request: it is the answer, as stored.
    created = false;
    existing = stored;
  }
  if (!created) {
    if (isFinalState(existing.state)) return { jobId, account: p.account, key, created: false };
    // Keep what the existing job was started with (a repeat never changes a job).
    request = { ...request, url: existing.url };
    requestHash = existing.request_hash;
  }
  const wfInput: ScrapeWorkflowInput = {
    jobId,
    account: p.account,
    key,
    provider,
    requestHash,
    request,
    row,
    batchId: p.batchId,
    policy: pollPolicyOf(ctx.pollDefaults?.(provider), p.policy),
  };
  if (ctx.webhookProviders?.includes(provider)) wfInput.webhooks = true;
  try {
    await ctx.temporal.workflow.start<ScrapeWorkflow>(ctx.workflowType ?? SCRAPE_WORKFLOW_TYPE, {
      ...startOptions(wfInput, { taskQueue: ctx.taskQueue, state: 'submitting', typedUrl }),
      workflowIdConflictPolicy: 'USE_EXISTING',
      // The store is the registry of keys: a key it did not know is a new job even if Temporal
      // still holds a closed run under this ID from before the store was reset; a key it knows
      // never gets a second run from a start (only `resume` does that).
      workflowIdReusePolicy: created ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
    });
  } catch (e) {
    // A closed run with this key exists (REJECT_DUPLICATE): the repeat returns it, never restarts it.
    if (e instanceof WorkflowExecutionAlreadyStartedError) return { jobId, account: p.account, key, created };
    // Temporal refused the start: leave no row behind that no workflow will ever drive.
    if (created) await ctx.store.jobs.forgetUnstarted(jobId);
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
    const reason = `${e instanceof Error ? e.message : String(e)}${cause ? `: ${cause.message}` : ''}`;
    if ((cause as { code?: number } | undefined)?.code === 3 /* INVALID_ARGUMENT */) {
      throw new InvalidInputError(
        `Temporal refused to start job ${jobId} (nothing was started or kept): ${reason}`,
        [],
      );
    }
    throw new Error(`could not start job ${jobId} (nothing was kept; repeat the request): ${reason}`, { cause: e });
  }
  return { jobId, account: p.account, key, created };
}

/**
 * Starts a new run of a stored job (see `ScrapeClient.resume`): with the job's task ID it polls
 * that task and never submits; without (an orphan that never got one) it reconciles with the
 * provider before any new submission. `pendingCancel` carries a cancel that was under way. A run
 * already tracking the job again is left alone. Returns whether this call started the run (false:
 * a run of that workflow ID was running).
 */
export async function startResumedRun(
  ctx: StartContext,
  row: JobRow,
  opts: { policy?: ScrapeWorkflowInput['policy']; pendingCancel?: ScrapeWorkflowInput['pendingCancel'] } = {},
): Promise<boolean> {
  const wfInput = workflowInputOf(row, ctx, opts.policy);
  if (row.task_id) wfInput.resume = { taskId: row.task_id };
  if (opts.pendingCancel) wfInput.pendingCancel = opts.pendingCancel;
  try {
    await ctx.temporal.workflow.start<ScrapeWorkflow>(ctx.workflowType ?? SCRAPE_WORKFLOW_TYPE, {
      ...startOptions(wfInput, {
        taskQueue: ctx.taskQueue,
        // A run resumed to cancel shows as being cancelled while it waits for a worker.
        state: opts.pendingCancel ? 'cancelling' : row.task_id ? 'pending' : 'submitting',
        typedUrl: Store.jobInput(row).typedUrl,
        resumed: true,
        resumedTaskId: row.task_id ?? undefined,
      }),
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return true;
  } catch (e) {
    if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
    return false; // already being tracked again
  }
}
