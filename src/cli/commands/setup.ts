/**
 * `setup`: prepares an existing deployment named by the configuration: registers the search
 * attributes on its Temporal namespace, migrates the result store and creates the maintenance
 * Schedules.
 */
import type { Command } from 'commander';
import { TEMPORAL_CONNECT_BUDGET_MS, loadCliConfig } from '../context.js';
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
      const { config } = await loadCliConfig(opts.config);
      const { openRuntime } = await import('../../runtime.js');
      const { Connection } = await import('@temporalio/client');
      const { connectionOptionsFromEnv } = await import('../../client/connection.js');
      const { ensureSearchAttributes } = await import('../../namespace.js');
      const { SEARCH_ATTRIBUTES } = await import('../../workflows/searchAttributes.js');
      const connection = await Connection.connect({
        ...connectionOptionsFromEnv({ ...process.env, TEMPORAL_ADDRESS: config.temporal.address }),
        connectTimeout: TEMPORAL_CONNECT_BUDGET_MS,
      });
      try {
        await ensureSearchAttributes(connection, config.temporal.namespace, SEARCH_ATTRIBUTES);
      } finally {
        await connection.close();
      }
      const rt = await openRuntime(config); // also migrates the store
      const { ensureMaintenanceSchedules, maintenanceTaskQueue } = await import('../../client/schedules.js');
      const ids = await ensureMaintenanceSchedules(rt.client.temporal, { taskQueue: config.temporal.taskQueue });
      await rt.close();
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
