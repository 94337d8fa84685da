/**
 * Reading batch input files: CSV (header row required) or JSONL, one scrape per row.
 *
 * Every row is validated on its own: a bad row is reported with its line number and reason, and
 * the other rows go on. Nothing is dropped silently: every line is either a job or an error.
 * The job's idempotency key is the row's `key` column when given, else derived from the row's
 * canonical content, so re-running the same file creates nothing new.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import { fingerprint } from '../lib/hash.js';
import { IdempotencyKeySchema, TargetUrlSchema } from '../model/schemas.js';

/** Columns understood in a row; any other column is kept as part of the row (evidence). */
export const BatchRowSchema = z
  .object({
    url: TargetUrlSchema,
    key: IdempotencyKeySchema.optional(),
    format: z.enum(['markdown', 'text']).optional(),
    provider: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).optional(),
  })
  .passthrough();

/** A valid row, with the line it came from (1-based, counting the CSV header as line 1). */
export interface BatchItem {
  line: number;
  url: string;
  key: string;
  format?: 'markdown' | 'text';
  provider?: string;
  row: Record<string, unknown>;
}

/** A rejected row and why. */
export interface BatchRowError {
  line: number;
  reason: string;
  /** The raw line text (truncated to 200 characters). */
  raw: string;
}

/** Result of {@link readBatchFile}. */
export interface BatchInput {
  items: BatchItem[];
  errors: BatchRowError[];
  /** Stable ID of the batch: a hash of the file's valid rows (same file → same batch). */
  batchId: string;
  format: 'csv' | 'jsonl';
}

function emptyToUndefined(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== '' && v !== null && v !== undefined));
}

function toItem(line: number, raw: Record<string, unknown>, errors: BatchRowError[], rawText: string, seen: Map<string, number>): BatchItem | undefined {
  const parsed = BatchRowSchema.safeParse(emptyToUndefined(raw));
  if (!parsed.success) {
    errors.push({ line, reason: parsed.error.issues.map((i) => `${i.path.join('.') || 'row'}: ${i.message}`).join('; '), raw: rawText.slice(0, 200) });
    return undefined;
  }
  const { url, key, format, provider, ...rest } = parsed.data;
  const derived = key ?? `row-${fingerprint({ url, format: format ?? null, provider: provider ?? null, rest }).slice(0, 32)}`;
  const first = seen.get(derived);
  if (first !== undefined) {
    errors.push({ line, reason: `duplicate of line ${first} (same key ${derived}); the job is started once`, raw: rawText.slice(0, 200) });
    return undefined;
  }
  seen.set(derived, line);
  return { line, url, key: derived, format, provider, row: parsed.data };
}

/** Parses CSV text (first line is the header; must include a `url` column). */
export function parseCsvText(text: string): Omit<BatchInput, 'batchId'> {
  const errors: BatchRowError[] = [];
  const items: BatchItem[] = [];
  const seen = new Map<string, number>();
  // A malformed record (bad quoting) is skipped, not fatal: the other rows go on. Every physical
  // line that ends up in no parsed record is reported below with the parser's reason.
  const skipped: { endLine: number; chunk: string; reason: string }[] = [];
  let records: { record: string[]; raw: string; info: { lines: number } }[];
  try {
    records = parseCsv(text, {
      skip_empty_lines: true,
      trim: true,
      info: true,
      raw: true,
      relax_column_count: true,
      bom: true,
      skip_records_with_error: true,
      on_skip: (err: { lines?: number; message: string } | undefined, chunk: string | undefined) => {
        if (err) skipped.push({ endLine: err.lines ?? 1, chunk: chunk ?? '', reason: err.message });
      },
    }) as never;
  } catch (e) {
    return { items, errors: [{ line: (e as { lines?: number }).lines ?? 1, reason: `CSV cannot be parsed: ${(e as Error).message}`, raw: '' }], format: 'csv' };
  }
  const [header, ...rows] = records;
  if (!header) return { items, errors: skippedLineErrors(text, skipped, []), format: 'csv' };
  const columns = header.record.map((c) => c.trim());
  if (!columns.includes('url')) {
    return { items, errors: [{ line: 1, reason: 'the CSV header has no "url" column', raw: header.raw.trim().slice(0, 200) }], format: 'csv' };
  }
  const repeated = columns.filter((c, i) => columns.indexOf(c) !== i);
  if (repeated.length > 0) {
    return { items, errors: [{ line: 1, reason: `the CSV header repeats column(s) ${[...new Set(repeated)].map((c) => `"${c}"`).join(', ')}`, raw: header.raw.trim().slice(0, 200) }], format: 'csv' };
  }
  const parsedLines: [number, number][] = [];
  for (const r of rows) {
    const raw = r.raw.replace(/\r?\n$/, '').replace(/^(?:[ \t]*\r?\n)+/, '');
    // info.lines is the record's last line; a quoted field may span several.
    const line = r.info.lines - (raw.match(/\n/g)?.length ?? 0);
    parsedLines.push([line, r.info.lines]);
    if (r.record.length !== columns.length) {
      errors.push({ line, reason: `${r.record.length} fields but the header has ${columns.length}`, raw: raw.slice(0, 200) });
      continue;
    }
    const obj = Object.fromEntries(columns.map((c, i) => [c, r.record[i]]));
    const item = toItem(line, obj, errors, raw, seen);
    if (item) items.push(item);
  }
  errors.push(...skippedLineErrors(text, skipped, parsedLines));
  errors.sort((a, b) => a.line - b.line);
  return { items, errors, format: 'csv' };
}

/**
 * One error per non-blank physical line that a skipped (malformed) CSV record covered and no
 * parsed record did, with the parser's reason: nothing the caller sent is dropped silently.
 */
function skippedLineErrors(text: string, skipped: { endLine: number; chunk: string; reason: string }[], parsed: [number, number][]): BatchRowError[] {
  const lines = text.split(/\r?\n/);
  const inParsed = (n: number) => parsed.some(([a, b]) => n >= a && n <= b);
  const out = new Map<number, BatchRowError>();
  for (const sk of skipped) {
    const span = sk.chunk.replace(/\r?\n$/, '').split(/\n/).length;
    for (let n = Math.max(1, sk.endLine - span + 1); n <= sk.endLine; n++) {
      const raw = (lines[n - 1] ?? '').trim();
      if (!raw || inParsed(n) || out.has(n)) continue;
      out.set(n, { line: n, reason: `CSV cannot be parsed here: ${sk.reason}`, raw: raw.slice(0, 200) });
    }
  }
  return [...out.values()];
}

/** Parses JSONL text (one JSON object per line; blank lines and `#` comments skipped). */
export function parseJsonlText(text: string): Omit<BatchInput, 'batchId'> {
  const errors: BatchRowError[] = [];
  const items: BatchItem[] = [];
  const seen = new Map<string, number>();
  text.split(/\r?\n/).forEach((lineText, i) => {
    const line = i + 1;
    const t = lineText.trim();
    if (!t || t.startsWith('#')) return;
    let obj: unknown;
    try {
      obj = JSON.parse(t);
    } catch (e) {
      errors.push({ line, reason: `not valid JSON: ${(e as Error).message}`, raw: t.slice(0, 200) });
      return;
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
      errors.push({ line, reason: 'a row must be a JSON object with a "url" field', raw: t.slice(0, 200) });
      return;
    }
    const item = toItem(line, obj as Record<string, unknown>, errors, t, seen);
    if (item) items.push(item);
  });
  return { items, errors, format: 'jsonl' };
}

/**
 * Reads a batch file; the format comes from the extension (`.csv`, `.jsonl`/`.ndjson`) or, failing
 * that, from the first character (`{` → JSONL). Throws only when the file cannot be read.
 */
export function readBatchFile(file: string): BatchInput {
  const text = fs.readFileSync(file, 'utf8');
  const ext = path.extname(file).toLowerCase();
  const jsonl = ext === '.jsonl' || ext === '.ndjson' || (ext !== '.csv' && text.trimStart().startsWith('{'));
  const parsed = jsonl ? parseJsonlText(text) : parseCsvText(text);
  const batchId = `batch-${fingerprint(parsed.items.map((i) => i.key)).slice(0, 20)}`;
  return { ...parsed, batchId };
}
