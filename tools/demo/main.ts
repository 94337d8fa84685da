/**
 * `npm run demo`: starts every part on embedded defaults (a Temporal dev server, the reference
 * provider, the sample site, a worker) and runs the sample batch; see docs/getting-started.md.
 * A tool beside the product (it starts the dev server and the simulator, which the product never
 * loads). Its exit code is the batch's (130 when a signal cut it short); an error is reported as
 * the `scrape` command line reports one.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { asCommandLine, reportError, wantsJson } from '../../src/cli/main.js';
import { jsonOption, port } from '../../src/cli/options.js';
import { printJson } from '../../src/cli/print.js';

/** The `demo` program (its options, as `npm run demo -- --help` lists them); `json`: errors as JSON (see `asCommandLine`). */
export function buildDemoCli(opts: { json?: boolean } = {}): Command {
  return jsonOption(
    asCommandLine(new Command('demo'), opts),
    "print the batch's outcome as JSON on stdout ({batchId, rows, completed, jobs, rejected, webUi, configFile, storeFile}); the steps go to stderr",
  )
    .description(
      'start every part on embedded defaults (dev server, reference provider, sample site, worker) and run a batch',
    )
    .option('--keep', 'keep everything running after the batch (default when attached to a terminal)')
    .option('--exit', 'exit after the batch (default when not attached to a terminal)')
    .option('--data-dir <dir>', 'where the demo keeps its SQLite files and config', '.data/demo')
    .addOption(
      new Option('--temporal-port <n>', 'Temporal frontend (gRPC) port; default 7233 when free, else any; 0: any')
        .argParser(port)
        .env('SCRAPE_DEMO_TEMPORAL_PORT'),
    )
    .addOption(
      new Option('--ui-port <n>', 'Temporal Web UI port; default 8233 when free, else any; 0: any')
        .argParser(port)
        .env('SCRAPE_DEMO_UI_PORT'),
    )
    .addOption(
      new Option('--site-port <n>', 'sample site port; default 8780 when free, else any; 0: any')
        .argParser(port)
        .env('SCRAPE_DEMO_SITE_PORT'),
    )
    .addOption(
      new Option('--provider-port <n>', 'reference provider port; default 8790 when free, else any; 0: any')
        .argParser(port)
        .env('SCRAPE_DEMO_PROVIDER_PORT'),
    )
    .action(async (opts) => {
      const { runDemo } = await import('./demo.js');
      const keep = opts.exit ? false : opts.keep ? true : Boolean(process.stdout.isTTY && process.stdin.isTTY);
      process.exitCode = await runDemo({
        keep,
        dataDir: opts.dataDir,
        ports: { temporal: opts.temporalPort, ui: opts.uiPort, site: opts.sitePort, provider: opts.providerPort },
        ...(opts.json
          ? { out: (line: string) => void process.stderr.write(`${line}\n`), onSummary: (s) => printJson(s) }
          : {}),
      });
    });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const json = wantsJson(process.argv);
  void buildDemoCli({ json })
    .parseAsync(process.argv)
    .catch((e: unknown) => process.exit(reportError(e, json)));
}
