/**
 * How the command line prints jobs, live views, timelines, result documents and batch outcomes:
 * tables (cli-table3, loaded on first use so that `--help` does not pay for it) that fit
 * {@link tableWidth} columns, and JSON. Everything shown passes {@link redactUrlCredentials}: a
 * URL's user-info and credential parameters are never echoed, in a table, in JSON or in an error.
 */
import type { BatchRowOutcome } from '../batch/run.js';
import type { ResultDocumentsPage } from '../client/documents.js';
import type { JobSummary } from '../client/views.js';
import { redactUrlCredentials } from '../lib/sanitize.js';
import type { JobView } from '../model/types.js';

/** The widest a table is, in columns (characters), whatever its content. */
export const MAX_TABLE_WIDTH = 120;

/** The narrowest width a table is fitted to on a narrow terminal. */
const MIN_TABLE_WIDTH = 60;

/**
 * The width tables are fitted to: {@link MAX_TABLE_WIDTH}, or the terminal's width when stdout is
 * a narrower terminal (never below 60).
 */
function tableWidth(): number {
  const cols = process.stdout.isTTY ? process.stdout.columns : undefined;
  return Math.max(MIN_TABLE_WIDTH, Math.min(MAX_TABLE_WIDTH, cols || MAX_TABLE_WIDTH));
}

/** Table characters without row separators. */
const COMPACT = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

/** Characters of `s` (code points; a wide character counts one, see {@link fitTable}). */
function widthOf(s: string): number {
  return Math.max(0, ...s.split('\n').map((l) => [...l].length));
}

/**
 * Column widths (each including the cell's two padding characters) for a table of `natural`
 * widths that must fit `total` columns with its `natural.length + 1` border characters: columns
 * that fit keep their width; the widest are capped at one common width, never below `min`
 * (default 8; on a terminal too narrow for them all, less in proportion). Exported for tests.
 */
export function fitColumns(natural: number[], total: number, min: number[] = []): number[] {
  const budget = total - (natural.length + 1);
  let floor = natural.map((n, i) => Math.min(n, min[i] ?? 8));
  const floors = floor.reduce((s, f) => s + f, 0);
  // A terminal too narrow for every column's least width: the least widths shrink in proportion.
  if (floors > budget) floor = floor.map((f) => Math.max(3, Math.floor((f * budget) / floors)));
  const sum = (cap: number) => natural.reduce((s, n, i) => s + Math.max(floor[i]!, Math.min(n, cap)), 0);
  if (sum(Infinity) <= budget) return natural;
  let lo = 0;
  let hi = Math.max(...natural);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (sum(mid) <= budget) lo = mid;
    else hi = mid - 1;
  }
  const widths = natural.map((n, i) => Math.max(floor[i]!, Math.min(n, lo)));
  // What the common cap leaves over goes to the capped columns, one column each.
  let spare = budget - widths.reduce((s, w) => s + w, 0);
  for (let i = 0; i < widths.length && spare > 0; i++) {
    if (natural[i]! > widths[i]!) {
      widths[i]!++;
      spare--;
    }
  }
  return widths;
}

/** `text` with each word longer than `width` cut into lines of `width` (the table wraps the rest at spaces). */
function breakLongWords(text: string, width: number): string {
  return text
    .split('\n')
    .map((line) =>
      line.replace(/\S+/g, (word) => {
        const chars = [...word];
        if (chars.length <= width) return word;
        const parts: string[] = [];
        for (let i = 0; i < chars.length; i += width) parts.push(chars.slice(i, i + width).join(''));
        return parts.join('\n');
      }),
    )
    .join('\n');
}

/**
 * A table of `rows` (strings) that fits {@link tableWidth}: columns as wide as their content
 * while the table fits, else the widest capped ({@link fitColumns}; `min`: the least width of
 * each column, padding included) and their content wrapped, at spaces, and inside words longer
 * than the column (an ID or URL is wrapped, never cut). A wide (CJK) character counts one column
 * here: cli-table3 then shortens such a line with `…` rather than letting it overflow. Every cell
 * passes {@link redactUrlCredentials}.
 */
export async function fitTable(opts: {
  head?: string[];
  rows: string[][];
  min?: number[];
  compact?: boolean;
}): Promise<string> {
  const { default: Table } = await import('cli-table3');
  const rows = opts.rows.map((r) => r.map((c) => redactUrlCredentials(c)));
  const columns = Math.max(opts.head?.length ?? 0, ...rows.map((r) => r.length));
  const natural = Array.from(
    { length: columns },
    (_, i) => Math.max(widthOf(opts.head?.[i] ?? ''), ...rows.map((r) => widthOf(r[i] ?? ''))) + 2,
  );
  const widths = fitColumns(natural, tableWidth(), opts.min);
  const t = new Table({
    ...(opts.head ? { head: opts.head } : {}),
    colWidths: widths,
    wordWrap: true,
    style: { head: [], border: [] },
    ...(opts.compact === false ? {} : { chars: COMPACT }),
  });
  for (const r of rows) t.push(r.map((c, i) => breakLongWords(c, widths[i]! - 2)));
  return t.toString();
}

/**
 * Prints `value` as indented JSON on stdout, every string passing {@link redactUrlCredentials}
 * (`redact: false` for a result's own content: a scraped page is evidence and is printed as stored).
 */
export function printJson(value: unknown, opts: { redact?: boolean } = {}): void {
  const replacer =
    opts.redact === false
      ? undefined
      : (_k: string, v: unknown) => (typeof v === 'string' ? redactUrlCredentials(v) : v);
  console.log(JSON.stringify(value, replacer, 2));
}

/** A job error on one line: kind, code, HTTP status, message, time. */
function errorLine(e: { kind: string; code?: string; message: string; httpStatus?: number; at?: string }): string {
  return `${e.kind}${e.code ? ` ${e.code}` : ''}${e.httpStatus ? ` (HTTP ${e.httpStatus})` : ''}: ${e.message}${e.at ? ` — at ${e.at}` : ''}`;
}

/** A field row `[label, value]`, or none when `value` is empty, false or absent. */
function optional(label: string, value: string | false | null | undefined): [string, string][] {
  return value ? [[label, value]] : [];
}

/** Prints a job as the store has it (`status`): one row per field. */
export async function printJob(j: JobSummary): Promise<void> {
  const checks = `${j.statusChecks} answered${j.lastCheckedAt ? ` (last ${j.lastCheckedAt})` : ''}`;
  const rows: [string, string][] = [
    ['job', j.jobId],
    ['state', j.state + (j.execution ? `  (workflow ${j.execution.toLowerCase()})` : '')],
    ['provider status', j.providerStatus ?? '—'],
    ['provider', j.provider],
    ['task ID', j.taskId ?? '—'],
    ['url', j.url],
    ...optional('url as typed', j.typedUrl),
    ['created', j.createdAt],
    ['submitted', j.submittedAt ?? '—'],
    ['finished', j.finishedAt ?? '—'],
    ['deadline', j.deadlineAt ?? '—'],
    ['status checks', checks],
    ...optional(
      'failing checks',
      j.failingChecks > 0 && `${j.failingChecks} in a row since the last answer — being retried (never resubmitted)`,
    ),
    ['last error', j.lastError ? errorLine(j.lastError) : '—'],
    ...optional(
      'waiting',
      j.waiting &&
        `for ${j.waiting.reason}: ${j.waiting.message}${j.waiting.until ? ` (next try ${j.waiting.until})` : ''}`,
    ),
    ...optional('note', j.contentNote),
    ...optional('cost', j.cost && costLine(j.cost)),
    ...optional(
      'result',
      j.partial &&
        `partial: fewer documents than the provider counts${j.expectedDocuments !== undefined ? ` (${j.expectedDocuments})` : ''}`,
    ),
  ];
  console.log(await fitTable({ rows }));
}

/** A job's cost at its provider, in its unit, on one line (`cost` shows its Temporal Actions too). */
function costLine(c: NonNullable<JobSummary['cost']>): string {
  const settled =
    c.settled === null ? 'not settled (running)' : `settled ${c.settled}${c.source ? ` (${c.source})` : ''}`;
  const reserved = c.reserved > 0 ? `, ${c.reserved} reserved` : '';
  const reported = c.reported === null ? '' : `, ${c.reported} reported by the provider`;
  return `${c.unit}: estimated ${c.estimated ?? '—'}${reserved}, ${settled}${reported}`;
}

/** One timeline event on one line (`timeline`, `incident`): time, event type, state, detail as JSON. */
export function timelineLine(e: { at: string; type: string; state?: string | null; detail?: unknown }): string {
  return redactUrlCredentials(
    `${e.at}  ${e.type.padEnd(28)} ${(e.state ?? '').padEnd(20)} ${e.detail ? JSON.stringify(e.detail) : ''}`,
  );
}

/** Prints one page of result documents: a table (position, status, URL, title or error), or JSON. */
export async function printDocuments(p: ResultDocumentsPage, json: boolean): Promise<void> {
  if (json) return printJson(p, { redact: false });
  const table = await fitTable({
    head: ['#', 'HTTP', 'url', 'title / error'],
    rows: p.documents.map((d) => [
      String(d.seq),
      d.httpStatus ? String(d.httpStatus) : '—',
      d.url ?? '—',
      d.error ? `error${d.error.code ? ` ${d.error.code}` : ''}: ${d.error.message}` : (d.title ?? '(no title)'),
    ]),
    min: [6, 6, 30, 20],
  });
  const range = p.documents.length ? `${p.offset + 1}-${p.offset + p.documents.length}` : 'none';
  console.log(
    `${table}\ndocuments ${range} of ${p.total}${p.nextOffset !== null ? ` (next: --offset ${p.nextOffset})` : ''}`,
  );
}

/** Prints the workflow's live view (`status --live`, the `state` query). */
export async function printLiveView(v: JobView): Promise<void> {
  const extra = v as JobView & { failingChecks?: number; checkAttempt?: number };
  const rows: [string, string][] = [
    ['live (query state)', v.state],
    ['provider status', `${v.providerStatus ?? '—'}${v.providerState ? ` (${v.providerState})` : ''}`],
    ['task ID', v.taskId ?? '—'],
    ['status checks', String(v.statusChecks)],
    ...optional('failing checks', !!extra.failingChecks && String(extra.failingChecks)),
    ['next check', v.nextCheckAt ?? '—'],
    ['deadline', v.deadlineAt ?? '—'],
    ['last error', v.lastError ? errorLine(v.lastError) : '—'],
    ...optional('note', v.note),
    ...optional('cancel', v.cancel && `${v.cancel.outcome ?? 'in progress'} (via ${v.cancel.via}, ${v.cancel.reason})`),
  ];
  console.log(await fitTable({ rows }));
}

/** The table of a batch's outcomes, at most `max` rows. */
export async function outcomeTable(rows: BatchRowOutcome[], max: number): Promise<string> {
  const table = await fitTable({
    head: ['line', 'state', 'url', 'title / error'],
    rows: rows.slice(0, max).map((r) => {
      const detail =
        r.state === 'completed'
          ? `${r.title ?? '(no title)'}${r.httpStatus && r.httpStatus !== 200 ? ` [HTTP ${r.httpStatus}]` : ''}`
          : (r.error ?? '');
      return [String(r.line), r.state + (r.existed ? ' (existing)' : ''), r.url, detail];
    }),
    min: [6, 12, 30, 30],
  });
  return table + (rows.length > max ? `\n… ${rows.length - max} more rows (use --max-rows)` : '');
}
