/**
 * The budgets of the account (docs/budgets.md), set while everything runs: `budgets` lists them
 * with their standing in the current period and the account's policy; `budget-set` sets one (per
 * provider, in its kind's unit, or across the providers of one unit; per day, month or in total);
 * `budget-remove` removes one; `budget-policy` shows or sets what happens to a job a budget cannot
 * take (refuse or hold) and to a running job that goes past one. A change here outlives restarts
 * (the configuration no longer overrides it); jobs held by a budget try again at once.
 */
import { Option, type Command } from 'commander';
import type { BudgetUsage } from '../../model/budgets.js';
import { accountOf, withRuntime } from '../context.js';
import { accountOptions, decimal, jsonOption } from '../options.js';
import { printJson } from '../print.js';

/** One line per budget. */
function printBudgets(budgets: BudgetUsage[]): void {
  if (budgets.length === 0) return console.log('no budgets');
  for (const b of budgets)
    console.log(
      `${b.id}: ${b.remaining} ${b.unit} left of ${b.amount} per ${b.period} (${b.periodKey}: ${b.reserved} reserved, ${b.spent} spent${b.renewsAt ? `; renews ${b.renewsAt}` : ''})`,
    );
}

/** Adds `budgets`, `budget-set`, `budget-remove` and `budget-policy` to `program`. */
export function registerBudgets(program: Command): void {
  jsonOption(accountOptions(program.command('budgets')), 'print JSON: {budgets: [...], policy}')
    .description("list the account's budgets (what is reserved, spent and left in the current period) and its policy")
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const budgets = await rt.client.budgets.list(account);
        const policy = await rt.client.budgets.policy(account);
        if (opts.json) return printJson({ budgets, policy });
        printBudgets(budgets);
        console.log(`policy: ${policy.onExceeded}${policy.cancelRunning ? ', cancel running jobs over budget' : ''}`);
      }),
    );

  jsonOption(accountOptions(program.command('budget-set')), 'print JSON: the budget and its standing')
    .description('set a budget of the account (created, or its amount changed; held jobs try again at once)')
    .addOption(
      new Option('--period <period>', 'what the amount is per')
        .choices(['day', 'month', 'total'])
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--amount <n>', "the most the account's jobs may reserve and spend per period, in the unit")
        .argParser(decimal)
        .makeOptionMandatory(),
    )
    .option(
      '-p, --provider <name>',
      "a configured provider (its kind's unit); without it, every provider of the account counting in --unit",
    )
    .option('--unit <unit>', 'credits, usd, records, requests: required without --provider')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const b = await rt.client.budgets.set(accountOf(rt, opts), {
          provider: opts.provider,
          unit: opts.unit,
          period: opts.period,
          amount: opts.amount,
        });
        if (opts.json) return printJson(b);
        printBudgets([b]);
      }),
    );

  jsonOption(
    accountOptions(program.command('budget-remove').argument('<id>', 'the budget ID (as `budgets` lists it)')),
    'print JSON: {removed}',
  )
    .description('remove a budget of the account (jobs it held try again at once)')
    .action(async (id: string, opts) =>
      withRuntime(opts, async (rt) => {
        await rt.client.budgets.remove(accountOf(rt, opts), id);
        if (opts.json) return printJson({ removed: id });
        console.log(`removed ${id}`);
      }),
    );

  jsonOption(accountOptions(program.command('budget-policy')), 'print JSON: {onExceeded, cancelRunning}')
    .description('show or set what happens to a job a budget cannot take, and to a running job that goes past one')
    .addOption(
      new Option(
        '--on-exceeded <policy>',
        'refuse the job (exit 4 at the door), or hold it until the period renews',
      ).choices(['refuse', 'hold']),
    )
    .option('--cancel-running', 'cancel a running job whose reported cost takes a budget past its amount')
    .option('--no-cancel-running', 'never cancel a running job for money (the default)')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        let policy = await rt.client.budgets.policy(account);
        if (opts.onExceeded !== undefined || opts.cancelRunning !== undefined)
          policy = await rt.client.budgets.setPolicy(account, {
            onExceeded: opts.onExceeded ?? policy.onExceeded,
            cancelRunning: opts.cancelRunning ?? policy.cancelRunning,
          });
        if (opts.json) return printJson(policy);
        console.log(
          `policy: ${policy.onExceeded}${policy.cancelRunning ? ', cancel running jobs over budget' : ', never cancel a running job for money'}`,
        );
      }),
    );
}
