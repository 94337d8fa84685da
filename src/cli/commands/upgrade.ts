/**
 * `upgrade-check`: whether this release may replace the one running. It lists the open runs of
 * workflow types this release no longer serves (`src/client/upgrade.ts`) and exits 1 while any is
 * open: keep a worker of the release that started them until they end, then check again.
 */
import type { Command } from 'commander';
import { EXIT, requireTemporal, withRuntime } from '../context.js';
import { exitNote, jsonOption } from '../options.js';
import { fitTable, printJson } from '../print.js';

/** Adds `upgrade-check` to `program`. */
export function registerUpgradeCheck(program: Command): void {
  const c = jsonOption(program.command('upgrade-check'))
    .description('list open runs of workflow types this release no longer serves; exit 1 while any is open')
    .option('-c, --config <file>', "configuration file (default: $SCRAPE_CONFIG, else the demo's)")
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        await requireTemporal(rt);
        const { openRetiredRuns } = await import('../../client/upgrade.js');
        const found = await openRetiredRuns(rt.client.temporal);
        if (opts.json) printJson(found);
        else if (found.count === 0)
          console.log(`no open run of a retired workflow type (${found.types.join(', ')}): ready to upgrade`);
        else {
          console.log(
            `${found.count} open run${found.count === 1 ? '' : 's'} of retired workflow types: keep a worker of the release that started them until they end, then run this again`,
          );
          console.log(
            await fitTable({
              head: ['workflow ID', 'type', 'started'],
              rows: found.runs.map((r) => [r.workflowId, r.type, r.startTime]),
              compact: false,
            }),
          );
          console.log(`all of them: temporal workflow list --query '${found.query}'`);
        }
        if (found.count > 0) process.exitCode = EXIT.failed;
      }),
    );
  exitNote(c, '0 no open run of a retired workflow type (ready to upgrade); 1 some are open (listed).');
}
