/**
 * `resume <job>`: tracks a `tracking_interrupted` job again, polling the same task ID; it never
 * resubmits. Refused (exit 2) for a job in another state.
 */
import type { Command } from 'commander';
import { accountOf, requireTemporal, resolveJobId, withRuntime } from '../context.js';
import { jobCommand, jsonOption } from '../options.js';
import { printJson } from '../print.js';

/** Adds `resume` to `program`. */
export function registerResume(program: Command): void {
  jsonOption(jobCommand(program, 'resume'), 'print the job resumed as JSON ({jobId, account, key})')
    .description('resume tracking of a tracking_interrupted job (same task ID, never resubmits)')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        await requireTemporal(rt);
        const ref = await rt.client.resume(account, id);
        if (opts.json) return printJson(ref);
        console.log(`resumed ${ref.jobId}`);
      }),
    );
}
