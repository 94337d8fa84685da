/**
 * `resume <job>`: tracks a `tracking_interrupted` job again, polling the same task ID; it never
 * resubmits. Refused (exit 2) for a job in another state.
 */
import type { Command } from 'commander';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { accountOptions } from '../options.js';

/** Adds `resume` to `program`. */
export function registerResume(program: Command): void {
  accountOptions(program.command('resume <job>'))
    .description('resume tracking of a tracking_interrupted job (same task ID, never resubmits)')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const ref = await rt.client.resume(account, await resolveJobId(job, account));
        console.log(`resumed ${ref.jobId}`);
      }),
    );
}
