/**
 * zod schemas for every input that enters the system from outside (client calls, CLI rows, the
 * HTTP API). Workflow code never imports this module (it imports only the plain types).
 */
import { z } from 'zod';
import { findSecret, secretPartsOfUrl } from '../lib/secretDetection.js';
import { MAX_JSON_DEPTH, valueDepth } from '../lib/jsonDepth.js';
import { PRIORITY_RANGE } from './budgets.js';

/** Account names: 1..64 of `A-Z a-z 0-9 . _ -`. */
export const AccountSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'account must be 1-64 characters of A-Z, a-z, 0-9, ".", "_", "-"');

/** Idempotency keys: 1..200 of `A-Z a-z 0-9 . _ : -`. */
export const IdempotencyKeySchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,200}$/, 'key must be 1-200 characters of A-Z, a-z, 0-9, ".", "_", ":", "-"');

/**
 * An absolute http(s) URL without credentials. URLs carrying user-info or a secret-named query
 * parameter (`token`, `apikey`, …) are refused: secrets must never enter workflow input (no secrets in history, logs or errors).
 */
export const TargetUrlSchema = z
  .string()
  .trim()
  .max(4096, 'url is longer than 4096 characters')
  .superRefine((value, ctx) => {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'url is not an absolute URL' });
      return;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      ctx.addIssue({ code: 'custom', message: `url scheme must be http or https, not ${u.protocol.replace(':', '')}` });
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    if (/[\u0000-\u001f\u007f]/.test(value))
      ctx.addIssue({ code: 'custom', message: 'url contains a control character' });
    for (const part of secretPartsOfUrl(value)) {
      ctx.addIssue({
        code: 'custom',
        message:
          part === 'user-info'
            ? 'url must not contain credentials (user-info); configure credentials on the worker'
            : `url ${part} looks like a credential; secrets must not enter workflow input`,
      });
    }
  });

/**
 * Largest input row kept as evidence with a job, and largest provider `options`: 64 KiB of JSON
 * (UTF-8 bytes) each. Both travel in the workflow's start input, which Temporal caps at 2 MiB per
 * payload by default.
 */
const MAX_ROW_BYTES = 65_536;

/**
 * zod refinement of a JSON value for the workflow input: at most {@link MAX_JSON_DEPTH} levels deep
 * (else `<nests> arrays and objects more than …`, and false: nothing more is checked) and at most
 * {@link MAX_ROW_BYTES} of JSON (else `<is> N bytes of JSON; at most … <fate>`).
 */
function checkJson(value: object, ctx: z.RefinementCtx, [nests, is, fate]: [string, string, string]): boolean {
  if (valueDepth(value) > MAX_JSON_DEPTH) {
    ctx.addIssue({ code: 'custom', message: `${nests} arrays and objects more than ${MAX_JSON_DEPTH} levels deep` });
    return false;
  }
  const bytes = new TextEncoder().encode(JSON.stringify(value)).length;
  if (bytes > MAX_ROW_BYTES)
    ctx.addIssue({ code: 'custom', message: `${is} ${bytes} bytes of JSON; at most ${MAX_ROW_BYTES} ${fate}` });
  return true;
}

/** zod refinement: the row is at most {@link MAX_JSON_DEPTH} deep and {@link MAX_ROW_BYTES} of JSON. */
export function checkRowSize(row: Record<string, unknown> | undefined, ctx: z.RefinementCtx): void {
  if (row !== undefined) checkJson(row, ctx, ['the row nests', 'the row is', 'are kept with a job']);
}

/** An integer number of ms in [min, max], whose error names the field and both bounds with units. */
function msBetween(field: string, min: number, max: number) {
  const human = (ms: number) =>
    ms % 86_400_000 === 0
      ? `${ms / 86_400_000} d`
      : ms % 3_600_000 === 0
        ? `${ms / 3_600_000} h`
        : ms % 60_000 === 0
          ? `${ms / 60_000} min`
          : ms % 1_000 === 0
            ? `${ms / 1_000} s`
            : `${ms} ms`;
  const error = `${field} must be a whole number of milliseconds from ${min} (${human(min)}) to ${max} (${human(max)})`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
}

/** A number in [min, max] whose every error is `error`. */
const numberBetween = (error: string, min: number, max: number) =>
  z.number({ error }).min(min, { error }).max(max, { error });

/** A whole number from 1 to `max`, with zod's own errors. */
const countUpTo = (max: number) => z.number().int().min(1).max(max);

/**
 * Poll policy overrides (all durations in ms; see `PollPolicy` in `model/types.ts` for what each
 * does). The CLI's `--deadline` / `--poll-*` flags and the HTTP API's `policy` fill it. A start
 * delay longer than the delay ceiling is refused.
 */
export const PollPolicySchema = z
  .object({
    initialDelayMs: msBetween('initialDelayMs', 10, 3_600_000).describe(
      'Delay before the first status check, ms (CLI --poll-initial).',
    ),
    maxDelayMs: msBetween('maxDelayMs', 10, 24 * 3_600_000).describe(
      'Ceiling of the delay between status checks, ms (CLI --poll-max).',
    ),
    multiplier: numberBetween('multiplier must be a number from 1 to 10', 1, 10).describe(
      'Growth of the delay after each check (CLI --poll-multiplier).',
    ),
    jitter: numberBetween('jitter must be a fraction from 0 to 1', 0, 1).describe(
      'Random spread of each delay, a fraction 0..1 (CLI --poll-jitter).',
    ),
    deadlineMs: msBetween('deadlineMs', 1_000, 30 * 24 * 3_600_000).describe(
      'Tracking deadline counted from the moment the provider task is known, ms; past it the job is tracking_interrupted (CLI --deadline).',
    ),
    failedReadLimit: countUpTo(1_000).describe(
      'Failed provider reads in a row (status, result, lookups) that, once they also span failedReadBudgetMs, end the job tracking_interrupted (count).',
    ),
    failedReadBudgetMs: msBetween('failedReadBudgetMs', 1_000, 7 * 24 * 3_600_000).describe(
      'How long a streak of failed provider reads must last before it ends the job tracking_interrupted, ms.',
    ),
    failedReadMaxDelayMs: msBetween('failedReadMaxDelayMs', 10, 24 * 3_600_000).describe(
      'Ceiling of the back-off between failed reads (it doubles from initialDelayMs; never shorter than Retry-After), ms.',
    ),
    notFoundLimit: countUpTo(100).describe('404s in a row on a known task before it is expired (count).'),
    submitRounds: countUpTo(20).describe('Lost submissions proved absent before the job fails (count).'),
    cancelConfirmDeadlineMs: msBetween('cancelConfirmDeadlineMs', 1_000, 24 * 3_600_000).describe(
      'How long a cancel waits for the provider to confirm, ms.',
    ),
    onDeadline: z
      .enum(['interrupt', 'cancel'])
      .describe('At the deadline: stop tracking (interrupt) or cancel at the provider (CLI --on-deadline).'),
    activityTimeoutMs: msBetween('activityTimeoutMs', 1_000, 3_600_000).describe(
      'Timeout of one activity attempt, ms.',
    ),
    webhookSlowdown: z.number().min(1).max(100).describe('Polling slowdown factor when the provider sends webhooks.'),
    pollHeartbeatTimeoutMs: msBetween('pollHeartbeatTimeoutMs', 10_000, 3_600_000).describe(
      'Heartbeat timeout of the polling activity, ms: how long a worker that died without warning goes unnoticed.',
    ),
    fastPathMs: msBetween('fastPathMs', 0, 600_000).describe(
      'How long the submit attempt goes on into the first status checks, ms (0: submit only).',
    ),
    learnSchedule: z
      .boolean()
      .describe(
        'Place status checks where the provider key’s recent jobs finished (learned from the last completions).',
      ),
  })
  .partial()
  .strict()
  .superRefine((p, ctx) => {
    if (p.initialDelayMs !== undefined && p.maxDelayMs !== undefined && p.initialDelayMs > p.maxDelayMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['initialDelayMs'],
        message: `initialDelayMs (${p.initialDelayMs} ms) is longer than maxDelayMs (${p.maxDelayMs} ms)`,
      });
    }
  });

/** Input of `ScrapeClient.startScrape`. Unknown fields are rejected. */
export const StartScrapeInputSchema = z
  .object({
    account: AccountSchema,
    url: TargetUrlSchema,
    /** Provider name; defaults to the configured default provider. */
    provider: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .optional(),
    format: z.enum(['markdown', 'text']).default('markdown'),
    /** Provider-specific options (JSON; no secrets; not `url`, `format`, `client_ref` or `webhook`, which are ours). */
    options: z
      .record(z.string(), z.unknown())
      .default({})
      .superRefine((o, ctx) => {
        if (!checkJson(o, ctx, ['options nest', 'options are', 'are accepted'])) return;
        for (const k of Object.keys(o)) {
          if (['url', 'format', 'client_ref', 'webhook'].includes(k))
            ctx.addIssue({ code: 'custom', message: `options.${k} is set by the orchestrator and cannot be given` });
        }
        const secret = findSecret(o);
        if (secret)
          ctx.addIssue({
            code: 'custom',
            message: `options.${secret} looks like a credential; secrets must not enter workflow input (configure them on the worker)`,
          });
      }),
    /** The caller's idempotency key; when absent, one is derived from the request. */
    key: IdempotencyKeySchema.optional(),
    /** The caller's input row, kept with the job as evidence. */
    row: z.record(z.string(), z.unknown()).optional().superRefine(checkRowSize),
    batchId: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,120}$/)
      .optional(),
    policy: PollPolicySchema.optional(),
    /** Order among the account's jobs waiting for a slot of the same provider key: higher first (default 0). */
    priority: z.number().int().min(PRIORITY_RANGE.min).max(PRIORITY_RANGE.max).optional(),
  })
  .strict();
export type StartScrapeInput = z.input<typeof StartScrapeInputSchema>;
