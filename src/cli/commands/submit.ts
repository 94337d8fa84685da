/**
 * `submit <url>`: starts one scrape and prints its job ID at once (a repeat with the same key
 * prints the same job); `--wait-s` waits up to that many seconds for it to end and prints it; past
 * them the job goes on and the command says so. Poll-policy flags as for `run`; a value out of
 * bounds is refused with the bounds (exit 2).
 */
import { Option, type Command } from 'commander';
import { EXIT, accountOf, requireTemporal, withRuntime } from '../context.js';
import { accountOptions, exitNote, integer, jsonOption, policyFrom, policyOptions, positiveInt } from '../options.js';
import { printJob, printJson } from '../print.js';

/** Adds `submit` to `program`. */
export function registerSubmit(program: Command): void {
  const c = jsonOption(
    policyOptions(
      accountOptions(
        program.command('submit').argument('<url>', 'the page to scrape (http or https, without credentials)'),
      ),
    ),
    'print JSON: {jobId, account, key, created}, with --wait-s also {wait: {status: "done"|"still_running", waitedS}, job}',
  )
    .description('start one scrape (returns its job ID at once; a repeat with the same key returns the same job)')
    .option('-k, --key <key>', 'idempotency key (default: derived from the request: <host>-<path slug>-<hash>)')
    .option('-p, --provider <name>', 'provider name')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['markdown', 'text']).default('markdown'))
    .addOption(
      new Option(
        '--priority <n>',
        "order among the account's jobs waiting for a slot of the same provider key, -1000 to 1000 (higher first; default 0)",
      ).argParser(integer),
    )
    .addOption(
      new Option(
        '-w, --wait-s <s>',
        'wait up to this many seconds for the job to end, then print it (past them the job goes on)',
      ).argParser(positiveInt),
    )
    .action(async (url: string, opts) => {
      const policy = await policyFrom(opts);
      await withRuntime(opts, async (rt) => {
        const input = {
          account: accountOf(rt, opts),
          url,
          key: opts.key,
          provider: opts.provider,
          format: opts.format,
          ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
          ...(policy ? { policy } : {}),
        };
        // Bad input is refused by the client before it touches Temporal: only a valid request waits for it.
        const { StartScrapeInputSchema } = await import('../../model/schemas.js');
        if (StartScrapeInputSchema.safeParse(input).success) await requireTemporal(rt);
        const ref = await rt.client.startScrape(input);
        if (!opts.json) console.log(`${ref.created ? 'started' : 'existing'} job ${ref.jobId}`);
        if (!opts.waitS) return opts.json ? printJson(ref) : undefined;
        const r = await rt.client.awaitResult(input.account, ref.jobId, { timeoutMs: opts.waitS * 1000 });
        // Only a completed job is a success; one still running when the wait ends has not completed (yet).
        if (r.job.state !== 'completed') process.exitCode = EXIT.failed;
        if (opts.json) return printJson({ ...ref, wait: { status: r.status, waitedS: opts.waitS }, job: r.job });
        if (r.status === 'still_running')
          console.log(
            `still running after ${opts.waitS} s (the wait ended, not the job): state ${r.job.state}; follow it with \`status ${ref.jobId}\``,
          );
        await printJob(r.job);
      });
    });
  exitNote(
    c,
    '0 started (with --wait-s: the job completed within the wait); 1 with --wait-s, the job ended other than completed, or is still running when the wait ends (it goes on), or Temporal is unreachable; 2 invalid input (a bad URL or flag, a key reused with other parameters); 4 refused by a budget of the account whose policy is `refuse` (nothing was started; the error names the budget, its period and what is left).',
  );
}
