/**
 * `setup`: prepares an existing deployment named by the configuration: registers the search
 * attributes on its Temporal namespace, migrates the result store and creates the maintenance
 * Schedules.
 */
import type { Command } from 'commander';
import { requireTemporal, withRuntime } from '../context.js';
import { jsonOption } from '../options.js';
import { printJson } from '../print.js';

/** Adds `setup` to `program`. */
export function registerSetup(program: Command): void {
  jsonOption(
    program.command('setup'),
    'print what was prepared as JSON ({address, namespace, storeMigrated, schedules, maintenanceTaskQueue})',
  )
    .description(
      'prepare an existing deployment: register the search attributes on the Temporal namespace and migrate the result store',
    )
    .option('-c, --config <file>', 'configuration file')
    .action(async (opts) => {
      const { ensureSearchAttributes } = await import('../../namespace.js');
      const { SEARCH_ATTRIBUTES } = await import('../../workflows/searchAttributes.js');
      const { ensureMaintenanceSchedules, maintenanceTaskQueue } = await import('../../client/schedules.js');
      // Opening the runtime migrates the store; Temporal is asked within the CLI's connect budget.
      const { config, ids } = await withRuntime(opts, async (rt) => {
        await requireTemporal(rt);
        await ensureSearchAttributes(rt.connection, rt.config.temporal.namespace, SEARCH_ATTRIBUTES);
        const ids = await ensureMaintenanceSchedules(rt.client.temporal, { taskQueue: rt.config.temporal.taskQueue });
        return { config: rt.config, ids };
      });
      const queue = maintenanceTaskQueue(config.temporal.taskQueue);
      if (opts.json)
        return printJson({
          address: config.temporal.address,
          namespace: config.temporal.namespace,
          searchAttributesRegistered: true,
          storeMigrated: true,
          schedules: ids,
          maintenanceTaskQueue: queue,
        });
      console.log(
        `search attributes registered on ${config.temporal.address} (namespace ${config.temporal.namespace}); store migrated; schedules ${ids.purge}, ${ids.orphans} (task queue ${queue})`,
      );
    });
}
