/**
 * `cancel <job>`: cancels a job through the one cancel path and prints the outcome observed at
 * the provider. `--no-wait` sends the signal and returns; past `--wait-s` the request stays
 * recorded and acts when a worker runs it. A `tracking_interrupted` or `cancel_unconfirmed` job is
 * final, but its provider task may still run: the client asks the provider in a new run.
 */
import { Option, type Command } from 'commander';
import { EXIT, accountOf, cliUser, requireTemporal, resolveJobId, withRuntime } from '../context.js';
import { exitNote, jobCommand, jsonOption, positiveInt } from '../options.js';
import { printJson } from '../print.js';

/** Adds `cancel` to `program`. */
export function registerCancel(program: Command): void {
  const c = jsonOption(jobCommand(program, 'cancel'))
    .description('cancel a job and print the outcome observed at the provider')
    .option('-r, --reason <text>', 'why', 'cancelled from the CLI')
    .option('--no-wait', 'send the cancel signal and return at once')
    .addOption(
      new Option(
        '--wait-s <seconds>',
        'how long to wait for the observed outcome before returning (the request stays recorded)',
      )
        .default(120)
        .argParser(positiveInt),
    )
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        await requireTemporal(rt);
        const r = await rt.client.cancelScrape(account, id, {
          reason: opts.reason,
          requestedBy: cliUser(),
          wait: opts.wait,
          timeoutMs: opts.waitS * 1000,
        });
        // An orphan (its workflow no longer runs) cannot be cancelled from here: exit 1, JSON or not.
        if (r.kind === 'not_running') process.exitCode = EXIT.failed;
        if (opts.json) return printJson(r);
        if (r.kind === 'requested')
          return console.log(`cancel requested (signal sent)${r.note ? `: ${r.note}` : ''}; check with \`status\``);
        if (r.kind === 'not_running')
          return console.log(
            `nothing to cancel: the job is ${r.state} but its workflow no longer runs (an orphan); \`resume\` it, then cancel, or see \`orphans\``,
          );
        if (r.kind === 'already_final' && r.state === 'tracking_interrupted') {
          // A cancel reaches a task that may still run; this one's provider last reported it final.
          return console.log(
            `nothing was cancelled: tracking of the job ended (tracking_interrupted) and the provider last reported its task final; \`resume ${job}\` reads its outcome`,
          );
        }
        if (r.kind === 'already_final')
          return console.log(
            `nothing to cancel: the job is already ${r.state}${r.report ? ` (earlier cancel outcome: ${r.report.outcome} — ${r.report.detail})` : ''}`,
          );
        console.log(
          `outcome: ${r.report.outcome} — ${r.report.detail}\nprovider cancel calls: ${r.report.providerCancelCalls}; remaining effects: ${JSON.stringify(r.report.remainingEffects ?? {})}`,
        );
      }),
    );
  exitNote(
    c,
    '0 the cancel was observed or requested, or the job was already final; 1 the job is not final but its workflow no longer runs (an orphan: `resume` it first), or Temporal is unreachable; 3 no such job.',
  );
}
