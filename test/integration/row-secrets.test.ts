/**
 * A caller's input row (a batch file's extra columns) is evidence kept with the job: a credential
 * of a known shape in a column of any name (a GitHub token, an AWS access key ID, a Slack token,
 * a private key) never reaches the store row or the workflow's start input (history). The same
 * value in `options` is refused; in the row it is redacted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitForState, type Stack } from '../helpers/stack.js';

/** A PEM armour line, built here so that no private-key block stands in the repository's text. */
const armour = (edge: 'BEGIN' | 'END') => `${'-'.repeat(5)}${edge} RSA ${['PRIVATE', 'KEY'].join(' ')}${'-'.repeat(5)}`;

// Made-up values in each credential's shape, joined at run time so that no scanner of the
// repository takes them for real credentials.
const SHAPED = {
  github: ['ghp', 'R7k2Lq9Vx4Nm8Pw3Zt6Yb1Hc5Jd0Fg2Ks7A'].join('_'),
  aws: ['AKIA', 'QX7Z2M4N6P5R3T3V'].join(''),
  slack: ['xoxb', '4411223344', '5566778899', 'AbCdEfGhIjKlMnOp'].join('-'),
  google: ['AIza', 'SyB1x2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q'].join(''),
  pem: `${armour('BEGIN')}\nMIIEowIBAAKCAQEAx4Zq\n${armour('END')}`,
};

let pages: PageServer;
let stack: Stack;
beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
  await pages?.close();
});

describe('credentials in an input row', () => {
  it('are refused in options, and redacted from the row before the store and history see it', async () => {
    await expect(
      stack.client.startScrape({ account: 'acme', url: pages.pageUrl('cnet'), options: { note: SHAPED.github } }),
    ).rejects.toThrow(/looks like a credential/);
    const tag = 'row-shaped-secrets';
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
      row: {
        url: `${pages.pageUrl('cnet')}?${tag}`,
        note: `deploy with ${SHAPED.github}`,
        ...SHAPED,
        kept: 'plain words',
      },
    });
    await waitForState(stack.store, ref.jobId, ['completed', 'failed']);
    const stored = JSON.stringify(await stack.store.jobs.get(ref.jobId));
    const events = (await stack.temporal.workflow.getHandle(ref.jobId).fetchHistory()).events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    const history = started.map((p) => Buffer.from(p.data ?? []).toString('utf8')).join('\n');
    expect(history).toContain('plain words'); // the row is in the start input
    for (const [name, value] of Object.entries(SHAPED)) {
      const probe = value.split('\n')[0]!;
      expect(stored.includes(probe), `${name} in the store row`).toBe(false);
      expect(history.includes(probe), `${name} in history`).toBe(false);
    }
    expect(stored).toContain('plain words');
  });
});
