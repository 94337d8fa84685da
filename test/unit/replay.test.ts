/**
 * Replays recorded workflow histories (test/replay/histories, recorded from the real stack by
 * `RECORD_HISTORIES=1 npx vitest run test/integration/replay-record.test.ts`) through the current
 * workflow code. A failure means a change would break workflows already running: put it behind
 * `patched()` instead of re-recording (or, once the runs of a type are drained, retire the type:
 * docs/operations.md, "Upgrading").
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/worker.js';
import { MACHINE_PATH } from '../helpers/histories.js';

const dir = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../replay/histories');
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('recorded histories replay with the current workflow code', () => {
  it('has recorded histories of the main paths of the workflow type served (v6)', () => {
    const paths = [
      'completed',
      'failed',
      'interrupted',
      'cancelledUpdate',
      'cancelledNative',
      'reconciled',
      'resolved',
      'unacknowledged',
      'cancelledSignal',
      'woken',
      'expired',
      'deadlineCancel',
      'resolvedAfterWake',
      'cancelledElsewhere',
      'handedOver',
    ];
    expect(files).toEqual(expect.arrayContaining(paths.map((p) => `v6-${p}.json`)));
  });

  it('carries no path of the machine that recorded them', () => {
    for (const f of files) expect(fs.readFileSync(path.join(dir, f), 'utf8').match(MACHINE_PATH), f).toBeNull();
  });

  it.each(files)(
    '%s',
    async (file) => {
      const history: unknown = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')); // proto JSON (temporal workflow show -o json)
      await expect(
        Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, `replay-${file}`),
      ).resolves.toBeUndefined();
    },
    60_000,
  );
});
