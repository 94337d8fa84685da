/**
 * `submit <url>`: starts one scrape and prints its job ID at once (a repeat with the same key
 * prints the same job); `--wait-s` waits for it to end and prints it. Poll-policy flags as for
 * `run`; a value out of bounds is refused with the bounds (exit 2).
 */
import { Option, type Command } from 'commander';
import { accountOf, withRuntime } from '../context.js';
import { accountOptions, policyFrom, policyOptions, positiveInt } from '../options.js';
import { printJob } from '../print.js';

/** Adds `submit` to `program`. */
export function registerSubmit(program: Command): void {
  policyOptions(accountOptions(program.command('submit <url>')))
    .description('start one scrape (returns its job ID at once; a repeat with the same key returns the same job)')
    .option('-k, --key <key>', 'idempotency key (default: derived from the request: <host>-<hash>)')
    .option('-p, --provider <name>', 'provider name')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['markdown', 'text']).default('markdown'))
    .addOption(new Option('-w, --wait-s <s>', 'wait up to this many seconds for the job to end').argParser(positiveInt))
    .action(async (url: string, opts) => {
      const policy = await policyFrom(opts);
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const ref = await rt.client.startScrape({
          account,
          url,
          key: opts.key,
          provider: opts.provider,
          format: opts.format,
          ...(policy ? { policy } : {}),
        });
        console.log(`${ref.created ? 'started' : 'existing'} job ${ref.jobId}`);
        if (opts.waitS) {
          const r = await rt.client.awaitResult(account, ref.jobId, { timeoutMs: opts.waitS * 1000 });
          if (r.status === 'still_running')
            console.log(`still running after ${opts.waitS} s (this is not a failure): state ${r.job.state}`);
          await printJob(r.job);
        }
      });
    });
}
