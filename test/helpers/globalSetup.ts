/**
 * Vitest global setup: one real Temporal server for the whole run. Uses `TEMPORAL_ADDRESS` when set
 * (an existing cluster); otherwise obtains the Temporal CLI (see tools/devserver) and starts a dev
 * server with a SQLite file in a temporary directory, the project's search attributes registered,
 * headless (the tests do not need the Web UI). Test files read the address with
 * `inject('temporal')`.
 *
 * It also makes the run's evidence directory (`$SCRAPE_TEST_EVIDENCE_DIR`, see `evidence.ts`):
 * stores, logs and answers kept for the secrets scan, which runs as the last project
 * (`test/scan/`) while the server is still up. `inject('evidence')` gives the directory and the
 * run's start time (the scan reads the histories of workflows started since). The teardown stops
 * the server and deletes both directories (`SCRAPE_KEEP_EVIDENCE=1` keeps the evidence).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connectOrStartTemporal, type TemporalTarget } from '../../tools/devserver/connectOrStart.js';
import { EVIDENCE_ENV } from './evidence.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporal: { address: string; namespace: string; dbDir: string };
    evidence: { dir: string; startedAt: string };
  }
}

let target: TemporalTarget | undefined;
let dir: string | undefined;
let evidence: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const startedAt = new Date().toISOString();
  evidence = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-test-evidence-'));
  process.env[EVIDENCE_ENV] = evidence; // inherited by the test workers and what they start
  project.provide('evidence', { dir: evidence, startedAt });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-test-temporal-'));
  const t0 = Date.now();
  target = await connectOrStartTemporal({
    devServer: { dbFile: path.join(dir, 'temporal.db'), headless: true },
    logger: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  process.stderr.write(
    `[temporal] ${target.external ? 'using' : 'started'} ${target.address} in ${Date.now() - t0} ms\n`,
  );
  project.provide('temporal', { address: target.address, namespace: target.namespace, dbDir: dir });
}

export async function teardown(): Promise<void> {
  await target?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (evidence && !/^(1|true|yes)$/i.test(process.env.SCRAPE_KEEP_EVIDENCE ?? ''))
    fs.rmSync(evidence, { recursive: true, force: true });
  else if (evidence) process.stderr.write(`[evidence] kept ${evidence}\n`);
}
