/**
 * One configured call of an `http` entry (`callConfig.ts`): its templates rendered with the
 * variables of its context ({@link taskVars}), the answers read as the entry says (JSON, or JSON
 * lines: {@link answerBody}; a 2xx answer that is an error all the same: {@link isErrorAnswer}),
 * and the fields of the submit's answer that later calls name ({@link keptFields}).
 */
import { ProviderError } from '../shared/errors.js';
import type { CallOptions, CallPhase, FormBody, ProviderHttp, ProviderResponse } from '../shared/http.js';
import type { CallContext } from '../adapter.js';
import type { CallConfig } from './callConfig.js';
import type { HttpEntry } from './config.js';
import {
  MissingValueError,
  pick,
  placeholdersOf,
  renderJson,
  renderMap,
  renderPath,
  renderUrl,
  rootOf,
  valueOf,
  type TemplateVars,
} from './template.js';

/**
 * The variables of the `task` context for `taskId` (see `callConfig.ts`): the task ID, and what
 * the call context knows of the job (the request, our reference, the kept submit answer).
 */
export function taskVars(taskId: string, ctx: CallContext): TemplateVars {
  const t = ctx.task;
  if (!t) return { taskId };
  return {
    taskId,
    url: t.request.url,
    format: t.request.format,
    options: t.request.options ?? {},
    clientRef: t.clientRef,
    submitAnswer: t.submitAnswer,
  };
}

/**
 * The {@link CallOptions} of `call` rendered with `vars`. Throws a permanent {@link ProviderError}
 * (code `TEMPLATE_VALUE_MISSING`) when its path or URL needs a value this task does not have.
 */
export function callOptions(
  http: ProviderHttp,
  call: CallConfig,
  vars: TemplateVars,
  phase: CallPhase,
): CallOptions & { method: 'GET' | 'POST' | 'PUT' | 'DELETE' } {
  try {
    const body = call.body === undefined ? undefined : renderJson(call.body, vars);
    return {
      method: call.method as 'GET' | 'POST' | 'PUT' | 'DELETE',
      ...(call.url !== undefined
        ? { url: new URL(renderUrl(call.url, vars), http.opts.baseUrl).toString() }
        : { path: renderPath(call.path!, vars) }),
      query: renderMap(call.query, vars),
      headers: renderMap(call.headers, vars),
      ...(call.bodyEncoding === 'form' ? { form: body as FormBody | undefined } : { json: body }),
      phase,
    };
  } catch (e) {
    if (!(e instanceof MissingValueError)) throw e;
    const kept =
      rootOf(e.placeholder) === 'submitAnswer'
        ? ': the submit answer of this task was not kept (the task was found by a lookup or given by an operator, or submitted before the entry named this field)'
        : '';
    throw new ProviderError(
      'permanent',
      `provider ${http.opts.provider}: the call cannot be made, ${e.message}${kept}`,
      { code: 'TEMPLATE_VALUE_MISSING' },
    );
  }
}

/**
 * The answer's body as the entry reads it: the parsed JSON document, or for a JSON-lines answer
 * (`format: "jsonl"` / `"ndjson"`) the array of its lines, each parsed (blank lines skipped).
 * Throws the `INVALID_RESPONSE` error of `http` naming the first line that is not JSON.
 */
export function answerBody(http: ProviderHttp, res: ProviderResponse, format: 'json' | 'jsonl' | 'ndjson'): unknown {
  if (format === 'json') return res.body;
  const out: unknown[] = [];
  for (const [i, line] of res.text.split('\n').entries()) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      http.invalid(res, 'read', `JSON-lines answer: line ${i + 1} is not JSON (${line.slice(0, 80)})`);
    }
  }
  return out;
}

/** True when `res` is a 2xx answer that `errors.errorWhen` says is an error all the same. */
export function isErrorAnswer(entry: HttpEntry, res: ProviderResponse): boolean {
  const w = entry.errors.errorWhen;
  if (!w || res.body === undefined) return false;
  const v = pick(res.body, w.path);
  if (v === undefined) return false;
  return (Array.isArray(w.equals) ? w.equals : [w.equals]).some((x) => x === v);
}

/**
 * The fields of the submit's answer that the entry's status, result and cancel templates name
 * (`{{submitAnswer.a.b}}` → `a.b`; `{{submitAnswer}}` → the whole answer, `""`).
 */
export function keptFields(entry: HttpEntry): string[] {
  const names = placeholdersOf([entry.status, entry.result.request, entry.cancel]).filter(
    (n) => rootOf(n) === 'submitAnswer',
  );
  return [...new Set(names.map((n) => n.slice('submitAnswer'.length + 1)))];
}

/** The kept part of submit answer `body`: each of `fields` at its place (the whole answer for `""`); undefined when none. */
export function keptAnswer(body: unknown, fields: readonly string[]): Record<string, unknown> | undefined {
  if (fields.length === 0 || body === undefined) return undefined;
  if (fields.includes(''))
    return body && typeof body === 'object' ? (body as Record<string, unknown>) : { value: body };
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = valueOf({ a: body }, `a.${f}`);
    if (v === undefined) continue;
    const steps = f.split('.');
    let at = out;
    for (const s of steps.slice(0, -1)) at = (at[s] ??= {}) as Record<string, unknown>;
    at[steps.at(-1)!] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
