/**
 * `cost <job>`: what a job cost at its provider (estimated, reserved, settled and reported, in the
 * provider's unit) beside its Temporal Actions, counted from its workflow's history (needs
 * Temporal; without it the Actions read `unknown`).
 */
import type { Command } from 'commander';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { jobCommand, jsonOption } from '../options.js';
import { printJson } from '../print.js';

/** Adds `cost` to `program`. */
export function registerCost(program: Command): void {
  jsonOption(
    jobCommand(program, 'cost'),
    'print JSON: {jobId, provider, cost: {unit, estimated, reserved, settled, reported, source}, temporal: {actions, byKind, runs}}',
  )
    .description('show what a job cost at its provider (in its unit) and in Temporal Actions')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const r = await rt.client.budgets.jobCost(account, await resolveJobId(job, account));
        if (opts.json) return printJson(r);
        const c = r.cost;
        console.log(
          c
            ? `provider ${r.provider}: estimated ${c.estimated ?? '—'} ${c.unit}, reserved ${c.reserved}, settled ${c.settled ?? '— (running)'}${c.source ? ` (${c.source})` : ''}, reported ${c.reported ?? '—'}`
            : `provider ${r.provider}: no cost yet (not submitted)`,
        );
        console.log(
          r.temporal
            ? `Temporal: ${r.temporal.actions} Actions (${Object.entries(r.temporal.byKind)
                .map(([k, n]) => `${k} ${n}`)
                .join(', ')})`
            : 'Temporal: unknown (history not available)',
        );
      }),
    );
}
