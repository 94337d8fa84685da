/**
 * Answers that come late, on the reference provider through the real workflow: a replay under our
 * idempotency key answered after its reconcile attempt ended is waited for and adopted, never left
 * to an operator; and a task the store records while the job already waits for an operator (an
 * answer that came after the reconcile was decided) is adopted once the orphan scan wakes the job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMaintenanceActivities } from '../../../src/activities/maintenance.js';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import { startProviderScenario, type Scenario } from '../../fixtures/providers/harness.js';
import { startReferenceFixture, type ReferenceFixture } from '../../fixtures/providers/reference/server.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

/** A reference scenario whose entry has `capabilities` and a submit timeout of `submitTimeoutMs`. */
function scenario(capabilities: { idempotency: boolean; list: boolean }, submitTimeoutMs: number) {
  return startProviderScenario<ReferenceFixture>({
    kind: 'reference',
    fixture: () => startReferenceFixture({ profile: { concurrency: 8, ...capabilities } }),
    entry: (fx) => ({
      baseUrl: fx.url,
      readTimeoutMs: 3_000,
      submitTimeoutMs,
      capabilities: { ...capabilities, cancel: true, webhooks: false },
    }),
  });
}

describe('a replay under our key answered after its reconcile attempt ended', () => {
  let s: Scenario<ReferenceFixture>;
  beforeAll(async () => {
    s = await scenario({ idempotency: true, list: false }, 25_000);
  });
  afterAll(async () => s?.stop());

  it('is waited for until its own submit timeout and adopted from the store: one provider job, no operator, completed once', async () => {
    const { sim } = s.fixture;
    const submits: number[] = [];
    sim.events.on('response', (e) => {
      if (e.endpoint === 'submit' && e.path.includes('api/jobs')) submits.push(e.at);
    });
    // The submit's answer is lost, and so is the first replay's. The next replay is answered
    // 23.5 s after it arrives: after the submit's own 25-s timeout counted from the intent (which
    // the reconcile waits out anyway), within the replay's own.
    sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'late-replay',
      action: 'drop_after_commit',
      times: 2,
    });
    sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'late-replay',
      action: 'delay',
      commit: true,
      delayMs: 23_500,
      times: 5,
    });
    const ref = await s.start({ url: `${pages.pageUrl('cnet')}?late-replay`, key: 'late-replay' });
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 90_000);
    expect(row.state).toBe('completed');
    const jobs = sim.jobsFor('acme').filter((j) => j.url.includes('late-replay'));
    expect(jobs).toHaveLength(1);
    expect(row.task_id).toBe(jobs[0]!.job_id);
    const timeline = await s.store.findings.timeline(ref.jobId);
    const types = timeline.map((e) => e.type);
    expect(types).not.toContain('reconcile_undecided'); // never handed to an operator
    expect(types).toContain('reconcile_replay_sent');
    const recorded = timeline.find((e) => e.type === 'task_recorded')!;
    expect(JSON.parse(recorded.detail!).source).toMatch(/answered late/);
    // The attempts after the second replay wait for it instead of sending more.
    expect(types.filter((t) => t === 'reconcile_replay_sent')).toHaveLength(2);
    expect(types.filter((t) => t === 'reconcile_replay_lost')).toHaveLength(1);
    expect((await s.outcome(ref.jobId)).results).toBe(1);
  }, 120_000);
});

describe('a task recorded in the store while the job waits for an operator', () => {
  let s: Scenario<ReferenceFixture>;
  beforeAll(async () => {
    s = await scenario({ idempotency: false, list: false }, 3_000);
  });
  afterAll(async () => s?.stop());

  it('is adopted once the orphan scan wakes the job: completed once, and the finding says why', async () => {
    const { sim } = s.fixture;
    sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: 'late-bound',
      action: 'drop_after_commit',
      times: 1,
    });
    const ref = await s.start({ url: `${pages.pageUrl('tumblr')}?late-bound`, key: 'late-bound' });
    await s.waitForOperator(ref.jobId);
    const job = sim.jobsFor('acme').find((j) => j.url.includes('late-bound'))!;
    // A refused resolution first (a task the provider does not know): the job keeps waiting.
    await expect(s.client.resolve('acme', ref.jobId, { taskId: 'job_no-such-task', by: 'vitest' })).rejects.toThrow();
    // What a submit answer that arrives after the decision writes: the task, bound to this job.
    const bound = await s.store.jobs.bindTask({
      jobId: ref.jobId,
      taskId: job.job_id,
      providerStatus: 'queued',
      source: 'submit',
    });
    expect(bound).toMatchObject({ kind: 'bound', recorded: true });
    expect((await s.client.getLiveView('acme', ref.jobId)).state).toBe('unknown'); // the workflow has not seen it
    const maintenance = createMaintenanceActivities({ store: s.store, temporal: s.temporal });
    const report = await maintenance.scanOrphans({ stalledAfterMs: 0, errorThreshold: 3 });
    expect(report.stalled).toBeGreaterThanOrEqual(1);
    const finding = (await s.store.findings.orphans('acme')).find((o) => o.job_id === ref.jobId)!;
    expect(finding.suggestion).toContain(`task ${job.job_id} was recorded after the reconcile was decided without it`);
    const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
    expect(row.state).toBe('completed');
    expect(row.task_id).toBe(job.job_id);
    expect(sim.jobsFor('acme').filter((j) => j.url.includes('late-bound'))).toHaveLength(1);
    expect((await s.outcome(ref.jobId)).results).toBe(1);
  }, 120_000);
});
