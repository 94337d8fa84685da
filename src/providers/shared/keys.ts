/**
 * The identifiers we send a provider for one logical request: the idempotency key and our client
 * reference. Used by the submit and reconcile activities and by the webhook receiver (which matches
 * an echoed reference back to the job).
 */
import { deterministicUuid } from '../../lib/hash.js';

/**
 * Idempotency key and client reference sent to the provider for (account, key): a UUID derived
 * from both (Firecrawl's `x-idempotency-key` must be a UUID), the same on every attempt.
 */
export function providerKeys(account: string, key: string): { idempotencyKey: string; clientRef: string } {
  const idempotencyKey = deterministicUuid('scrape-idempotency', account, key);
  return { idempotencyKey, clientRef: idempotencyKey };
}
