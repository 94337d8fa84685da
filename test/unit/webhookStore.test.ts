/**
 * Webhook records in the store: deliveries and quarantined events are deleted once past their
 * retention, and only those (a real in-memory SQLite store).
 */
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { listQuarantine } from '../helpers/storeQueries.js';

describe('webhook record retention', () => {
  it('deletes delivery and quarantine rows received before the cutoff and keeps newer ones', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      await store.webhooks.recordDelivery({
        provider: 'reference',
        eventId: 'evt-1',
        eventType: 'job.completed',
        providerStatus: 'completed',
        taskId: 't1',
      });
      await store.webhooks.quarantine({
        provider: 'reference',
        eventId: 'evt-2',
        reason: 'unmatched',
        detail: 'no job',
        headers: {},
        body: '{}',
        bodySha256: 'x',
        bodyBytes: 2,
      });
      expect(await store.webhooks.purge(new Date(Date.now() - 60_000))).toEqual({ deliveries: 0, quarantined: 0 });
      expect(await store.webhooks.listDeliveries({})).toHaveLength(1);
      expect(await store.webhooks.purge(new Date(Date.now() + 1_000))).toEqual({ deliveries: 1, quarantined: 1 });
      expect(await store.webhooks.listDeliveries({})).toHaveLength(0);
      expect(await listQuarantine(store)).toHaveLength(0);
    } finally {
      await store.close();
    }
  });
});
