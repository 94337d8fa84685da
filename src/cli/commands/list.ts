/** `list`: the account's jobs, newest first, from the store (`--state`, `--batch`, `--limit`). */
import { Option, type Command } from 'commander';
import { JOB_STATES } from '../../model/states.js';
import { accountOf, withRuntime } from '../context.js';
import { accountOptions, positiveInt, stateList } from '../options.js';
import { COMPACT, table } from '../print.js';

/** Adds `list` to `program`. */
export function registerList(program: Command): void {
  accountOptions(program.command('list'))
    .description("list the account's jobs, newest first")
    .addOption(
      new Option('-s, --state <states>', `comma-separated states (${JOB_STATES.join(', ')})`).argParser(stateList),
    )
    .option('-b, --batch <id>', 'batch ID')
    .addOption(new Option('-n, --limit <n>', 'rows').argParser(positiveInt).default(50))
    .option('--json', 'print JSON')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const jobs = await rt.client.list(accountOf(rt, opts), {
          states: opts.state,
          batchId: opts.batch,
          limit: opts.limit,
        });
        if (opts.json) return console.log(JSON.stringify(jobs, null, 2));
        const t = await table({ head: ['job', 'state', 'task', 'url', 'updated'], chars: COMPACT });
        for (const j of jobs) t.push([j.jobId, j.state, j.taskId ?? '—', j.url, j.updatedAt]);
        console.log(t.toString());
      }),
    );
}
