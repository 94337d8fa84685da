/**
 * The conformance matrix (`./matrix.ts`) on the `reference` kind, two entries:
 *
 * - the deployment's `Idempotency-Key` and list declared (`capabilities`): the replays this
 *   declaration can meet are the sim's `honoured` and `conflict` answers;
 * - the provider as the seed documents it: no idempotency key (the header is ignored, replay
 *   `ignored`), so the entry declares none and reconciles by the list alone. Only the faults a
 *   reconcile meets (a lost submit, a lost lookup) are run there; the others are the first entry's.
 */
import { startReferenceFixture } from '../fixtures/providers/reference/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'reference (Idempotency-Key and list declared)',
  kind: 'reference',
  // One active job per account is the sim's default; the matrix runs its cases at once.
  fixture: () => startReferenceFixture({ profile: { concurrency: 100 } }),
  entry: (fx) => ({ baseUrl: fx.url, capabilities: { idempotency: true, list: true, cancel: true, webhooks: false } }),
  restrict: { replays: ['honoured', 'conflict'] },
});

await defineConformanceMatrix({
  label: 'reference (no idempotency key: replays ignored)',
  kind: 'reference',
  fixture: () => startReferenceFixture({ profile: { concurrency: 100, idempotency: false } }),
  entry: (fx) => ({ baseUrl: fx.url, capabilities: { idempotency: false, list: true, cancel: true, webhooks: false } }),
  restrict: { replays: ['ignored'], faults: ['submit', 'lookup'] },
});
