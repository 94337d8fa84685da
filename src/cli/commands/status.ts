/**
 * `status <job>`: the job as the store has it (state, provider status, task ID, times, checks
 * answered and failing, last error); `--live` adds the running workflow's own view (query
 * `state`, which needs Temporal and a worker). Without `--live` it never contacts Temporal.
 */
import type { Command } from 'commander';
import { accountOf, requireTemporal, resolveJobId, withRuntime } from '../context.js';
import { jobCommand, jsonOption } from '../options.js';
import { printJob, printJson, printLiveView } from '../print.js';

/** Adds `status` to `program`. */
export function registerStatus(program: Command): void {
  jsonOption(jobCommand(program, 'status'))
    .description(
      'show a job as stored (job ID or key): state, provider status, checks answered and failing, last error',
    )
    .option('--live', 'also ask the running workflow (query `state`; needs Temporal and a worker)')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        const stored = await rt.client.getScrape(account, id, { execution: false });
        if (!opts.live) return opts.json ? printJson(stored) : printJob(stored);
        await requireTemporal(rt);
        const live = await rt.client.getLiveView(account, id);
        if (opts.json) return printJson({ job: stored, live });
        await printJob(stored);
        await printLiveView(live);
      }),
    );
}
