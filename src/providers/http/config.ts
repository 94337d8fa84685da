/**
 * Configuration of the declarative `http` kind: any "submit, get an ID, poll" API described in
 * the worker configuration, validated with zod (every error names the field). The common fields
 * (credentials, limits, poll, results, reconcile, webhook) come from `../shared/entry.ts`. Templates and
 * JSON Pointers are those of `template.ts`; each template may use only its context's variables:
 *
 * | context | variables |
 * |---|---|
 * | `submit` (path, query, headers, body) | `url`, `format`, `options`, `clientRef`, `idempotencyKey`, `callbackUrl`, `webhookSecret` |
 * | `status`, `result.request`, `cancel` | `taskId` |
 * | `list` | `clientRef`, `url`, `submittedAfter` |
 *
 * What the entry configures decides the capabilities: `submit.idempotent` (the API honours the key
 * we send), `list` (reconcile after a lost submit), `cancel`, `webhookScheme` (callbacks).
 */
import { z } from 'zod';
import { httpEndpointFields, type EntryFor } from '../shared/entry.js';
import { isJsonPointer, unknownPlaceholders } from './template.js';

/** Our states a provider word can map to, plus `unrecognised` (polled on the normal schedule, never final). */
export const MappedStateSchema = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled', 'unrecognised']);

/** Variables of each template context (see the module table). */
export const TEMPLATE_VARS = {
  submit: ['url', 'format', 'options', 'clientRef', 'idempotencyKey', 'callbackUrl', 'webhookSecret'],
  task: ['taskId'],
  list: ['clientRef', 'url', 'submittedAfter'],
} as const;

/** A JSON Pointer (RFC 6901): `""` or `/a/b/0`. */
export const PointerSchema = z
  .string()
  .max(500)
  .refine(isJsonPointer, 'must be a JSON Pointer (RFC 6901): "" for the whole answer, or "/field/0/sub"');

/** A template (any JSON) whose placeholders are all in `vars`. */
function templated<T extends z.ZodType>(schema: T, vars: readonly string[]) {
  return schema.superRefine((v, ctx) => {
    const bad = unknownPlaceholders(v, vars);
    if (bad.length > 0)
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder${bad.length > 1 ? 's' : ''} ${bad.map((b) => `{{${b}}}`).join(', ')} (allowed here: ${vars.map((x) => `{{${x}}}`).join(', ')})`,
      });
  });
}
const pathTemplate = (vars: readonly string[]) =>
  templated(
    z
      .string()
      .min(1)
      .max(2000)
      .refine((p) => p.startsWith('/'), 'must start with "/" (it is joined to baseUrl)'),
    vars,
  );
const stringMap = (vars: readonly string[]) => templated(z.record(z.string().min(1), z.string().max(2000)), vars);
const StatusCodes = z.array(z.number().int().min(100).max(599));

/** Where the credential goes: `bearer` (default), a `header` (`name`, `scheme`; `""` for the bare key), the `query` string, `basic` (`user:password`), the JSON/form `body`, or `none`. */
export const AuthSchema = z.discriminatedUnion('in', [
  z.strictObject({ in: z.literal('bearer') }),
  z.strictObject({ in: z.literal('header'), name: z.string().min(1), scheme: z.string().default('') }),
  z.strictObject({ in: z.literal('query'), name: z.string().min(1) }),
  z.strictObject({ in: z.literal('basic') }),
  z.strictObject({ in: z.literal('body'), name: z.string().min(1) }),
  z.strictObject({ in: z.literal('none') }),
]);

/** The submit call. `taskIdPath` is where the task ID is in the answer (any 2xx carrying one is an acceptance). */
export const SubmitSchema = z
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

/** True for a form body template: an object whose values are scalars or arrays of strings. */
function isFlatForm(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  return Object.values(body).every(
    (v) =>
      ['string', 'number', 'boolean'].includes(typeof v) || (Array.isArray(v) && v.every((x) => typeof x === 'string')),
  );
}

/** Pointers to progress figures in a status answer (counts). */
const ProgressSchema = z.strictObject({
  pagesFetched: PointerSchema.optional(),
  creditsUsed: PointerSchema.optional(),
  documents: PointerSchema.optional(),
});

/**
 * The status call and the map of the provider's words to our states. `matchCase: "any"` (default)
 * compares words case-insensitively; `"exact"` only as written (another case is then an unknown
 * word). A word the map does not know gets `default` (`unrecognised` unless configured otherwise).
 */
export const StatusSchema = z
  .strictObject({
    method: z.enum(['GET', 'POST']).default('GET'),
    path: pathTemplate(TEMPLATE_VARS.task),
    query: stringMap(TEMPLATE_VARS.task).optional(),
    statusPath: PointerSchema,
    map: z
      .record(z.string().min(1), MappedStateSchema)
      .refine((m) => Object.keys(m).length > 0, 'must map at least one word'),
    matchCase: z.enum(['any', 'exact']).default('any'),
    default: MappedStateSchema.default('unrecognised'),
    /** 2xx codes meaning "not ready yet" (running, polled again). */
    notReadyStatusCodes: StatusCodes.default([202, 204]),
    /** Where a failed task's error code and message are. */
    errorCodePath: PointerSchema.optional(),
    errorMessagePath: PointerSchema.optional(),
    progress: ProgressSchema.optional(),
  })
  .refine(
    (s) =>
      s.matchCase === 'exact' ||
      new Set(Object.keys(s.map).map((k) => k.toLowerCase())).size === Object.keys(s.map).length,
    {
      message: 'two words of status.map differ only in case while matchCase is "any"',
      path: ['map'],
    },
  );

/** Where each result field is, relative to the page (or to each document). Absent: the field stays empty. */
export const FieldsSchema = z
  .strictObject({
    url: PointerSchema,
    finalUrl: PointerSchema,
    httpStatus: PointerSchema,
    title: PointerSchema,
    byline: PointerSchema,
    excerpt: PointerSchema,
    lang: PointerSchema,
    siteName: PointerSchema,
    publishedTime: PointerSchema,
    text: PointerSchema,
    markdown: PointerSchema,
    links: PointerSchema,
    contentLength: PointerSchema,
    /** A per-document failure message (documents only). */
    error: PointerSchema,
    /**
     * The provider's own ID of each document (documents only): its identity, so that a document
     * the provider serves twice (a repeated page boundary) is stored once. Absent: the document's
     * URL with its position (offset paging and unpaged lists), else with a hash of its content.
     */
    id: PointerSchema,
  })
  .partial()
  .prefault({});

/** How multi-document results are paged: `offset`/`limit` parameters, an opaque `cursor`, or a `next` link in the answer. */
export const PaginationSchema = z.discriminatedUnion('style', [
  z.strictObject({
    style: z.literal('offset'),
    offsetParam: z.string().min(1).default('offset'),
    limitParam: z.string().min(1).default('limit'),
    /**
     * Pointer to the total number of documents in each page's answer. With it the read ends at that
     * total, not at the first short or empty page: an empty page before the total (a page not yet
     * written) is read again at the same offset, a bounded number of times.
     */
    totalPath: PointerSchema.optional(),
  }),
  z.strictObject({
    style: z.literal('cursor'),
    cursorParam: z.string().min(1).default('cursor'),
    cursorPath: PointerSchema,
    limitParam: z.string().min(1).optional(),
  }),
  z.strictObject({ style: z.literal('next'), nextPath: PointerSchema }),
]);

/**
 * Where the result is: in the final status answer (no `request`), or from a separate `request`
 * (its own path template). `pagePath` points at a single page object; `documentsPath` at an array
 * of documents (crawl pages, dataset items), paged by `pagination` when the answer is paged.
 */
export const ResultSchema = z
  .strictObject({
    request: z
      .strictObject({
        method: z.enum(['GET', 'POST']).default('GET'),
        path: pathTemplate(TEMPLATE_VARS.task),
        query: stringMap(TEMPLATE_VARS.task).optional(),
      })
      .optional(),
    pagePath: PointerSchema.optional(),
    documentsPath: PointerSchema.optional(),
    fields: FieldsSchema,
    pagination: PaginationSchema.optional(),
    notReadyStatusCodes: StatusCodes.default([202, 204]),
  })
  .refine((r) => r.pagePath !== undefined || r.documentsPath !== undefined, {
    message: 'result needs pagePath (one page) or documentsPath (many documents)',
    path: ['pagePath'],
  })
  .refine((r) => r.pagination === undefined || (r.documentsPath !== undefined && r.request !== undefined), {
    message: 'result.pagination needs result.documentsPath and result.request',
    path: ['pagination'],
  });

/**
 * How the provider's error answers are read and what they mean. Codes are the provider's (from
 * `codePath`/`messagePath`, else the usual shapes: `{error: {code, message}}`, `{code, message}`, …).
 */
export const ErrorsSchema = z
  .strictObject({
    codePath: PointerSchema.optional(),
    messagePath: PointerSchema.optional(),
    /** Codes on a status/result read meaning "nothing will ever come" (empty snapshot, bad input found late) → the job fails with the code. */
    terminalCodes: z.array(z.string().min(1)).default([]),
    /** Codes, and HTTP statuses, meaning the task expired → `expired` at once. */
    expiredCodes: z.array(z.string().min(1)).default([]),
    expiredStatusCodes: StatusCodes.default([410]),
    /** A `404` for a known task: `count` (default: after `poll.notFoundLimit` in a row it is expired) or `expired` at once. */
    notFound: z.enum(['count', 'expired']).default('count'),
    /** Codes meaning "too many of your jobs are active" (a concurrency refusal: the adaptive active-jobs limit learns from it). */
    concurrencyCodes: z.array(z.string().min(1)).default([]),
    /** Codes on a cancel or list call meaning the endpoint is not offered → `unsupported`. */
    unsupportedCodes: z.array(z.string().min(1)).default([]),
  })
  .prefault({});

/** The cancel call: 2xx accepted (status word at `statusPath`), `finalStatusCodes` → already final (word at `finalStatusPath`). */
export const CancelSchema = z.strictObject({
  method: z.enum(['DELETE', 'POST', 'PUT']).default('DELETE'),
  path: pathTemplate(TEMPLATE_VARS.task),
  statusPath: PointerSchema.optional(),
  finalStatusCodes: StatusCodes.default([409]),
  finalStatusPath: PointerSchema.optional(),
});

/**
 * The list call of reconciliation: items at `itemsPath`; an item is a candidate when the value at
 * `matchPath` equals `match` (default `{{clientRef}}`: our reference, sent at submit — a strong
 * match; a template without `{{clientRef}}`, such as `{{url}}`, only matches weakly and is never
 * adopted on its own); its task ID at `taskIdPath`. What the list can prove is declared here too:
 * `shows` (the job phases it lists: `queued`, `running`, `finished`; default all three),
 * `finishedForMs` (how long a finished job stays listed, ms; default while the provider keeps it)
 * and `lagMs` (how long a new job may be missing, ms; default 30 s). Absence is proven only by a
 * read after `lagMs` of a list that shows every phase; one candidate carrying our reference is
 * adopted; two mean a duplicate exists and wait for an operator.
 */
export const ListSchema = z.strictObject({
  shows: z.array(z.enum(['queued', 'running', 'finished'])).default(['queued', 'running', 'finished']),
  finishedForMs: z.number().int().positive().nullable().default(null),
  lagMs: z.number().int().min(0).max(3_600_000).default(30_000),
  method: z.enum(['GET', 'POST']).default('GET'),
  path: pathTemplate(TEMPLATE_VARS.list),
  query: stringMap(TEMPLATE_VARS.list).optional(),
  itemsPath: PointerSchema,
  matchPath: PointerSchema,
  match: templated(z.string().min(1), TEMPLATE_VARS.list).default('{{clientRef}}'),
  taskIdPath: PointerSchema,
  statusPath: PointerSchema.optional(),
  order: z.enum(['newest-first', 'oldest-first']).default('newest-first'),
});

/**
 * What the provider's webhook deliveries look like. `signed` (default true): an HMAC-SHA256 of
 * the raw body with our `webhook.secretEnv` secret in `signatureHeader`, as `sha256=<hex>`
 * (`signatureFormat: "sha256=hex"`) or bare hex (`"hex"`); `false`: unsigned, each job's callback
 * URL carries its own token. Pointers into the delivery's JSON body say where its event ID (stable
 * across redeliveries; else `eventIdHeader`, else the body's hash), type, task ID, our reference
 * and the status are.
 */
export const WebhookSchemeSchema = z
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
  /** A name for messages and the README (e.g. `Acme Scraper API v3`). */
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
