/**
 * Configuration of the declarative `http` kind: any "submit, get an ID, poll" API described in
 * the worker configuration, validated with zod (every error names the field). Templates and JSON
 * Pointers are those of `template.ts`; each template may use only its context's variables:
 *
 * | context | variables |
 * |---|---|
 * | `submit` (path, query, headers, body) | `url`, `format`, `options`, `clientRef`, `idempotencyKey`, `callbackUrl`, `webhookSecret` |
 * | `status`, `cancel` (path or url, query, headers, body) | `taskId`, `url`, `format`, `options`, `clientRef`, `submitAnswer` |
 * | `result.request` | those of `status`, and `statusAnswer` |
 * | `list` | `clientRef`, `url`, `format`, `options`, `submittedAfter` |
 *
 * `{{options.x}}`, `{{submitAnswer.a.b}}` and `{{statusAnswer.a.b}}` name fields: of the job's
 * options, of the submit's answer (only the fields the entry's templates name are kept, with the
 * task ID: a task found by a lookup or given by an operator has none, and a call that needs one
 * is refused) and of the final status answer.
 *
 * What the entry configures decides the capabilities: `submit.idempotent` (the API honours the key
 * we send), `list` (reconcile after a lost submit), `cancel`, `webhookScheme` (callbacks). With
 * `auth: {in: "none"}` the entry needs no `credentials` at all.
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';
import {
  callFields,
  checkCall,
  isFlatForm,
  pathTemplate,
  PointerSchema,
  StatusCodes,
  stringMap,
  templated,
  TEMPLATE_VARS,
} from './callConfig.js';
import { ResultSchema } from './resultConfig.js';

/** Our states a provider word can map to, plus `unrecognised` (polled on the normal schedule, never final). */
const MappedStateSchema = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled', 'unrecognised']);

/** Where the credential goes: `bearer` (default), a `header` (`name`, `scheme`; `""` for the bare key), the `query` string, `basic` (`user:password`), the JSON/form `body`, or `none`. */
const AuthSchema = z.discriminatedUnion('in', [
  z.strictObject({ in: z.literal('bearer') }),
  z.strictObject({ in: z.literal('header'), name: z.string().min(1), scheme: z.string().default('') }),
  z.strictObject({ in: z.literal('query'), name: z.string().min(1) }),
  z.strictObject({ in: z.literal('basic') }),
  z.strictObject({ in: z.literal('body'), name: z.string().min(1) }),
  z.strictObject({ in: z.literal('none') }),
]);

/** The submit call. `taskIdPath` is where the task ID is in the answer (any 2xx carrying one is an acceptance). */
const SubmitSchema = z
  .strictObject({
    method: z.enum(['POST', 'PUT', 'GET']).default('POST'),
    path: pathTemplate(TEMPLATE_VARS.submit),
    query: stringMap(TEMPLATE_VARS.submit).optional(),
    headers: stringMap(TEMPLATE_VARS.submit).optional(),
    /** JSON body template (or form fields with `bodyEncoding: "form"`). */
    body: templated(z.unknown(), TEMPLATE_VARS.submit).optional(),
    bodyEncoding: z.enum(['json', 'form']).default('json'),
    /** The API honours the idempotency key we send (`{{idempotencyKey}}` in a header, the query or the body): a replay returns the same task (or a 409 we then reconcile by listing). */
    idempotent: z.boolean().default(false),
    /** Response header saying `true` when the answer is a replay (e.g. `Idempotent-Replayed`). */
    replayedHeader: z.string().min(1).optional(),
    taskIdPath: PointerSchema,
    /** Where the status word is in the submit answer (default: none; recorded as `submitted`). */
    statusPath: PointerSchema.optional(),
  })
  .refine((s) => !s.idempotent || JSON.stringify([s.headers, s.query, s.body]).includes('{{idempotencyKey}}'), {
    message: 'submit.idempotent is true but no header, query parameter or body field sends {{idempotencyKey}}',
    path: ['idempotent'],
  })
  .refine((s) => s.method !== 'GET' || s.body === undefined, {
    message: 'a GET submit cannot have a body: put the fields in submit.query',
    path: ['body'],
  })
  .refine((s) => s.bodyEncoding !== 'form' || s.body === undefined || isFlatForm(s.body), {
    message: 'a form body must be an object of strings, numbers, booleans or arrays of strings',
    path: ['body'],
  });

/** Pointers to progress figures in a status answer (counts). */
const ProgressSchema = z.strictObject({
  pagesFetched: PointerSchema.optional(),
  creditsUsed: PointerSchema.optional(),
  documents: PointerSchema.optional(),
});

/**
 * The status call and the map of the provider's words to our states. The call: `GET` (default) or
 * `POST` at `path` or at a `url` an earlier answer returned (`{{submitAnswer.statusUrl}}`), with
 * `query`, `headers` and a JSON or form `body`: templates of the `task` context (the task ID, the
 * request, our reference, fields of the submit's answer). `matchCase: "any"` (default) compares
 * words case-insensitively; `"exact"` only as written (another case is then an unknown word). A
 * word the map does not know gets `default` (`unrecognised` unless configured otherwise). A
 * missing or null word is an unexpected answer (read again) unless `missing` says what it means:
 * `not_found` (the provider does not know the task, e.g. a server that forgot its jobs on a
 * restart: counted like a `404`, then `expired`) or any mapped state.
 */
const StatusSchema = z
  .strictObject({
    method: z.enum(['GET', 'POST']).default('GET'),
    ...callFields(TEMPLATE_VARS.task),
    statusPath: PointerSchema,
    map: z
      .record(z.string().min(1), MappedStateSchema)
      .refine((m) => Object.keys(m).length > 0, 'must map at least one word'),
    matchCase: z.enum(['any', 'exact']).default('any'),
    default: MappedStateSchema.default('unrecognised'),
    missing: z.union([MappedStateSchema.exclude(['unrecognised']), z.literal('not_found')]).optional(),
    /** 2xx codes meaning "not ready yet" (running, polled again). */
    notReadyStatusCodes: StatusCodes.default([202, 204]),
    /** Where a failed task's error code and message are. */
    errorCodePath: PointerSchema.optional(),
    errorMessagePath: PointerSchema.optional(),
    progress: ProgressSchema.optional(),
  })
  .superRefine(checkCall)
  .refine(
    (s) =>
      s.matchCase === 'exact' ||
      new Set(Object.keys(s.map).map((k) => k.toLowerCase())).size === Object.keys(s.map).length,
    {
      message: 'two words of status.map differ only in case while matchCase is "any"',
      path: ['map'],
    },
  );

/** A JSON scalar a predicate compares with. */
const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/**
 * How the provider's error answers are read and what they mean. Codes are the provider's (from
 * `codePath`/`messagePath`, else the usual shapes: `{error: {code, message}}`, `{code, message}`, …).
 *
 * `errorWhen: {path, equals}`: a 2xx answer whose value at `path` equals `equals` (or one of a list
 * of values) is an error answer all the same (Scrapyd's `200 {"status": "error", "message": …}`),
 * on every call; it is read like a `400` with the code and message above. A refused submit
 * therefore ends the job `failed` with the provider's words (nothing was created); on a read,
 * `terminalCodes` and `expiredCodes` apply, and any other such answer refuses the reads
 * (`tracking_interrupted`: fix the cause and resume).
 */
const ErrorsSchema = z
  .strictObject({
    codePath: PointerSchema.optional(),
    messagePath: PointerSchema.optional(),
    errorWhen: z.strictObject({ path: PointerSchema, equals: z.union([Scalar, z.array(Scalar).min(1)]) }).optional(),
    /** Codes on a status/result read meaning "nothing will ever come" (empty snapshot, bad input found late) → the job fails with the code. */
    terminalCodes: z.array(z.string().min(1)).default([]),
    /** Codes, and HTTP statuses, meaning the task expired → `expired` at once. */
    expiredCodes: z.array(z.string().min(1)).default([]),
    expiredStatusCodes: StatusCodes.default([410]),
    /** A `404` for a known task: `count` (default: after `poll.notFoundLimit` in a row it is expired) or `expired` at once. */
    notFound: z.enum(['count', 'expired']).default('count'),
    /**
     * A `404` on the result read of a task the status said is complete: `count` (default: like any
     * `404`) or `failed` (the provider finished the task and has no result for it, e.g. a Scrapyd
     * spider that crashed at start writes no items feed: the job fails with that answer).
     */
    resultNotFound: z.enum(['count', 'failed']).default('count'),
    /** Codes meaning "too many of your jobs are active" (a concurrency refusal: the adaptive active-jobs limit learns from it). */
    concurrencyCodes: z.array(z.string().min(1)).default([]),
    /** Codes on a cancel or list call meaning the endpoint is not offered → `unsupported`. */
    unsupportedCodes: z.array(z.string().min(1)).default([]),
  })
  .prefault({});

/**
 * The cancel call: `DELETE` (default), `POST` or `PUT` at `path` or `url`, with `query`,
 * `headers` and a JSON or form `body` (templates of the `task` context, like the status call).
 * A 2xx answer is an accepted cancel (status word at `statusPath`); `finalStatusCodes` → already
 * final (word at `finalStatusPath`). `completedMeans` says what a `completed` word means once a
 * cancel was accepted: `completed` (default: the provider reports a stopped task as cancelled, so
 * a completed one ran to its end) or `stopped_or_completed` (its final word is the same whether
 * the work stopped early or finished, as Scrapyd's `finished`): the outcome then says exactly that.
 */
const CancelSchema = z
  .strictObject({
    method: z.enum(['DELETE', 'POST', 'PUT']).default('DELETE'),
    ...callFields(TEMPLATE_VARS.task),
    statusPath: PointerSchema.optional(),
    finalStatusCodes: StatusCodes.default([409]),
    finalStatusPath: PointerSchema.optional(),
    completedMeans: z.enum(['completed', 'stopped_or_completed']).default('completed'),
  })
  .superRefine(checkCall);

/**
 * The list call of reconciliation (`path` or `url`, `query`, `headers`, a JSON or form `body`;
 * templates of the `list` context): items at `itemsPath`, one pointer or several (the arrays of
 * one answer, e.g. Scrapyd's `["/pending", "/running", "/finished"]`: the reading is complete only
 * when every one of them is an array); an item is a candidate when the value at `matchPath`
 * equals `match` (default `{{clientRef}}`: our reference, sent at submit — a strong match; a
 * template without `{{clientRef}}`, such as `{{url}}`, only matches weakly and is never adopted on
 * its own); its task ID at `taskIdPath`, its status word at `statusPath` (else the name of the
 * array it is in). What the list can prove is declared here too: `shows` (the job phases it lists:
 * `queued`, `running`, `finished`; default all three), `finishedForMs` (how long a finished job
 * stays listed, ms; default while the provider keeps it) and `lagMs` (how long a new job may be
 * missing, ms; default 30 s). Absence is proven only by a read after `lagMs` of a list that shows
 * every phase; one candidate carrying our reference is adopted; two mean a duplicate exists and
 * wait for an operator.
 */
export const ListSchema = z
  .strictObject({
    shows: z.array(z.enum(['queued', 'running', 'finished'])).default(['queued', 'running', 'finished']),
    finishedForMs: z.number().int().positive().nullable().default(null),
    lagMs: z.number().int().min(0).max(3_600_000).default(30_000),
    method: z.enum(['GET', 'POST']).default('GET'),
    ...callFields(TEMPLATE_VARS.list),
    itemsPath: z.union([PointerSchema, z.array(PointerSchema).min(1)]),
    matchPath: PointerSchema,
    match: templated(z.string().min(1), TEMPLATE_VARS.list).default('{{clientRef}}'),
    taskIdPath: PointerSchema,
    statusPath: PointerSchema.optional(),
    order: z.enum(['newest-first', 'oldest-first']).default('newest-first'),
  })
  .superRefine(checkCall);

/**
 * What the provider's webhook deliveries look like. `signed` (default true): an HMAC-SHA256 of
 * the raw body with our `webhook.secretEnv` secret in `signatureHeader`, as `sha256=<hex>`
 * (`signatureFormat: "sha256=hex"`) or bare hex (`"hex"`); `false`: unsigned, each job's callback
 * URL carries its own token. Pointers into the delivery's JSON body say where its event ID (stable
 * across redeliveries; else `eventIdHeader`, else the body's hash), type, task ID, our reference
 * and the status are.
 */
const WebhookSchemeSchema = z
  .strictObject({
    signed: z.boolean().default(true),
    signatureHeader: z
      .string()
      .min(1)
      .transform((h) => h.toLowerCase())
      .optional(),
    signatureFormat: z.enum(['sha256=hex', 'hex']).default('sha256=hex'),
    eventIdPath: PointerSchema.optional(),
    eventIdHeader: z
      .string()
      .min(1)
      .transform((h) => h.toLowerCase())
      .optional(),
    typePath: PointerSchema.optional(),
    taskIdPath: PointerSchema.optional(),
    clientRefPath: PointerSchema.optional(),
    statusPath: PointerSchema.optional(),
  })
  .refine((w) => !w.signed || w.signatureHeader !== undefined, {
    message: 'a signed webhookScheme needs signatureHeader',
    path: ['signatureHeader'],
  })
  .refine((w) => w.taskIdPath !== undefined || w.clientRefPath !== undefined, {
    message: 'webhookScheme needs taskIdPath or clientRefPath to match a delivery to its job',
    path: ['taskIdPath'],
  });

/** The kind's own fields (see the module docs). */
export const HttpConfigSchema = z.strictObject({
  kind: z.literal('http'),
  ...httpEndpointFields({ submitTimeoutMs: 15_000, readTimeoutMs: 10_000 }),
  /** A name for messages (e.g. `Acme Scraper API v3`). */
  title: z.string().min(1).max(200).optional(),
  auth: AuthSchema.prefault({ in: 'bearer' }),
  /** Headers sent with every call (never secrets: those go through `auth`). */
  headers: z.record(z.string().min(1), z.string()).optional(),
  submit: SubmitSchema,
  status: StatusSchema,
  result: ResultSchema,
  errors: ErrorsSchema,
  cancel: CancelSchema.optional(),
  list: ListSchema.optional(),
  webhookScheme: WebhookSchemeSchema.optional(),
});

/** A parsed `http` entry (its fields plus the common ones). */
export type HttpEntry = EntryFor<typeof HttpConfigSchema>;

/**
 * Checks across fields (run on the whole entry by the descriptor): a configured `webhook` needs a
 * `webhookScheme`; `auth.in: "body"` needs an object body (or none).
 */
export function checkHttpEntry(entry: HttpEntry, ctx: z.RefinementCtx): void {
  if (entry.webhook && !entry.webhookScheme)
    ctx.addIssue({
      code: 'custom',
      path: ['webhookScheme'],
      message:
        '"webhook" is configured but "webhookScheme" is not: say how the provider signs and shapes its deliveries',
    });
  if (
    entry.auth.in === 'body' &&
    entry.submit.body !== undefined &&
    (entry.submit.body === null || typeof entry.submit.body !== 'object' || Array.isArray(entry.submit.body))
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['submit', 'body'],
      message: 'auth.in is "body" but submit.body is not an object',
    });
  }
}
