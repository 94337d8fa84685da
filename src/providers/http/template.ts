/**
 * The small, safe template language of the declarative `http` kind: no code, no expressions,
 * only named values put where the configuration says.
 *
 * - **Placeholders** `{{name}}` name one of the variables of the template's context (e.g. `url`,
 *   `taskId`); an unknown name is a configuration error naming the field and the allowed names.
 *   `{{name.a.b}}` names a field inside an object variable (`{{options.project}}`,
 *   `{{submitAnswer.links.items}}`): each segment a member name (letters, digits, `_`, `-`) or an
 *   array index; a missing step is an absent value.
 * - **In a JSON body** (any JSON value): a string that is exactly one placeholder becomes the
 *   variable's value with its JSON type (`"{{options}}"` stays an object); a member whose value is
 *   such a placeholder of an absent variable is left out, and an object left empty that way is left
 *   out too (`"webhook": {"url": "{{callbackUrl}}"}` disappears when there is no callback); a
 *   member `"...": "{{options}}"` spreads an object variable's members at that place (later
 *   members win); any other string interpolates values as text (absent: empty).
 * - **In a path**, each value is percent-encoded as one path segment (`/jobs/{{taskId}}` with
 *   `a/b` → `/jobs/a%2Fb`); an absent value is an error.
 * - **Paths into JSON answers** are JSON Pointers (RFC 6901, via `json-ptr`): `""` is the whole
 *   document, `/data/0/id` the `id` of the first `data` item; `~1` escapes `/`, `~0` escapes `~`.
 */
import { JsonPointer } from 'json-ptr';

/** Values a template may use: strings, numbers, JSON objects; undefined when absent. */
export type TemplateVars = Record<string, unknown>;

const NAME = String.raw`[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9_-]+)*`;
const PLACEHOLDER = new RegExp(String.raw`\{\{\s*(${NAME})\s*\}\}`, 'g');
const WHOLE = new RegExp(String.raw`^\{\{\s*(${NAME})\s*\}\}$`);
/** The member name that spreads an object variable into the enclosing object. */
const SPREAD_KEY = '...';

/** The placeholder names used anywhere in `template` (strings of any JSON value, object keys excluded). */
export function placeholdersOf(template: unknown): string[] {
  const out = new Set<string>();
  const walk = (v: unknown) => {
    if (typeof v === 'string') for (const m of v.matchAll(PLACEHOLDER)) out.add(m[1]!);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(template);
  return [...out];
}

/** The variable a placeholder name starts with (`submitAnswer` of `submitAnswer.links.items`). */
export const rootOf = (name: string): string => name.split('.', 1)[0]!;

/**
 * The placeholders of `template` that are not allowed (empty: the template is valid): a name whose
 * variable is not in `allowed`, or a field (`{{url.x}}`) of a variable not in `objects`.
 */
export function unknownPlaceholders(
  template: unknown,
  allowed: readonly string[],
  objects: readonly string[] = [],
): string[] {
  return placeholdersOf(template).filter(
    (n) => !allowed.includes(rootOf(n)) || (n.includes('.') && !objects.includes(rootOf(n))),
  );
}

/** The value of placeholder `name` in `vars` (a field of an object variable for `a.b.c`), undefined when any step is missing. */
export function valueOf(vars: TemplateVars, name: string): unknown {
  const [root, ...steps] = name.split('.');
  let v: unknown = vars[root!];
  for (const step of steps) {
    if (v === null || typeof v !== 'object') return undefined;
    v = Array.isArray(v) ? (/^\d+$/.test(step) ? v[Number(step)] : undefined) : (v as Record<string, unknown>)[step];
  }
  return v;
}

function text(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
}

/** Interpolates a string template as text (absent values: empty). */
function renderString(template: string, vars: TemplateVars): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => text(valueOf(vars, name)));
}

/** A path or URL template whose placeholder has no value: the call cannot be made (a path must never silently lose a segment). */
export class MissingValueError extends Error {
  constructor(
    readonly template: string,
    readonly placeholder: string,
  ) {
    super(`template "${template}" needs {{${placeholder}}}, which has no value here`);
    this.name = 'MissingValueError';
  }
}

/**
 * Renders a path template: every value percent-encoded as one segment. Throws
 * {@link MissingValueError} when a value is absent or empty.
 */
export function renderPath(template: string, vars: TemplateVars): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    const v = text(valueOf(vars, name));
    if (v === '') throw new MissingValueError(template, name);
    return encodeURIComponent(v);
  });
}

const ABSENT = Symbol('absent');

function renderValue(t: unknown, vars: TemplateVars): unknown {
  if (typeof t === 'string') {
    const whole = WHOLE.exec(t);
    if (whole) {
      const v = valueOf(vars, whole[1]!);
      return v === undefined ? ABSENT : v;
    }
    return renderString(t, vars);
  }
  if (Array.isArray(t)) return t.map((x) => renderValue(x, vars)).filter((x) => x !== ABSENT);
  if (t && typeof t === 'object') {
    const out: Record<string, unknown> = {};
    let omitted = false;
    for (const [k, v] of Object.entries(t)) {
      if (k === SPREAD_KEY) {
        const spread = renderValue(v, vars);
        if (spread && typeof spread === 'object' && !Array.isArray(spread)) Object.assign(out, spread);
        continue;
      }
      const r = renderValue(v, vars);
      if (r === ABSENT) omitted = true;
      else out[k] = r;
    }
    return omitted && Object.keys(out).length === 0 ? ABSENT : out;
  }
  return t;
}

/** Renders a JSON body template (see the module docs); undefined when the whole body is absent. */
export function renderJson(template: unknown, vars: TemplateVars): unknown {
  const r = renderValue(template, vars);
  return r === ABSENT ? undefined : r;
}

/**
 * Renders a URL template as text (a URL an earlier answer returned: `{{submitAnswer.statusUrl}}`),
 * values not encoded. Throws {@link MissingValueError} when a value is absent or empty.
 */
export function renderUrl(template: string, vars: TemplateVars): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    const v = text(valueOf(vars, name));
    if (v === '') throw new MissingValueError(template, name);
    return v;
  });
}

/** Renders a map of string templates (headers, query), leaving out entries that render empty. */
export function renderMap(templates: Record<string, string> | undefined, vars: TemplateVars): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, t] of Object.entries(templates ?? {})) {
    const v = renderString(t, vars);
    if (v !== '') out[k] = v;
  }
  return out;
}

/** True for a JSON Pointer this kind accepts: `""` or `/…` with valid `~` escapes. */
export function isJsonPointer(p: string): boolean {
  if (p !== '' && !p.startsWith('/')) return false;
  if (/~[^01]|~$/.test(p)) return false;
  try {
    JsonPointer.decode(p);
    return true;
  } catch {
    return false;
  }
}

/** The value at JSON Pointer `pointer` in `doc`, or undefined when any step is missing. */
export function pick(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  if (doc === null || typeof doc !== 'object') return undefined;
  return JsonPointer.get(doc as object, pointer);
}

/** {@link pick} as a non-empty string (numbers are turned to text), else undefined. */
export function pickString(doc: unknown, pointer: string | undefined): string | undefined {
  if (pointer === undefined) return undefined;
  const v = pick(doc, pointer);
  return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;
}
