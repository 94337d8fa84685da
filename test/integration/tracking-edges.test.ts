/**
 * The tracking loop at the edges of its policy, against the reference provider on a real stack:
 * a heartbeat timeout at its smallest allowed value still sees its heartbeats (no attempt times
 * out), and a schedule learned from a provider key whose recent jobs ran far longer than this
 * job's deadline still checks the job before that deadline. The third edge, a wait longer than a
 * timer can hold, is `timerDelayMs` (unit-tested below, since waiting weeks is not a test).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, timerDelayMs } from '../../src/activities/tracking/track.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startProviderScenario, type Scenario } from '../fixtures/providers/harness.js';
import { startReferenceFixture, type ReferenceFixture } from '../fixtures/providers/reference/server.js';

let pages: PageServer;
let s: Scenario<ReferenceFixture>;
const BASE = { jitter: 0, activityTimeoutMs: 5_000, cancelConfirmDeadlineMs: 10_000 };

beforeAll(async () => {
  pages = await startPageServer();
  s = await startProviderScenario<ReferenceFixture>({
    kind: 'reference',
    fixture: () => startReferenceFixture({ profile: { concurrency: 16, minRunMs: 25_000 } }),
    entry: (fx) => ({
      baseUrl: fx.url,
      readTimeoutMs: 3_000,
      submitTimeoutMs: 3_000,
      capabilities: { idempotency: true, list: true, cancel: true, webhooks: false },
    }),
  });
}, 120_000);
afterAll(async () => {
  await s?.stop();
  await pages?.close();
});

describe('tracking at the edges of its policy', () => {
  it('a 10-s heartbeat timeout (the smallest allowed) with 12-s gaps: no attempt times out, the job completes', async () => {
    const ref = await s.start({
      url: pages.pageUrl('001'),
      key: 'edge-heartbeat',
      policy: {
        ...BASE,
        initialDelayMs: 12_000,
        maxDelayMs: 12_000,
        multiplier: 1,
        fastPathMs: 0,
        pollHeartbeatTimeoutMs: 10_000,
        deadlineMs: 600_000,
      },
    });
    const row = await s.waitFor(ref.jobId, ['completed'], 120_000);
    expect(row.status_checks).toBeGreaterThanOrEqual(2);
    const history = await s.temporal.workflow.getHandle(ref.jobId).fetchHistory();
    const timedOut = (history.events ?? []).filter((e) => e.activityTaskTimedOutEventAttributes);
    expect(timedOut).toHaveLength(0);
  }, 180_000);

  it('learnSchedule on a key whose recent jobs took 2 h: the plan gives way before the job’s 60-s deadline, the job completes', async () => {
    const seed = await s.start({
      url: pages.pageUrl('002'),
      key: 'edge-seed',
      policy: { ...BASE, initialDelayMs: 500, maxDelayMs: 2_000, deadlineMs: 60_000 },
    });
    const row = await s.waitFor(seed.jobId, ['completed'], 90_000);
    // Completions of the same provider key that ran for 2 hours (another account's long crawls).
    for (let i = 0; i < 40; i++) {
      const fin = new Date(Date.now() - i * 1_000);
      await s.store.db
        .insertInto('jobs')
        .values({
          ...row,
          id: `${row.id}-long${i}`,
          task_id: `long-${i}`,
          idem_key: `${row.idem_key}-long${i}`,
          submitted_at: new Date(fin.getTime() - 7_200_000).toISOString(),
          finished_at: fin.toISOString(),
        })
        .execute();
    }
    expect((await s.store.polling.recentDurations(row.provider_key!)).length).toBeGreaterThanOrEqual(40);
    const ref = await s.start({
      url: pages.pageUrl('003-metadata-preferred'),
      key: 'edge-learned',
      policy: { ...BASE, initialDelayMs: 500, maxDelayMs: 2_000, deadlineMs: 60_000, learnSchedule: true },
    });
    const end = await s.waitFor(ref.jobId, ['completed', 'tracking_interrupted', 'failed'], 120_000);
    expect(end.state).toBe('completed');
    expect(end.status_checks).toBeGreaterThan(0);
  }, 240_000);

  it('a wait longer than one timer can hold is cut to the longest a timer holds, never fired at once', () => {
    expect(timerDelayMs(30 * 86_400_000)).toBe(MAX_TIMER_MS);
    expect(timerDelayMs(-5)).toBe(0);
    expect(timerDelayMs(1_234)).toBe(1_234);
  });
});
