/**
 * Evidence and readings for the fake adapters of unit tests: a fake declares the evidence its
 * capabilities imply (a replay that returns the task, one list that shows every phase with no
 * lag and a strong match), and reports a found task as that list's one strong candidate.
 */
import type { LookupReading, ReconcileEvidence } from '../../src/model/evidence.js';
import type { Accepted } from '../../src/providers/adapter.js';

/** The evidence of a fake with `capabilities` (see the module docs). */
export function fakeEvidence(capabilities: { idempotency: boolean; list: boolean }, lagMs = 0): ReconcileEvidence {
  return {
    replay: capabilities.idempotency ? 'same-task' : 'none',
    lookups: capabilities.list
      ? [
          {
            name: 'GET /fake/list',
            shows: ['queued', 'running', 'finished'],
            finishedForMs: null,
            lagMs,
            match: 'strong',
          },
        ]
      : [],
    taskScope: 'credential',
    source: 'unit-test fake',
  };
}

/** One reading of the fake's list: `found` as its strong candidate, or nothing. */
export function fakeReading(found: Accepted | null): LookupReading[] {
  return [
    {
      lookup: 'GET /fake/list',
      available: true,
      complete: true,
      candidates: found
        ? [
            {
              taskId: found.taskId,
              providerStatus: found.providerStatus,
              match: 'strong',
              why: 'carries our reference',
            },
          ]
        : [],
      at: new Date().toISOString(),
    },
  ];
}
