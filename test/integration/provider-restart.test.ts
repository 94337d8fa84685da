/**
 * The provider restarted in the middle of a job: down (connection refused) for a while, then back
 * without the job. The job's status checks back off while it is down, and the provider's 404s
 * afterwards end the job `expired` (the provider forgot the task), never resubmitted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim } from '../../tools/sim/index.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, KEYS, startStack, waitFor, type Stack } from '../helpers/stack.js';

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

describe('a provider restarted mid-job', () => {
  it('down, then back without the job: the job waits pending through the failed reads, then ends expired on the 404s, never resubmitted', async () => {
    const tag = 'provider-restart';
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: tag, action: 'never_finish' });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: { ...FAST_POLICY, deadlineMs: 120_000 },
    });
    await waitFor(async () => ((await stack.store.jobs.get(ref.jobId))?.status_checks ?? 0) >= 1);
    const port = Number(new URL(stack.sim.url).port);
    const submitsBefore = stack.sim.stats().requests.byEndpoint.submit;
    await stack.sim.close();
    // Down until the job has met two refused connections: it waits, backing off, still pending.
    const during = await waitFor(
      async () => {
        const r = await stack.store.jobs.get(ref.jobId);
        return r && Number(r.status_errors) >= 2 ? r : undefined;
      },
      60_000,
      'two failed status reads while the provider is down',
    );
    stack.sim = await startSim({
      host: '127.0.0.1',
      port,
      adminToken: 'admin-test',
      allowFaultHeader: false,
      accounts: [
        { name: 'acme', apiKeys: [KEYS.acme], profile: {} },
        { name: 'globex', apiKeys: [KEYS.globex] },
      ],
      logger: false,
    });
    const row = await waitFor(async () => {
      const r = await stack.store.jobs.get(ref.jobId);
      return r && !['pending', 'submitting', 'unknown'].includes(r.state) ? r : undefined;
    }, 60_000);
    expect(during.state).toBe('pending');
    expect(row.state).toBe('expired');
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(0);
    expect(submitsBefore).toBe(1);
  }, 120_000);
});
