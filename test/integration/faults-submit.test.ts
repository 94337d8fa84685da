/**
 * Ambiguous submits: the provider commits the job and the connection drops before the
 * 202 reaches us. With idempotency (replay under the same key) or a list endpoint (lookup by
 * client reference) the job is reconciled with exactly one provider job; without either it waits
 * in `unknown` until an operator resolves it, with zero duplicates. Also: the idempotency key
 * contract (scope, conflict, repeat of a finished request) and incident evidence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

function events(stack: Stack, jobId: string) {
  return stack.store.findings.timeline(jobId).then((t) => t.map((e) => e.type));
}

describe.each([
  {
    name: 'idempotency key replay',
    profile: { concurrency: 8, idempotency: true, list: false },
    via: 'idempotent-replay',
  },
  { name: 'lookup by client reference', profile: { concurrency: 8, idempotency: false, list: true }, via: 'list' },
])('a dropped 202 after commit, reconciled by $name', ({ profile, via }) => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile });
  });
  afterAll(async () => stack?.stop());

  it('creates exactly one provider job and completes with it', async () => {
    const tag = `drop-${via}`;
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'drop_after_commit',
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('ars-1')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 60_000);
    expect(row.state).toBe('completed');
    const jobs = stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.job_id);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
    const types = await events(stack, ref.jobId);
    expect(types).toContain('submit_ambiguous');
    const adopted = (await stack.store.findings.timeline(ref.jobId)).find((e) => e.type === 'task_recorded');
    expect(JSON.parse(adopted!.detail!).source).toMatch(via === 'list' ? /client reference/ : /idempotent replay/);
  });
});

describe('a dropped 202 on a provider with no idempotency and no list endpoint', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8, idempotency: false, list: false } });
  });
  afterAll(async () => stack?.stop());

  it('waits in unknown, visible to operators, until resolved with the task ID: zero duplicates', async () => {
    const tag = 'drop-unresolvable';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'drop_after_commit',
      times: 1,
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnet')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitFor(
      async () => (await stack.client.getLiveView('acme', ref.jobId)).note?.includes('waiting for an operator'),
      30_000,
      'the operator note',
    );
    // Visible: store, search attribute, live view; and it stays there (no silent resubmit).
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await stack.store.jobs.get(ref.jobId))?.state).toBe('unknown');
    const desc = await stack.temporal.workflow.getHandle(ref.jobId).describe();
    expect(desc.searchAttributes.ScrapeState).toEqual(['unknown']);
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(1);
    const listed = await stack.client.list('acme', { states: ['unknown'] });
    expect(listed.map((j) => j.jobId)).toContain(ref.jobId);

    // The operator finds the task at the provider and hands it over (Update `resolve`).
    const created = stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag));
    expect(created).toHaveLength(1);
    const view = await stack.client.resolve('acme', ref.jobId, { taskId: created[0]!.job_id, by: 'test-operator' });
    expect(view.taskId).toBe(created[0]!.job_id);
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 30_000);
    expect(row.state).toBe('completed');
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
    expect(stack.sim.stats().requests.byEndpoint.submit).toBe(1);
    expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
  });

  it('an explicit operator resubmit sends exactly one new submit under the same key', async () => {
    const tag = 'drop-before-commit';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'drop_before_commit',
      times: 1,
    });
    const submitsBefore = stack.sim.stats().requests.byEndpoint.submit;
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('cnn')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['unknown'], 30_000);
    await waitFor(
      async () => (await stack.client.getLiveView('acme', ref.jobId)).note?.includes('waiting for an operator'),
      30_000,
      'the operator note',
    );
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(0); // the operator checked: nothing there
    await expect(
      stack.client.resolve('acme', ref.jobId, { taskId: 'x', resubmit: true } as never),
    ).rejects.toMatchObject({ code: 'conflict' });
    await stack.client.resolve('acme', ref.jobId, { resubmit: true, by: 'test-operator' });
    const row = await waitForState(stack.store, ref.jobId, ['completed', 'failed'], 30_000);
    expect(row.state).toBe('completed');
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.includes(tag))).toHaveLength(1);
    expect(stack.sim.stats().requests.byEndpoint.submit - submitsBefore).toBe(2);
  });

  it('resolving a job that is not unknown is refused', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('002'),
      key: 'not-unknown',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed']);
    await expect(stack.client.resolve('acme', ref.jobId, { resubmit: true })).rejects.toMatchObject({
      code: expect.stringMatching(/conflict|not_found/),
    });
  });
});

describe('idempotency key contract and evidence', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ profile: { concurrency: 8 } });
  });
  afterAll(async () => stack?.stop());

  it('keys are scoped to the account: the same key in two accounts is two jobs', async () => {
    const [a, b] = await Promise.all([
      stack.client.startScrape({ account: 'acme', url: pages.pageUrl('001'), key: 'shared-key', policy: FAST_POLICY }),
      stack.client.startScrape({
        account: 'globex',
        url: pages.pageUrl('001'),
        key: 'shared-key',
        policy: FAST_POLICY,
      }),
    ]);
    expect(a.jobId).not.toBe(b.jobId);
    await waitForState(stack.store, a.jobId, ['completed']);
    await waitForState(stack.store, b.jobId, ['completed']);
    expect(stack.sim.jobsFor('acme').filter((j) => j.url.endsWith('/001/'))).toHaveLength(1);
    expect(stack.sim.jobsFor('globex').filter((j) => j.url.endsWith('/001/'))).toHaveLength(1);
    await expect(stack.client.getScrape('globex', a.jobId)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a repeat of a finished request returns the existing job and result, creating nothing', async () => {
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('tumblr'),
      key: 'finished',
      policy: FAST_POLICY,
    });
    await waitForState(stack.store, ref.jobId, ['completed']);
    const before = stack.sim.stats().jobsCreated.total;
    const again = await stack.client.startScrape({
      account: 'acme',
      url: pages.pageUrl('tumblr'),
      key: 'finished',
      policy: FAST_POLICY,
    });
    expect(again).toMatchObject({ jobId: ref.jobId, created: false });
    expect((await stack.client.getResult('acme', again.jobId)).title).toBeTruthy();
    expect(stack.sim.stats().jobsCreated.total).toBe(before);
    await expect(
      stack.client.startScrape({ account: 'acme', url: pages.pageUrl('herald-sun-1'), key: 'finished' }),
    ).rejects.toMatchObject({ code: 'conflict' });
  });

  it('a provider-reported failure keeps the provider error code and the complete sanitised response as an incident', async () => {
    const tag = 'fail-evidence';
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: tag,
      action: 'fail_job',
      code: 'TARGET_BLOCKED',
      message: 'target refused the crawler',
    });
    const ref = await stack.client.startScrape({
      account: 'acme',
      url: `${pages.pageUrl('aclu')}?${tag}`,
      key: tag,
      policy: FAST_POLICY,
    });
    const row = await waitForState(stack.store, ref.jobId, ['failed', 'completed'], 30_000);
    expect(row.state).toBe('failed');
    expect(JSON.parse(row.last_error!)).toMatchObject({ kind: 'provider_failed', code: 'TARGET_BLOCKED' });
    const incidents = await stack.client.incidents('acme', ref.jobId);
    expect(incidents).toHaveLength(1);
    const i = incidents[0]!;
    expect(i).toMatchObject({ phase: 'status', kind: 'provider_failed', code: 'TARGET_BLOCKED', httpStatus: 200 });
    expect(i.endpoint).toMatch(/^GET http:\/\/127\.0\.0\.1:\d+\/api\/jobs\//);
    expect(i.at).toMatch(/Z$/);
    expect(i.response).toMatchObject({ status: 'failed', error: { code: 'TARGET_BLOCKED' } });
    expect(JSON.stringify(incidents)).not.toContain('sk-test-acme');
  });

  it('a 401 leaves an incident with endpoint, status, UTC time and request options, without credentials', async () => {
    const bad = await startStack({ profile: {} });
    try {
      (bad.config.providers.reference!.credentials!.default as { apiKey: string }).apiKey = 'sk-wrong-key-0000000000';
      await bad.stopWorker();
      await bad.startWorker();
      const ref = await bad.client.startScrape({
        account: 'acme',
        url: pages.pageUrl('cnn'),
        key: 'auth-incident',
        policy: FAST_POLICY,
      });
      await waitForState(bad.store, ref.jobId, ['failed'], 20_000);
      const [i] = await bad.client.incidents('acme', ref.jobId);
      expect(i).toMatchObject({ phase: 'submit', kind: 'permanent', httpStatus: 401, code: 'UNAUTHORIZED' });
      expect(i!.endpoint).toMatch(/^POST .*\/api\/scrape$/);
      expect(i!.request).toMatchObject({ url: pages.pageUrl('cnn'), format: 'markdown' });
      expect(JSON.stringify(i)).not.toContain('sk-wrong-key');
    } finally {
      await bad.stop();
    }
  });
});
