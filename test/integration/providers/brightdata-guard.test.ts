/**
 * Bright Data's IP block (25 × 429 in 5 minutes block the caller's IP) counted in the store, for
 * every worker on the same API host: refusals another worker recorded (or this one, before a
 * restart: the worker's memory is empty) hold this worker's calls until they leave the window, and
 * every 429 this worker meets is recorded for the others. Real workflow, real dev server, real
 * SQLite store, the kind's fixture (`test/fixtures/providers/brightdata/server.ts`, which blocks
 * the IP as documented).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import {
  BRIGHTDATA_FIXTURE_DATASET,
  startBrightDataFixture,
  type BrightDataFixture,
} from '../../fixtures/providers/brightdata/server.js';
import { SCENARIO_POLICY, startProviderScenario, waitFor, type Scenario } from '../../fixtures/providers/harness.js';

const WINDOW_MS = 300_000;
const MAX_REFUSALS = 5;
const MAX_CONCURRENT = 2;
/** Latency allowed between a hold ending and the next request reaching the fixture, ms. */
const MARGIN_MS = 150;

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

function brightdata() {
  return startProviderScenario<BrightDataFixture>({
    kind: 'brightdata',
    fixture: () => startBrightDataFixture(),
    entry: (f) => ({
      baseUrl: f.url,
      readTimeoutMs: 5_000,
      submitTimeoutMs: 3_000,
      datasetId: BRIGHTDATA_FIXTURE_DATASET,
      rateLimit: { maxRefusals: MAX_REFUSALS, windowMs: WINDOW_MS, backoffMs: 500, maxBackoffMs: 2_000 },
      limits: { maxConcurrent: MAX_CONCURRENT },
    }),
  });
}

/** The store scope of the fixture's API host. */
const scopeOf = (s: Scenario<BrightDataFixture>) => `brightdata@${new URL(s.fixture.url).host}`;

/** True once the job's timeline shows a submit held back without calling Bright Data. */
async function heldBack(s: Scenario<BrightDataFixture>, jobId: string): Promise<boolean> {
  return (await s.store.findings.timeline(jobId)).some(
    (e) => e.type === 'submit_rejected' && /IP_BLOCK_GUARD|LOCAL_COOLDOWN/.test(e.detail ?? ''),
  );
}

/** True for a rejection that held the submit back without calling Bright Data, for at least a minute. */
function heldForMinutes(detail: string | null | undefined): boolean {
  if (!detail || !/IP_BLOCK_GUARD|LOCAL_COOLDOWN/.test(detail)) return false;
  const ms = /in (\d+) ms/.exec(detail)?.[1] ?? (Number(/for (\d+) s/.exec(detail)?.[1] ?? 0) * 1000).toString();
  return Number(ms) >= 60_000;
}

describe('brightdata: 429s recorded by another worker hold this one', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata();
  });
  afterAll(async () => s?.stop());

  it('with maxRefusals 429s of this host in the store and none in memory, no call reaches Bright Data until the oldest leaves the window; then the jobs complete', async () => {
    // Another worker's refusals, the oldest leaving the window in 6 s.
    const oldest = Date.now() - WINDOW_MS + 6_000;
    for (let i = 0; i < MAX_REFUSALS; i++) await s.store.providerKeys.recordRefusal(scopeOf(s), oldest + i * 100, 0);
    const refs = await Promise.all(
      [1, 2, 3].map((i) => s.start({ url: `${pages.pageUrl('001')}?held=${i}`, key: `held-${i}` })),
    );
    await waitFor(
      async () => (await Promise.all(refs.map((r) => heldBack(s, r.jobId)))).some(Boolean),
      30_000,
      'a submit held back by the guard',
    );
    for (const r of refs) await s.waitFor(r.jobId, ['completed'], 60_000);
    const first = s.fixture.requests[0]!;
    expect(first.at).toBeGreaterThanOrEqual(oldest + WINDOW_MS - MARGIN_MS);
    expect(s.fixture.refusals).toEqual([]);
    expect(s.fixture.snapshotsWith('held=')).toHaveLength(3);
  });
});

describe('brightdata: every 429 is recorded for the other workers', () => {
  let s: Scenario<BrightDataFixture>;
  beforeAll(async () => {
    s = await brightdata();
  });
  afterAll(async () => s?.stop());

  it('a storm of 429s: each is in the store; the window never holds more than maxRefusals + maxConcurrent − 1; the IP is never blocked', async () => {
    s.fixture.rule('storm', { kind: 'rate_limit' });
    const policy = { ...SCENARIO_POLICY, deadlineMs: 900_000 };
    const refs = await Promise.all(
      [1, 2, 3, 4].map((i) => s.start({ url: `${pages.pageUrl('002')}?storm=${i}`, key: `storm-${i}`, policy })),
    );
    await waitFor(() => s.fixture.refusals.length >= MAX_REFUSALS, 60_000, `${MAX_REFUSALS} refusals`);
    // Every job now waits for the window to clear (minutes): its last attempt was held without a
    // call, or was refused once the window was full (that refusal's retry waits for the guard too).
    const filled = s.fixture.refusals[MAX_REFUSALS - 1]!;
    await waitFor(
      async () => {
        const t = await Promise.all(refs.map((r) => s.store.findings.timeline(r.jobId)));
        return t.every((events) => {
          const last = events.filter((e) => e.type === 'submit_rejected').at(-1);
          return (
            last !== undefined &&
            (heldForMinutes(last.detail) ||
              (Date.parse(last.at) >= filled && /"httpStatus":429/.test(last.detail ?? '')))
          );
        });
      },
      60_000,
      'every job held until the window clears',
    );
    expect(s.fixture.refusals.length).toBeLessThanOrEqual(MAX_REFUSALS + MAX_CONCURRENT - 1);
    await waitFor(
      async () => (await s.store.providerKeys.refusalsSince(scopeOf(s), 0)).length === s.fixture.refusals.length,
      10_000,
      'each 429 in the store',
    );
    expect(s.fixture.ipBlocked()).toBe(false);
    expect(s.fixture.snapshotsWith('storm')).toHaveLength(0);
  });
});
