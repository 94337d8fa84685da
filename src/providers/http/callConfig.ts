/**
 * The building blocks of the `http` kind's configuration (`config.ts`): JSON Pointers, templates
 * checked against their context's variables, and the fields of one call (method, path or URL,
 * query, headers, JSON or form body) shared by the status, result, cancel and list calls. Every
 * error names the field.
 */
import { z } from 'zod';
import { isJsonPointer, unknownPlaceholders } from './template.js';

/**
 * Variables of each template context:
 * - `submit`: the request (`url`, `format`, `options`), our reference, the idempotency key, the
 *   callback URL and the webhook secret;
 * - `task` (status, cancel): the task ID, the request, our reference and `submitAnswer` (the
 *   fields of the submit's answer these templates name, kept with the task: `{{submitAnswer.jobid}}`);
 * - `result` (`result.request`): the `task` variables and `statusAnswer` (the final status answer);
 * - `list`: our reference, the request and the time of the first submit.
 */
export const TEMPLATE_VARS = {
  submit: ['url', 'format', 'options', 'clientRef', 'idempotencyKey', 'callbackUrl', 'webhookSecret'],
  task: ['taskId', 'url', 'format', 'options', 'clientRef', 'submitAnswer'],
  result: ['taskId', 'url', 'format', 'options', 'clientRef', 'submitAnswer', 'statusAnswer'],
  list: ['clientRef', 'url', 'format', 'options', 'submittedAfter'],
} as const;

/** Variables whose fields a placeholder may name (`{{options.project}}`). */
const OBJECT_VARS = ['options', 'submitAnswer', 'statusAnswer'] as const;

/** A JSON Pointer (RFC 6901): `""` or `/a/b/0`. */
export const PointerSchema = z
  .string()
  .max(500)
  .refine(isJsonPointer, 'must be a JSON Pointer (RFC 6901): "" for the whole answer, or "/field/0/sub"');

/** A template (any JSON) whose placeholders are all in `vars` (fields only of {@link OBJECT_VARS}). */
export function templated<T extends z.ZodType>(schema: T, vars: readonly string[]) {
  return schema.superRefine((v, ctx) => {
    const bad = unknownPlaceholders(v, vars, OBJECT_VARS);
    if (bad.length > 0)
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder${bad.length > 1 ? 's' : ''} ${bad.map((b) => `{{${b}}}`).join(', ')} (allowed here: ${vars.map((x) => `{{${x}}}`).join(', ')}; fields only of ${OBJECT_VARS.filter((o) => vars.includes(o)).join(', ')})`,
      });
  });
}

/** A path template joined to `baseUrl` (each value one percent-encoded segment). */
export const pathTemplate = (vars: readonly string[]) =>
  templated(
    z
      .string()
      .min(1)
      .max(2000)
      .refine((p) => p.startsWith('/'), 'must start with "/" (it is joined to baseUrl)'),
    vars,
  );

/** A URL template (values as they are, e.g. `{{submitAnswer.statusUrl}}`): absolute on the base URL's origin, or `/path?query` on that origin. */
const urlTemplate = (vars: readonly string[]) => templated(z.string().min(1).max(2000), vars);

/** A map of string templates (query parameters, headers). */
export const stringMap = (vars: readonly string[]) =>
  templated(z.record(z.string().min(1), z.string().max(2000)), vars);

/** HTTP status codes. */
export const StatusCodes = z.array(z.number().int().min(100).max(599));

/** True for a form body template: an object whose values are scalars or arrays of strings. */
export function isFlatForm(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  return Object.values(body).every(
    (v) =>
      ['string', 'number', 'boolean'].includes(typeof v) || (Array.isArray(v) && v.every((x) => typeof x === 'string')),
  );
}

/**
 * The fields of one call with `vars` in its templates (the method is the call's own): where it goes — `path` (joined to `baseUrl`) or `url` (a URL an earlier answer returned, on the
 * base URL's origin) — `query`, `headers`, and a `body` sent as JSON (default) or
 * form fields (`bodyEncoding: "form"`: an object of strings, numbers, booleans or arrays of strings).
 */
export function callFields(vars: readonly string[]) {
  return {
    path: pathTemplate(vars).optional(),
    url: urlTemplate(vars).optional(),
    query: stringMap(vars).optional(),
    headers: stringMap(vars).optional(),
    /** JSON body template (or form fields with `bodyEncoding: "form"`). */
    body: templated(z.unknown(), vars).optional(),
    bodyEncoding: z.enum(['json', 'form']).default('json'),
  };
}

/** The parsed fields of one call (see {@link callFields}). */
export interface CallConfig {
  method: string;
  path?: string;
  url?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: unknown;
  bodyEncoding: 'json' | 'form';
}

/** The checks across a call's fields: a path or a URL (one of them), no body on a GET, a flat form body. */
export function checkCall(c: CallConfig, ctx: z.RefinementCtx): void {
  if (c.path === undefined && c.url === undefined)
    ctx.addIssue({ code: 'custom', path: ['path'], message: 'needs "path" (joined to baseUrl) or "url"' });
  if (c.path !== undefined && c.url !== undefined)
    ctx.addIssue({ code: 'custom', path: ['url'], message: 'give "path" or "url", not both' });
  if (c.method === 'GET' && c.body !== undefined)
    ctx.addIssue({ code: 'custom', path: ['body'], message: 'a GET call cannot have a body: put the fields in query' });
  if (c.bodyEncoding === 'form' && c.body !== undefined && !isFlatForm(c.body))
    ctx.addIssue({
      code: 'custom',
      path: ['body'],
      message: 'a form body must be an object of strings, numbers, booleans or arrays of strings',
    });
}
