/**
 * The upgrade step (docs/operations.md, "Upgrading"): `scrape upgrade-check` lists the open runs of
 * workflow types this release no longer serves and exits 1 while any is open, 0 once they have
 * ended; a worker started beside them still starts (an older release's worker may serve them) and
 * says so in its log. A namespace of its own on the run's dev server, so that no other test's runs
 * are counted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { RETIRED_WORKFLOW_TYPES } from '../../src/workflows/scrape/messages.js';
import { runCli } from '../helpers/cli.js';
import { createNamespace, deleteNamespace } from '../helpers/namespaces.js';
import { startStack, waitFor, type Stack } from '../helpers/stack.js';

let stack: Stack;
let connection: Connection;
let namespace: string;
let configFile: string;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  connection = await Connection.connect({ address: stack.config.temporal.address });
  namespace = await createNamespace(connection, 'upgrade');
  const config: Config = { ...stack.config, temporal: { ...stack.config.temporal, namespace } };
  configFile = path.join(stack.dir, 'config-upgrade.json');
  fs.writeFileSync(configFile, JSON.stringify(config));
});

afterAll(async () => {
  if (namespace) await deleteNamespace(connection, namespace);
  await connection?.close();
  await stack?.stop();
});

const check = () => runCli(['upgrade-check', '--json', '--config', configFile]);

describe('upgrade-check', () => {
  it('refuses while a run of a retired workflow type is open, and passes once it has ended', async () => {
    const before = await check();
    expect(before.code, before.stderr).toBe(0);
    expect(JSON.parse(before.stdout)).toMatchObject({ count: 0, runs: [] });

    // A run an earlier release started: nothing here serves its type, so it stays open.
    const client = new Client({ connection, namespace });
    const retired = RETIRED_WORKFLOW_TYPES.at(-1)!;
    const handle = await client.workflow.start(retired, {
      taskQueue: `${stack.config.temporal.taskQueue}-previous-release`,
      workflowId: 'scrape:acme:from-the-previous-release',
      args: [{}],
    });
    await waitFor(async () => (await check()).code === 1, 30_000, 'the check to see the open run');
    const open = await check();
    expect(JSON.parse(open.stdout)).toMatchObject({
      count: 1,
      runs: [{ workflowId: 'scrape:acme:from-the-previous-release', type: retired }],
    });
    const plain = await runCli(['upgrade-check', '--config', configFile]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain('1 open run of retired workflow types');
    expect(plain.stdout).toContain('scrape:acme:from-the-previous-release');

    // Drained (here: ended by hand; in a deploy, by the previous release's worker).
    await handle.terminate('drained for the test');
    await waitFor(async () => (await check()).code === 0, 30_000, 'the check to pass once the run ended');
    expect(JSON.parse((await check()).stdout)).toMatchObject({ count: 0 });
  });
});
