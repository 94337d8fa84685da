/** `orphans`: the orphan and stalled jobs the maintenance Schedule recorded for the account, each with the suggested recovery (from the store). */
import type { Command } from 'commander';
import { accountOf, withRuntime } from '../context.js';
import { accountOptions, jsonOption } from '../options.js';
import { fitTable, printJson } from '../print.js';

/** Adds `orphans` to `program`. */
export function registerOrphans(program: Command): void {
  jsonOption(accountOptions(program.command('orphans')))
    .description('list orphan and stalled jobs found by the maintenance schedule, with the suggested recovery')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const found = await rt.client.orphans(accountOf(rt, opts));
        if (opts.json) return printJson(found);
        if (found.length === 0) return console.log('no orphan or stalled jobs');
        console.log(
          await fitTable({
            head: ['job', 'finding', 'state', 'detail', 'suggested recovery'],
            rows: found.map((o) => [o.jobId, o.kind, o.state, o.detail, o.suggestion]),
            min: [24, 10, 10, 20, 24],
            compact: false,
          }),
        );
      }),
    );
}
