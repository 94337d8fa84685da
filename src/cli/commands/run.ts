/**
 * `run <file>`: one job per row of a CSV or JSONL file (`url` required), a progress bar, then a
 * table of the outcomes. Bad rows are reported with their line number and the others go on.
 * Exit 0 when every row completed (with `--no-wait`: every row started), 1 when some did not,
 * 2 when some rows were rejected or the file has none.
 */
import { Option, type Command } from 'commander';
import { isFinalState } from '../../model/states.js';
import { redactUrlCredentials } from '../../lib/sanitize.js';
import { InvalidInputError } from '../../client/errors.js';
import { EXIT, accountOf, requireTemporal, withRuntime } from '../context.js';
import { accountOptions, delimiter, exitNote, jsonOption, policyFrom, policyOptions, positiveInt } from '../options.js';
import { outcomeTable, printJson } from '../print.js';

/** Adds `run` to `program`. */
export function registerRun(program: Command): void {
  const c = jsonOption(
    policyOptions(
      accountOptions(
        program
          .command('run')
          .argument('<file>', 'a CSV (header row with a "url" column) or JSONL file (one object with "url" per line)'),
      ),
    ),
    'print the outcomes as JSON, one object per line of the file',
  )
    .description('start one job per row of a CSV or JSONL file (needs a "url" column), show progress, print a table')
    .option('-p, --provider <name>', 'provider for rows that name none')
    .addOption(
      new Option('-d, --delimiter <char>', 'CSV field delimiter (default ","; e.g. ";" or tab)').argParser(delimiter),
    )
    .option('--no-wait', 'start the jobs and return')
    .addOption(
      new Option('--timeout-s <s>', 'stop waiting after this many seconds (jobs keep running)')
        .argParser(positiveInt)
        .default(600),
    )
    .addOption(new Option('--max-rows <n>', 'rows shown in the final table').argParser(positiveInt).default(50))
    .action(async (file: string, opts) => {
      const policy = await policyFrom(opts);
      const { readBatchFile } = await import('../../batch/input.js');
      const input = readBatchFile(file, { delimiter: opts.delimiter });
      for (const err of input.errors)
        console.error(redactUrlCredentials(`line ${err.line}: ${err.reason}${err.raw ? `  | ${err.raw}` : ''}`));
      if (input.items.length === 0 && input.errors.length === 0)
        throw new InvalidInputError(
          `${file} has no rows to run (a CSV needs a header with a "url" column and at least one row)`,
          [],
        );
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        if (input.items.length > 0) await requireTemporal(rt);
        const { runBatch } = await import('../../batch/run.js');
        const { default: cliProgress } = await import('cli-progress');
        console.error(
          `${input.items.length} rows to run from ${file} (${input.format}, batch ${input.batchId}), ${input.errors.length} rejected`,
        );
        const bar = new cliProgress.SingleBar(
          {
            format: ' {bar} {value}/{total} final | {states}',
            hideCursor: true,
            noTTYOutput: true,
            notTTYSchedule: 2000,
            stream: process.stderr,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(input.items.length, 0, { states: '' });
        const outcomes = await runBatch(rt.client, rt.store, input.items, {
          account,
          batchId: input.batchId,
          provider: opts.provider,
          policy,
          wait: opts.wait,
          waitTimeoutMs: opts.timeoutS * 1000,
          onProgress: (p) =>
            bar.update(p.final, {
              states: Object.entries(p.byState)
                .map(([k, v]) => `${k} ${v}`)
                .join(', '),
            }),
        });
        bar.stop();
        const all = [
          ...outcomes,
          ...input.errors.map((e) => ({ line: e.line, url: e.raw, state: 'rejected' as const, error: e.reason })),
        ].sort((a, b) => a.line - b.line);
        if (opts.json) printJson(all);
        else console.log(await outcomeTable(all, opts.maxRows));
        const failed = outcomes.filter((o) => o.state !== 'completed').length;
        console.error(
          `${outcomes.filter((o) => o.state === 'completed').length} completed, ${failed} not completed, ${all.filter((o) => o.state === 'rejected').length} rejected`,
        );
        // Without waiting, success is "every row started"; a job still running is not a failure.
        const notDone =
          opts.wait === false
            ? outcomes.filter((o) => o.state !== 'completed' && (o.state === 'rejected' || isFinalState(o.state)))
                .length
            : failed;
        process.exitCode =
          input.errors.length || outcomes.some((o) => o.state === 'rejected')
            ? EXIT.invalid
            : notDone
              ? EXIT.failed
              : EXIT.ok;
      });
    });
  exitNote(
    c,
    '0 every row completed (with --no-wait: every row started); 1 some job did not complete (failed, cancelled, still running at --timeout-s, …); 2 some rows were rejected (each reported with its line), or the file has none.',
  );
}
