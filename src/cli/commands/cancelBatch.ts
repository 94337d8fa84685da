/** `cancel-batch <batchId>`: cancels every job of a batch through the same path as `cancel` and prints each observed outcome. */
import { Option, type Command } from 'commander';
import { EXIT, accountOf, cliUser, requireTemporal, withRuntime } from '../context.js';
import { accountOptions, exitNote, jsonOption, positiveInt } from '../options.js';
import { fitTable, printJson } from '../print.js';

/** Adds `cancel-batch` to `program`. */
export function registerCancelBatch(program: Command): void {
  const c = jsonOption(
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
        // A job left uncancelled (an orphan, or a cancel that failed) is a failure, as for `cancel`: exit 1, JSON or not.
        if (outcomes.some((o) => o.result.kind === 'not_running' || o.result.kind === 'error'))
          process.exitCode = EXIT.failed;
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
  exitNote(
    c,
    '0 every job of the batch was cancelled, had ended already, or has its cancel requested; 1 some job was not cancelled (its workflow no longer runs: `resume` it, or see `orphans`; or its cancel failed, with the reason in its line); 2 invalid input.',
  );
}
