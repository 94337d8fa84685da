/**
 * The Temporal floors for the benchmarks: their workflow types, their bundle, and where their
 * worker's entry point is. See `workflows.ts` (what a floor job is) and `workerMain.ts` (how its
 * worker gets the product's capacity options).
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { REPO } from '../lib/report.js';

/** The floors: the workflow type each runs and a label for tables. */
export const FLOORS = {
  one: { workflowType: 'floorOneActivity', label: 'Temporal floor: 1 no-op activity' },
  two: { workflowType: 'floorTwoActivities', label: 'Temporal floor: 2 no-op activities' },
  visible: {
    workflowType: 'floorOneActivityVisible',
    label: "Temporal floor: 1 no-op activity with a fast product job's records",
  },
} as const;

/** A floor's key. */
export type Floor = keyof typeof FLOORS;

/** Entry point of the floors' worker process. */
export const FLOOR_WORKER_MAIN = path.join(REPO, 'bench', 'floor', 'workerMain.ts');

/** Bundles the floors' workflows (webpack, a few seconds of CPU, before anything is measured) into `file`; returns its size in bytes. */
export async function writeFloorBundle(file: string): Promise<number> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(REPO, 'bench', 'floor', 'workflows.ts'),
    logger: quiet,
  });
  fs.writeFileSync(file, code);
  return code.length;
}

const quiet = {
  trace() {},
  debug() {},
  info() {},
  log() {},
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
};
