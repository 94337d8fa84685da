/** `worker`: runs a worker (the same as `npm run worker`) on the configuration; it polls the jobs' task queue and `<taskQueue>-maintenance` until SIGINT/SIGTERM. */
import type { Command } from 'commander';
import { loadCliConfig } from '../context.js';
import { jsonOption } from '../options.js';

/** Adds `worker` to `program`. */
export function registerWorker(program: Command): void {
  jsonOption(program.command('worker'), "a start-up error as JSON on stdout (the worker's log is unchanged)")
    .description('run a worker (same as `npm run worker`); it polls the task queue and the maintenance task queue')
    .option('-c, --config <file>', "configuration file (default: $SCRAPE_CONFIG, else the demo's)")
    .action(async (opts) => {
      const { file } = await loadCliConfig(opts.config);
      // The worker reads its configuration from the environment, as under `npm run worker`.
      process.env.SCRAPE_CONFIG = file;
      const { runWorkerMain } = await import('../../worker.js');
      await runWorkerMain();
    });
}
