/**
 * A task belongs to one job across every provider entry that reaches the same provider account.
 * ScraperAPI's status URL needs no key, so two entries with different credentials on one ScraperAPI
 * host reach the same tasks (the kind's evidence declares its tasks scoped by host). Real workflow,
 * real dev server, real SQLite store, the kind's fixture
 * (`test/fixtures/providers/scraperapi/server.ts`) behind two entries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import { FIXTURE_KEYS, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';
import { startScraperApiFixture, type ScraperApiFixture } from '../../fixtures/providers/scraperapi/server.js';

let pages: PageServer;
let s: Scenario<ScraperApiFixture>;
beforeAll(async () => {
  pages = await startPageServer();
  s = await startProviderScenario<ScraperApiFixture>({
    kind: 'scraperapi',
    fixture: () => startScraperApiFixture(),
    entry: (f) => ({ baseUrl: f.url, readTimeoutMs: 3_000, submitTimeoutMs: 3_000 }),
    // A second entry on the same host with another credential: another team's entry, say.
    extraEntries: (f) => ({
      scraperapi_b: {
        baseUrl: f.url,
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
        credentials: { default: { apiKey: FIXTURE_KEYS.globex } },
      },
    }),
  });
});
afterAll(async () => {
  await s?.stop();
  await pages?.close();
});

describe('scraperapi: two entries on one host', () => {
  it('resolve of account B’s unknown job with account A’s task from the other entry is refused and audited; B’s own task is then adopted', async () => {
    const a = await s.start({ url: `${pages.pageUrl('heise')}?owner-a`, key: 'owner-a' });
    expect((await s.waitFor(a.jobId, ['completed', 'failed'])).state).toBe('completed');
    const taskOfA = (await s.store.jobs.get(a.jobId))!.task_id!;

    s.fixture.rule('owner-b', { kind: 'hold' });
    s.fixture.rule('owner-b', { kind: 'drop_after_commit' }, 1);
    const b = await s.start({
      url: `${pages.pageUrl('heise')}?owner-b`,
      key: 'owner-b',
      account: 'globex',
      provider: 'scraperapi_b',
    });
    await s.waitFor(b.jobId, ['unknown']);

    await expect(s.client.resolve('globex', b.jobId, { taskId: taskOfA, by: 'operator-1' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/already belongs to another job/),
    });
    expect((await s.store.jobs.get(b.jobId))!).toMatchObject({ state: 'unknown', task_id: null });
    const audit = (await s.store.findings.timeline(b.jobId)).find((e) => e.type === 'operator_resolve')!;
    expect(JSON.parse(audit.detail!)).toMatchObject({
      by: 'operator-1',
      taskId: taskOfA,
      outcome: 'refused',
      evidence: { boundTo: 'a job of another account' },
    });
    // The timeline of B’s account does not name A’s job (its ID carries A’s account and key).
    expect(JSON.stringify(await s.store.findings.timeline(b.jobId))).not.toContain(a.jobId);
    // A's job and its result are untouched: B never reads A's page.
    expect((await s.store.jobs.get(a.jobId))!.task_id).toBe(taskOfA);
    expect(await s.store.results.forJob(b.jobId)).toBeFalsy();

    const created = s.fixture.jobsWith('owner-b');
    expect(created).toHaveLength(1);
    await s.client.resolve('globex', b.jobId, { taskId: created[0]!.id, by: 'operator-1' });
    await s.fixture.finish(created[0]!.id);
    expect((await s.waitFor(b.jobId, ['completed', 'failed'])).state).toBe('completed');
    await waitFor(
      async () => (await s.store.jobs.get(b.jobId))!.task_id === created[0]!.id,
      10_000,
      'B bound to its own task',
    );
  });
});
