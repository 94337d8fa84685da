/**
 * `status <job>`: the job as the store has it (state, provider status, task ID, times, checks
 * answered and failing, last error); `--live` adds the running workflow's own view (query
 * `state`, which needs Temporal and a worker). Without `--live` it never contacts Temporal.
 */
import type { Command } from 'commander';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { accountOptions } from '../options.js';
import { printJob, printLiveView } from '../print.js';

/** Adds `status` to `program`. */
export function registerStatus(program: Command): void {
  accountOptions(program.command('status <job>'))
    .description(
      'show a job as stored (job ID or key): state, provider status, checks answered and failing, last error',
    )
    .option('--json', 'print JSON')
    .option('--live', 'also ask the running workflow (query `state`; needs Temporal and a worker)')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        const stored = await rt.client.getScrape(account, id, { execution: false });
        if (!opts.live) return opts.json ? console.log(JSON.stringify(stored, null, 2)) : printJob(stored);
        const live = await rt.client.getLiveView(account, id);
        if (opts.json) return console.log(JSON.stringify({ job: stored, live }, null, 2));
        await printJob(stored);
        await printLiveView(live);
      }),
    );
}
