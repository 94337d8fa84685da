/**
 * Starts and stops a real Temporal dev server (`temporal server start-dev`, Temporal CLI 1.9.1 =
 * Server 1.32.0, Web UI 2.54.1) for the demo, the tests and CI; connecting to an existing cluster
 * instead when `TEMPORAL_ADDRESS` is set is `connectOrStart.ts`'s.
 *
 * Lifetime: the server must not outlive the Node process that started it: each server gets a
 * watchdog process (`watchdog.ts`) that stops it when this process ends for any reason, and the
 * server, the watchdog and their pipes are `unref`'d, so a program (or test file) that forgets
 * `stop()` still exits and takes the server with it. `stop()` ends the watchdog first-hand.
 * Readiness (the frontend answers, the namespace and the search attributes exist) is `ready.ts`'s.
 */
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { OutputTail, stderrLogger, type LineLogger } from './process.js';
import { EarlyExitError, waitUntilReady } from './ready.js';
import { SearchAttributeMapSchema } from '../../src/namespace.js';
import {
  EnsureTemporalCliOptionsSchema,
  ensureTemporalCli,
  type TemporalCli,
  type TemporalCliSource,
} from './temporalCli.js';
import { startWatchdog, unrefChild } from './watchdog.js';
import { freePort } from '../../src/lib/ports.js';

export { freePort };

/**
 * Dynamic config this module always passes (`--dynamic-config-value KEY=JSON`), before the caller's
 * `dynamicConfig` (which wins on the same key). Values are the Server 1.29.1 defaults, verified in
 * its source (`common/dynamicconfig/constants.go`), pinned here so that a CLI upgrade cannot silently
 * turn off what the workflows rely on (Server 1.32.0, in CLI 1.9.1, no longer has the multi-operation
 * switch: Update-with-Start is always on there, and the unknown key is ignored):
 * - Updates (`UpdateWorkflowExecution`, incl. waiting for "Accepted") and Update-with-Start
 *   (`ExecuteMultiOperation`) are on;
 * - up to 100 search-attribute keys per workflow, 2 KiB per value, 40 KiB in total;
 * - user metadata (static summary/details, current details) up to 400 B summary / 20 000 B details.
 * The number of *custom* search attributes per namespace is not dynamic config on the dev server: its
 * SQLite visibility schema has fixed slots (10 Keyword, 3 each of Text, Int, Double, Bool, Datetime,
 * KeywordList — `schema/sqlite/v3/visibility/schema.sql`); we register 6 Keyword attributes.
 * The CLI itself adds `system.forceSearchAttributesCacheRefreshOnRead=true` (new attributes are usable
 * at once) and raises persistence QPS.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = Object.freeze({
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  'frontend.enableExecuteMultiOperation': true,
  'frontend.searchAttributesNumberOfKeysLimit': 100,
  'frontend.searchAttributesSizeOfValueLimit': 2048,
  'frontend.searchAttributesTotalSizeLimit': 40960,
  'limit.userMetadataSummarySize': 400,
  'limit.userMetadataDetailsSize': 20000,
});

const PortSchema = z.number().int().min(0).max(65535);

/**
 * Options of {@link startDevServer}.
 *
 * - `dbFile`: SQLite file for persistent state (parent dirs are created); default none = in memory.
 * - `ip`: IP the frontend (and UI) bind to; default `127.0.0.1`.
 * - `port`: frontend gRPC port; 0/undefined = pick a free port. `uiPort`: Web UI port; 0/undefined =
 *   pick a free port. Ignored when `headless`.
 * - `headless`: no Web UI (default false).
 * - `namespace`: namespace to create and wait for (default `default`, which always exists).
 * - `searchAttributes`: custom search attributes to register, name → type (default none).
 * - `logLevel`: server log level (default `warn`).
 * - `dynamicConfig`: extra dynamic config, key → JSON-serialisable value (overrides
 *   {@link DEV_SERVER_DYNAMIC_CONFIG}).
 * - `startTimeoutMs`: how long to wait for the frontend to answer (default 30 000 ms).
 * - `stopTimeoutMs`: grace period between SIGTERM and SIGKILL on stop (default 10 000 ms).
 * - `cli`: a CLI to use as is (skips {@link ensureTemporalCli}); `cliOptions`: options for it otherwise.
 * - `env`: environment of the server process (default `process.env`).
 * - `logger`: one line per event (default: stderr).
 */
export const DevServerOptionsSchema = z
  .object({
    dbFile: z.string().min(1).optional(),
    ip: z
      .string()
      .refine((s) => net.isIP(s) !== 0, 'ip must be an IP address literal')
      .default('127.0.0.1'),
    port: PortSchema.optional(),
    uiPort: PortSchema.optional(),
    headless: z.boolean().default(false),
    namespace: z.string().min(1).default('default'),
    searchAttributes: SearchAttributeMapSchema.default({}),
    logLevel: z.enum(['debug', 'info', 'warn', 'error', 'never']).default('warn'),
    dynamicConfig: z
      .record(z.string().regex(/^[A-Za-z0-9_.]+$/, 'dynamic config keys are dotted identifiers'), z.unknown())
      .default({}),
    startTimeoutMs: z.number().int().positive().default(30_000),
    stopTimeoutMs: z.number().int().positive().default(10_000),
    cli: z
      .object({
        path: z.string().min(1),
        source: z.enum(['env', 'path', 'cache', 'pypi', 'go', 'sdk']),
        version: z.string(),
      })
      .optional(),
    cliOptions: EnsureTemporalCliOptionsSchema.partial().optional(),
    env: z.record(z.string(), z.string().optional()).optional(),
    logger: z.custom<LineLogger>((v) => typeof v === 'function', 'logger must be a function').optional(),
  })
  .strict();

/** Input type of {@link DevServerOptionsSchema}. */
export type DevServerOptions = z.input<typeof DevServerOptionsSchema>;

/** How the server process ended. */
export interface DevServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running dev server started by {@link startDevServer}. */
export interface DevServer {
  /** Frontend gRPC address, `IP:PORT` (e.g. `127.0.0.1:40123`); IPv6 as `[::1]:PORT`. */
  address: string;
  /** Frontend gRPC port. */
  port: number;
  /** Web UI URL (`http://IP:UIPORT`), undefined when headless. */
  uiUrl: string | undefined;
  /** Namespace that was created and answered `DescribeNamespace`. */
  namespace: string;
  /** Absolute path of the SQLite file, undefined when in memory. */
  dbFile: string | undefined;
  /** PID of the `temporal` process. */
  pid: number;
  /** The CLI that runs the server. */
  cli: { path: string; source: TemporalCliSource; version: string };
  /** Wall time in ms from spawning the server until the frontend answered. */
  startupMs: number;
  /** Settles when the server process ends, whether by {@link DevServer.stop} or on its own. */
  exited: Promise<DevServerExit>;
  /** The last lines the server wrote to stdout/stderr (for diagnostics). */
  outputTail(): string;
  /**
   * Stops the server: SIGTERM, wait up to `stopTimeoutMs` ms, then SIGKILL; then ends the watchdog.
   * Idempotent; resolves once the process has exited. Never throws.
   */
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` on free (or given) ports and resolves once its frontend answers
 * `GetSystemInfo` and `DescribeNamespace(namespace)` and lists every requested search attribute.
 * Flags used (from `temporal server start-dev --help` of CLI 1.5.1 and 1.9.1): `--ip`, `--port`, `--ui-port` |
 * `--headless`, `--db-filename`, `--namespace`, `--search-attribute K=Type`, `--dynamic-config-value
 * K=JSON`, `--log-level`.
 *
 * @throws Error when the server exits before it is ready (message includes the tail of its output),
 *   or is not ready within `startTimeoutMs` (the process is killed first); ports picked automatically
 *   are re-picked up to 3 times if another process grabbed one in between.
 * @throws TemporalCliNotFoundError (from {@link ensureTemporalCli}) when no CLI can be obtained.
 * @throws z.ZodError on invalid options.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const opts = DevServerOptionsSchema.parse(options);
  const log = opts.logger ?? stderrLogger;
  const cli = opts.cli ?? (await ensureTemporalCli({ ...opts.cliOptions, logger: opts.cliOptions?.logger ?? log }));
  const dbFile = opts.dbFile ? path.resolve(opts.dbFile) : undefined;
  if (dbFile) await mkdir(path.dirname(dbFile), { recursive: true });

  const autoPorts = !opts.port || (!opts.headless && !opts.uiPort);
  const maxAttempts = autoPorts ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts, cli, dbFile, log);
    } catch (err) {
      if (attempt < maxAttempts && err instanceof PortInUseError) {
        log(
          `dev server: a port was taken before the server bound it, retrying with new ports (${attempt}/${maxAttempts - 1})`,
        );
        continue;
      }
      throw err;
    }
  }
}

class PortInUseError extends Error {}

async function startOnce(
  opts: z.output<typeof DevServerOptionsSchema>,
  cli: Pick<TemporalCli, 'path' | 'source' | 'version'>,
  dbFile: string | undefined,
  log: LineLogger,
): Promise<DevServer> {
  const port = opts.port || (await freePort(opts.ip));
  const uiPort = opts.headless ? undefined : opts.uiPort || (await freePort(opts.ip, [port]));
  const host = net.isIPv6(opts.ip) ? `[${opts.ip}]` : opts.ip;
  const address = `${host}:${port}`;
  const args = ['server', 'start-dev', '--ip', opts.ip, '--port', String(port)];
  if (opts.headless) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  if (dbFile) args.push('--db-filename', dbFile);
  if (opts.namespace !== 'default') args.push('--namespace', opts.namespace);
  for (const [name, type] of Object.entries(opts.searchAttributes)) args.push('--search-attribute', `${name}=${type}`);
  for (const [k, v] of Object.entries({ ...DEV_SERVER_DYNAMIC_CONFIG, ...opts.dynamicConfig })) {
    args.push('--dynamic-config-value', `${k}=${JSON.stringify(v)}`);
  }
  args.push('--log-level', opts.logLevel, '--color', 'never');

  const tail = new OutputTail(32 * 1024);
  const spawnedAt = Date.now();
  const child = spawn(cli.path, args, {
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    windowsHide: true,
  });
  child.stdout.on('data', (d: Buffer) => tail.push(d));
  child.stderr.on('data', (d: Buffer) => tail.push(d));
  let exit: DevServerExit | undefined;
  let spawnError: Error | undefined;
  const exited = new Promise<DevServerExit>((resolve) => {
    child.once('error', (err) => {
      spawnError = err;
      if (child.pid === undefined) resolve((exit = { code: null, signal: null }));
    });
    child.once('exit', (code, signal) => resolve((exit = { code, signal })));
  });
  // 'close' = exited and its stdout/stderr drained (the last lines of a crash arrive after 'exit').
  const drained = new Promise<void>((resolve) => child.once('close', () => resolve()));
  if (child.pid === undefined) {
    await exited;
    throw new Error(`could not start ${cli.path}: ${spawnError?.message ?? 'unknown spawn error'}`);
  }
  const pid = child.pid;
  const watchdog = startWatchdog(pid, opts.stopTimeoutMs);
  unrefChild(child);
  log(
    `dev server: started pid ${pid} (${cli.path} ${cli.version}) on ${address}${uiPort ? `, UI port ${uiPort}` : ', headless'}${dbFile ? `, db ${dbFile}` : ', in memory'}`,
  );

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (!exit) {
        child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const r = await Promise.race([
          exited,
          new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), opts.stopTimeoutMs);
          }),
        ]);
        clearTimeout(timer);
        if (r === 'timeout') {
          log(`dev server: pid ${pid} did not stop within ${opts.stopTimeoutMs} ms of SIGTERM, sending SIGKILL`);
          child.kill('SIGKILL');
          await exited;
        }
      }
      if (watchdog.exitCode === null && watchdog.signalCode === null) watchdog.kill('SIGKILL');
      log(`dev server: pid ${pid} stopped (${describeExit(exit)})`);
    })());

  const names = Object.keys(opts.searchAttributes);
  try {
    await waitUntilReady({
      address,
      namespace: opts.namespace,
      searchAttributes: names,
      timeoutMs: opts.startTimeoutMs,
      exited,
    });
  } catch (err) {
    await stop();
    await Promise.race([drained, new Promise((r) => setTimeout(r, 1000).unref())]);
    const out = tail.lastLines(30);
    const msg =
      err instanceof EarlyExitError
        ? `dev server exited before it was ready (${describeExit(exit)})`
        : (err as Error).message;
    const full = `${msg}\ncommand: ${cli.path} ${args.join(' ')}\nlast output of the server:\n${out || '(none)'}`;
    // Retry only when a port *we* picked was taken in the meantime, not when a requested one is busy.
    const busy = /port (\d+)[^\n]*(address already in use|bind:)/i.exec(out);
    const busyPort = busy ? Number(busy[1]) : undefined;
    if (err instanceof EarlyExitError && busyPort !== undefined && busyPort !== opts.port && busyPort !== opts.uiPort)
      throw new PortInUseError(full);
    throw new Error(full);
  }
  const startupMs = Date.now() - spawnedAt;
  log(`dev server: ready at ${address} in ${startupMs} ms${uiPort ? `, UI http://${host}:${uiPort}` : ''}`);
  return {
    address,
    port,
    uiUrl: uiPort ? `http://${host}:${uiPort}` : undefined,
    namespace: opts.namespace,
    dbFile,
    pid,
    cli: { path: cli.path, source: cli.source, version: cli.version },
    startupMs,
    exited,
    outputTail: () => tail.text(),
    stop,
  };
}

function describeExit(exit: DevServerExit | undefined): string {
  if (!exit) return 'still running';
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
}
