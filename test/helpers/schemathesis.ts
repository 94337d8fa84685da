/**
 * Schemathesis (PyPI `schemathesis`, pinned), for the hostile-HTTP-input test (issue 13): a virtual
 * environment in the cache outside the repository, keyed by version —
 * `<cache>/schemathesis/<version>/venv` (`SCRAPE_CACHE_DIR` / `XDG_CACHE_HOME` move the cache, as
 * for the Temporal CLI; `$SCRAPE_SCHEMATHESIS` names an `st` executable to use instead). Made on
 * first use with `python3 -m venv` and `pip install schemathesis==<version>` (about 30 s), marked
 * complete only once pip succeeded, so an interrupted install is redone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporalCacheRoot } from '../../tools/devserver/temporalCli.js';
import { describeFailure, runCommand } from '../../tools/devserver/process.js';

/** Pinned schemathesis version (the one issue 13 reports its first run with). */
export const SCHEMATHESIS_VERSION = '4.32.5';

/** Path of the `st` command, installing schemathesis into the cache first if needed. Throws with what failed. */
export async function ensureSchemathesis(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.SCRAPE_SCHEMATHESIS) return env.SCRAPE_SCHEMATHESIS;
  const dir = path.join(temporalCacheRoot(env), 'schemathesis', SCHEMATHESIS_VERSION);
  const venv = path.join(dir, 'venv');
  const st = path.join(venv, 'bin', 'st');
  const done = path.join(dir, '.complete');
  if (fs.existsSync(done) && fs.existsSync(st)) return st;
  fs.rmSync(venv, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const python = env.PYTHON ?? 'python3';
  const mk = await runCommand(python, ['-m', 'venv', venv], { env, timeoutMs: 120_000 });
  if (mk.spawnError || mk.code !== 0)
    throw new Error(
      `python3 -m venv ${venv}: ${describeFailure(python, mk, 120_000)} (Debian: apt-get install python3-venv)`,
    );
  const spec = `schemathesis==${SCHEMATHESIS_VERSION}`;
  const pip = await runCommand(
    path.join(venv, 'bin', 'pip'),
    ['install', '--disable-pip-version-check', '--no-input', '-q', spec],
    {
      env,
      timeoutMs: 600_000,
    },
  );
  if (pip.spawnError || pip.code !== 0) throw new Error(`pip install ${spec}: ${describeFailure('pip', pip, 600_000)}`);
  fs.writeFileSync(done, `${new Date().toISOString()}\n`);
  return st;
}
