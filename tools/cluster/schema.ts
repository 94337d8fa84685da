/**
 * Temporal's schema on PostgreSQL, applied with the server's own tool (`go.temporal.io/server/cmd/tools/sql`,
 * plugin `postgres12`): for the main store and the advanced-visibility store, `create-database`
 * (an existing database is kept), `setup-schema -v 0.0` (only on a database without a schema
 * version) and `update-schema -d <module>/schema/postgresql/v12/<temporal|visibility>/versioned`
 * (applies only what is missing). Safe to run on every start.
 */
import path from 'node:path';
import { runCommand, type LineLogger } from '../devserver/process.js';

/** Where and as whom the tool connects. */
export interface SchemaTarget {
  sqlTool: string;
  /** `go.temporal.io/server` module directory (see `serverModuleDir`). */
  moduleDir: string;
  host: string;
  port: number;
  user: string;
  password?: string;
  /** Database names (default `temporal`, `temporal_visibility`). */
  databases?: { main: string; visibility: string };
}

/**
 * Creates and migrates both databases. Returns the databases it created.
 *
 * @throws Error with the tool's output when a step fails for another reason than "already exists".
 */
export async function setupTemporalSchema(t: SchemaTarget, log: LineLogger): Promise<string[]> {
  const dbs = t.databases ?? { main: 'temporal', visibility: 'temporal_visibility' };
  const created: string[] = [];
  for (const [db, dir] of [
    [dbs.main, 'temporal'],
    [dbs.visibility, 'visibility'],
  ] as const) {
    const base = [
      '--plugin',
      'postgres12',
      '--ep',
      t.host,
      '-p',
      String(t.port),
      '-u',
      t.user,
      '--pw',
      t.password ?? '',
      '--db',
      db,
    ];
    const tool = async (args: string[], okIf?: RegExp) => {
      const r = await runCommand(t.sqlTool, [...base, ...args], { env: process.env, timeoutMs: 180_000 });
      const out = `${r.stdout}\n${r.stderr}`;
      if (r.code === 0) return 'ok';
      if (okIf?.test(out)) return 'exists';
      throw new Error(
        `sql ${args[0]} on ${db} failed (${r.spawnError?.message ?? `exit ${r.code}`}):\n${out.trim().split('\n').slice(-8).join('\n')}`,
      );
    };
    if ((await tool(['create-database'], /already exists/i)) === 'ok') created.push(db);
    await tool(['setup-schema', '-v', '0.0'], /already exists|schema_version/i);
    await tool(['update-schema', '-d', path.join(t.moduleDir, 'schema', 'postgresql', 'v12', dir, 'versioned')]);
    log(`schema: ${db} up to date`);
  }
  return created;
}
