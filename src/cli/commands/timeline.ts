/** `timeline <job>`: every transition and provider observation of a job, oldest first, from the store. */
import type { Command } from 'commander';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { jobCommand, jsonOption } from '../options.js';
import { printJson, timelineLine } from '../print.js';

/** Adds `timeline` to `program`. */
export function registerTimeline(program: Command): void {
  jsonOption(jobCommand(program, 'timeline'))
    .description("print a job's timeline (every transition and provider observation)")
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const events = await rt.client.timeline(account, await resolveJobId(job, account));
        if (opts.json) return printJson(events);
        for (const e of events) console.log(timelineLine(e));
      }),
    );
}
