/**
 * `cancel-batch` tells its caller, by its exit code, when a job of the batch was not cancelled: a
 * job whose workflow no longer runs (an orphan, `not_running`) makes it exit 1, as `cancel` of that
 * job does, while the other jobs of the batch are still cancelled and reported.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { waitRow } from '../helpers/cancel.js';
import { FAST_POLICY, REPO, startStack, type Stack } from '../helpers/stack.js';

const RUN = randomUUID().slice(0, 6);
const run = promisify(execFile);

let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 16 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

async function cli(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const r = await run('npx', ['tsx', 'src/cli.ts', ...args, '--config', stack.configFile], {
      cwd: REPO,
      env: { ...process.env, SCRAPE_CONFIG: '' },
      timeout: 90_000,
    });
    return { code: 0, stdout: r.stdout };
  } catch (e) {
    const err = e as { code?: number; stdout?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '' };
  }
}

describe('cancel-batch exit code', () => {
  it('exits 1 when a job of the batch could not be cancelled (an orphan), and 0 when every job was', async () => {
    const batchId = `cbx-${RUN}`;
    const hold = `cbx-hold-${RUN}`;
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: hold, action: 'never_finish' });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const url = `${pages.pageUrl('001')}?${hold}&i=${i}`;
      const ref = await stack.client.startScrape({
        account: 'acme',
        url,
        key: `${batchId}-${i}`,
        batchId,
        policy: FAST_POLICY,
      });
      ids.push(ref.jobId);
    }
    await Promise.all(
      ids.map((id) =>
        waitRow(stack, id, (r) => r.state === 'pending' && r.provider_status === 'running', 'running', 60_000),
      ),
    );
    // The first job's workflow is ended from outside: its row stays non-final (an orphan).
    await stack.temporal.workflow.getHandle(ids[0]!).terminate('test: make an orphan');
    const r = await cli('cancel-batch', batchId, '--json');
    const outcomes = JSON.parse(r.stdout) as { jobId: string; result: { kind: string } }[];
    expect(outcomes.map((o) => [o.jobId, o.result.kind])).toEqual([
      [ids[0], 'not_running'],
      [ids[1], 'observed'],
    ]);
    expect(r.code).toBe(1);
    expect((await cli('cancel', ids[0]!)).code).toBe(1);

    const other = `cby-${RUN}`;
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${hold}&i=other`,
      key: `${other}-0`,
      batchId: other,
      policy: FAST_POLICY,
    });
    await waitRow(
      stack,
      ref.jobId,
      (row) => row.state === 'pending' && row.provider_status === 'running',
      'running',
      60_000,
    );
    expect((await cli('cancel-batch', other)).code).toBe(0);
  });
});
