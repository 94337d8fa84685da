/**
 * Scrapyd (PyPI `scrapyd` 1.6, the Scrapy job daemon: `schedule.json` answers a job ID at once,
 * `status.json`/`listjobs.json` say where it is, the items feed is JSON lines) for the real-server
 * suite:
 * - a venv in the cache keyed by the Scrapyd version and the Python version
 *   (`<cache>/scrapyd/<version>-py<major.minor>/`, `<cache>` as in `../firecrawl/build.ts`), with
 *   `scrapyd`, `scrapy` and `setuptools` from PyPI; a marker file says it is complete;
 * - the Scrapy project of this folder (`realsite`, spider `site`) built into an egg in that venv
 *   (`setup.py bdist_egg`, in a temporary copy: nothing is written into the repository);
 * - Scrapyd started on a free loopback port with a config directory of its own (its
 *   `scrapyd.conf`: the items feed served under `/items/`, a short poll interval), the egg
 *   uploaded with `addversion.json`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeFailure, runCommand, type LineLogger } from '../../../tools/devserver/process.js';
import { freePort } from '../../../src/lib/ports.js';
import { onPath, realServerCache, RealServerBuildError } from '../firecrawl/build.js';
import { answers, startServerProcess, type ServerProcess } from '../processes.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The Scrapyd release line the suite runs (`pip install scrapyd==1.6.*`). */
export const SCRAPYD_SPEC = 'scrapyd==1.6.*';
/** Scrapy and setuptools (for the egg) beside it. */
const OTHERS = ['scrapy>=2.11,<3', 'setuptools'];
/** The project and spider names the suite deploys (`realsite/spiders/site.py`). */
export const SCRAPYD_PROJECT = 'realsite';
export const SCRAPYD_SPIDER = 'site';

/** A venv with Scrapyd. */
export interface ScrapydVenv {
  dir: string;
  python: string;
  /** Installed versions (`scrapyd`, `scrapy`), from the marker. */
  versions: Record<string, string>;
  built: boolean;
  tookMs: number;
}

const run = async (label: string, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) => {
  const timeoutMs = 15 * 60_000;
  const r = await runCommand(cmd, args, { cwd, env, timeoutMs, tailBytes: 32 * 1024 });
  if (r.code !== 0)
    throw new RealServerBuildError(
      `Scrapyd setup step "${label}" failed: ${describeFailure(cmd, r, timeoutMs)}\n${(r.stderr || r.stdout).split('\n').slice(-30).join('\n')}`,
    );
  return r.stdout;
};

/**
 * Returns the cached venv, creating it first when missing.
 *
 * @throws RealServerBuildError when `python3` (with its `venv` module) is missing or pip fails.
 */
export async function ensureScrapydVenv(log: LineLogger, env: NodeJS.ProcessEnv = process.env): Promise<ScrapydVenv> {
  const t0 = Date.now();
  if (!onPath('python3', env))
    throw new RealServerBuildError('Scrapyd cannot be installed: python3 is missing (Debian python3, python3-venv)');
  const pyVersion = (
    await run(
      'python3 version',
      'python3',
      ['-c', 'import sys, venv, ensurepip; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'],
      os.tmpdir(),
      env,
    ).catch((e: Error) => {
      throw new RealServerBuildError(
        `Scrapyd cannot be installed: python3 lacks the venv module or ensurepip (Debian python3-venv)\n${e.message}`,
      );
    })
  ).trim();
  const dir = path.join(
    realServerCache('scrapyd', env),
    `${SCRAPYD_SPEC.replace(/^scrapyd==/, '').replace('*', 'x')}-py${pyVersion}`,
  );
  const python = path.join(dir, 'bin', 'python');
  const marker = path.join(dir, 'complete.json');
  if (fs.existsSync(marker)) {
    const versions = JSON.parse(fs.readFileSync(marker, 'utf8')) as Record<string, string>;
    return { dir, python, versions, built: false, tookMs: Date.now() - t0 };
  }
  log(`creating the Scrapyd venv in ${dir}…`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  await run('python3 -m venv', 'python3', ['-m', 'venv', dir], os.tmpdir(), env);
  await run(
    'pip install',
    python,
    ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', SCRAPYD_SPEC, ...OTHERS],
    dir,
    env,
  );
  const versions = JSON.parse(
    await run(
      'versions',
      python,
      [
        '-c',
        'import json, importlib.metadata as m; print(json.dumps({p: m.version(p) for p in ("scrapyd", "scrapy", "twisted", "setuptools")}))',
      ],
      dir,
      env,
    ),
  ) as Record<string, string>;
  fs.writeFileSync(marker, JSON.stringify(versions));
  log(`Scrapyd venv ready in ${((Date.now() - t0) / 1000).toFixed(0)} s (${JSON.stringify(versions)})`);
  return { dir, python, versions, built: true, tookMs: Date.now() - t0 };
}

/** Builds the `realsite` egg in a temporary copy of the project; returns its bytes. */
export async function buildEgg(venv: ScrapydVenv, env: NodeJS.ProcessEnv = process.env): Promise<Buffer> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'realsite-egg-'));
  try {
    const src = path.join(tmp, 'project');
    fs.cpSync(HERE, src, { recursive: true, filter: (p) => !p.endsWith('.ts') && !p.includes('__pycache__') });
    await run('bdist_egg', venv.python, ['setup.py', '-q', 'bdist_egg', '-d', path.join(tmp, 'dist')], src, env);
    const egg = fs.readdirSync(path.join(tmp, 'dist')).find((f) => f.endsWith('.egg'));
    if (!egg) throw new RealServerBuildError('bdist_egg wrote no egg');
    return fs.readFileSync(path.join(tmp, 'dist', egg));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** A running Scrapyd with the project deployed. */
export interface ScrapydServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Stops Scrapyd (and the crawls it runs: its whole process group) and starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts Scrapyd in `runDir` (its config, eggs, queues, logs and items live there) and deploys the
 * project.
 *
 * @throws Error when it does not start or the upload is refused.
 */
export async function startScrapyd(venv: ScrapydVenv, runDir: string, egg: Buffer): Promise<ScrapydServer> {
  fs.mkdirSync(runDir, { recursive: true });
  const port = await freePort('127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  fs.writeFileSync(
    path.join(runDir, 'scrapyd.conf'),
    [
      '# Written by the real-server suite: defaults, except the port, a fast poll of the job queue',
      '# (0.5 s, default 5 s) and the items feed kept and served under /items/ (JSON lines).',
      '[scrapyd]',
      'bind_address = 127.0.0.1',
      `http_port = ${port}`,
      'poll_interval = 0.5',
      'items_dir = items',
      'logs_dir = logs',
      'eggs_dir = eggs',
      'dbs_dir = dbs',
      '',
    ].join('\n'),
  );
  const env = { ...process.env, PATH: `${path.join(venv.dir, 'bin')}${path.delimiter}${process.env.PATH ?? ''}` };
  let proc: ServerProcess | undefined;
  const start = async () => {
    proc = await startServerProcess({
      name: 'scrapyd',
      command: path.join(venv.dir, 'bin', 'scrapyd'),
      args: ['--pidfile='], // in the foreground (always), no pid file
      cwd: runDir, // Scrapyd reads ./scrapyd.conf
      env,
      logFile: path.join(runDir, 'scrapyd.log'),
      ready: () => answers(`${url}/daemonstatus.json`),
    });
  };
  await start();
  const form = new FormData();
  form.set('project', SCRAPYD_PROJECT);
  form.set('version', '1');
  form.set('egg', new Blob([new Uint8Array(egg)]), 'realsite.egg');
  const res = await fetch(`${url}/addversion.json`, { method: 'POST', body: form });
  const body = (await res.json()) as { status?: string; spiders?: number; message?: string };
  if (body.status !== 'ok' || body.spiders !== 1) {
    await proc!.stop();
    throw new Error(`Scrapyd refused the realsite egg: ${JSON.stringify(body)}`);
  }
  return {
    url,
    async restart() {
      await proc?.stop();
      await start();
    },
    async stop() {
      await proc?.stop();
    },
  };
}
