/** `timeline <job>`: every transition and provider observation of a job, oldest first, from the store. */
import type { Command } from 'commander';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { accountOptions } from '../options.js';
import { timelineLine } from '../print.js';

/** Adds `timeline` to `program`. */
export function registerTimeline(program: Command): void {
  accountOptions(program.command('timeline <job>'))
    .description("print a job's timeline (every transition and provider observation)")
    .option('--json', 'print JSON')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const events = await rt.client.timeline(account, await resolveJobId(job, account));
        if (opts.json) return console.log(JSON.stringify(events, null, 2));
        for (const e of events) console.log(timelineLine(e));
      }),
    );
}
