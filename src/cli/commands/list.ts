/** `list`: the account's jobs, newest first, from the store (`--state`, `--batch`, `--limit`). */
import { Option, type Command } from 'commander';
import { JOB_STATES } from '../../model/states.js';
import { accountOf, withRuntime } from '../context.js';
import { accountOptions, jsonOption, positiveInt, stateList } from '../options.js';
import { fitTable, printJson } from '../print.js';

/** Adds `list` to `program`. */
export function registerList(program: Command): void {
  jsonOption(accountOptions(program.command('list')))
    .description("list the account's jobs, newest first")
    .addOption(
      new Option('-s, --state <states>', `comma-separated states (${JOB_STATES.join(', ')})`).argParser(stateList),
    )
    .option('-b, --batch <id>', 'batch ID')
    .addOption(new Option('-n, --limit <n>', 'rows').argParser(positiveInt).default(50))
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const jobs = await rt.client.list(accountOf(rt, opts), {
          states: opts.state,
          batchId: opts.batch,
          limit: opts.limit,
        });
        if (opts.json) return printJson(jobs);
        console.log(
          await fitTable({
            head: ['job', 'state', 'task', 'url', 'updated'],
            // To the second (`--json` has the milliseconds).
            rows: jobs.map((j) => [j.jobId, j.state, j.taskId ?? '—', j.url, j.updatedAt.replace(/\.\d+Z$/, 'Z')]),
            // The job ID, the state and the time stay whole on one line; the task ID gives way first, then the URL.
            min: [34, 22, 14, 30, 22],
          }),
        );
      }),
    );
}
