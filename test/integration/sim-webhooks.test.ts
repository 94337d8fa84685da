/**
 * The reference provider's webhooks: a submit with `webhook {url, secret}` gets a signed
 * POST per final status, retried with backoff after a failure, lost with `drop_webhook`, delivered
 * twice with `duplicate_webhook`; every attempt is counted. A real sim and a real HTTP receiver
 * on loopback.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifySha256Signature } from '../../src/api/webhooks.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startSim, type Sim } from '../../tools/sim/index.js';
import { waitFor } from '../helpers/stack.js';

interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
}

let sim: Sim;
let pages: PageServer;
let receiver: http.Server;
let receiverUrl: string;
let received: Received[] = [];
/** Status codes to answer, in order; 200 once exhausted. */
let answers: number[] = [];
const SECRET = 'whsec-test-0123456789';
const KEY = 'sk-sim-webhooks-0123456789';

beforeAll(async () => {
  pages = await startPageServer();
  sim = await startSim({
    accounts: [{ name: 'acme', apiKeys: [KEY], profile: { concurrency: 10 } }],
    webhookRetryDelaysMs: [100, 300],
  });
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ at: Date.now(), headers: req.headers, raw: Buffer.concat(chunks) });
      res.statusCode = answers.shift() ?? 200;
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await sim?.close();
  await pages?.close();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
});

beforeEach(() => {
  sim.reset();
  received = [];
  answers = [];
});

async function submit(url: string, webhook: Record<string, unknown>): Promise<string> {
  const r = await fetch(`${sim.url}/api/scrape`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, client_ref: 'ref-1', webhook }),
  });
  expect(r.status).toBe(202);
  return ((await r.json()) as { job_id: string }).job_id;
}

describe('sim webhooks', () => {
  it('POSTs a signed job.completed event with the event ID header; the secret is never shown', async () => {
    const jobId = await submit(pages.pageUrl('001'), { url: receiverUrl, secret: SECRET });
    await sim.waitForJob(jobId);
    await waitFor(() => received.length === 1, 5_000, 'one delivery');
    const d = received[0]!;
    const event = JSON.parse(d.raw.toString()) as Record<string, unknown>;
    expect(event).toMatchObject({ type: 'job.completed', job_id: jobId, client_ref: 'ref-1', status: 'completed' });
    expect(event.event_id).toMatch(/^evt_/);
    expect(d.headers['x-sim-event-id']).toBe(event.event_id);
    expect(d.headers['x-sim-delivery-attempt']).toBe('1');
    expect(d.headers['content-type']).toBe('application/json');
    expect(verifySha256Signature(d.raw, d.headers['x-sim-signature'] as string, SECRET)).toBe(true);
    expect(verifySha256Signature(d.raw, d.headers['x-sim-signature'] as string, 'another-secret')).toBe(false);
    const stats = sim.stats();
    expect(stats.webhooks).toMatchObject({
      events: 1,
      attempts: 1,
      delivered: 1,
      failedAttempts: 0,
      dropped: 0,
      duplicates: 0,
    });
    expect(stats.jobs[0]!.webhook_url).toBe(receiverUrl);
    expect(JSON.stringify(stats)).not.toContain(SECRET);
    expect(JSON.stringify(sim.getJob(jobId))).not.toContain(SECRET);
  });

  it('without a secret there is no signature; `events` can ask for running too', async () => {
    const jobId = await submit(pages.pageUrl('002'), { url: receiverUrl, events: ['running', 'completed'] });
    await sim.waitForJob(jobId);
    await waitFor(() => received.length === 2, 5_000, 'two deliveries');
    expect(received.map((r) => (JSON.parse(r.raw.toString()) as { type: string }).type)).toEqual([
      'job.running',
      'job.completed',
    ]);
    expect(received.every((r) => r.headers['x-sim-signature'] === undefined)).toBe(true);
  });

  it('retries a failed delivery after each configured delay, with the same event and signature, then gives up', async () => {
    answers = [500, 503];
    const jobId = await submit(pages.pageUrl('001'), { url: receiverUrl, secret: SECRET });
    await sim.waitForJob(jobId);
    await waitFor(() => received.length === 3, 5_000, 'three attempts');
    expect(received.map((r) => r.headers['x-sim-delivery-attempt'])).toEqual(['1', '2', '3']);
    expect(new Set(received.map((r) => r.raw.toString())).size).toBe(1);
    expect(new Set(received.map((r) => r.headers['x-sim-signature'])).size).toBe(1);
    expect(received[1]!.at - received[0]!.at).toBeGreaterThanOrEqual(90);
    expect(received[2]!.at - received[1]!.at).toBeGreaterThanOrEqual(290);
    expect(sim.stats().webhooks).toMatchObject({
      events: 1,
      attempts: 3,
      delivered: 1,
      failedAttempts: 2,
      exhausted: 0,
    });

    received = [];
    answers = [500, 500, 500];
    const second = await submit(pages.pageUrl('002'), { url: receiverUrl });
    await sim.waitForJob(second);
    await waitFor(() => sim.stats().webhooks.exhausted === 1, 5_000, 'the delivery to be given up');
    expect(received).toHaveLength(3);
  });

  it('a refused connection counts as a failed attempt', async () => {
    const jobId = await submit(pages.pageUrl('001'), { url: 'http://127.0.0.1:9/closed' });
    await sim.waitForJob(jobId);
    await waitFor(() => sim.stats().webhooks.exhausted === 1, 5_000, 'the delivery to be given up');
    expect(sim.stats().webhooks.log.map((a) => a.outcome)).toEqual(['network_error', 'network_error', 'network_error']);
  });

  it('drop_webhook loses the events; duplicate_webhook delivers each twice with the same event ID', async () => {
    sim.faults.add({ urlContains: '/pages/001/', action: 'drop_webhook' });
    sim.faults.add({ urlContains: '/pages/002/', action: 'duplicate_webhook' });
    const dropped = await submit(pages.pageUrl('001'), { url: receiverUrl, secret: SECRET });
    const doubled = await submit(pages.pageUrl('002'), { url: receiverUrl, secret: SECRET });
    await sim.waitForJob(dropped);
    await sim.waitForJob(doubled);
    await waitFor(() => received.length === 2, 5_000, 'two deliveries');
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toHaveLength(2);
    const events = received.map((r) => JSON.parse(r.raw.toString()) as { event_id: string; job_id: string });
    expect(events.every((e) => e.job_id === doubled)).toBe(true);
    expect(events[0]!.event_id).toBe(events[1]!.event_id);
    expect(sim.stats().webhooks).toMatchObject({ events: 2, dropped: 1, duplicates: 1, delivered: 2 });
    expect(sim.getJob(dropped)?.faults).toContain('drop_webhook');
  });

  it('rejects an invalid webhook in the submit body with the reason', async () => {
    const r = await fetch(`${sim.url}/api/scrape`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: pages.pageUrl('001'), webhook: { url: 'ftp://x', color: 'red' } }),
    });
    expect(r.status).toBe(400);
    const body = JSON.stringify(await r.json());
    expect(body).toContain('webhook');
    expect(body).toContain('color');
    expect(sim.stats().jobsCreated.total).toBe(0);
  });
});
