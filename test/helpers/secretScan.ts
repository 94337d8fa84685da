/**
 * The secrets scan of a test run (issue 13, "Proof at scale"): searches what the run left — every
 * workflow history on its Temporal server (payloads decoded, encrypted ones decrypted), every
 * store the stacks kept, every log line and every CLI/HTTP answer the helpers recorded (see
 * `evidence.ts`) — for every configured secret value (as given, base64, base64url and
 * URL-encoded) and for credential patterns: `Bearer`/`Basic` credentials, `api_key=`, `token=`,
 * `secret=`, `password=` … with a secret-looking value, and `sk-…`/`sk_…` keys.
 *
 * It does not reuse the product's redactor (`src/lib/sanitize.ts`): a scan that shared its rules
 * would share its blind spots.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { EncryptionCodec, ENCRYPTED_ENCODING } from '../../src/codec/codec.js';
import { parseKeyring } from '../../src/codec/keys.js';

/** Where a text came from. */
export type ScanSource = 'histories' | 'stores' | 'logs' | 'answers';
export const SCAN_SOURCES: readonly ScanSource[] = ['histories', 'stores', 'logs', 'answers'];

/** One finding: what was found where, with a masked excerpt. */
export interface ScanHit {
  source: ScanSource;
  /** The workflow ID, `store file › table`, log file or answer label. */
  item: string;
  kind: 'secret' | 'pattern';
  /** Which secret form (`secret #3 (base64)`) or which pattern (`Bearer credential`). */
  what: string;
  /** ±40 characters around the hit, the hit itself masked but for its first 4 characters. */
  excerpt: string;
}

/** What was searched, per source. */
export interface ScanVolume {
  items: number;
  bytes: number;
}

/** The outcome of a scan. */
export interface ScanReport {
  volume: Record<ScanSource, ScanVolume>;
  hits: ScanHit[];
  /** Distinct secret values searched for (each also in its encoded forms). */
  secrets: number;
  /** Encrypted payloads decrypted before searching. */
  decryptedPayloads: number;
  /** Things that could not be searched (an undecryptable payload, a store that was not kept): each fails the scan. */
  unscanned: string[];
}

/** Credential patterns, each with a name. A match whose value is `[REDACTED]` is not one (the class excludes brackets). */
const PATTERNS: { name: string; re: RegExp; value: (m: RegExpExecArray) => string }[] = [
  // `Bearer <token>` / `Basic <token>`: 8+ token characters with a digit, a symbol or a lower-upper change (not prose such as "Basic authentication").
  {
    name: 'Bearer/Basic credential',
    re: /\b(?:[Bb]earer|[Bb]asic|BEARER|BASIC)\s+([A-Za-z0-9._~+/=-]{8,})/g,
    value: (m) => m[1]!,
  },
  // `api_key=…`, `token=…`, `access_token=…`, `secret=…`, `password=…` in URLs, forms and text.
  {
    name: 'credential parameter',
    re: /(?:^|[^A-Za-z0-9])((?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?token|client[_-]?secret|token|secret|password|passwd)=([^&\s"'<>#;,]+))/gi,
    value: (m) => decodeURIComponentSafe(m[2]!),
  },
  // OpenAI-/Stripe-style keys and our own test keys' shape.
  { name: 'sk- key', re: /\bsk[-_][A-Za-z0-9][A-Za-z0-9_-]{11,}/g, value: (m) => m[0] },
];

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A value that looks like a credential: 8+ characters with a digit and a letter, or 16+, and not a redaction placeholder. */
function looksSecret(v: string): boolean {
  if (/REDACTED|\*\*\*/i.test(v)) return false;
  return (
    v.length >= 16 ||
    (v.length >= 8 && /\d/.test(v) && /[A-Za-z]/.test(v)) ||
    (v.length >= 8 && /[a-z][A-Z]|[A-Z][a-z].*[A-Z]/.test(v) && /[._~+/=-]/.test(v))
  );
}

function mask(text: string, start: number, length: number): string {
  const hit = text.slice(start, start + length);
  const before = text.slice(Math.max(0, start - 40), start);
  const after = text.slice(start + length, start + length + 40);
  return `${before}${hit.slice(0, 4)}${'•'.repeat(Math.max(0, Math.min(hit.length, 40) - 4))}${after}`.replace(
    /\s+/g,
    ' ',
  );
}

/** Every form in which a secret value is searched: as given, base64, base64url, URL-encoded. */
export function secretForms(secret: string): { form: string; label: string }[] {
  const forms = [
    { form: secret, label: 'as given' },
    { form: Buffer.from(secret).toString('base64'), label: 'base64' },
    { form: Buffer.from(secret).toString('base64url'), label: 'base64url' },
    { form: encodeURIComponent(secret), label: 'URL-encoded' },
  ];
  const seen = new Set<string>();
  return forms.filter((f) => f.form.length >= 6 && !seen.has(f.form) && (seen.add(f.form), true));
}

/** Accumulates searched volume and hits; {@link SecretScanner.scan} one text at a time. */
export class SecretScanner {
  private readonly forms: { form: string; label: string }[];
  private readonly report: ScanReport;

  constructor(secrets: readonly string[]) {
    const distinct = [...new Set(secrets.filter((s) => s.length >= 6))];
    this.forms = distinct.flatMap((s, i) =>
      secretForms(s).map((f) => ({ form: f.form, label: `secret #${i + 1} (${f.label})` })),
    );
    this.report = {
      volume: {
        histories: { items: 0, bytes: 0 },
        stores: { items: 0, bytes: 0 },
        logs: { items: 0, bytes: 0 },
        answers: { items: 0, bytes: 0 },
      },
      hits: [],
      secrets: distinct.length,
      decryptedPayloads: 0,
      unscanned: [],
    };
  }

  /**
   * Searches one item's text; counts it in the source's volume. `patterns: false` searches for the
   * configured secret values only (see {@link PAGE_CONTENT_COLUMNS}).
   */
  scan(source: ScanSource, item: string, text: string, opts: { patterns?: boolean } = {}): void {
    const v = this.report.volume[source];
    v.items += 1;
    v.bytes += Buffer.byteLength(text);
    for (const { form, label } of this.forms) {
      let at = text.indexOf(form);
      while (at !== -1) {
        this.report.hits.push({ source, item, kind: 'secret', what: label, excerpt: mask(text, at, form.length) });
        at = text.indexOf(form, at + form.length);
      }
    }
    for (const p of opts.patterns === false ? [] : PATTERNS) {
      for (const m of text.matchAll(p.re)) {
        if (!looksSecret(p.value(m as RegExpExecArray))) continue;
        const whole = m[1] && p.name === 'credential parameter' ? m[1] : m[0];
        this.report.hits.push({
          source,
          item,
          kind: 'pattern',
          what: p.name,
          excerpt: mask(text, (m.index ?? 0) + m[0].indexOf(whole), whole.length),
        });
      }
    }
  }

  /** Notes something that could not be searched (it fails the scan). */
  unscanned(what: string): void {
    this.report.unscanned.push(what);
  }

  /** Counts a decrypted payload. */
  decrypted(n = 1): void {
    this.report.decryptedPayloads += n;
  }

  /** The report so far. */
  result(): ScanReport {
    return this.report;
  }
}

/** Every secret value recorded under `<dir>/secrets` (see `recordSecrets`). */
export function recordedSecrets(dir: string): string[] {
  const sub = path.join(dir, 'secrets');
  if (!fs.existsSync(sub)) return [];
  return fs.readdirSync(sub).flatMap((f) =>
    fs
      .readFileSync(path.join(sub, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .flatMap((l) => (JSON.parse(l) as { values: string[] }).values),
  );
}

/**
 * The store columns that hold a scraped page's own words (`results` and `result_documents`). A
 * page about OAuth may show `Authorization: Bearer <example>` or `?access_token=<example>`: that is
 * the user's data, kept as the page said it, not a leak. These columns are searched for every
 * configured secret value (a provider echoing our key into content is still caught), not for
 * credential patterns. `final_url`, `url`, `error` and every other column get both searches.
 */
export const PAGE_CONTENT_COLUMNS: ReadonlySet<string> = new Set([
  'title',
  'byline',
  'excerpt',
  'text',
  'markdown',
  'links',
  'data',
  'site_name',
]);
const PAGE_TABLES = new Set(['results', 'result_documents']);

function cellText(c: unknown): string {
  return Buffer.isBuffer(c) ? c.toString('utf8') : typeof c === 'string' ? c : (JSON.stringify(c) ?? String(c));
}

/** Scans one table's rows as two items: page-content columns (secret values only) and the rest (secret values and patterns). */
function scanTable(scanner: SecretScanner, item: string, table: string, columns: string[], rows: unknown[][]): void {
  const content = PAGE_TABLES.has(table) ? columns.map((c) => PAGE_CONTENT_COLUMNS.has(c)) : columns.map(() => false);
  const pick = (want: boolean) =>
    rows
      .map((r) =>
        r
          .filter((_, i) => content[i] === want)
          .map(cellText)
          .join('\t'),
      )
      .join('\n');
  scanner.scan('stores', item, pick(false));
  if (content.some(Boolean)) scanner.scan('stores', `${item} page content`, pick(true), { patterns: false });
}

/** Searches every table of a SQLite file: each row (all columns; blobs as UTF-8) is one item `file › table`. */
export function scanSqliteFile(scanner: SecretScanner, file: string): void {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare(`select name from sqlite_master where type = 'table'`).all() as { name: string }[];
    for (const { name } of tables) {
      const stmt = db.prepare(`select * from "${name.replace(/"/g, '""')}"`).raw(true);
      const rows = stmt.all() as unknown[][];
      if (rows.length === 0) continue;
      scanTable(
        scanner,
        `${path.basename(file)} › ${name} (${rows.length} rows)`,
        name,
        stmt.columns().map((c) => c.name),
        rows,
      );
    }
  } finally {
    db.close();
  }
}

/** Searches a PostgreSQL dump (`{"table", "row"}` JSON lines, see `keepStore`) table by table, as {@link scanSqliteFile} does. */
function scanJsonlDump(scanner: SecretScanner, file: string): void {
  const byTable = new Map<string, Record<string, unknown>[]>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const { table, row } = JSON.parse(line) as { table: string; row: Record<string, unknown> };
    byTable.set(table, [...(byTable.get(table) ?? []), row]);
  }
  if (byTable.size === 0) scanner.scan('stores', path.basename(file), '');
  for (const [table, rows] of byTable) {
    const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    scanTable(
      scanner,
      `${path.basename(file)} › ${table} (${rows.length} rows)`,
      table,
      columns,
      rows.map((r) => columns.map((c) => r[c] ?? null)),
    );
  }
}

/** Searches the kept stores (`<dir>/stores`: SQLite copies and PostgreSQL JSON-line dumps); a `.error` file is unscanned. */
export function scanStores(scanner: SecretScanner, dir: string): void {
  const sub = path.join(dir, 'stores');
  if (!fs.existsSync(sub)) return;
  for (const f of fs.readdirSync(sub).sort()) {
    const file = path.join(sub, f);
    if (f.endsWith('.db')) scanSqliteFile(scanner, file);
    else if (f.endsWith('.jsonl')) scanJsonlDump(scanner, file);
    else if (f.endsWith('.error')) scanner.unscanned(fs.readFileSync(file, 'utf8').trim());
  }
}

/** Searches every log file under `<dir>/logs` (one item per file). */
export function scanLogs(scanner: SecretScanner, dir: string): void {
  const sub = path.join(dir, 'logs');
  if (!fs.existsSync(sub)) return;
  for (const f of fs.readdirSync(sub).sort()) scanner.scan('logs', f, fs.readFileSync(path.join(sub, f), 'utf8'));
}

/** Searches every recorded answer under `<dir>/answers` (one item per answer). */
export function scanAnswers(scanner: SecretScanner, dir: string): void {
  const sub = path.join(dir, 'answers');
  if (!fs.existsSync(sub)) return;
  for (const f of fs.readdirSync(sub).sort()) {
    for (const line of fs.readFileSync(path.join(sub, f), 'utf8').split('\n')) {
      if (!line) continue;
      const a = JSON.parse(line) as { source: string; label: string; text: string };
      scanner.scan('answers', `${a.source} ${a.label}`, a.text);
    }
  }
}

const isPayload = (v: unknown): v is Payload =>
  !!v &&
  typeof v === 'object' &&
  'data' in v &&
  'metadata' in v &&
  (v as Payload).metadata !== null &&
  typeof (v as Payload).metadata === 'object';

/**
 * Every string and payload of a history as one text: payloads' bytes as UTF-8, encrypted payloads
 * (`binary/encrypted`) decrypted first with `codec` (without it, or when they do not decrypt, the
 * workflow is unscanned: an encrypted history cannot be proven clean).
 */
export async function historyTextDecoded(
  history: unknown,
  codec: EncryptionCodec | undefined,
  onDecrypted: () => void,
): Promise<string> {
  const parts: string[] = [];
  const walk = async (v: unknown): Promise<void> => {
    if (typeof v === 'string') parts.push(v);
    else if (v instanceof Uint8Array) parts.push(Buffer.from(v).toString('utf8'));
    else if (Array.isArray(v)) for (const x of v) await walk(x);
    else if (v && typeof v === 'object') {
      if (isPayload(v) && v.metadata?.encoding && Buffer.from(v.metadata.encoding).toString() === ENCRYPTED_ENCODING) {
        if (!codec) throw new Error('an encrypted payload and no codec keys (SCRAPE_CODEC_KEYS) to decrypt it');
        const [plain] = await codec.decode([v]);
        onDecrypted();
        return walk(plain);
      }
      for (const x of Object.values(v)) await walk(x);
    }
  };
  await walk(history);
  return parts.join('\n');
}

/**
 * Searches the history of every workflow matching `query` (default: all of the namespace) on the
 * client's server, `concurrency` at a time. Codec keys: `codecKeys` (`<id>:<base64>,…`, as
 * `SCRAPE_CODEC_KEYS`), when payloads are encrypted.
 */
export async function scanHistories(
  scanner: SecretScanner,
  temporal: Client,
  opts: { query?: string; codecKeys?: string; concurrency?: number } = {},
): Promise<void> {
  const codec = opts.codecKeys ? new EncryptionCodec(parseKeyring(opts.codecKeys)) : undefined;
  const ids: string[] = [];
  for await (const wf of temporal.workflow.list(opts.query ? { query: opts.query } : {}))
    ids.push(`${wf.workflowId}\u0000${wf.runId}`);
  let next = 0;
  const one = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= ids.length) return;
      const [workflowId, runId] = ids[i]!.split('\u0000') as [string, string];
      try {
        const history = await temporal.workflow.getHandle(workflowId, runId).fetchHistory();
        scanner.scan(
          'histories',
          `${workflowId} (run ${runId.slice(0, 8)})`,
          await historyTextDecoded(history, codec, () => scanner.decrypted()),
        );
      } catch (e) {
        scanner.unscanned(`history of ${workflowId}: ${(e as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, one));
}

/** The report as text: volume per source, then every hit and every unscanned item. */
export function formatScanReport(r: ScanReport): string {
  const mb = (b: number) => `${(b / 1_048_576).toFixed(2)} MiB`;
  const lines = [
    `secrets scan: ${r.secrets} secret values (each as given, base64, base64url, URL-encoded) and ${PATTERNS.length} credential patterns`,
    ...SCAN_SOURCES.map(
      (s) =>
        `  ${s.padEnd(10)} ${String(r.volume[s].items).padStart(7)} items  ${String(r.volume[s].bytes).padStart(12)} bytes (${mb(r.volume[s].bytes)})`,
    ),
    `  total      ${String(SCAN_SOURCES.reduce((a, s) => a + r.volume[s].items, 0)).padStart(7)} items  ${String(SCAN_SOURCES.reduce((a, s) => a + r.volume[s].bytes, 0)).padStart(12)} bytes; encrypted payloads decrypted: ${r.decryptedPayloads}`,
    `  hits: ${r.hits.length}; unscanned: ${r.unscanned.length}`,
    ...r.hits.slice(0, 200).map((h) => `  HIT ${h.source} ${h.item}: ${h.what}: …${h.excerpt}…`),
    ...(r.hits.length > 200 ? [`  … and ${r.hits.length - 200} more hits`] : []),
    ...r.unscanned.slice(0, 50).map((u) => `  UNSCANNED ${u}`),
  ];
  return lines.join('\n');
}
