/**
 * How the command line prints jobs, live views, timelines, result documents and batch outcomes
 * (cli-table3, loaded on first use so that `--help` does not pay for it).
 */
import type { BatchRowOutcome } from '../batch/run.js';
import type { ResultDocumentsPage } from '../client/documents.js';
import type { JobSummary } from '../client/views.js';
import type { JobView } from '../model/types.js';

/** A table with the CLI's plain style. */
export async function table(opts: ConstructorParameters<typeof import('cli-table3')>[0]) {
  const { default: Table } = await import('cli-table3');
  return new Table({ style: { head: [], border: [] }, ...opts });
}

/** Table characters without row separators. */
export const COMPACT = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

/** A job error on one line: kind, code, HTTP status, message, time. */
export function errorLine(e: {
  kind: string;
  code?: string;
  message: string;
  httpStatus?: number;
  at?: string;
}): string {
  return `${e.kind}${e.code ? ` ${e.code}` : ''}${e.httpStatus ? ` (HTTP ${e.httpStatus})` : ''}: ${e.message}${e.at ? ` — at ${e.at}` : ''}`;
}

/** Prints a job as the store has it (`status`). */
export async function printJob(j: JobSummary): Promise<void> {
  const t = await table({ chars: COMPACT });
  const checks = `${j.statusChecks} answered${j.lastCheckedAt ? ` (last ${j.lastCheckedAt})` : ''}`;
  t.push(
    { job: j.jobId },
    { state: j.state + (j.execution ? `  (workflow ${j.execution.toLowerCase()})` : '') },
    { 'provider status': j.providerStatus ?? '—' },
    { provider: j.provider },
    { 'task ID': j.taskId ?? '—' },
    { url: j.url },
    ...(j.typedUrl ? [{ 'url as typed': j.typedUrl }] : []),
    { created: j.createdAt },
    { submitted: j.submittedAt ?? '—' },
    { finished: j.finishedAt ?? '—' },
    { deadline: j.deadlineAt ?? '—' },
    { 'status checks': checks },
    ...(j.failingChecks > 0
      ? [{ 'failing checks': `${j.failingChecks} in a row since the last answer — being retried (never resubmitted)` }]
      : []),
    { 'last error': j.lastError ? errorLine(j.lastError) : '—' },
    ...(j.waiting
      ? [
          {
            waiting: `for ${j.waiting.reason}: ${j.waiting.message}${j.waiting.until ? ` (next try ${j.waiting.until})` : ''}`,
          },
        ]
      : []),
    ...(j.contentNote ? [{ note: j.contentNote }] : []),
  );
  console.log(t.toString());
}

/** One timeline event on one line (`timeline`, `incident`): time, event type, state, detail as JSON. */
export function timelineLine(e: { at: string; type: string; state?: string | null; detail?: unknown }): string {
  return `${e.at}  ${e.type.padEnd(28)} ${(e.state ?? '').padEnd(20)} ${e.detail ? JSON.stringify(e.detail) : ''}`;
}

/** Prints one page of result documents: a table (position, status, URL, title or error), or JSON. */
export async function printDocuments(p: ResultDocumentsPage, json: boolean): Promise<void> {
  if (json) return console.log(JSON.stringify(p, null, 2));
  const t = await table({
    head: ['#', 'HTTP', 'url', 'title / error'],
    colWidths: [7, 6, 56, 50],
    wordWrap: true,
    chars: COMPACT,
  });
  for (const d of p.documents)
    t.push([
      String(d.seq),
      d.httpStatus ? String(d.httpStatus) : '—',
      d.url ?? '—',
      d.error ? `error${d.error.code ? ` ${d.error.code}` : ''}: ${d.error.message}` : (d.title ?? '(no title)'),
    ]);
  const range = p.documents.length ? `${p.offset + 1}-${p.offset + p.documents.length}` : 'none';
  console.log(
    `${t.toString()}\ndocuments ${range} of ${p.total}${p.nextOffset !== null ? ` (next: --offset ${p.nextOffset})` : ''}`,
  );
}

/** Prints the workflow's live view (`status --live`, the `state` query). */
export async function printLiveView(v: JobView): Promise<void> {
  const t = await table({ chars: COMPACT });
  const extra = v as JobView & { failingChecks?: number; checkAttempt?: number };
  t.push(
    { 'live (query state)': v.state },
    { 'provider status': `${v.providerStatus ?? '—'}${v.providerState ? ` (${v.providerState})` : ''}` },
    { 'task ID': v.taskId ?? '—' },
    { 'status checks': String(v.statusChecks) },
    ...(extra.failingChecks ? [{ 'failing checks': String(extra.failingChecks) }] : []),
    { 'next check': v.nextCheckAt ?? '—' },
    { deadline: v.deadlineAt ?? '—' },
    { 'last error': v.lastError ? errorLine(v.lastError) : '—' },
    ...(v.note ? [{ note: v.note }] : []),
    ...(v.cancel ? [{ cancel: `${v.cancel.outcome ?? 'in progress'} (via ${v.cancel.via}, ${v.cancel.reason})` }] : []),
  );
  console.log(t.toString());
}

/** The table of a batch's outcomes, at most `max` rows. */
export async function outcomeTable(rows: BatchRowOutcome[], max: number): Promise<string> {
  const t = await table({
    head: ['line', 'state', 'url', 'title / error'],
    colWidths: [6, 22, 48, 60],
    wordWrap: true,
    chars: COMPACT,
  });
  for (const r of rows.slice(0, max)) {
    const detail =
      r.state === 'completed'
        ? `${r.title ?? '(no title)'}${r.httpStatus && r.httpStatus !== 200 ? ` [HTTP ${r.httpStatus}]` : ''}`
        : (r.error ?? '');
    t.push([String(r.line), r.state + (r.existed ? ' (existing)' : ''), r.url, detail]);
  }
  return t.toString() + (rows.length > max ? `\n… ${rows.length - max} more rows (use --max-rows)` : '');
}
