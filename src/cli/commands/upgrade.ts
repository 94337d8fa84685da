/**
 * `upgrade-check`: whether this release may replace the one running. It lists the open runs of
 * workflow types this release no longer serves (`src/client/upgrade.ts`) and exits 1 while any is
 * open: keep a worker of the release that started them until they end, then check again.
 */
import type { Command } from 'commander';
import { EXIT, withRuntime } from '../context.js';
import { table } from '../print.js';

/** Adds `upgrade-check` to `program`. */
export function registerUpgradeCheck(program: Command): void {
  program
    .command('upgrade-check')
    .description('list open runs of workflow types this release no longer serves; exit 1 while any is open')
    .option('-c, --config <file>', "configuration file (default: $SCRAPE_CONFIG, else the demo's)")
    .option('--json', 'print JSON')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const { openRetiredRuns } = await import('../../client/upgrade.js');
        const found = await openRetiredRuns(rt.client.temporal);
        if (opts.json) console.log(JSON.stringify(found, null, 2));
        else if (found.count === 0)
          console.log(`no open run of a retired workflow type (${found.types.join(', ')}): ready to upgrade`);
        else {
          console.log(
            `${found.count} open run${found.count === 1 ? '' : 's'} of retired workflow types: keep a worker of the release that started them until they end, then run this again`,
          );
          const t = await table({ head: ['workflow ID', 'type', 'started'], colWidths: [60, 20, 28], wordWrap: true });
          for (const r of found.runs) t.push([r.workflowId, r.type, r.startTime]);
          console.log(t.toString());
          console.log(`all of them: temporal workflow list --query '${found.query}'`);
        }
        if (found.count > 0) process.exitCode = EXIT.failed;
      }),
    );
}
