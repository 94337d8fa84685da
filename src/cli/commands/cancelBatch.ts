/** `cancel-batch <batchId>`: cancels every job of a batch through the same path as `cancel` and prints each observed outcome. */
import { Option, type Command } from 'commander';
import { accountOf, cliUser, requireTemporal, withRuntime } from '../context.js';
import { accountOptions, jsonOption, positiveInt } from '../options.js';
import { fitTable, printJson } from '../print.js';

/** Adds `cancel-batch` to `program`. */
export function registerCancelBatch(program: Command): void {
  jsonOption(
    accountOptions(
      program
        .command('cancel-batch')
        .argument('<batchId>', 'a batch ID (`run` prints it; the `batchId` of `list --json`)'),
    ),
  )
    .description('cancel every job of a batch through the same path and print each observed outcome')
    .option('-r, --reason <text>', 'why', 'batch cancelled from the CLI')
    .option('--no-wait', 'send the cancel signals and return at once')
    .addOption(
      new Option('--wait-s <seconds>', "how long to wait for each job's observed outcome (the request stays recorded)")
        .default(120)
        .argParser(positiveInt),
    )
    .action(async (batchId: string, opts) =>
      withRuntime(opts, async (rt) => {
        await requireTemporal(rt);
        const outcomes = await rt.client.cancelBatch(accountOf(rt, opts), batchId, {
          reason: opts.reason,
          requestedBy: cliUser(),
          wait: opts.wait,
          timeoutMs: opts.waitS * 1000,
        });
        if (opts.json) return printJson(outcomes);
        console.log(
          await fitTable({
            head: ['job', 'result', 'state / outcome'],
            rows: outcomes.map((o) => {
              const r = o.result;
              return [
                o.jobId,
                r.kind,
                r.kind === 'observed'
                  ? `${r.state}: ${r.report.outcome} — ${r.report.detail ?? ''}`
                  : r.kind === 'error'
                    ? r.message
                    : r.state,
              ];
            }),
            min: [30, 12, 30],
            compact: false,
          }),
        );
        console.log(`${outcomes.length} job(s) in batch ${batchId}`);
      }),
    );
}
