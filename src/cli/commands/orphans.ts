/** `orphans`: the orphan and stalled jobs the maintenance Schedule recorded for the account, each with the suggested recovery (from the store). */
import type { Command } from 'commander';
import { accountOf, withRuntime } from '../context.js';
import { accountOptions } from '../options.js';
import { table } from '../print.js';

/** Adds `orphans` to `program`. */
export function registerOrphans(program: Command): void {
  accountOptions(program.command('orphans'))
    .description('list orphan and stalled jobs found by the maintenance schedule, with the suggested recovery')
    .option('--json', 'print JSON')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const found = await rt.client.orphans(accountOf(rt, opts));
        if (opts.json) return console.log(JSON.stringify(found, null, 2));
        if (found.length === 0) return console.log('no orphan or stalled jobs');
        const t = await table({
          head: ['job', 'finding', 'state', 'detail', 'suggested recovery'],
          colWidths: [36, 16, 14, 40, 60],
          wordWrap: true,
        });
        for (const o of found) t.push([o.jobId, o.kind, o.state, o.detail, o.suggestion]);
        console.log(t.toString());
      }),
    );
}
