/**
 * Failure type names shared by activities (which throw them) and workflows (which read them).
 * Pure constants: safe to import from workflow code.
 */

/**
 * `ApplicationFailure.type` per provider error kind, plus `quota` for a quota or credit exhaustion
 * (a `permanent` or `task_failed` provider error with code `QUOTA_EXHAUSTED`): its own type, so an
 * operator tells "the account ran out" from an ordinary refusal at a glance in the Web UI.
 */
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
  quota: 'Provider.quota_exhausted',
} as const;

/** Failure types that must never be retried by an activity retry policy. */
export const NON_RETRYABLE_TYPES: string[] = [
  FailureType.permanent,
  FailureType.conflict,
  FailureType.unsupported,
  FailureType.task_failed,
  FailureType.expired,
  FailureType.quota,
];
