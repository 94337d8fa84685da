/**
 * Reading batch input files: CSV (header row required) or JSONL, one scrape per row.
 *
 * Every row is validated on its own: a bad row is reported with its line number and reason, and
 * the other rows go on. Nothing is dropped silently: every line is either a job or an error.
 * Files are read as bytes ({@link decodeBatchBytes} in `decode.ts`): UTF-8 with or without a BOM, or UTF-16 with
 * its BOM (as spreadsheet programs save "Unicode text"); a line that is not valid UTF-8 (Latin-1 or
 * Windows-1252 bytes, binary data) is refused with its line number instead of being read with
 * replacement characters, and the other lines go on. Line endings may be LF, CRLF or CR, mixed.
 * A JSONL line with a duplicate key is refused (never "the last one wins").
 * The job's idempotency key is the row's `key` column when given, else derived from the row's
 * content with its URL in WHATWG serialisation: the host, a short slug of the path and a short
 * hash (`example.com-articles-poll-politely-3fa9c1d2e4`), so re-running the same file creates
 * nothing new, two spellings of one address in a file are one job, and a list of jobs says which
 * page each one is. A re-run finds the jobs an earlier version made under the row's former keys.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import { InvalidInputError } from '../client/errors.js';
import { canonicalUrl, derivedKey, hostHashKey, legacyRowKey } from '../client/ids.js';
import { fingerprint } from '../lib/hash.js';
import { parseJsonStrict } from '../lib/json.js';
import { isSecretName, REDACTED, redactSecrets, redactUrlCredentials } from '../lib/sanitize.js';
import { redactShapedCredentials } from '../lib/secretDetection.js';
import { checkRowSize, IdempotencyKeySchema, TargetUrlSchema } from '../model/schemas.js';
import { decodeBatchBytes } from './decode.js';

/** Columns understood in a row; any other column is kept as part of the row (evidence). */
const BatchRowSchema = z
  .object({
    url: TargetUrlSchema,
    key: IdempotencyKeySchema.optional(),
    format: z.enum(['markdown', 'text']).optional(),
    provider: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .optional(),
  })
  .passthrough()
  .superRefine((row, ctx) => checkRowSize(row, ctx));

/** A valid row, with the line it came from (1-based, counting the CSV header as line 1). */
export interface BatchItem {
  line: number;
  /** The record's last line, when a quoted field carries it over several lines. */
  endLine?: number;
  /** The URL as written in the file (the client sends its WHATWG serialisation). */
  url: string;
  key: string;
  /**
   * The keys earlier versions derived for this row, so that a re-run finds the jobs made then: the
   * key before path slugs (`<host>-<hash>`, when it differs from `key`), then the key before
   * readable keys (`row-<32 hex>`). Absent for a row with its own `key`.
   */
  formerKeys?: string[];
  format?: 'markdown' | 'text';
  provider?: string;
  row: Record<string, unknown>;
}

/** A rejected row and why. */
export interface BatchRowError {
  line: number;
  /** The record's last line, when it spans several lines. */
  endLine?: number;
  reason: string;
  /** The raw line text, credentials redacted (truncated to 200 characters). */
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

/**
 * A {@link BatchRowError} for lines `line..endLine`. Its text and reason are shown to a person (the
 * CLI's error lines and table, the demo): credentials in them are redacted first, as in a started
 * row — the values of secret-named fields (`row`: the line's fields, when it was read into any;
 * a JSON `"api_key": "…"` pair otherwise), a URL's user-info or credential parameter, a token of
 * a known shape — then the text is cut to 200 characters.
 */
function rowError(
  line: number,
  reason: string,
  raw: string,
  endLine = line,
  row?: Record<string, unknown>,
): BatchRowError {
  const named = Object.entries(row ?? {}).flatMap(([k, v]) => (secretField(k) && typeof v === 'string' ? [v] : []));
  // Never re-serialised (a line that parses as a URL stays as written, so the row is recognisable).
  const shown = (text: string) =>
    redactShapedCredentials(redactUrlCredentials(redactSecrets(text, named).replace(JSON_PAIR, secretPair)), REDACTED);
  return { line, ...(endLine > line ? { endLine } : {}), reason: shown(reason), raw: shown(raw).slice(0, 200) };
}

/** A JSON `"name": "value"` pair in a line's text (read even where the line is not valid JSON). */
const JSON_PAIR = /"((?:[^"\\]|\\.)*)"(\s*:\s*)"((?:[^"\\]|\\.)*)"/g;

/** {@link JSON_PAIR}'s replacement: the value of a secret-named field redacted. */
const secretPair = (pair: string, name: string, colon: string) =>
  secretField(name) ? `"${name}"${colon}"${REDACTED}"` : pair;

/**
 * Whether a batch field's value is a secret by its name: a secret-looking name that is not one of
 * the row's own columns (`key` is the job's idempotency key, which the user needs to find the row,
 * though `key` names Google's API key in a URL).
 */
const secretField = (name: string) => isSecretName(name) && !['url', 'key', 'format', 'provider'].includes(name);

function emptyToUndefined(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== '' && v !== null && v !== undefined));
}

/**
 * What the parsers need besides the text: lines refused before parsing (1-based line → reason,
 * e.g. not valid UTF-8) and the keys seen so far (a second row with the same key is a duplicate).
 */
interface RowContext {
  errors: BatchRowError[];
  seen: Map<string, number>;
  badLines: ReadonlyMap<number, string>;
}

/** The reason a refused line inside `line..endLine` gives, if any. */
function badLineIn(ctx: RowContext, line: number, endLine: number): string | undefined {
  for (let n = line; n <= endLine; n++) {
    const why = ctx.badLines.get(n);
    if (why) return n === line ? why : `line ${n}: ${why}`;
  }
  return undefined;
}

function toItem(
  line: number,
  raw: Record<string, unknown>,
  ctx: RowContext,
  rawText: string,
  endLine = line,
): BatchItem | undefined {
  const refuse = (reason: string) => void ctx.errors.push(rowError(line, reason, rawText, endLine, raw));
  const bad = badLineIn(ctx, line, endLine);
  if (bad) return refuse(bad);
  const parsed = BatchRowSchema.safeParse(emptyToUndefined(raw));
  if (!parsed.success)
    return refuse(parsed.error.issues.map((i) => `${i.path.join('.') || 'row'}: ${i.message}`).join('; '));
  const { url, key, format, provider, ...rest } = parsed.data;
  const canonical = canonicalUrl(url);
  const contentHash = fingerprint({ url: canonical, format: format ?? null, provider: provider ?? null, rest });
  const derived = key ?? derivedKey(canonical, contentHash);
  const first = ctx.seen.get(derived);
  if (first !== undefined) return refuse(`duplicate of line ${first} (same key ${derived}); the job is started once`);
  ctx.seen.set(derived, line);
  const formerKeys = key
    ? undefined
    : [
        hostHashKey(canonical, contentHash),
        legacyRowKey({ url, format: format ?? null, provider: provider ?? null, rest }),
      ].filter((former) => former !== derived);
  return {
    line,
    ...(endLine > line ? { endLine } : {}),
    url,
    key: derived,
    ...(formerKeys ? { formerKeys } : {}),
    format,
    provider,
    row: parsed.data,
  };
}

/** Options of {@link parseCsvText} and {@link readBatchFile}. */
export interface CsvOptions {
  /** Field delimiter, one character (default `,`). */
  delimiter?: string;
}

/** Lines refused before parsing (1-based line → reason), from {@link decodeBatchBytes}. */
export interface ParseContext {
  badLines?: ReadonlyMap<number, string>;
}

/** Delimiters recognised when a header without a `url` column would have one with them. */
const OTHER_DELIMITERS = [';', '\t', '|'];

/** How to name a delimiter on the command line (`--delimiter ';'`). */
function delimiterHint(d: string): string {
  return d === '\t'
    ? `the delimiter looks like a tab; pass --delimiter tab`
    : `the delimiter looks like \`${d}\`; pass --delimiter '${d}'`;
}

/**
 * Why csv-parse refused line `line` when it was parsed alone, in words that name the field: its
 * own messages count from the start of what it was given ("at line 1"), which here is the line
 * itself, so an unknown message has that count replaced by the file's line.
 */
function quotingReason(e: unknown, line: number): string {
  const err = e as { code?: string; index?: number; message?: string };
  const field = typeof err.index === 'number' ? `field ${err.index + 1}` : 'a field';
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return `${field} opens a quote that is never closed (a quoted field ends with "; write "" for a quote inside it)`;
    case 'INVALID_OPENING_QUOTE':
      return `a quote inside ${field}, which does not start with one (quote the whole field and double the quote inside: "a""b")`;
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return `characters after the closing quote of ${field} (a quoted field ends at its closing quote; write "" for a quote inside it)`;
    default:
      return String(err.message ?? e).replace(/\bat line \d+/g, `at line ${line}`);
  }
}

/**
 * Parses CSV text (first line is the header; must include a `url` column). A line the parser
 * cannot place in a record (broken quoting) costs only itself: every non-blank line outside the
 * parsed records is parsed again on its own, and becomes a row or an error with its line number.
 * A header without `url` that has one when split by `;`, a tab or `|` is refused with the
 * delimiter to pass.
 */
export function parseCsvText(input: string, opts: CsvOptions & ParseContext = {}): Omit<BatchInput, 'batchId'> {
  const delimiter = opts.delimiter ?? ',';
  // One line ending everywhere (csv-parse counts "\r\n" as two lines in its error positions).
  const text = input.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const errors: BatchRowError[] = [];
  const items: BatchItem[] = [];
  const ctx: RowContext = { errors, seen: new Map(), badLines: opts.badLines ?? new Map() };
  const refuse = (line: number, reason: string, raw: string) => ({
    items,
    errors: [rowError(line, reason, raw)],
    format: 'csv' as const,
  });
  let records: { record: string[]; raw: string; info: { lines: number } }[];
  try {
    records = parseCsv(text, {
      delimiter,
      skip_empty_lines: true,
      trim: true,
      info: true,
      raw: true,
      relax_column_count: true,
      skip_records_with_error: true,
    }) as never;
  } catch (e) {
    return refuse((e as { lines?: number }).lines ?? 1, `CSV cannot be parsed: ${(e as Error).message}`, '');
  }
  const lines = text.split('\n');
  const headerLine = lines.findIndex((l) => l.trim() !== '') + 1; // 0: no content at all
  if (headerLine === 0)
    return { items, errors: [...ctx.badLines].map(([line, reason]) => ({ line, reason, raw: '' })), format: 'csv' };
  const [header, ...rows] = records;
  const headerBad = ctx.badLines.get(headerLine);
  if (headerBad) return refuse(headerLine, `the header: ${headerBad}`, lines[headerLine - 1] ?? '');
  // The first line could not be parsed: no row can be trusted to name the columns.
  if (!header || header.info.lines !== headerLine)
    return refuse(
      headerLine,
      'the first line must be a header naming the columns (one of them "url")',
      lines[headerLine - 1] ?? '',
    );
  const columns = header.record.map((c) => c.trim());
  if (!columns.includes('url')) {
    const other = OTHER_DELIMITERS.find(
      (d) =>
        d !== delimiter &&
        header.raw
          .split(d)
          .map((c) => c.trim().replace(/^"|"$/g, ''))
          .includes('url'),
    );
    const reason = `the CSV header has no "url" column${other ? `; ${delimiterHint(other)}` : ''}`;
    return refuse(headerLine, reason, header.raw.trim());
  }
  // A row is an object keyed by column: a `__proto__` column would set no property and lose every value in it.
  if (columns.includes('__proto__'))
    return refuse(
      headerLine,
      'the CSV header names a column "__proto__", which cannot be kept with a row; rename the column',
      header.raw.trim(),
    );
  const repeated = columns.filter((c, i) => columns.indexOf(c) !== i);
  if (repeated.length > 0) {
    const names = [...new Set(repeated)].map((c) => `"${c}"`).join(', ');
    return refuse(headerLine, `the CSV header repeats column(s) ${names}`, header.raw.trim());
  }
  const addRow = (line: number, record: string[], raw: string, endLine = line) => {
    const bad = badLineIn(ctx, line, endLine);
    if (record.length !== columns.length && !bad) {
      // A record over several lines with the wrong field count is usually an unclosed quote that
      // swallowed the lines after it: name them all, so none is lost without a mention.
      const span = endLine > line ? ` (this record spans lines ${line}–${endLine}: check for an unclosed quote)` : '';
      const fields = Object.fromEntries(columns.map((c, i) => [c, record[i]]));
      return void errors.push(
        rowError(line, `${record.length} fields but the header has ${columns.length}${span}`, raw, endLine, fields),
      );
    }
    const item = toItem(line, Object.fromEntries(columns.map((c, i) => [c, record[i]])), ctx, raw, endLine);
    if (item) items.push(item);
  };
  const covered = new Set<number>(Array.from({ length: headerLine }, (_, i) => i + 1));
  for (const r of rows) {
    const raw = r.raw.replace(/\n$/, '').replace(/^(?:[ \t]*\n)+/, '');
    // info.lines is the record's last line; a quoted field may span several.
    const line = r.info.lines - (raw.match(/\n/g)?.length ?? 0);
    for (let n = line; n <= r.info.lines; n++) covered.add(n);
    addRow(line, r.record, raw, r.info.lines);
  }
  // Lines no record covers: the parser skipped them (broken quoting). Each gets a second chance alone.
  lines.forEach((lineText, i) => {
    const n = i + 1;
    if (covered.has(n) || lineText.trim() === '') return;
    const bad = ctx.badLines.get(n);
    if (bad) return void errors.push(rowError(n, bad, lineText));
    try {
      const alone = parseCsv(lineText, { delimiter, trim: true, relax_column_count: true }) as string[][];
      if (alone.length === 1) return addRow(n, alone[0]!, lineText);
      errors.push(rowError(n, 'CSV cannot be parsed here: not one record', lineText));
    } catch (e) {
      errors.push(rowError(n, `CSV cannot be parsed here: ${quotingReason(e, n)}`, lineText));
    }
  });
  items.sort((a, b) => a.line - b.line);
  errors.sort((a, b) => a.line - b.line);
  return { items, errors, format: 'csv' };
}

/**
 * Parses JSONL text: one JSON object per line (LF, CRLF or CR; a leading BOM is ignored); blank
 * lines and `#` comments skipped. A line that is not JSON, not an object, or has a duplicate key
 * is refused with its line number.
 */
export function parseJsonlText(text: string, opts: ParseContext = {}): Omit<BatchInput, 'batchId'> {
  const errors: BatchRowError[] = [];
  const items: BatchItem[] = [];
  const ctx: RowContext = { errors, seen: new Map(), badLines: opts.badLines ?? new Map() };
  text
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/)
    .forEach((lineText, i) => {
      const line = i + 1;
      const t = lineText.trim();
      const bad = ctx.badLines.get(line);
      if (bad) return void errors.push(rowError(line, bad, t));
      if (!t || t.startsWith('#')) return;
      let obj: unknown;
      try {
        obj = parseJsonStrict(t);
      } catch (e) {
        return void errors.push(rowError(line, `not valid JSON: ${(e as Error).message}`, t));
      }
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
        return void errors.push(rowError(line, 'a row must be a JSON object with a "url" field', t));
      const item = toItem(line, obj as Record<string, unknown>, ctx, t);
      if (item) items.push(item);
    });
  return { items, errors, format: 'jsonl' };
}

/**
 * Reads a batch file; the format comes from the extension (`.csv`, `.jsonl`/`.ndjson`) or, failing
 * that, from the first character (`{` → JSONL). Throws {@link InvalidInputError} only when the file
 * cannot be read (missing, a directory, no permission), naming the file and why.
 */
export function readBatchFile(file: string, opts: CsvOptions = {}): BatchInput {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why =
      err.code === 'ENOENT'
        ? 'no such file'
        : err.code === 'EISDIR'
          ? 'it is a directory'
          : err.code === 'EACCES'
            ? 'permission denied'
            : err.message;
    throw new InvalidInputError(`cannot read input file ${file}: ${why}`, []);
  }
  const { text, badLines } = decodeBatchBytes(bytes);
  const ext = path.extname(file).toLowerCase();
  const jsonl = ext === '.jsonl' || ext === '.ndjson' || (ext !== '.csv' && text.trimStart().startsWith('{'));
  const parsed = jsonl ? parseJsonlText(text, { badLines }) : parseCsvText(text, { ...opts, badLines });
  const batchId = `batch-${fingerprint(parsed.items.map((i) => i.key)).slice(0, 20)}`;
  return { ...parsed, batchId };
}
