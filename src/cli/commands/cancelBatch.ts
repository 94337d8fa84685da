/** `cancel-batch <batchId>`: cancels every job of a batch through the same path as `cancel` and prints each observed outcome. */
import { Option, type Command } from 'commander';
import { accountOf, cliUser, withRuntime } from '../context.js';
import { accountOptions, positiveInt } from '../options.js';
import { table } from '../print.js';

/** Adds `cancel-batch` to `program`. */
export function registerCancelBatch(program: Command): void {
  accountOptions(program.command('cancel-batch <batchId>'))
    .description('cancel every job of a batch through the same path and print each observed outcome')
    .option('-r, --reason <text>', 'why', 'batch cancelled from the CLI')
    .option('--no-wait', 'send the cancel signals and return at once')
    .addOption(
      new Option('--wait-s <seconds>', "how long to wait for each job's observed outcome (the request stays recorded)")
        .default(120)
        .argParser(positiveInt),
    )
    .option('--json', 'print JSON')
    .action(async (batchId: string, opts) =>
      withRuntime(opts, async (rt) => {
        const outcomes = await rt.client.cancelBatch(accountOf(rt, opts), batchId, {
          reason: opts.reason,
          requestedBy: cliUser(),
          wait: opts.wait,
          timeoutMs: opts.waitS * 1000,
        });
        if (opts.json) return console.log(JSON.stringify(outcomes, null, 2));
        const t = await table({ head: ['job', 'result', 'state / outcome'] });
        for (const o of outcomes) {
          const r = o.result;
          t.push([
            o.jobId,
            r.kind,
            r.kind === 'observed'
              ? `${r.state}: ${r.report.outcome} — ${r.report.detail ?? ''}`
              : r.kind === 'error'
                ? r.message
                : r.state,
          ]);
        }
        console.log(t.toString());
        console.log(`${outcomes.length} job(s) in batch ${batchId}`);
      }),
    );
}
