/**
 * zod schemas for every input that enters the system from outside (client calls, CLI rows, the
 * HTTP API). Workflow code never imports this module (it imports only the plain types).
 */
import { z } from 'zod';
import { findSecret, secretPartsOfUrl } from '../lib/sanitize.js';

/** Account names: 1..64 of `A-Z a-z 0-9 . _ -`. */
export const AccountSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'account must be 1-64 characters of A-Z, a-z, 0-9, ".", "_", "-"');

/** Idempotency keys: 1..200 of `A-Z a-z 0-9 . _ : -`. */
export const IdempotencyKeySchema = z.string().regex(/^[A-Za-z0-9._:-]{1,200}$/, 'key must be 1-200 characters of A-Z, a-z, 0-9, ".", "_", ":", "-"');

/**
 * An absolute http(s) URL without credentials. URLs carrying user-info or a secret-named query
 * parameter (`token`, `apikey`, …) are refused: secrets must never enter workflow input (rule 8).
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
    if (u.protocol !== 'http:' && u.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: `url scheme must be http or https, not ${u.protocol.replace(':', '')}` });
    if (/[\u0000-\u001f\u007f]/.test(value)) ctx.addIssue({ code: 'custom', message: 'url contains a control character' });
    for (const part of secretPartsOfUrl(value)) {
      ctx.addIssue({
        code: 'custom',
        message: part === 'user-info'
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
export const MAX_ROW_BYTES = 65_536;

/** zod refinement: the row's JSON is at most {@link MAX_ROW_BYTES}. */
export function checkRowSize(row: Record<string, unknown> | undefined, ctx: z.RefinementCtx): void {
  if (row === undefined) return;
  const bytes = new TextEncoder().encode(JSON.stringify(row)).length;
  if (bytes > MAX_ROW_BYTES) ctx.addIssue({ code: 'custom', message: `the row is ${bytes} bytes of JSON; at most ${MAX_ROW_BYTES} are kept with a job` });
}

/** Poll policy overrides (all durations in ms). */
export const PollPolicySchema = z
  .object({
    initialDelayMs: z.number().int().min(10).max(3_600_000),
    maxDelayMs: z.number().int().min(10).max(24 * 3_600_000),
    multiplier: z.number().min(1).max(10),
    jitter: z.number().min(0).max(1),
    deadlineMs: z.number().int().min(1_000).max(30 * 24 * 3_600_000),
    statusCheckAttempts: z.number().int().min(1).max(100),
    statusCheckBudgetMs: z.number().int().min(1_000).max(24 * 3_600_000),
    notFoundLimit: z.number().int().min(1).max(100),
    submitRounds: z.number().int().min(1).max(20),
    cancelConfirmDeadlineMs: z.number().int().min(1_000).max(24 * 3_600_000),
    onDeadline: z.enum(['interrupt', 'cancel']),
    activityTimeoutMs: z.number().int().min(1_000).max(3_600_000),
    webhookSlowdown: z.number().min(1).max(100),
  })
  .partial()
  .strict();

/** Input of `ScrapeClient.startScrape`. Unknown fields are rejected. */
export const StartScrapeInputSchema = z
  .object({
    account: AccountSchema,
    url: TargetUrlSchema,
    /** Provider name; defaults to the configured default provider. */
    provider: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).optional(),
    format: z.enum(['markdown', 'text']).default('markdown'),
    /** Provider-specific options (JSON; no secrets; not `url`, `format`, `client_ref` or `webhook`, which are ours). */
    options: z
      .record(z.string(), z.unknown())
      .default({})
      .superRefine((o, ctx) => {
        const bytes = new TextEncoder().encode(JSON.stringify(o)).length;
        if (bytes > MAX_ROW_BYTES) ctx.addIssue({ code: 'custom', message: `options are ${bytes} bytes of JSON; at most ${MAX_ROW_BYTES} are accepted` });
        for (const k of Object.keys(o)) {
          if (['url', 'format', 'client_ref', 'webhook'].includes(k)) ctx.addIssue({ code: 'custom', message: `options.${k} is set by the orchestrator and cannot be given` });
        }
        const secret = findSecret(o);
        if (secret) ctx.addIssue({ code: 'custom', message: `options.${secret} looks like a credential; secrets must not enter workflow input (configure them on the worker)` });
      }),
    /** The caller's idempotency key; when absent, one is derived from the request. */
    key: IdempotencyKeySchema.optional(),
    /** The caller's input row, kept with the job as evidence. */
    row: z.record(z.string(), z.unknown()).optional().superRefine(checkRowSize),
    batchId: z.string().regex(/^[A-Za-z0-9._:-]{1,120}$/).optional(),
    policy: PollPolicySchema.optional(),
  })
  .strict();
export type StartScrapeInput = z.input<typeof StartScrapeInputSchema>;
export type StartScrapeParsed = z.output<typeof StartScrapeInputSchema>;
