/**
 * Provider webhooks as hints, against the real stack: the reference provider (sim) is
 * configured to POST signed events to the API's receiver; jobs poll slowly (`webhooks: true`
 * multiplies the delays by `webhookSlowdown`), so a completion long before the next poll proves
 * the event woke the workflow. Events are also crafted here, signed like the provider signs them.
 */
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerKeys } from '../../src/activities/index.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApiStack, type ApiStack } from '../helpers/api.js';
import { waitFor, waitForState } from '../helpers/stack.js';
import { historyText } from '../helpers/leaks.js';
import { listQuarantine } from '../helpers/storeQueries.js';

/** First status check 30 s × webhookSlowdown 5 = 150 s after submit; no jitter. */
const SLOW: Partial<PollPolicy> = {
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0,
  deadlineMs: 600_000,
  activityTimeoutMs: 5_000,
  cancelConfirmDeadlineMs: 10_000,
};
const FIRST_POLL_MS = 150_000;

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  // Jobs run ≥ 1.5 s, so the workflow is waiting on its (slow) timer when the completion arrives.
  api = await startApiStack({ webhooks: true, profile: { concurrency: 16, minRunMs: 1_500 } });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

const page = (name: string, tag: string) => `${pages.pageUrl(name)}?t=${tag}`;
const simJob = (url: string) => api.stack.sim.stats().jobs.find((j) => j.url === url);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sign(body: string, secret = api.webhookSecret!): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

function deliver(event: Record<string, unknown>, opts: { signature?: string | null } = {}) {
  const body = JSON.stringify(event);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-sim-event-id': String(event.event_id),
  };
  const signature = opts.signature === undefined ? sign(body) : opts.signature;
  if (signature !== null) headers['x-sim-signature'] = signature;
  return api.call(null, 'POST', '/v1/webhooks/reference', { body, headers });
}

async function start(tag: string, key: string): Promise<{ jobId: string; url: string; t0: number }> {
  const url = page('001', tag);
  const t0 = Date.now();
  const r = await api.call('acme', 'POST', '/v1/scrapes', {
    json: { url, policy: SLOW },
    headers: { 'idempotency-key': key },
  });
  expect(r.status).toBe(202);
  return { jobId: ((await r.json()) as { job_id: string }).job_id, url, t0 };
}

describe('provider webhooks', () => {
  it('a signed completion event wakes the job: completed long before its first poll, the provider read only after the event, the duplicate delivery ignored', async () => {
    api.stack.sim.faults.add({ urlContains: 't=wake', action: 'duplicate_webhook' });
    const { jobId, url, t0 } = await start('wake', 'wh-wake-1');
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
    const elapsed = Date.now() - t0;
    // Typically ~2 s (the job runs 1.5 s); bounded generously for a loaded machine, and still far
    // below the first poll.
    expect(elapsed).toBeLessThan(FIRST_POLL_MS / 3);
    // The provider was read only after the event arrived: one woken status check, whose answer
    // carries the authoritative result (the webhook payload is never trusted for the result).
    const reads = simJob(url)!.status_request_times;
    expect(reads).toHaveLength(1);
    const result = await api.call('acme', 'GET', `/v1/scrapes/${encodeURIComponent(jobId)}/result`);
    expect(result.status).toBe(200);
    expect(((await result.json()) as { title: string | null }).title).toBeTruthy();

    // The provider delivered the event twice (same ID); it had one effect.
    const taskId = simJob(url)!.job_id;
    const sent = api.stack.sim.stats().webhooks.log.filter((a) => a.job_id === taskId);
    expect(sent).toHaveLength(2);
    expect(new Set(sent.map((a) => a.event_id)).size).toBe(1);
    expect(sent.every((a) => a.outcome === 200)).toBe(true);
    expect(reads[0]!).toBeGreaterThanOrEqual(Date.parse(sent[0]!.at) - 50);
    const rows = await api.stack.store.webhooks.listDeliveries({ jobId });
    expect(rows.map((r) => [r.event_id, r.outcome])).toEqual([[sent[0]!.event_id, 'woken']]);

    // The workflow was told to poll slowly; the webhook secret is nowhere in its history.
    const text = await historyText(api.stack.temporal, jobId);
    expect(text).toContain('"webhooks":true');
    expect(text).not.toContain(api.webhookSecret!);
  });

  it('a bad signature is 401 and changes nothing; the same valid event 5 times has one effect', async () => {
    api.stack.sim.faults.add({ urlContains: 't=sig', action: 'hold', holdIn: 'running' });
    const { jobId, url } = await start('sig', 'wh-sig-1');
    const row = await waitForState(api.stack.store, jobId, ['pending']);
    const taskId = row.task_id!;
    await api.stack.sim.waitForJob(taskId, { status: 'running' });
    const event = {
      event_id: 'evt_sig_1',
      type: 'job.running',
      job_id: taskId,
      client_ref: providerKeys('acme', 'wh-sig-1').clientRef,
      status: 'running',
      occurred_at: new Date().toISOString(),
    };

    for (const signature of [
      null,
      'sha256=' + '0'.repeat(64),
      sign(JSON.stringify(event), 'not-the-secret'),
      'garbage',
    ]) {
      const bad = await deliver(event, { signature });
      expect(bad.status).toBe(401);
      expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await bad.json()).toMatchObject({ type: '/problems/invalid-signature', status: 401 });
    }
    await sleep(1_500);
    expect(simJob(url)!.status_request_times).toHaveLength(0);
    expect((await api.stack.store.jobs.get(jobId))!.state).toBe('pending');
    expect(await api.stack.store.webhooks.listDeliveries({ jobId })).toEqual([]);
    const kept = (await listQuarantine(api.stack.store)).filter((q) => q.event_id === 'evt_sig_1');
    expect(kept).toHaveLength(4);
    expect(kept.every((q) => q.reason === 'invalid_signature')).toBe(true);
    for (const q of kept) {
      const headers = JSON.parse(q.headers) as Record<string, string>;
      if (headers['x-sim-signature']) expect(headers['x-sim-signature']).toBe('[REDACTED]');
      // Unverified bytes are not stored; their hash and size are.
      expect(q.body).toBe('');
      expect(q.body_sha256).toBe(createHash('sha256').update(JSON.stringify(event)).digest('hex'));
      expect(q.body_bytes).toBe(Buffer.byteLength(JSON.stringify(event)));
    }

    const answers = await Promise.all(Array.from({ length: 5 }, () => deliver(event)));
    const outcomes = (await Promise.all(answers.map((a) => a.json()))) as { outcome: string }[];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual([
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
      'woken',
    ]);
    await waitFor(() => simJob(url)!.status_request_times.length >= 1, 30_000, 'the woken status check');
    await sleep(1_500);
    // One wake: its check, then at most the wake's first follow-up a second later; never one check per delivery.
    const woken = simJob(url)!.status_request_times;
    expect(woken.length).toBeLessThanOrEqual(2);
    if (woken.length === 2) expect(woken[1]! - woken[0]!).toBeGreaterThanOrEqual(900);
    expect(await api.stack.store.webhooks.listDeliveries({ jobId })).toHaveLength(1);

    // The provider's own completion event then finishes the job, still long before any poll.
    api.stack.sim.release(taskId);
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
  });

  it('an event for an unknown task is kept in quarantine (202), once however often it comes', async () => {
    const event = {
      event_id: 'evt_unknown_1',
      type: 'job.completed',
      job_id: 'job_00000000-0000-0000-0000-000000000000',
      client_ref: 'no-such-ref',
      status: 'completed',
      occurred_at: new Date().toISOString(),
    };
    const first = await deliver(event);
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({ received: true, event_id: 'evt_unknown_1', outcome: 'quarantined' });
    const again = await deliver(event);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ outcome: 'duplicate' });
    const kept = (await listQuarantine(api.stack.store)).filter((q) => q.event_id === 'evt_unknown_1');
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ provider: 'reference', reason: 'unmatched' });
    expect(JSON.parse(kept[0]!.body)).toEqual(event);
    expect(kept[0]!.body_sha256).toMatch(/^[0-9a-f]{64}$/);

    const invalid = await deliver({ event_id: 'evt_invalid_1', hello: 'world' });
    expect(invalid.status).toBe(400);
    expect(
      (await listQuarantine(api.stack.store)).filter((q) => q.event_id === 'evt_invalid_1').map((q) => q.reason),
    ).toEqual(['invalid_payload']);
    const nobody = await api.call(null, 'POST', '/v1/webhooks/not-configured', { json: event });
    expect(nobody.status).toBe(404);
  });

  it('an event that echoes only our client reference (no known task ID) still finds and wakes the job', async () => {
    api.stack.sim.faults.add({ urlContains: 't=ref', action: 'hold', holdIn: 'running' });
    const { jobId, url } = await start('ref', 'wh-ref-1');
    const row = await waitForState(api.stack.store, jobId, ['pending']);
    await api.stack.sim.waitForJob(row.task_id!, { status: 'running' });
    const r = await deliver({
      event_id: 'evt_ref_1',
      type: 'job.running',
      job_id: 'job_not_recorded_yet',
      client_ref: providerKeys('acme', 'wh-ref-1').clientRef,
      status: 'running',
    });
    expect(await r.json()).toMatchObject({ outcome: 'woken' });
    await waitFor(() => simJob(url)!.status_request_times.length === 1, 30_000, 'the woken status check');
    expect((await api.stack.store.webhooks.listDeliveries({ jobId }))[0]).toMatchObject({
      event_id: 'evt_ref_1',
      outcome: 'woken',
      job_id: jobId,
    });
    api.stack.sim.release(row.task_id!);
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
  });

  it('a job whose webhooks never arrive still completes by polling (slower)', async () => {
    api.stack.sim.faults.add({ urlContains: 't=lost', action: 'drop_webhook' });
    const url = page('002', 'lost');
    // First check 400 ms × 5 = 2 s after submit, then every 600 ms × 5 = 3 s.
    const policy: Partial<PollPolicy> = {
      initialDelayMs: 400,
      maxDelayMs: 600,
      multiplier: 1.5,
      jitter: 0,
      deadlineMs: 120_000,
      activityTimeoutMs: 5_000,
    };
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy },
      headers: { 'idempotency-key': 'wh-lost-1' },
    });
    const jobId = ((await r.json()) as { job_id: string }).job_id;
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
    const taskId = simJob(url)!.job_id;
    expect(
      api.stack.sim
        .stats()
        .webhooks.log.filter((a) => a.job_id === taskId)
        .map((a) => a.outcome),
    ).toEqual(['dropped']);
    expect(await api.stack.store.webhooks.listDeliveries({ jobId })).toEqual([]);
    const checks = simJob(url)!.status_request_times;
    expect(checks.length).toBeGreaterThanOrEqual(1);
    // Polling was slowed down (×5): the first check came ≥ 2 s after the provider job was created.
    expect(checks[0]! - Date.parse(simJob(url)!.created_at)).toBeGreaterThanOrEqual(1_900);
  });
});
