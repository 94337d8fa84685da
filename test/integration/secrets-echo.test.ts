/**
 * A provider that copies the caller's API key into its answers: a failed job
 * whose `error.message` says `invalid key <key>`, and a result whose `final_url` carries
 * `?api_key=<key>`. The key must reach none of: workflow history (payloads decoded), the store
 * (job row, last error, timeline, incidents, result), the CLI's `status` and `incident` output.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { historyText, secretsIn, storeText } from '../helpers/leaks.js';
import { FAST_POLICY, KEYS, REPO, startStack, waitForState, type Stack } from '../helpers/stack.js';
import { recordCli } from '../helpers/evidence.js';

const run = promisify(execFile);
let pages: PageServer;
let stack: Stack;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 8, echoKey: true } });
});
afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

async function cli(...args: string[]): Promise<string> {
  const r = await run('npx', ['tsx', 'src/cli.ts', ...args, '--config', stack.configFile], {
    cwd: REPO,
    env: { ...process.env, SCRAPE_CONFIG: '' },
    timeout: 90_000,
  }).catch((e: { stdout?: string; stderr?: string }) => e);
  recordCli(args, r);
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}

describe('a provider that echoes the API key in its answers', () => {
  it('a failed job: the key in error.message reaches no history, store row, incident or CLI output', async () => {
    const tag = 'echo-failed';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'fail_job',
      code: 'TARGET_BLOCKED',
      message: 'blocked',
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    const row = await waitForState(stack.store, ref.jobId, ['failed', 'completed'], 60_000);
    expect(row.state).toBe('failed');
    // The provider does echo the key (the fault is real) …
    const answer = await (
      await fetch(`${stack.sim.url}/api/jobs/${row.task_id}`, { headers: { authorization: `Bearer ${KEYS.acme}` } })
    ).text();
    expect(answer).toContain(`invalid key ${KEYS.acme}`);
    // … and we kept the rest of the message, without it.
    expect(JSON.parse(row.last_error!).message).toMatch(/invalid key \[REDACTED\]/);
    const text = [
      await historyText(stack.temporal, ref.jobId),
      await storeText(stack.store, ref.jobId),
      await cli('status', ref.jobId),
      await cli('incident', ref.jobId),
    ].join('\n');
    expect(text.length).toBeGreaterThan(1_000);
    expect(secretsIn(text, [KEYS.acme])).toEqual([]);
  }, 120_000);

  it('a completed job: the key in final_url reaches no history, result row or CLI output', async () => {
    const tag = 'echo-completed';
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('001')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    expect((await waitForState(stack.store, ref.jobId, ['failed', 'completed'], 60_000)).state).toBe('completed');
    const result = await stack.store.results.forJob(ref.jobId);
    expect(result?.final_url).toMatch(/api_key=%5BREDACTED%5D|api_key=\[REDACTED\]/);
    const text = [
      await historyText(stack.temporal, ref.jobId),
      await storeText(stack.store, ref.jobId),
      await cli('status', ref.jobId),
      await cli('result', ref.jobId, '--json'),
    ].join('\n');
    expect(secretsIn(text, [KEYS.acme])).toEqual([]);
  }, 120_000);
});
