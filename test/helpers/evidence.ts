/**
 * What a test run keeps for the secrets scan (issue 13, "Proof at scale"): the stacks delete their
 * temporary directories on stop, so everything the scan must see goes into one run-scoped
 * directory first. `test/helpers/globalSetup.ts` makes it and names it in
 * `$SCRAPE_TEST_EVIDENCE_DIR` (inherited by the test workers and every process they start); the
 * last test project (`test/scan/secrets.test.ts`, see `vitest.config.ts`) scans it, and the global
 * teardown deletes it.
 *
 * Layout:
 * - `stores/<label>-<id>.db`: a copy of each test stack's SQLite store (`VACUUM INTO`, so the
 *   copy holds what the write-ahead log had too), taken when the stack stops;
 *   `stores/<label>-<id>.jsonl`: a PostgreSQL store, every table's rows as JSON lines;
 * - `logs/<name>.log`: worker logs (JSON lines) and the API's request logs;
 * - `answers/<pid>.jsonl`: every CLI and HTTP answer the helpers recorded, `{source, label, text}`;
 * - `secrets/<pid>.jsonl`: the secret values the stacks configured, `{label, values}` (random
 *   webhook secrets, API keys, provider keys), which the scan searches for.
 *
 * Outside a vitest run (no `$SCRAPE_TEST_EVIDENCE_DIR`) every function here does nothing.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { loadConfigFile } from '../../src/config.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Store } from '../../src/store/index.js';

/** Environment variable naming the run-scoped evidence directory. */
export const EVIDENCE_ENV = 'SCRAPE_TEST_EVIDENCE_DIR';

/** The evidence directory of this run, or undefined outside a test run. */
export function evidenceDir(): string | undefined {
  return process.env[EVIDENCE_ENV] || undefined;
}

/** `<evidence>/<sub>` (created), or undefined outside a test run. */
export function evidencePath(sub: 'stores' | 'logs' | 'answers' | 'secrets'): string | undefined {
  const dir = evidenceDir();
  if (!dir) return undefined;
  const p = path.join(dir, sub);
  fs.mkdirSync(p, { recursive: true });
  return p;
}

const safe = (label: string) => label.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'x';
const uid = () => randomBytes(4).toString('hex');

/**
 * Records an answer the tests saw (a CLI run's stdout and stderr, an HTTP response's status,
 * headers and body) for the scan. `label` says what was asked (the command line, `GET /v1/…`).
 */
export function recordAnswer(source: 'cli' | 'http', label: string, text: string): void {
  const dir = evidencePath('answers');
  if (!dir) return;
  fs.appendFileSync(
    path.join(dir, `${process.pid}.jsonl`),
    `${JSON.stringify({ source, label: label.slice(0, 300), text })}\n`,
  );
}

/** Records a fetch `Response` (status, headers, body) for the scan; returns it unread (a clone is read). */
export async function recordResponse(label: string, res: Response): Promise<Response> {
  if (!evidenceDir()) return res;
  const body = await res.clone().text();
  const headers = [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n');
  recordAnswer('http', label, `${res.status}\n${headers}\n\n${body}`);
  return res;
}

/** Records secret values a stack configured (empty strings are ignored), under `label`. */
export function recordSecrets(label: string, values: readonly (string | undefined)[]): void {
  const dir = evidencePath('secrets');
  if (!dir) return;
  const list = values.filter((v): v is string => typeof v === 'string' && v.length > 0);
  if (list.length)
    fs.appendFileSync(path.join(dir, `${process.pid}.jsonl`), `${JSON.stringify({ label, values: list })}\n`);
}

/** A log file path in the evidence directory (`logs/<name>-<pid>-<id>.log`), or `fallback` outside a test run. */
export function evidenceLogFile(name: string, fallback: string): string {
  const dir = evidencePath('logs');
  return dir ? path.join(dir, `${safe(name)}-${process.pid}-${uid()}.log`) : fallback;
}

/** Writes log text (e.g. the API's request log) into the evidence directory. */
export function keepLog(name: string, text: string): void {
  const dir = evidencePath('logs');
  if (dir && text) fs.writeFileSync(path.join(dir, `${safe(name)}-${process.pid}-${uid()}.log`), text);
}

/** Copies a log file into the evidence directory (missing files are ignored). */
export function keepLogFile(name: string, file: string): void {
  const dir = evidencePath('logs');
  if (dir && fs.existsSync(file)) fs.copyFileSync(file, path.join(dir, `${safe(name)}-${process.pid}-${uid()}.log`));
}

/** JSON replacer: `bytea` columns (Buffers) as their UTF-8 text, so that the scan reads them. */
function bytesAsText(_key: string, v: unknown): unknown {
  const b = v as { type?: unknown; data?: unknown } | null;
  return b && b.type === 'Buffer' && Array.isArray(b.data) ? Buffer.from(b.data as number[]).toString('utf8') : v;
}

/**
 * Keeps what `store` holds for the scan; call it before `store.close()`. SQLite: `VACUUM INTO` a
 * copy (consistent, WAL included; an in-memory store is copied too); PostgreSQL: every table of
 * the current schema as JSON lines (`{"table", "row"}`). Never throws: a store that cannot be
 * copied is noted in `stores/<label>-<id>.error` so that the scan reports it.
 */
export async function keepStore(store: Store, label: string): Promise<void> {
  const dir = evidencePath('stores');
  if (!dir) return;
  const base = path.join(dir, `${safe(label)}-${uid()}`);
  try {
    if (store.kind === 'sqlite') {
      await sql`vacuum into ${`${base}.db`}`.execute(store.db);
      return;
    }
    const tables = await store.db.introspection.getTables();
    const lines: string[] = [];
    for (const t of tables) {
      const rows = await sql<Record<string, unknown>>`select * from ${sql.table(t.name)}`.execute(store.db);
      for (const row of rows.rows) lines.push(JSON.stringify({ table: t.name, row }, bytesAsText));
    }
    fs.writeFileSync(`${base}.jsonl`, lines.length ? `${lines.join('\n')}\n` : '');
  } catch (e) {
    fs.writeFileSync(`${base}.error`, `store ${label} (${store.kind}) could not be kept: ${(e as Error).message}\n`);
  }
}

/** Records a CLI run (its arguments, exit code, stdout and stderr) for the scan; returns `r`. */
export function recordCli<T extends { code?: number | null; stdout?: string; stderr?: string; out?: string }>(
  args: readonly string[],
  r: T,
): T {
  recordAnswer('cli', args.join(' '), `exit ${r.code ?? '?'}\n${r.stdout ?? ''}\n${r.stderr ?? ''}${r.out ?? ''}`);
  return r;
}

/**
 * Keeps a SQLite file that something else wrote (the demo's store or its Temporal server's
 * database; a bench stack's store) by `VACUUM INTO` a copy, else (a schema this SQLite cannot
 * re-create) by copying the file and its WAL; missing files are ignored.
 */
export function keepSqliteFile(file: string, label: string): void {
  const dir = evidencePath('stores');
  if (!dir || !fs.existsSync(file)) return;
  const base = path.join(dir, `${safe(label)}-${uid()}`);
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      db.prepare('vacuum into ?').run(`${base}.db`);
    } finally {
      db.close();
    }
  } catch (e) {
    // The Temporal dev server's schema (CLI ≥ 1.9) has double-quoted string literals in generated
    // columns, which this SQLite build refuses to re-create (VACUUM INTO); reading it works. Its
    // server has stopped by now: the file and its WAL, copied as they are, are the same database.
    try {
      fs.rmSync(`${base}.db`, { force: true });
      fs.copyFileSync(file, `${base}.db`);
      if (fs.existsSync(`${file}-wal`)) fs.copyFileSync(`${file}-wal`, `${base}.db-wal`);
    } catch (copyError) {
      fs.writeFileSync(
        `${base}.error`,
        `SQLite file ${label} could not be kept: ${(e as Error).message}; copying it: ${(copyError as Error).message}\n`,
      );
    }
  }
}

/** Records every secret a configuration file holds or names (provider credentials, webhook secrets; see `ProviderRegistry.allSecrets`). */
export function recordConfigSecrets(label: string, configFile: string, env: NodeJS.ProcessEnv = process.env): void {
  if (!evidenceDir() || !fs.existsSync(configFile)) return;
  try {
    recordSecrets(label, new ProviderRegistry(loadConfigFile(configFile), env).allSecrets());
  } catch (e) {
    fs.writeFileSync(
      path.join(evidencePath('stores')!, `${safe(label)}-${uid()}.error`),
      `configuration ${configFile}: secrets could not be read: ${(e as Error).message}\n`,
    );
  }
}
