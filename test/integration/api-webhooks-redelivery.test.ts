/**
 * A signed webhook event that comes before the job's task ID is known (the provider answered the
 * submit late, or the event overtook the answer) is kept in quarantine as unmatched; the
 * provider's redelivery of that same event, once the task ID is recorded, is matched and wakes the
 * job, instead of being answered `duplicate` and lost.
 *
 * A delivery whose handler died after recording it (`received`) and before settling it leaves the
 * event `received` with no job: the provider's redelivery of that event, once the record is older
 * than `WEBHOOK_HANDLING_STALE_MS`, is handled again and wakes the job, instead of being answered
 * `duplicate` and lost. Of two redeliveries sent at once, one handles it; a record younger than the
 * bound (its handler may still be at work) still makes a redelivery a duplicate. The crash is
 * represented by the row it leaves: the delivery record as `recordDelivery` writes it, with its
 * `received_at` moved back past the bound.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_HANDLING_STALE_MS } from '../../src/api/webhooks.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApiStack, type ApiStack } from '../helpers/api.js';
import { waitFor, waitForState } from '../helpers/stack.js';
import { listQuarantine } from '../helpers/storeQueries.js';

/** Slow polling (the first status check minutes away) and a submit allowed to take 60 s. */
const SLOW: Partial<PollPolicy> = {
  initialDelayMs: 30_000,
  maxDelayMs: 60_000,
  multiplier: 1.5,
  jitter: 0,
  deadlineMs: 600_000,
  activityTimeoutMs: 60_000,
  cancelConfirmDeadlineMs: 10_000,
};

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({ webhooks: true, profile: { concurrency: 4, minRunMs: 1_500 } });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

function deliver(event: Record<string, unknown>) {
  const body = JSON.stringify(event);
  return api.call(null, 'POST', '/v1/webhooks/reference', {
    body,
    headers: {
      'content-type': 'application/json',
      'x-sim-event-id': String(event.event_id),
      'x-sim-signature': `sha256=${createHmac('sha256', api.webhookSecret!).update(body).digest('hex')}`,
    },
  });
}

describe('a webhook event that overtakes the submit answer', () => {
  it('is quarantined while its task is unknown, and its redelivery after the task is recorded wakes the job', async () => {
    const url = `${pages.pageUrl('001')}?t=early`;
    // The provider creates the job at once but answers the submit 8 s later; the job stays running.
    api.stack.sim.faults.add({
      endpoint: 'submit',
      urlContains: 't=early',
      action: 'delay',
      commit: true,
      delayMs: 8_000,
    });
    api.stack.sim.faults.add({ urlContains: 't=early', action: 'hold', holdIn: 'running' });
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: SLOW },
      headers: { 'idempotency-key': 'wh-early-1' },
    });
    expect(r.status).toBe(202);
    const jobId = 'scrape:acme:wh-early-1';
    const taskId = await waitFor(
      () => api.stack.sim.stats().jobs.find((j) => j.url === url)?.job_id,
      30_000,
      'the provider job to exist',
    );
    // An event naming only the task ID (no client reference), before our row knows that task.
    const event = { event_id: 'evt_early_1', type: 'job.running', job_id: taskId, status: 'running' };
    const first = await deliver(event);
    expect((await api.stack.store.jobs.get(jobId))?.task_id ?? null).toBeNull();
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ outcome: 'quarantined' });

    await waitForState(api.stack.store, jobId, ['pending', 'running'], 60_000);
    expect((await api.stack.store.jobs.get(jobId))?.task_id).toBe(taskId);
    const again = await deliver(event);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ event_id: 'evt_early_1', outcome: 'woken' });
    expect(
      (await api.stack.store.webhooks.listDeliveries({ jobId })).filter((d) => d.event_id === 'evt_early_1'),
    ).toEqual([expect.objectContaining({ outcome: 'woken', job_id: jobId })]);
    // Kept in quarantine once, from its first delivery.
    expect((await listQuarantine(api.stack.store)).filter((q) => q.event_id === 'evt_early_1')).toHaveLength(1);
    // A third delivery is a duplicate of the applied one.
    expect(await (await deliver(event)).json()).toMatchObject({ outcome: 'duplicate' });

    api.stack.sim.release(taskId);
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
  });
});

/** The record a handler leaves when it dies after recording the delivery, `ageMs` ago. */
async function leftReceived(eventId: string, taskId: string, ageMs: number) {
  await api.stack.store.db
    .insertInto('webhook_deliveries')
    .values({
      id: randomUUID(),
      provider: 'reference',
      event_id: eventId,
      received_at: new Date(Date.now() - ageMs).toISOString(),
      event_type: 'job.running',
      provider_status: 'running',
      task_id: taskId,
      job_id: null,
      outcome: 'received',
    })
    .execute();
}

describe('a webhook delivery whose handler died before settling it', () => {
  it('is handled again by one redelivery once older than the bound, and wakes the job', async () => {
    const url = `${pages.pageUrl('001')}?t=stale-received`;
    api.stack.sim.faults.add({ urlContains: 't=stale-received', action: 'hold', holdIn: 'running' });
    const r = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: { ...SLOW, initialDelayMs: 120_000, maxDelayMs: 120_000 } },
      headers: { 'idempotency-key': 'wh-stale-1' },
    });
    expect(r.status).toBe(202);
    const jobId = 'scrape:acme:wh-stale-1';
    await waitForState(api.stack.store, jobId, ['pending', 'running'], 60_000);
    const taskId = (await api.stack.store.jobs.get(jobId))!.task_id!;
    const event = { event_id: 'evt_stale_1', type: 'job.running', job_id: taskId, status: 'running' };

    // Younger than the bound: its handler may still be at work, so a redelivery is a duplicate.
    await leftReceived('evt_young_1', taskId, 1_000);
    const young = await deliver({ ...event, event_id: 'evt_young_1' });
    expect(await young.json()).toMatchObject({ outcome: 'duplicate' });

    await leftReceived('evt_stale_1', taskId, WEBHOOK_HANDLING_STALE_MS + 60_000);
    const checksBefore = (await api.stack.store.jobs.get(jobId))!.status_checks;
    const answers = await Promise.all([deliver(event), deliver(event)]);
    const outcomes = (await Promise.all(answers.map((a) => a.json() as Promise<{ outcome: string }>)))
      .map((b) => b.outcome)
      .sort();
    expect(outcomes).toEqual(['duplicate', 'woken']);
    expect(
      (await api.stack.store.webhooks.listDeliveries({ provider: 'reference' })).filter(
        (d) => d.event_id === 'evt_stale_1',
      ),
    ).toEqual([expect.objectContaining({ outcome: 'woken', job_id: jobId })]);
    // The wake makes the job check its provider long before its next scheduled check.
    await waitFor(
      async () => Number((await api.stack.store.jobs.get(jobId))!.status_checks) > Number(checksBefore),
      60_000,
      'the woken job to check its provider',
    );
    // Settled now: a later redelivery is a duplicate.
    expect(await (await deliver(event)).json()).toMatchObject({ outcome: 'duplicate' });

    api.stack.sim.release(taskId);
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
  });
});
