/**
 * The HTTP API's `/metrics` (`observability.metrics.apiPort`, its own listener): started by
 * `startApi` from a configuration file, it serves our series — jobs by state from the store,
 * webhook deliveries by outcome — and process metrics, and not on the API's public port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/api/auth.js';
import { startApi, type RunningApi } from '../../src/api/main.js';
import { FAST_POLICY, startStack, waitForState, type Stack } from '../helpers/stack.js';
import { fixturePageNames, startPageServer, type PageServer } from '../helpers/pages.js';

const KEY = 'sk_scrape_test_metrics_0123456789abcdef0123456';
let stack: Stack;
let api: RunningApi;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack();
  process.env.SCRAPE_API_METRICS_PORT = '0';
  process.env.SCRAPE_API_KEYS = JSON.stringify({ keys: [{ account: 'acme', sha256: hashApiKey(KEY) }] });
  api = await startApi({ configFile: stack.configFile, host: '127.0.0.1', port: 0, logger: false });
});

afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await pages?.close();
  delete process.env.SCRAPE_API_METRICS_PORT;
  delete process.env.SCRAPE_API_KEYS;
});

describe('API /metrics', () => {
  it('serves jobs by state and webhook outcomes on its own port', async () => {
    const r = await fetch(`${api.url}/v1/scrapes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': 'metrics-1' },
      body: JSON.stringify({ url: pages.pageUrl(fixturePageNames()[0]!), policy: FAST_POLICY }),
    });
    expect(r.status).toBe(202);
    const { job_id } = (await r.json()) as { job_id: string };
    await waitForState(stack.store, job_id, ['completed'], 60_000);
    await fetch(`${api.url}/v1/webhooks/reference`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    // The per-job token route counts its deliveries too.
    const byToken = await fetch(`${api.url}/v1/webhooks/reference/not-a-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(byToken.status).toBe(404);

    expect(api.metricsUrl).toBeDefined();
    const text = await (await fetch(`${api.metricsUrl}/metrics`)).text();
    expect(text).toMatch(/scrape_jobs\{state="completed"\} [1-9]/);
    // This API takes no webhooks of the reference kind: both deliveries are refused, and both counted.
    expect(text).toContain('scrape_webhook_deliveries_total{provider="reference",outcome="unknown_provider"} 2');
    expect(text).toContain('scrape_process_cpu_seconds_total');
    expect(text).not.toContain(job_id);
    expect((await fetch(`${api.url}/metrics`)).status).not.toBe(200);
  }, 120_000);
});
