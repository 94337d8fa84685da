/**
 * End-to-end check that a Temporal cluster supports what the scrape workflows use: runs a worker with
 * the probe workflow (`probeWorkflow.ts`) on a throw-away task queue and checks, for real:
 * Updates (with a validator that rejects), static user metadata (summary/details), current details
 * (via the built-in `__temporal_workflow_metadata` query), typed search attributes set at start and
 * upserted by the workflow, and that visibility can filter on a custom search attribute.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, Connection, WorkflowUpdateFailedError, type ConnectionOptions } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { ScrapeAccount, ScrapeState } from '../../src/workflows/searchAttributes.js';
import { stderrLogger, type LineLogger } from './process.js';
import { PROBE_STATE, devServerProbeWorkflow, probeEchoUpdate, probeFinishSignal } from './probeWorkflow.js';

/** What {@link probeTemporal} verified, with timings in ms. */
export interface ProbeResult {
  workflowId: string;
  /** ms spent creating the worker (dominated by bundling the workflow code). */
  workerCreateMs: number;
  /** ms from starting the workflow until every check passed. */
  checksMs: number;
  /** The checks that passed, in order. */
  checks: string[];
}

/**
 * Runs the probe against `connectionOptions`/`namespace`; the namespace must have the search
 * attributes of `src/workflows/searchAttributes.ts` registered (`ScrapeState`, `ScrapeAccount` are used).
 *
 * @throws Error naming the first check that failed (or the SDK's error), after shutting the worker down.
 */
export async function probeTemporal(p: {
  connectionOptions: ConnectionOptions;
  namespace: string;
  logger?: LineLogger;
  /** Overall limit in ms for the checks after the worker is up (default 30 000 ms). */
  timeoutMs?: number;
}): Promise<ProbeResult> {
  const log = p.logger ?? stderrLogger;
  const taskQueue = `devserver-probe-${randomUUID()}`;
  const workflowId = `devserver-probe-${randomUUID()}`;
  const checks: string[] = [];
  const pass = (c: string) => {
    checks.push(c);
    log(`probe: ok — ${c}`);
  };
  const connection = await Connection.connect(p.connectionOptions);
  const nativeConnection = await NativeConnection.connect({
    address: p.connectionOptions.address,
    tls: p.connectionOptions.tls,
    apiKey: typeof p.connectionOptions.apiKey === 'string' ? p.connectionOptions.apiKey : undefined,
  });
  try {
    const client = new Client({ connection, namespace: p.namespace });
    const t0 = Date.now();
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: p.namespace,
      taskQueue,
      workflowsPath: probeWorkflowPath(),
    });
    const workerCreateMs = Date.now() - t0;
    const t1 = Date.now();
    const deadline = Date.now() + (p.timeoutMs ?? 30_000);
    await worker.runUntil(async () => {
      const handle = await client.workflow.start(devServerProbeWorkflow, {
        taskQueue,
        workflowId,
        staticSummary: 'devserver probe',
        staticDetails: 'checks Updates, user metadata and search attributes',
        typedSearchAttributes: new TypedSearchAttributes([{ key: ScrapeAccount, value: 'probe-account' }]),
        workflowExecutionTimeout: '1 minute',
      });
      try {
        const echoed = await handle.executeUpdate(probeEchoUpdate, { args: ['hi'] });
        if (echoed !== 'echo:hi') throw new Error(`update returned ${JSON.stringify(echoed)}`);
        pass('Update executed and returned its result');
        const rejected = await handle.executeUpdate(probeEchoUpdate, { args: [''] }).then(
          () => false,
          (err: unknown) => err instanceof WorkflowUpdateFailedError,
        );
        if (!rejected) throw new Error('an Update the validator rejects did not fail with WorkflowUpdateFailedError');
        pass('Update validator rejection reached the caller');

        const d = await handle.describe();
        if ((await d.staticSummary()) !== 'devserver probe')
          throw new Error('static summary (user metadata) was not stored');
        if (!(await d.staticDetails())?.startsWith('checks Updates'))
          throw new Error('static details (user metadata) were not stored');
        pass('static summary and details stored');
        if (d.typedSearchAttributes.get(ScrapeAccount) !== 'probe-account')
          throw new Error('ScrapeAccount set at start is missing');
        if (d.typedSearchAttributes.get(ScrapeState) !== PROBE_STATE)
          throw new Error('ScrapeState upserted by the workflow is missing');
        pass('search attributes set at start and upserted by the workflow');

        const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
        if (meta.currentDetails !== 'echoed hi')
          throw new Error(`current details are ${JSON.stringify(meta.currentDetails)}`);
        pass('current details readable via __temporal_workflow_metadata');

        const query = `WorkflowId = '${workflowId}' AND ScrapeState = '${PROBE_STATE}' AND ScrapeAccount = 'probe-account'`;
        for (;;) {
          let found = false;
          for await (const w of client.workflow.list({ query })) found ||= w.workflowId === workflowId;
          if (found) break;
          if (Date.now() > deadline) throw new Error(`visibility query found nothing: ${query}`);
          await new Promise((r) => setTimeout(r, 200));
        }
        pass('visibility filters on custom search attributes');

        await handle.signal(probeFinishSignal);
        const updates = await handle.result();
        if (updates !== 1) throw new Error(`workflow counted ${updates} accepted updates, expected 1`);
        pass('signal delivered and workflow completed');
      } catch (err) {
        await handle.terminate('probe failed').catch(() => undefined);
        throw err;
      }
    });
    return { workflowId, workerCreateMs, checksMs: Date.now() - t1, checks };
  } finally {
    await nativeConnection.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
}

/** `probeWorkflow.ts` under tsx/vitest, `probeWorkflow.js` when compiled. */
function probeWorkflowPath(): string {
  for (const ext of ['.ts', '.js']) {
    const p = fileURLToPath(new URL(`./probeWorkflow${ext}`, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new Error('probeWorkflow.ts/.js not found next to probe');
}
