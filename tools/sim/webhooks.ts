/**
 * Webhook deliveries of the reference provider: when a job with a `webhook` reaches a status it
 * asked for (by default a final one), the sim POSTs one event to the webhook URL.
 *
 * Contract (modelled on Firecrawl's webhooks: per-request webhook,
 * `X-Firecrawl-Signature: sha256=<hex HMAC-SHA256 of the raw body>`, retries on failure):
 * - body: {@link WebhookEvent} JSON `{event_id, type, job_id, client_ref, status, occurred_at}`;
 * - headers: `Content-Type: application/json`, `X-Sim-Event-Id: <event_id>`,
 *   `X-Sim-Delivery-Attempt: <n>`, and with a secret `X-Sim-Signature: sha256=<hex>` (HMAC-SHA256
 *   of the exact body bytes sent, keyed with the secret);
 * - an attempt answered non-2xx, refused, reset or timed out (`webhookTimeoutMs`) is retried after
 *   each of `webhookRetryDelaysMs` in turn, then given up (counted `exhausted`);
 * - faults: `drop_webhook` loses the job's events, `duplicate_webhook` delivers each twice (same
 *   event ID, body and signature).
 * Every attempt is counted in `sim.stats().webhooks`.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { JobRecord, JobTransition } from './jobRecord.js';
import type { WebhookEvent } from './schemas.js';
import type { Counters } from './stats.js';
import { isAbortError, sleep } from './util.js';

/** Options of the {@link WebhookDispatcher}. Times in ms. */
export interface WebhookDispatcherOptions {
  /** Aborted when the sim closes: pending deliveries stop. */
  closeSignal: AbortSignal;
  /** Waits between attempts (ms); attempts = delays + 1. */
  retryDelaysMs: readonly number[];
  /** Timeout of one attempt (ms). */
  timeoutMs: number;
  userAgent: string;
  counters: Counters;
}

/** `X-Sim-Signature` value for `body` and `secret`: `sha256=<hex HMAC-SHA256>`. */
export function simWebhookSignature(body: string | Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Sends the webhook events of jobs; one per sim. */
export class WebhookDispatcher {
  /** Replaced on `reset()` so that deliveries of forgotten jobs stop. */
  private generation = new AbortController();

  constructor(private readonly opts: WebhookDispatcherOptions) {}

  /** Called for every job transition; starts a delivery when the job asked for this status. */
  onTransition(job: JobRecord | undefined, t: JobTransition): void {
    const hook = job?.webhook;
    if (!job || !hook || t.to === 'queued' || !hook.events.includes(t.to)) return;
    const status = t.to as WebhookEvent['status'];
    const event: WebhookEvent = {
      event_id: `evt_${randomUUID()}`,
      type: `job.${status}`,
      job_id: job.id,
      client_ref: job.clientRef,
      status,
      occurred_at: new Date(t.at).toISOString(),
    };
    this.opts.counters.webhookEvent();
    if (job.faults.includes('drop_webhook')) {
      this.opts.counters.webhookAttempt({
        event_id: event.event_id,
        job_id: job.id,
        type: event.type,
        attempt: 0,
        delivery: 1,
        at: new Date().toISOString(),
        outcome: 'dropped',
      });
      return;
    }
    const body = JSON.stringify(event);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': this.opts.userAgent,
      'x-sim-event-id': event.event_id,
    };
    if (hook.secret) headers['x-sim-signature'] = simWebhookSignature(body, hook.secret);
    const signal = AbortSignal.any([this.opts.closeSignal, this.generation.signal]);
    const deliveries = job.faults.includes('duplicate_webhook') ? 2 : 1;
    void (async () => {
      for (let d = 1; d <= deliveries; d++) {
        if (d > 1) this.opts.counters.webhookDuplicate();
        const ok = await this.deliver(hook.url, event, body, headers, d, signal);
        if (ok === 'aborted') return;
      }
    })();
  }

  /** Stops every pending delivery (the sim was reset). */
  reset(): void {
    this.generation.abort();
    this.generation = new AbortController();
  }

  private async deliver(
    url: string,
    event: WebhookEvent,
    body: string,
    headers: Record<string, string>,
    delivery: number,
    signal: AbortSignal,
  ): Promise<boolean | 'aborted'> {
    const delays = this.opts.retryDelaysMs;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return 'aborted';
      let outcome: number | 'network_error';
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'x-sim-delivery-attempt': String(attempt) },
          body,
          signal: AbortSignal.any([signal, AbortSignal.timeout(this.opts.timeoutMs)]),
          redirect: 'manual',
        });
        outcome = res.status;
        await res.body?.cancel().catch(() => undefined);
      } catch {
        if (signal.aborted) return 'aborted';
        outcome = 'network_error';
      }
      this.opts.counters.webhookAttempt({
        event_id: event.event_id,
        job_id: event.job_id,
        type: event.type,
        attempt,
        delivery,
        at: new Date().toISOString(),
        outcome,
      });
      if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) return true;
      const wait = delays[attempt - 1];
      if (wait === undefined) {
        this.opts.counters.webhookExhausted();
        return false;
      }
      try {
        await sleep(wait, signal);
      } catch (err) {
        if (isAbortError(err) || signal.aborted) return 'aborted';
        throw err;
      }
    }
  }
}
