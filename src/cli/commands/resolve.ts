/**
 * `resolve <job>`: settles a job waiting in `unknown`, by adopting the task ID an operator found
 * at the provider (`--task-id`, checked by the workflow: not bound to another job, readable with
 * the job's own credential, for this request) or by submitting again under the same key
 * (`--resubmit`). Every attempt is audited in the job's timeline with the operator's name.
 */
import type { Command } from 'commander';
import { InvalidInputError } from '../../client/errors.js';
import { accountOf, cliUser, requireTemporal, resolveJobId, withRuntime } from '../context.js';
import { jobCommand, jsonOption } from '../options.js';
import { printJson } from '../print.js';

/** Adds `resolve` to `program`. */
export function registerResolve(program: Command): void {
  jsonOption(jobCommand(program, 'resolve'), "print the workflow's view of the job afterwards as JSON")
    .description(
      'resolve a job waiting in `unknown`: adopt a task ID found at the provider, or resubmit under the same key',
    )
    .option('--task-id <id>', 'the provider task that the lost submit created')
    .option('--resubmit', 'you checked the provider and no task exists: submit again under the same key')
    .action(async (job: string, opts) => {
      if (!!opts.taskId === !!opts.resubmit)
        throw new InvalidInputError('give exactly one of --task-id or --resubmit', []);
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const by = cliUser();
        const id = await resolveJobId(job, account);
        await requireTemporal(rt);
        const view = await rt.client.resolve(
          account,
          id,
          opts.taskId ? { taskId: opts.taskId, by } : { resubmit: true, by },
        );
        if (opts.json) return printJson(view);
        console.log(`job is now ${view.state}${view.taskId ? ` (task ${view.taskId})` : ''}`);
      });
    });
}
