/**
 * Failure type names shared by activities (which throw them) and workflows (which read them).
 * Pure constants: safe to import from workflow code.
 */

/** `ApplicationFailure.type` per provider error kind. */
export const FailureType = {
  permanent: 'Provider.permanent',
  conflict: 'Provider.conflict',
  unsupported: 'Provider.unsupported',
  cooldown: 'Provider.cooldown',
  transient: 'Provider.transient',
  ambiguous: 'Provider.ambiguous',
  not_found: 'Provider.not_found',
  task_failed: 'Provider.task_failed',
  expired: 'Provider.expired',
} as const;

/** Failure types that must never be retried by an activity retry policy. */
export const NON_RETRYABLE_TYPES: string[] = [FailureType.permanent, FailureType.conflict, FailureType.unsupported, FailureType.task_failed, FailureType.expired];
