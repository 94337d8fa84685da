/**
 * A worker pointed at a namespace that is not set up for the scrape workflows (its search
 * attributes missing, or one registered with another type) is refused at start, before it polls,
 * with every attribute named with its type and the command that registers them; after that command
 * (`scrape setup`) the same configuration starts a worker that completes a job there. Namespaces of
 * their own on the run's dev server, registered by the test.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScrapeClient } from '../../src/client/index.js';
import { maintenanceScheduleIds } from '../../src/client/schedules.js';
import type { Config } from '../../src/config.js';
import { ensureSearchAttributes } from '../../src/namespace.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes.js';
import { createScrapeWorker, MissingSearchAttributesError } from '../../src/worker.js';
import { recordCli } from '../helpers/evidence.js';
import { createNamespace, deleteNamespace } from '../helpers/namespaces.js';
import { FAST_POLICY, REPO, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

const run = promisify(execFile);
let stack: Stack;
let pages: PageServer;
let connection: Connection;
let native: NativeConnection;
const namespaces: string[] = [];

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ worker: false });
  connection = await Connection.connect({ address: stack.config.temporal.address });
  native = await NativeConnection.connect({ address: stack.config.temporal.address });
});

afterAll(async () => {
  for (const ns of namespaces) {
    const client = new Client({ connection, namespace: ns });
    for (const id of Object.values(maintenanceScheduleIds(stack.config.temporal.taskQueue)))
      await client.schedule
        .getHandle(id)
        .delete()
        .catch(() => undefined);
    await deleteNamespace(connection, ns);
  }
  await native?.close();
  await connection?.close();
  await stack?.stop();
  await pages?.close();
});

/** A fresh namespace (no search attributes) and the stack's configuration pointed at it, also as a file. */
async function freshNamespace(prefix: string): Promise<{ namespace: string; config: Config; configFile: string }> {
  const namespace = await createNamespace(connection, prefix);
  namespaces.push(namespace);
  const config: Config = { ...stack.config, temporal: { ...stack.config.temporal, namespace } };
  const configFile = path.join(stack.dir, `config-${namespace}.json`);
  fs.writeFileSync(configFile, JSON.stringify(config));
  return { namespace, config, configFile };
}

/** Runs the CLI from source (`node --import tsx src/cli.ts <args>`). */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(
      process.execPath,
      ['--import', import.meta.resolve('tsx'), path.join(REPO, 'src/cli.ts'), ...args],
      {
        cwd: REPO,
        env: { ...process.env, SCRAPE_CONFIG: '', FORCE_COLOR: '0' },
        timeout: 90_000,
      },
    );
    return recordCli(args, { code: 0, stdout: r.stdout, stderr: r.stderr });
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return recordCli(args, {
      code: typeof err.code === 'number' ? err.code : -1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    });
  }
}

/** The pollers the server has seen on the configuration's job task queue (workflow tasks). */
async function pollers(config: Config): Promise<number> {
  const res = await connection.workflowService.describeTaskQueue({
    namespace: config.temporal.namespace,
    taskQueue: { name: config.temporal.taskQueue },
    taskQueueType: 1,
  });
  return res.pollers?.length ?? 0;
}

describe('a worker on a namespace without our search attributes', () => {
  it('is refused at start, before polling, with each missing attribute and its type and the setup command; after setup it starts and completes a job', async () => {
    const { namespace, config, configFile } = await freshNamespace('scrape-no-attrs');

    // Embedded (createScrapeWorker): a typed error naming all six, nothing polls.
    const refused = await createScrapeWorker({ connection: native, config, store: stack.store }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(MissingSearchAttributesError);
    const err = refused as MissingSearchAttributesError;
    expect(err.namespace).toBe(namespace);
    expect(err.problems).toEqual(Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => ({ name, type })));
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) expect(err.message).toContain(`${name} (${type})`);
    expect(err.message).toContain(`namespace "${namespace}"`);
    expect(err.message).toContain('npm run cli -- setup');
    expect(await pollers(config)).toBe(0);

    // The command a user runs: exit 1, the same account of it on stderr, and it never polled.
    const worker = await cli(['worker', '--config', configFile]);
    expect(worker.code, worker.stderr).toBe(1);
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) expect(worker.stderr).toContain(`${name} (${type})`);
    expect(worker.stderr).toContain('npm run cli -- setup');
    expect(worker.stderr).not.toContain('worker polling');
    expect(await pollers(config)).toBe(0);

    // The command the error names sets the namespace up; the same configuration then works end to end.
    const setup = await cli(['setup', '--config', configFile]);
    expect(setup.code, setup.stderr).toBe(0);
    expect(setup.stdout).toContain(`namespace ${namespace}`);
    const w = await createScrapeWorker({ connection: native, config, store: stack.store, shutdownGraceTimeMs: 2_000 });
    const running = w.run();
    try {
      const temporal = new Client({ connection, namespace });
      const client = new ScrapeClient({
        temporal,
        store: stack.store,
        taskQueue: config.temporal.taskQueue,
        defaultProvider: 'reference',
        providers: Object.keys(config.providers),
      });
      const ref = await client.startScrape({
        account: 'acme',
        url: `${pages.pageUrl('ars-1')}?ns=${namespace}`,
        key: `ns-${namespace}`,
        policy: FAST_POLICY,
      });
      expect((await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 60_000)).state).toBe('completed');
      // The workflow's upserts, which the check protects, reach the namespace's visibility.
      const handle = temporal.workflow.getHandle(ref.jobId);
      await waitFor(
        async () => (await handle.describe()).searchAttributes.ScrapeState?.[0] === 'completed',
        30_000,
        'ScrapeState = completed',
      );
    } finally {
      w.shutdown();
      await running;
    }
  }, 180_000);

  it('a namespace with some attributes names only the missing ones, and one of another type with the type it has', async () => {
    const { namespace, config } = await freshNamespace('scrape-some-attrs');
    const { ScrapeBatchId: _missing, ScrapeHost: _wrong, ...present } = SEARCH_ATTRIBUTES;
    await ensureSearchAttributes(
      connection,
      namespace,
      { ...present, ScrapeHost: 'Text' },
      { logger: () => undefined },
    );
    const refused = await createScrapeWorker({ connection: native, config, store: stack.store }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(MissingSearchAttributesError);
    const err = refused as MissingSearchAttributesError;
    expect(err.problems).toEqual([
      { name: 'ScrapeBatchId', type: 'Keyword' },
      { name: 'ScrapeHost', type: 'Keyword', registeredAs: 'Text' },
    ]);
    expect(err.message).toContain('ScrapeBatchId (Keyword)');
    expect(err.message).toContain('ScrapeHost is registered as Text, the workflows need Keyword');
    expect(err.message).not.toContain('ScrapeState');
    expect(await pollers(config)).toBe(0);
  });

  it('a namespace that does not exist is refused with its name', async () => {
    const config: Config = {
      ...stack.config,
      temporal: { ...stack.config.temporal, namespace: 'scrape-no-such-namespace' },
    };
    await expect(createScrapeWorker({ connection: native, config, store: stack.store })).rejects.toThrow(
      /namespace "scrape-no-such-namespace" does not exist/,
    );
  });
});
