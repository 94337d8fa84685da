/**
 * Vitest global setup: one real Temporal server for the whole run. Uses `TEMPORAL_ADDRESS` when set
 * (an existing cluster); otherwise obtains the Temporal CLI (see src/devserver) and starts a dev
 * server with a SQLite file in a temporary directory, the project's search attributes registered,
 * headless (the tests do not need the Web UI). Test files read the address with
 * `inject('temporal')`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connectOrStartTemporal, type TemporalTarget } from '../../src/devserver/devServer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporal: { address: string; namespace: string; dbDir: string };
  }
}

let target: TemporalTarget | undefined;
let dir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-test-temporal-'));
  const t0 = Date.now();
  target = await connectOrStartTemporal({
    devServer: { dbFile: path.join(dir, 'temporal.db'), headless: true },
    logger: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  process.stderr.write(`[temporal] ${target.external ? 'using' : 'started'} ${target.address} in ${Date.now() - t0} ms\n`);
  project.provide('temporal', { address: target.address, namespace: target.namespace, dbDir: dir });
}

export async function teardown(): Promise<void> {
  await target?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}
