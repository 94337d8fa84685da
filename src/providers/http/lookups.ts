/**
 * Reconciling a lost submit of an `http` entry (kind `http`): what its replay and list prove, as the
 * entry declares them ({@link httpEvidence}), and the read of the configured list
 * ({@link findSubmitted}). The contract is the entry (`config.ts`: `submit.idempotent`, `list`).
 */
import type { Candidate, LookupReading, ReconcileEvidence } from '../../model/evidence.js';
import { ProviderError } from '../shared/errors.js';
import { lookupNotOffered, type FindContext } from '../adapter.js';
import type { HttpEntry } from './config.js';
import type { HttpReads } from './results.js';
import { pick, pickString, renderMap, type TemplateVars } from './template.js';

/** The parts of an `http` entry its evidence follows from. */
type EvidenceParts = {
  submit: Pick<HttpEntry['submit'], 'idempotent'>;
  list?: Pick<
    NonNullable<HttpEntry['list']>,
    'method' | 'path' | 'url' | 'shows' | 'finishedForMs' | 'lagMs' | 'match'
  >;
  auth: Pick<HttpEntry['auth'], 'in'>;
};

/** The name of an entry's list lookup in evidence (`GET /path`). */
function listLookupName(entry: EvidenceParts): string {
  return entry.list ? `${entry.list.method} ${entry.list.path ?? entry.list.url}` : 'list';
}

/** The evidence an `http` entry declares: a replay when `submit.idempotent`, the list as configured (see `ListSchema`). */
export function httpEvidence(entry: EvidenceParts): ReconcileEvidence {
  const l = entry.list;
  return {
    replay: entry.submit.idempotent ? 'same-task' : 'none',
    lookups: l
      ? [
          {
            name: listLookupName(entry),
            shows: l.shows,
            finishedForMs: l.finishedForMs,
            lagMs: l.lagMs,
            match: l.match.includes('{{clientRef}}') ? 'strong' : 'weak',
          },
        ]
      : [],
    taskScope: entry.auth.in === 'none' ? 'host' : 'credential',
    source: "the entry's own declaration (submit.idempotent, list)",
  };
}

/**
 * Reads the configured list once: every item of the array at `itemsPath` (or of each array at the
 * pointers it lists; the reading is complete only when each is an array) whose `matchPath` equals
 * the rendered `match` is a candidate, strong when the template names `{{clientRef}}`, weak
 * otherwise; its status word at `statusPath`, else the name of its array. A list answering one of
 * `errors.unsupportedCodes` is not offered here.
 */
export async function findSubmitted(reads: HttpReads, ctx: FindContext): Promise<LookupReading[]> {
  const l = reads.entry.list;
  if (!l) return [];
  const at = new Date().toISOString();
  const name = listLookupName(reads.entry);
  const r = ctx.request;
  const vars: TemplateVars = {
    clientRef: ctx.clientRef,
    url: r.url,
    format: r.format,
    options: r.options ?? {},
    submittedAfter: ctx.submittedAfter,
  };
  const res = await reads.call(ctx, l, vars, 'read');
  try {
    reads.ok(res, 'read', ctx, 'list');
  } catch (e) {
    if (e instanceof ProviderError && e.kind === 'unsupported') return [lookupNotOffered(name, e.message, [], at)];
    throw e;
  }
  const paths = Array.isArray(l.itemsPath) ? l.itemsPath : [l.itemsPath];
  const arrays = paths.map((p) => ({ p, items: pick(res.body, p) }));
  const missing = arrays.filter((a) => !Array.isArray(a.items)).map((a) => a.p);
  if (missing.length === paths.length)
    reads.http.invalid(res, 'read', `list answer: no array at ${missing.map((p) => JSON.stringify(p)).join(', ')}`);
  const want = renderMap({ m: l.match }, vars).m;
  const strong = l.match.includes('{{clientRef}}');
  const candidates: Candidate[] = [];
  for (const { p, items } of arrays) {
    if (!Array.isArray(items)) continue;
    const arrayName = p.split('/').pop() || 'listed';
    for (const it of items) {
      if (pickString(it, l.matchPath) !== want) continue;
      const taskId = pickString(it, l.taskIdPath);
      if (!taskId) reads.http.invalid(res, 'read', `list item: no task ID at ${JSON.stringify(l.taskIdPath)}`);
      candidates.push({
        taskId,
        providerStatus: pickString(it, l.statusPath) ?? (paths.length > 1 ? arrayName : 'listed'),
        match: strong ? 'strong' : 'weak',
        why: strong
          ? `${l.matchPath} is our reference`
          : `${l.matchPath} equals ${l.match}, which another job could share`,
      });
    }
  }
  return [
    {
      lookup: name,
      available: true,
      complete: missing.length === 0,
      candidates,
      at,
      ...(missing.length > 0 ? { note: `the answer has no array at ${missing.join(', ')}` } : {}),
    },
  ];
}
