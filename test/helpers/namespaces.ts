/**
 * Namespaces of their own on the run's Temporal server, for tests of what a worker does on a
 * namespace that is not set up (no search attributes): registered through the workflow service,
 * waited for until the operator service answers for them, deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { waitFor } from './stack.js';

/**
 * Registers a fresh namespace `<prefix>-<random hex>` (retention 1 day) and resolves with its name
 * once it is usable (the server's namespace cache refreshes every few seconds: waits up to 60 s).
 * It has no custom search attributes.
 */
export async function createNamespace(connection: Connection, prefix: string): Promise<string> {
  const namespace = `${prefix}-${randomBytes(4).toString('hex')}`;
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  await waitFor(
    () =>
      connection.operatorService.listSearchAttributes({ namespace }).then(
        () => true,
        () => false,
      ),
    60_000,
    `namespace ${namespace} to be usable`,
  );
  return namespace;
}

/** Deletes `namespace` and everything in it (best effort: the server may refuse while it is busy). */
export async function deleteNamespace(connection: Connection, namespace: string): Promise<void> {
  await connection.operatorService.deleteNamespace({ namespace }).catch(() => undefined);
}
