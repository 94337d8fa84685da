/**
 * The main path on the production topology: every page of the corpus (obtained through
 * test/material/, see test/integration/pages.test.ts) through two product
 * worker processes (`src/worker.ts`) on the five-process Temporal cluster, result store on
 * PostgreSQL, payloads encrypted. Mid-batch one worker is SIGKILLed and then one of the two
 * history processes: every job still completes, exactly one provider job and one result row per
 * page (0 duplicates, 0 lost). The same keys again create nothing. While the batch runs, each
 * worker's `/metrics` has our series and the SDK's, with no URL, key or job ID in any label; the
 * workers' logs are JSON lines without task tokens or credentials.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCorpusPageServer, type PageServer } from '../helpers/pages.js';
import { corpusPageNames } from '../material/index.js';
import { FAST_POLICY, KEYS, startStack, waitFor, type Stack } from '../helpers/stack.js';
import { alive, controlServer, freshStoreUrl, spawnProductWorker, useCodecEnv, type ProductWorker } from './helpers.js';
import { inject } from 'vitest';

const TITLE_DEVIATIONS: Record<string, string> = {
  'title-en-dash': 'Lorem ipsum dolor sit amet – My website',
  mercurial: 'Shared Mutable History — evolve extension for Mercurial',
};

let stack: Stack;
let pages: PageServer;
const workers: ProductWorker[] = [];
let names: string[] = [];
/**
 * Lenient timeouts: the cluster shares two cores with the tests (the reference provider and the
 * page server run in this process), and two processes are killed mid-batch. `timeout_ms` is the
 * provider's own fetch timeout of the page (the sim's contract; default 30 s). The polling
 * activities of the SIGKILLed worker are retried elsewhere once their heartbeat times out:
 * `pollHeartbeatTimeoutMs` 30 s instead of the default 10 min is what an operator who wants a
 * quick takeover sets, and keeps the run from waiting 10 minutes for them.
 */
const POLICY = { ...FAST_POLICY, deadlineMs: 900_000, activityTimeoutMs: 30_000, pollHeartbeatTimeoutMs: 30_000 };
const OPTIONS = { timeout_ms: 120_000 };
const ENDED = ['completed', 'failed', 'tracking_interrupted', 'cancelled', 'expired'];

async function endedCount(): Promise<number> {
  const rows = await stack.store.jobs.list({ account: 'acme', limit: 1000 });
  return rows.filter((r) => ENDED.includes(r.state)).length;
}

beforeAll(async () => {
  useCodecEnv();
  pages = await startCorpusPageServer();
  stack = await startStack({
    profile: { concurrency: 16 },
    worker: false,
    storeUrl: await freshStoreUrl(),
    codec: true,
    providerTimeoutMs: 20_000,
  });
  workers.push(await spawnProductWorker(stack.configFile), await spawnProductWorker(stack.configFile));
  names = corpusPageNames();
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill('SIGKILL')));
  await stack?.stop();
  await pages?.close();
});

describe('batch of real pages on the cluster', () => {
  it('completes every page once while a worker and a history process are SIGKILLed', async () => {
    const { pids } = inject('cluster');
    const started = Date.now();
    const refs = await Promise.all(
      names.map(async (name) => ({
        name,
        ref: await stack.client.startScrape({
          account: 'acme',
          url: pages.pageUrl(name),
          key: `page-${name}`,
          policy: POLICY,
          options: OPTIONS,
        }),
      })),
    );

    // Mid-batch: /metrics of a running worker, then the two kills.
    await waitFor(async () => (await endedCount()) >= 10, 180_000, '10 jobs to end');
    const metrics = await (await fetch(`${workers[0]!.metricsUrl}/metrics`)).text();
    await workers[0]!.kill('SIGKILL');
    await waitFor(async () => (await endedCount()) >= 30, 180_000, '30 jobs to end');
    await controlServer('kill', 'history-1');
    expect(alive(pids['history-1']!)).toBe(false);
    const killedAt = await endedCount();

    await waitFor(async () => (await endedCount()) >= names.length, 600_000, 'every page job to end');
    const elapsedS = (Date.now() - started) / 1000;

    let exact = 0;
    for (const { name, ref } of refs) {
      const row = await stack.store.jobs.get(ref.jobId);
      expect(row?.state, `${name} (last error: ${row?.last_error ?? 'none'})`).toBe('completed');
      expect(await stack.store.results.count({ jobId: ref.jobId })).toBe(1);
      const result = await stack.client.getResult('acme', ref.jobId);
      const expected = (
        JSON.parse(fs.readFileSync(path.join(pages.pagesDir, name, 'expected-metadata.json'), 'utf8')) as {
          title: string;
        }
      ).title;
      if (result.title === expected) exact++;
      else expect(TITLE_DEVIATIONS[name], `title of ${name}`).toBe(result.title);
    }
    expect(stack.sim.stats().jobsCreated.total).toBe(names.length); // 0 duplicates at the provider
    expect(await stack.store.results.count()).toBe(names.length); // one result row each, 0 lost
    console.log(
      `cluster batch: ${names.length} pages in ${elapsedS.toFixed(1)} s over 2 workers (one SIGKILLed), history-1 SIGKILLed after ${killedAt} jobs ended; exact titles ${exact}/${names.length}`,
    );

    // The series a dashboard needs were there mid-batch, with bounded labels only.
    for (const series of [
      'scrape_provider_requests_total{',
      'scrape_job_transitions_total{state="pending"}',
      'scrape_jobs{state="completed"}',
      'scrape_activity_duration_seconds_bucket{',
      'scrape_provider_request_duration_seconds_bucket{',
      'temporal_',
    ]) {
      expect(metrics, series).toContain(series);
    }
    const labelValues = [...metrics.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]!).join('\n');
    expect(labelValues).not.toMatch(/https?:|127\.0\.0\.1|scrape:acme|page-|job_[0-9a-f]/);
    for (const k of Object.values(KEYS)) expect(metrics).not.toContain(k);
    expect(metrics).toMatch(
      /scrape_provider_requests_total\{provider="reference",endpoint="POST \/api\/scrape",status_code="202"\} \d+/,
    );

    // Worker logs: JSON lines only, no task token, no provider key.
    const log = workers[0]!.log();
    const lines = log.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(log).not.toMatch(/task_?token/i);
    for (const k of Object.values(KEYS)) expect(log).not.toContain(k);

    // Back to full strength for the next tests.
    await controlServer('restart', 'history-1');
    workers[0] = await spawnProductWorker(stack.configFile);
  }, 900_000);

  it('the same keys again create no provider job and no result row', async () => {
    const before = stack.sim.stats().jobsCreated.total;
    const refs = await Promise.all(
      names.map((name) =>
        stack.client.startScrape({
          account: 'acme',
          url: pages.pageUrl(name),
          key: `page-${name}`,
          policy: POLICY,
          options: OPTIONS,
        }),
      ),
    );
    expect(new Set(refs.map((r) => r.jobId)).size).toBe(names.length);
    for (const r of refs) expect((await stack.store.jobs.get(r.jobId))?.state).toBe('completed');
    await new Promise((r) => setTimeout(r, 3_000));
    expect(stack.sim.stats().jobsCreated.total).toBe(before);
    expect(await stack.store.results.count()).toBe(names.length);
  }, 300_000);
});
